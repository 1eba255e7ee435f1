"""ONNX GreaterOrEqual, LessOrEqual and Not(Equal) as Boolean outputs on the real
Arm NN 20.08 runtime against onnxruntime, with NaN, infinities and signed zeros in
every position (armnn_import/lowering/compare.py), through the CLI's written file."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

ort = pytest.importorskip("onnxruntime")
NAN, INF = np.nan, np.inf
SPECIAL = np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, -2.5, np.finfo(np.float32).max, 1e-45], np.float32)


def pairs():
    a, b = np.meshgrid(SPECIAL, SPECIAL, indexing="ij")
    return a.astype(np.float32), b.astype(np.float32)  # every ordered pair, [9, 9]


def model(nodes, inputs, inits=None, opset=17):
    g = h.make_graph(nodes, "t", [h.make_tensor_value_info(n, TP.FLOAT, v.shape) for n, v in inputs.items()],
                     [h.make_tensor_value_info("y", TP.BOOL, None)],
                     [nh.from_array(v, n) for n, v in (inits or {}).items()])
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


def run_both(armnn_runner, tmp_path, m, feeds, target="19.02"):
    from armnn_import.cli import main

    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    src, dst = tmp_path / "m.onnx", tmp_path / "m.armnn"
    src.write_bytes(m.SerializeToString())
    assert main(["convert", str(src), "-o", str(dst), "--target", target]) == 0
    got = armnn_runner(dst.read_bytes(), list(feeds.values()))[0]
    return got.reshape(want.shape), want


CASES = {"GreaterOrEqual": ([h.make_node("GreaterOrEqual", ["a", "b"], ["y"])], np.greater_equal),
         "LessOrEqual": ([h.make_node("LessOrEqual", ["a", "b"], ["y"])], np.less_equal),
         "NotEqual": ([h.make_node("Equal", ["a", "b"], ["e"]), h.make_node("Not", ["e"], ["y"])], np.not_equal)}


@pytest.mark.parametrize("target", ["19.02", "20.08"])  # (20.08: one Comparison layer)
@pytest.mark.parametrize("case", sorted(CASES))
def test_comparison_with_nan_and_inf(armnn_runner, tmp_path, case, target):
    nodes, fn = CASES[case]
    a, b = pairs()
    got, want = run_both(armnn_runner, tmp_path, model(nodes, {"a": a, "b": b}), {"a": a, "b": b}, target)
    np.testing.assert_array_equal(want, fn(a, b))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", ["19.02", "20.08"])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("const", [np.array(1.0, np.float32), np.array([INF, NAN, 0.0] * 3, np.float32)])
def test_comparison_with_constant(armnn_runner, tmp_path, case, const, target):
    """The constant must not pick up the NaN in a[0, 0]."""
    nodes, _ = CASES[case]
    a, _ = pairs()
    got, want = run_both(armnn_runner, tmp_path, model(nodes, {"a": a}, inits={"b": const}), {"a": a}, target)
    np.testing.assert_array_equal(got, want)


def test_not_of_equal_as_a_mask_still_converts(armnn_runner, tmp_path):
    """Not(Equal) feeding Where uses the float mask (finite operands)."""
    a = np.round(np.random.default_rng(3).normal(size=(3, 4))).astype(np.float32)
    b = np.round(np.random.default_rng(4).normal(size=(3, 4))).astype(np.float32)
    nodes = [h.make_node("Equal", ["a", "b"], ["e"]), h.make_node("Not", ["e"], ["n"]),
             h.make_node("Where", ["n", "a", "b"], ["w"]), h.make_node("Greater", ["w", "b"], ["y"])]
    got, want = run_both(armnn_runner, tmp_path, model(nodes, {"a": a, "b": b}), {"a": a, "b": b})
    np.testing.assert_array_equal(got, want)
