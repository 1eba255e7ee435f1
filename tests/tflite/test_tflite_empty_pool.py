"""A VALID pooling window larger than its input (frontends/tflite/ops/empty.py): LiteRT
gives an output with no elements ([1, 2] over a width of 1: [1, 3, 0, 2]). The converter
computes the same: an empty constant, which a CONCATENATION leaves out (checked on the
real Arm NN 20.08 runtime against LiteRT) and which, as a model output, is refused with
that reason (Arm NN tensors have no zero-size dimension)."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from tfl_builder import ModelBuilder, run_litert  # noqa: E402

from armnn_import_frontends.tflite.ops.empty import pool_out_size  # noqa: E402

QX = (0.04, -5)


def pool_model(op, shape, k, strides=(1, 1), concat_axis=None, dtype=np.float32, quant=None):
    mb = ModelBuilder()
    x = mb.input("x", shape, dtype, quant)
    p = mb.op(op, [x], "Pool2DOptions", padding="VALID", stride_h=strides[0], stride_w=strides[1],
              filter_height=k[0], filter_width=k[1], out_quant=quant)
    if concat_axis is not None:
        p = mb.op("CONCATENATION", [p, x], "ConcatenationOptions", axis=concat_axis, out_quant=quant)
        p = mb.op("RELU", [p], out_quant=quant)  # a layer after the Merger-free concatenation
    mb.output(p)
    return mb.build()


def cli(tmp_path, data):
    from armnn_import.cli import main

    src, dst = tmp_path / "m.tflite", tmp_path / "m.armnn"
    src.write_bytes(data)
    code = main(["convert", str(src), "-o", str(dst)])
    return code, dst


@pytest.mark.parametrize("shape,k,strides", [((1, 3, 1, 2), (1, 2), (1, 1)), ((1, 3, 1, 2), (1, 2), (1, 2)),
                                             ((1, 1, 4, 3), (3, 3), (2, 2)), ((1, 5, 4, 2), (2, 7), (1, 3))])
def test_litert_gives_an_empty_output(shape, k, strides):
    """The fact the conversion relies on, and TFLite's output size formula."""
    data = pool_model("MAX_POOL_2D", shape, k, strides)
    got = run_litert(data, [np.ones(shape, np.float32)])[0]
    want = (shape[0], pool_out_size(shape[1], k[0], strides[0], 1), pool_out_size(shape[2], k[1], strides[1], 1),
            shape[3])
    assert got.shape == want and got.size == 0


@pytest.mark.parametrize("op", ["MAX_POOL_2D", "AVERAGE_POOL_2D", "L2_POOL_2D"])
def test_empty_pool_alone_is_refused_with_the_reason(tmp_path, capsys, op):
    code, dst = cli(tmp_path, pool_model(op, (1, 3, 1, 2), (1, 2)))
    err = capsys.readouterr().err
    assert code == 1 and not dst.exists()
    assert "the output is empty (shape [1, 3, 0, 2]" in err and "zero-size" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("op", ["MAX_POOL_2D", "AVERAGE_POOL_2D"])
@pytest.mark.parametrize("shape,k,axis", [((1, 3, 1, 2), (1, 2), 2), ((1, 1, 4, 3), (3, 1), 1)])
def test_empty_pool_concatenated_matches_litert(armnn_runner, tmp_path, op, shape, k, axis):
    data = pool_model(op, shape, k, concat_axis=axis)
    x = np.random.default_rng(5).normal(size=shape).astype(np.float32)
    want = run_litert(data, [x])[0]
    code, dst = cli(tmp_path, data)
    assert code == 0
    got = armnn_runner(dst.read_bytes(), [x])[0]
    np.testing.assert_array_equal(got.reshape(want.shape), want)


def test_empty_pool_concatenated_quantized(armnn_runner, tmp_path):
    data = pool_model("MAX_POOL_2D", (1, 3, 1, 2), (1, 2), concat_axis=2, dtype=np.int8, quant=QX)
    x = np.random.default_rng(6).integers(-128, 128, (1, 3, 1, 2)).astype(np.int8)
    want = run_litert(data, [x])[0]
    code, dst = cli(tmp_path, data)
    assert code == 0
    got = armnn_runner(dst.read_bytes(), [(x.astype(np.int16) + 128).astype(np.uint8)])[0]
    np.testing.assert_array_equal(got.reshape(want.shape).astype(np.int16), want.astype(np.int16) + 128)
