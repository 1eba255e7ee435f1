"""SELECT and SELECT_V2 of float32 values (frontends/tflite/ops/select.py) on the real Arm NN
runtime of each target against LiteRT: the condition's 0/1 mask is made again from the
comparison's operands (armnn_import/lowering/masks.py), so every ordered pair of NaN, infinities,
signed zeros and ordinary numbers is compared, and the unselected branch holds NaN and inf."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from tfl_builder import ModelBuilder, run_litert  # noqa: E402

import armnn_import  # noqa: E402
from armnn_import.errors import UnsupportedModelError  # noqa: E402

OPTS = {"GREATER_EQUAL": "GreaterEqualOptions", "LESS_EQUAL": "LessEqualOptions", "NOT_EQUAL": "NotEqualOptions",
        "EQUAL": "EqualOptions", "GREATER": "GreaterOptions", "LESS": "LessOptions"}
NAN, INF = np.nan, np.inf
SPECIAL = np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, -2.5, np.finfo(np.float32).max, 1e-45], np.float32)
RUNS = [("19.02", "20.08"), ("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]


def _feeds():
    a, b = (v.reshape(1, 9, 9).astype(np.float32) for v in np.meshgrid(SPECIAL, SPECIAL, indexing="ij"))
    rng = np.random.default_rng(5)
    x, y = (np.round(rng.normal(size=(1, 9, 9)) * 4).astype(np.float32) for _ in range(2))
    x[0, ::2, 1], y[0, 1::2, 2], y[0, ::3, 4] = NAN, INF, -INF  # (dropped where not selected)
    return a, b, x, y


def _model(op, const=None, select="SELECT_V2"):
    mb = ModelBuilder()
    a = mb.input("a", (1, 9, 9))
    b = mb.const("c", np.asarray(const, np.float32)) if const is not None else mb.input("b", (1, 9, 9))
    x, y = mb.input("x", (1, 9, 9)), mb.input("y", (1, 9, 9))
    c = mb.op(op, [a, b], OPTS[op], out_dtype=np.bool_)
    mb.output(mb.op(select, [c, x, y], "SelectV2Options" if select == "SELECT_V2" else "SelectOptions",
                    out_dtype=np.float32))
    return mb.build()


def _check(data, feeds, target, release, runner_for, tmp_path):
    """The user's path: the CLI writes the .armnn file, which the runtime reads."""
    from armnn_import.cli import main

    src, dst = tmp_path / "m.tflite", tmp_path / "m.armnn"
    src.write_bytes(data)
    assert main(["convert", str(src), "-o", str(dst), "--target", target]) == 0
    want = run_litert(data, feeds)
    got = runner_for(release)(dst.read_bytes(), feeds)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.reshape(w.shape), w)


@pytest.mark.parametrize("target, release", RUNS)
@pytest.mark.parametrize("op", sorted(OPTS))
def test_select_on_every_special_pair(op, target, release, armnn_runner_for, tmp_path):
    a, b, x, y = _feeds()
    _check(_model(op), [a, b, x, y], target, release, armnn_runner_for, tmp_path)


@pytest.mark.parametrize("target, release", RUNS)
@pytest.mark.parametrize("op", ["GREATER_EQUAL", "EQUAL", "LESS"])
@pytest.mark.parametrize("const", [0.0, -INF, np.array([INF, 0.0, -2.5] * 3)], ids=["zero", "minf", "row"])
def test_select_on_a_comparison_with_a_constant(op, const, target, release, armnn_runner_for, tmp_path):
    a, _, x, y = _feeds()
    _check(_model(op, const), [a, x, y], target, release, armnn_runner_for, tmp_path)


@pytest.mark.parametrize("target, release", RUNS)
def test_select_v1_broadcast_and_constant_values(target, release, armnn_runner_for, tmp_path):
    """SELECT with one condition per row; SELECT_V2 broadcasting a [1, 4] condition over [3, 4]
    values against a constant (an attention mask's fill)."""
    mb = ModelBuilder()
    r, x = mb.input("r", (3,)), mb.input("x", (3, 4))
    rows = mb.op("GREATER", [r, mb.const("zero", np.zeros(3, np.float32))], "GreaterOptions", out_dtype=np.bool_)
    s = mb.op("SELECT", [rows, x, mb.const("fill", np.full((3, 4), -1e9, np.float32))], "SelectOptions", out_dtype=np.float32)
    m, = (mb.input("m", (1, 4)),)
    keep = mb.op("NOT_EQUAL", [m, mb.const("z", np.zeros((1, 4), np.float32))], "NotEqualOptions", out_dtype=np.bool_)
    mb.output(mb.op("SELECT_V2", [keep, s, mb.const("ninf", np.array(-INF, np.float32))], "SelectV2Options",
                    out_dtype=np.float32))
    feeds = [np.array([1.0, -0.0, 2.0], np.float32), np.arange(12, dtype=np.float32).reshape(3, 4),
             np.array([[1.0, 0.0, NAN, -0.0]], np.float32)]
    _check(mb.build(), feeds, target, release, armnn_runner_for, tmp_path)


def _logical_model():
    """SELECT_V2(LOGICAL_OR(LOGICAL_NOT(a > b), a == 1), x, y)."""
    mb = ModelBuilder()
    a, b, x, y = (mb.input(n, (1, 9, 9)) for n in "abxy")
    gt = mb.op("GREATER", [a, b], "GreaterOptions", out_dtype=np.bool_)
    eq = mb.op("EQUAL", [a, mb.const("one", np.array(1.0, np.float32))], "EqualOptions", out_dtype=np.bool_)
    c = mb.op("LOGICAL_OR", [mb.op("LOGICAL_NOT", [gt], out_dtype=np.bool_), eq], "LogicalOrOptions",
              out_dtype=np.bool_)
    mb.output(mb.op("SELECT_V2", [c, x, y], "SelectV2Options", out_dtype=np.float32))
    return mb.build()


def test_select_on_logical_conditions_at_23_08(armnn_runner_for, tmp_path):
    _check(_logical_model(), list(_feeds()), "23.08", "23.08", armnn_runner_for, tmp_path)


def _int_model():
    mb = ModelBuilder()
    pos, lim, x = mb.input("pos", (2, 6), np.int32), mb.input("lim", (2, 1), np.int32), mb.input("x", (2, 6))
    c = mb.op("LESS_EQUAL", [pos, lim], "LessEqualOptions", out_dtype=np.bool_)
    mb.output(mb.op("SELECT_V2", [c, x, mb.const("fill", np.array(-1e9, np.float32))], "SelectV2Options",
                    out_dtype=np.float32))
    return mb.build()


def test_int32_condition_at_23_08_and_refused_before(armnn_runner_for, tmp_path):
    feeds = [np.tile(np.arange(6, dtype=np.int32), (2, 1)), np.array([[2], [4]], np.int32),
             np.arange(12, dtype=np.float32).reshape(2, 6)]
    _check(_int_model(), feeds, "23.08", "23.08", armnn_runner_for, tmp_path)
    with pytest.raises(UnsupportedModelError, match="--target 23.08"):
        armnn_import.convert(_int_model(), target="20.08")


def test_refusals_name_the_reason():
    mb = ModelBuilder()
    c, x = mb.input("c", (2, 3), np.bool_), mb.input("x", (2, 3))
    mb.output(mb.op("SELECT_V2", [c, x, mb.const("y", np.zeros((2, 3), np.float32))], "SelectV2Options",
                    out_dtype=np.float32))
    with pytest.raises(UnsupportedModelError, match="a Boolean model input") as e:
        armnn_import.convert(mb.build(), target="23.08")
    assert [p.op for p in e.value.problems] == ["SELECT_V2"]


def _int8_model(q=(0.05, -3), qy=None):
    """SELECT_V2(GREATER(a, 0.5), x, y) of int8 tensors (TFLite gives SELECT_V2's operands and result
    one quantization)."""
    mb = ModelBuilder()
    a, x = mb.input("a", (2, 8), np.int8, q), mb.input("x", (2, 8), np.int8, q)
    y = mb.input("y", (2, 8), np.int8, qy or q)
    half = mb.const("half", np.array([13], np.int8), quant=q)  # 0.8
    c = mb.op("GREATER", [a, half], "GreaterOptions", out_dtype=np.bool_)
    mb.output(mb.op("SELECT_V2", [c, x, y], "SelectV2Options", out_dtype=np.int8, out_quant=q))
    return mb.build()


@pytest.mark.parametrize("target, release", RUNS[1:])
def test_int8_select_from_20_08(target, release, armnn_runner_for, tmp_path):
    rng = np.random.default_rng(2)
    feeds = [rng.integers(-128, 128, (2, 8)).astype(np.int8) for _ in range(3)]
    feeds[0][0, :3] = [12, 13, 14]  # either side of the constant's level
    _check(_int8_model(), feeds, target, release, armnn_runner_for, tmp_path)


def test_int8_select_refusals():
    with pytest.raises(UnsupportedModelError, match="--target 20.08"):
        armnn_import.convert(_int8_model(), target="19.02")
    with pytest.raises(UnsupportedModelError, match="more than one quantization"):
        armnn_import.convert(_int8_model(qy=(0.1, 0)), target="23.08")


@pytest.mark.parametrize("target, release", [("19.02", "20.08"), ("23.08", "23.08")])
@pytest.mark.parametrize("op", ["GREATER", "LESS", "EQUAL"])
@pytest.mark.parametrize("const", [0.0, INF, -INF, 3.0])
def test_boolean_comparison_with_a_scalar_constant(op, const, target, release, armnn_runner_for, tmp_path):
    """The constant is a fill of x's shape (NetBuilder.fill_like) that no infinity of x reaches:
    before session 20, inf > 0 was false (0 * inf + c is NaN)."""
    mb = ModelBuilder()
    a = mb.input("a", (1, 9))
    mb.output(mb.op(op, [a, mb.const("c", np.array(const, np.float32))], OPTS[op], out_dtype=np.bool_))
    _check(mb.build(), [SPECIAL.reshape(1, 9)], target, release, armnn_runner_for, tmp_path)
