"""EMBEDDING_LOOKUP (rows of a table by run-time ids: one Gather, --target 20.08 on), FILL
(constant dims; a run-time scalar broadcast by copies, on every target) and RANGE of constants,
judged on the Arm NN runtime of each target against LiteRT."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import armnn_import

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tfl_builder import ModelBuilder, run_litert  # noqa: E402

READS = [("19.02", "20.08"), ("19.02", "23.08"), ("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]


def _lookup(const_ids=None):
    rng = np.random.default_rng(2)
    mb = ModelBuilder()
    ids = mb.const("ids", const_ids) if const_ids is not None else mb.input("ids", (5,), np.int32)
    table = mb.const("table", rng.standard_normal((10, 4)).astype(np.float32))
    if const_ids is not None:  # (a run-time tensor to feed: the looked-up rows plus x)
        x = mb.input("x", (len(const_ids), 4))
        mb.output(mb.op("ADD", [mb.op("EMBEDDING_LOOKUP", [ids, table], out_dtype=np.float32), x], "AddOptions"))
    else:
        mb.output(mb.op("EMBEDDING_LOOKUP", [ids, table], out_dtype=np.float32))
    return mb.build()


@pytest.mark.parametrize("target, release", READS)
def test_embedding_lookup_of_runtime_ids(target, release, armnn_runner_for):
    data = _lookup()
    ids = np.array([7, 0, 9, 2, 7], np.int32)
    if target == "19.02":
        with pytest.raises(armnn_import.ArmnnImportError, match="--target 20.08"):
            armnn_import.convert(data, target=target)
        return
    got, = armnn_runner_for(release)(armnn_import.convert(data, target=target).to_bytes(), [ids])
    np.testing.assert_array_equal(got, run_litert(data, [ids])[0])


@pytest.mark.parametrize("target, release", READS)
def test_embedding_lookup_of_constant_ids(target, release, armnn_runner_for):
    data = _lookup(np.array([3, 3, 1], np.int32))
    x = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)
    got, = armnn_runner_for(release)(armnn_import.convert(data, target=target).to_bytes(), [x])
    np.testing.assert_allclose(got, run_litert(data, [x])[0], rtol=1e-6)


def _fill():
    mb = ModelBuilder()
    x, v = mb.input("x", (2, 3)), mb.input("v", (), np.float32)
    dims = mb.const("dims", np.array([2, 3], np.int32))
    f = mb.op("FILL", [dims, v], out_dtype=np.float32)
    c = mb.op("FILL", [dims, mb.const("k", np.array(1.5, np.float32))], out_dtype=np.float32)
    mb.output(mb.op("ADD", [mb.op("ADD", [x, f], "AddOptions"), c], "AddOptions"))
    return mb.build()


@pytest.mark.parametrize("target, release", READS)
def test_fill_of_a_runtime_scalar_and_a_constant(target, release, armnn_runner_for):
    data = _fill()
    xv, vv = np.random.default_rng(4).standard_normal((2, 3)).astype(np.float32), np.array(0.25, np.float32)
    got, = armnn_runner_for(release)(armnn_import.convert(data, target=target).to_bytes(), [xv, vv.reshape(1)])
    np.testing.assert_allclose(got, run_litert(data, [xv, vv])[0], rtol=1e-6)


def _range():
    mb = ModelBuilder()
    x = mb.input("x", (5,))
    r = mb.op("RANGE", [mb.const(n, np.array(v, np.float32)) for n, v in (("s", 1.0), ("l", 3.5), ("d", 0.5))],
              "RangeOptions", out_dtype=np.float32)
    mb.output(mb.op("ADD", [x, r], "AddOptions"))
    return mb.build()


@pytest.mark.parametrize("target, release", READS)
def test_range_of_constants_folds(target, release, armnn_runner_for):
    data = _range()
    xv = np.arange(5, dtype=np.float32)
    got, = armnn_runner_for(release)(armnn_import.convert(data, target=target).to_bytes(), [xv])
    np.testing.assert_array_equal(got, run_litert(data, [xv])[0])
