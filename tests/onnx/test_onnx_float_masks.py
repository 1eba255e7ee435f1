"""Comparisons used as numbers (a Where) on the real runtimes against onnxruntime, with NaN,
infinities and signed zeros in every position: the float masks of armnn_import/lowering/masks.py
are exact for every pair, two equal infinities included."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

ort = pytest.importorskip("onnxruntime")
NAN, INF = np.nan, np.inf
SPECIAL = np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, -2.5, np.finfo(np.float32).max, 1e-45], np.float32)
OPS = ["Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Equal", "NotEqual"]
# (target, release that runs it)
RUNS = [("19.02", "20.08"), ("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]


def _model(op, inputs, inits=None):
    nodes = ([h.make_node("Equal", ["a", "b"], ["e"]), h.make_node("Not", ["e"], ["c"])] if op == "NotEqual"
             else [h.make_node(op, ["a", "b"], ["c"])])
    nodes.append(h.make_node("Where", ["c", "x", "y"], ["w"]))
    g = h.make_graph(nodes, "t", [h.make_tensor_value_info(n, TP.FLOAT, v.shape) for n, v in inputs.items()],
                     [h.make_tensor_value_info("w", TP.FLOAT, None)],
                     [nh.from_array(v, n) for n, v in (inits or {}).items()])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def _check(armnn_runner_for, tmp_path, m, feeds, target, release):
    from armnn_import.cli import main

    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    src, dst = tmp_path / "m.onnx", tmp_path / "m.armnn"
    src.write_bytes(m.SerializeToString())
    assert main(["convert", str(src), "-o", str(dst), "--target", target]) == 0
    got = armnn_runner_for(release)(dst.read_bytes(), list(feeds.values()))[0]
    np.testing.assert_array_equal(got.reshape(want.shape), want)


@pytest.mark.parametrize("target,release", RUNS)
@pytest.mark.parametrize("op", OPS)
def test_mask_of_every_special_pair(armnn_runner_for, tmp_path, op, target, release):
    a, b = (v.astype(np.float32) for v in np.meshgrid(SPECIAL, SPECIAL, indexing="ij"))
    x, y = np.full_like(a, 7.0), np.full_like(a, -3.0)
    x[::2, 1], y[1::2, 2], x[::3, 4], y[:, 5] = NAN, NAN, -INF, INF  # (kept where selected, else dropped)
    _check(armnn_runner_for, tmp_path, _model(op, {"a": a, "b": b, "x": x, "y": y}),
           {"a": a, "b": b, "x": x, "y": y}, target, release)


@pytest.mark.parametrize("target,release", RUNS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("const", [np.array(1.0, np.float32), np.array([INF, -INF, 0.0] * 3, np.float32)])
def test_mask_with_a_constant(armnn_runner_for, tmp_path, op, const, target, release):
    """The constant operand must not pick up the NaN or inf of a."""
    a = np.meshgrid(SPECIAL, SPECIAL, indexing="ij")[0].astype(np.float32)
    x, y = np.full_like(a, 7.0), np.full_like(a, -3.0)
    _check(armnn_runner_for, tmp_path, _model(op, {"a": a, "x": x, "y": y}, {"b": const}),
           {"a": a, "x": x, "y": y}, target, release)


@pytest.mark.parametrize("target,release", RUNS)
@pytest.mark.parametrize("values", ["inputs", "x_const", "y_const"])
def test_where_keeps_a_selected_nan(armnn_runner_for, tmp_path, values, target, release):
    """Where(c, x, y) with NaN and infinities in both branches, a run-time or a constant one."""
    a = np.meshgrid(SPECIAL, SPECIAL, indexing="ij")[0].astype(np.float32)
    x, y = np.full_like(a, 7.0), np.full_like(a, -0.0)
    x[::2, 1], y[1::2, 2], x[::3, 4], y[:, 5], x[:, 6] = NAN, NAN, -INF, INF, -0.0
    inputs, inits = {"a": a, "x": x, "y": y}, {"b": np.array(0.5, np.float32)}
    if values != "inputs":
        inits[values[0]] = inputs.pop(values[0])
    _check(armnn_runner_for, tmp_path, _model("Greater", inputs, inits), inputs, target, release)


def _unary_model(nodes, inits):
    g = h.make_graph(nodes, "t", [h.make_tensor_value_info("a", TP.FLOAT, [9, 9])],
                     [h.make_tensor_value_info("w", TP.FLOAT, None)],
                     [nh.from_array(v, n) for n, v in inits.items()])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


FILLS = {"div3": ([h.make_node("Div", ["a", "k"], ["w"])], {"k": np.array(3.0, np.float32)}),
         "reciprocal": ([h.make_node("Reciprocal", ["a"], ["w"])], {}),
         "pow0": ([h.make_node("Pow", ["a", "k"], ["w"])], {"k": np.array(0.0, np.float32)}),
         "greater0": ([h.make_node("Greater", ["a", "k"], ["g"]), h.make_node("Cast", ["g"], ["w"], to=TP.FLOAT)],
                      {"k": np.array(0.0, np.float32)})}


@pytest.mark.parametrize("target,release", RUNS)
@pytest.mark.parametrize("case", sorted(FILLS))
def test_constant_fills_ignore_infinities(armnn_runner_for, tmp_path, case, target, release):
    """x / 3, 1 / x, x ^ 0 and x > 0 of NaN and infinities: their constant is a fill of x's shape
    (NetBuilder.fill_like) that no NaN or inf of x reaches."""
    a = np.meshgrid(SPECIAL, SPECIAL, indexing="ij")[0].astype(np.float32)
    nodes, inits = FILLS[case]
    _check(armnn_runner_for, tmp_path, _unary_model(nodes, inits), {"a": a}, target, release)
