"""GREATER_EQUAL, LESS_EQUAL and NOT_EQUAL (armnn_import/lowering/compare.py) on the
real Arm NN 20.08 runtime against LiteRT's reference kernels, with NaN, infinities
and signed zeros in every position (Arm NN's Maximum/Minimum are std::max/std::min,
which return their first operand whenever a NaN is involved)."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from tfl_builder import ModelBuilder, run_litert  # noqa: E402

from armnn_import.errors import UnsupportedModelError  # noqa: E402

OPTS = {"GREATER_EQUAL": "GreaterEqualOptions", "LESS_EQUAL": "LessEqualOptions", "NOT_EQUAL": "NotEqualOptions",
        "EQUAL": "EqualOptions", "GREATER": "GreaterOptions", "LESS": "LessOptions"}
OPS = ["GREATER_EQUAL", "LESS_EQUAL", "NOT_EQUAL"]
NAN, INF = np.nan, np.inf
# every ordered pair of these special values, then ordinary numbers
SPECIAL = np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, -2.5, np.finfo(np.float32).max, 1e-45], np.float32)


def pairs(shape=(1, 9, 9, 2)):
    a, b = np.meshgrid(SPECIAL, SPECIAL, indexing="ij")
    rng = np.random.default_rng(7)
    a = np.stack([a, np.round(rng.normal(size=a.shape))], -1).reshape(shape).astype(np.float32)
    b = np.stack([b, np.round(rng.normal(size=b.shape))], -1).reshape(shape).astype(np.float32)
    return a, b


def cli_convert(tmp_path, data):
    """The user's path: the CLI writes the .armnn file."""
    from armnn_import.cli import main

    src, dst = tmp_path / "m.tflite", tmp_path / "m.armnn"
    src.write_bytes(data)
    assert main(["convert", str(src), "-o", str(dst)]) == 0
    return dst.read_bytes()


def model(op, a_shape, b_shape=None, const=None, const_first=False, dtype=np.float32, quant=None, bquant=None):
    mb = ModelBuilder()
    x = mb.input("x", a_shape, dtype, quant)
    if const is not None:
        y = mb.const("c", np.asarray(const, dtype), quant=bquant or quant)
    else:
        y = mb.input("y", b_shape, dtype, bquant or quant)
    mb.output(mb.op(op, [y, x] if const_first else [x, y], OPTS[op], out_dtype=np.bool_))
    return mb.build()


def test_runtime_max_min_return_their_first_operand_with_nan(armnn_runner):
    """The fact the recipes rest on, measured on Arm NN 20.08 (std::max/std::min; Equal and
    Greater false for NaN; sigmoid(+-inf) finite, sigmoid(NaN) NaN; BoundedReLu(0, 0) of NaN 0)."""
    from armnn_import.ir.types import ActivationFunction as AF
    from armnn_import.ir.types import DataType, TensorInfo
    from armnn_import.ir.types import LayerType as L
    from armnn_import.lowering.builder import NetBuilder
    from armnn_import.serialize import write

    a = np.array([NAN, 1, NAN, INF, -INF], np.float32)
    b = np.array([1, NAN, NAN, NAN, NAN], np.float32)
    nb = NetBuilder()
    pa, pb = (nb.g.add_input(n, TensorInfo((5,), DataType.Float32)) for n in "ab")
    outs = [nb.binary(L.Maximum, pa, pb, "max"), nb.binary(L.Minimum, pa, pb, "min"),
            nb.binary(L.Equal, pa, pb, "eq"), nb.binary(L.Greater, pa, pb, "gt"),
            nb.activation(pa, AF.Sigmoid, "sig"), nb.activation(pa, AF.BoundedReLu, "zero", 0.0, 0.0)]
    for k, o in enumerate(outs):
        nb.g.add_output(f"y{k}", o)
    mx, mn, eq, gt, sig, zero = armnn_runner(write(nb.g), [a, b])
    np.testing.assert_array_equal(mx, a)  # the first operand, NaN or not
    np.testing.assert_array_equal(mn, a)
    assert not eq.any() and not gt.any()
    np.testing.assert_array_equal(sig, [NAN, 1 / (1 + np.exp(np.float32(-1))), NAN, 1.0, 0.0])
    np.testing.assert_array_equal(zero, np.zeros(5))


@pytest.mark.parametrize("op", OPS + ["EQUAL", "GREATER", "LESS"])
def test_float_comparison_with_nan_and_inf(armnn_runner, tmp_path, op):
    a, b = pairs()
    data = model(op, a.shape, b.shape)
    want = run_litert(data, [a, b])[0]
    got = armnn_runner(cli_convert(tmp_path, data), [a, b])[0].reshape(want.shape)
    np.testing.assert_array_equal(got, want)
    from armnn_import import executor
    from test_tflite_frontend import convert

    np.testing.assert_array_equal(executor.run(convert(data)[0], [a, b])[0].reshape(want.shape), want)
    np.testing.assert_array_equal(want, {"GREATER_EQUAL": np.greater_equal, "LESS_EQUAL": np.less_equal,
                                         "NOT_EQUAL": np.not_equal, "EQUAL": np.equal, "GREATER": np.greater,
                                         "LESS": np.less}[op](a, b))  # LiteRT is IEEE


@pytest.mark.parametrize("op", OPS)
def test_float_comparison_broadcasts(armnn_runner, tmp_path, op):
    a, b = pairs()
    b = b[:, :1, :, :1]  # [1, 1, 9, 1] against [1, 9, 9, 2]
    data = model(op, a.shape, b.shape)
    want = run_litert(data, [a, b])[0]
    got = armnn_runner(cli_convert(tmp_path, data), [a, b])[0].reshape(want.shape)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("const,first", [(1.0, False), (INF, True), ([-INF, 0.0], False), ([NAN, 1.0], True)])
def test_float_comparison_with_constant(armnn_runner, tmp_path, op, const, first):
    """The constant is made from a NaN-safe zero: x[0] is NaN here, and must not leak into it."""
    a, _ = pairs()
    assert np.isnan(a.reshape(-1)[0])
    data = model(op, a.shape, const=const, const_first=first)
    want = run_litert(data, [a])[0]
    got = armnn_runner(cli_convert(tmp_path, data), [a])[0].reshape(want.shape)
    np.testing.assert_array_equal(got, want)


Q = (0.05, -3)


def qdata(shape, seed):
    return np.random.default_rng(seed).integers(-128, 128, shape).astype(np.int8)


@pytest.mark.parametrize("op", OPS)
def test_quantized_comparison(armnn_runner, op):
    from armnn_import.serialize import write
    from test_tflite_frontend import convert, to_u8

    a, b = qdata((1, 4, 5, 3), 1), qdata((1, 4, 5, 3), 2)
    b[0, 0] = a[0, 0]  # some equal pairs
    data = model(op, a.shape, b.shape, dtype=np.int8, quant=Q)
    want = run_litert(data, [a, b])[0]
    graph, _ = convert(data)
    got = armnn_runner(write(graph), [to_u8(a), to_u8(b)])[0].reshape(want.shape)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", OPS)
def test_quantized_comparison_with_grid_constant(armnn_runner, op):
    from armnn_import.serialize import write
    from test_tflite_frontend import convert, to_u8

    a = qdata((1, 4, 5, 3), 3)
    c = np.array([[-5, 0, 7]], np.int8)  # levels: on the input's grid
    data = model(op, a.shape, const=c, dtype=np.int8, quant=Q)
    a[0, 0, :3, :] = c
    want = run_litert(data, [a])[0]
    graph, _ = convert(data)
    got = armnn_runner(write(graph), [to_u8(a)])[0].reshape(want.shape)
    np.testing.assert_array_equal(got, want)


def test_quantized_comparison_of_different_grids_refused():
    from test_tflite_frontend import convert

    data = model("GREATER_EQUAL", (1, 4), (1, 4), dtype=np.int8, quant=Q, bquant=(0.1, 0))
    with pytest.raises(UnsupportedModelError, match="different quantization"):
        convert(data)


def test_constant_comparison_folds():
    from test_tflite_frontend import convert

    mb = ModelBuilder()
    x = mb.input("x", (1, 3))
    ge = mb.op("GREATER_EQUAL", [mb.const("a", np.array([1.0, 2.0, NAN], np.float32)),
                                 mb.const("b", np.array([1.0, 3.0, 0.0], np.float32))], OPTS["GREATER_EQUAL"],
               out_dtype=np.bool_)
    mb.output(x)
    y = mb.op("EQUAL", [ge, mb.const("t", np.array([True, False, False]))], OPTS["EQUAL"], out_dtype=np.bool_)
    mb.output(y)
    # GREATER_EQUAL and EQUAL fold: the output is a constant, which no layer can compute
    with pytest.raises(UnsupportedModelError, match="the output is a constant"):
        convert(mb.build(infer_shapes=False))
