"""TOPK_V2 (the k largest along the last axis, sorted, ties by the lower index) from --target
20.08: each element's rank counted pairwise (armnn_import/lowering/topk.py), judged on the Arm NN
runtime of each target against LiteRT, for float, uint8, int8 and (23.08) int32 values."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import armnn_import

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tfl_builder import ModelBuilder, run_litert  # noqa: E402

READS = [("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]


def _top_k(shape, k, dtype=np.float32, quant=None):
    mb = ModelBuilder()
    x = mb.input("x", shape, dtype, quant)
    v, i = mb.op("TOPK_V2", [x, mb.const("k", np.array(k, np.int32))], outputs=2,
                 out_quant=[quant, None] if quant else None)
    mb.tensors[i]["dtype"] = np.dtype(np.int32)
    mb.output(v)
    mb.output(i)
    return mb.build()


def _check(data, x, target, release, runner_for):
    want = run_litert(data, [x])
    got = runner_for(release)(armnn_import.convert(data, target=target).to_bytes(), [x])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.reshape(w.shape), w)


CASES = [((2, 6), 3, np.float32, None), ((2, 3, 7), 7, np.float32, None), ((1, 10), 4, np.uint8, (0.1, 3)),
         ((1, 10), 4, np.int8, (0.1, -3))]


@pytest.mark.parametrize("target, release", READS)
@pytest.mark.parametrize("shape, k, dtype, quant", CASES)
def test_top_k_with_ties_matches_litert(shape, k, dtype, quant, target, release, armnn_runner_for):
    rng = np.random.default_rng(k)
    x = (rng.integers(-3, 4, shape) if dtype == np.float32 else rng.integers(0, 6, shape)).astype(dtype)
    _check(_top_k(shape, k, dtype, quant), x, target, release, armnn_runner_for)


@pytest.mark.parametrize("target, release", READS)
def test_top5_of_1001_classes(target, release, armnn_runner_for):
    x = np.random.default_rng(1).standard_normal((1, 1001)).astype(np.float32)
    _check(_top_k((1, 1001), 5), x, target, release, armnn_runner_for)


def test_int32_values_at_23_08_only(armnn_runner_for):
    data = _top_k((2, 9), 4, np.int32)
    x = np.random.default_rng(3).integers(-1000, 1000, (2, 9)).astype(np.int32)
    x[1, 4:7] = 5
    _check(data, x, "23.08", "23.08", armnn_runner_for)
    with pytest.raises(armnn_import.ArmnnImportError, match="--target 23.08 takes int32"):
        armnn_import.convert(data, target="20.08")


def test_refusals_name_the_reason():
    with pytest.raises(armnn_import.ArmnnImportError, match="needs the Arm NN 20.08 format"):
        armnn_import.convert(_top_k((1, 10), 3), target="19.02")
    with pytest.raises(armnn_import.ArmnnImportError, match="compares every pair of a row"):
        armnn_import.convert(_top_k((1, 5000), 3), target="23.08")
