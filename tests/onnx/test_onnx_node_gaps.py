"""Operators of the ONNX node suite that had an exact lowering but were refused (session 10):
Hardmax, Trilu of integers, IsInf, IsNaN, Softplus (23.08), And/Or/Xor/Not of Boolean inputs in the 20.08
format, and int32 arithmetic with an integer constant. Each written file (the CLI's) runs on
the real Arm NN runtimes that read its target and must give onnxruntime's values exactly,
with NaN and infinities in the inputs where they matter."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import armnn_import
from armnn_import import cli
from armnn_import.errors import UnsupportedModelError

RNG = np.random.default_rng(10)
# target -> the runtimes that read its files
READERS = {"19.02": ("20.08", "23.08"), "20.08": ("20.08", "23.08"), "23.08": ("23.08",)}


def model(node, inputs, out_type, opset=18, inits=()):
    g = h.make_graph([node], "gap", [h.make_tensor_value_info(n, t, list(s)) for n, t, s in inputs],
                     [h.make_tensor_value_info("y", out_type, None)], list(inits))
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)], ir_version=9)


def check_on_runtimes(m, feeds, target, armnn_runner_for, tmp_path, atol=None):
    """The CLI's file for `target` on every runtime that reads it equals onnxruntime's output
    (within `atol` and the same relative tolerance, where float rounding may differ)."""
    src, out = tmp_path / "m.onnx", tmp_path / f"m.{target}.armnn"
    onnx.save(m, src)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    assert cli.main([str(src), "-o", str(out), "-q", "--target", target]) == 0
    # Arm NN has no 64-bit integers: int64 inputs are fed as int32 (the network's Signed32 inputs)
    xs = [v.astype(np.int32) if v.dtype == np.int64 else v for v in feeds.values()]
    for release in READERS[target]:
        (got,) = armnn_runner_for(release)(out.read_bytes(), xs)
        assert got.shape == want.shape, (release, got.shape, want.shape)
        if atol is not None:
            np.testing.assert_allclose(got, want, rtol=atol, atol=atol, err_msg=f"--target {target} on {release}")
            continue
        np.testing.assert_array_equal(got.astype(want.dtype) if want.dtype != np.int64 else got.astype(np.int64),
                                      want, err_msg=f"--target {target} on Arm NN {release}")


def refused(m, target):
    with pytest.raises(UnsupportedModelError) as info:
        armnn_import.convert(m, target=target)
    return info.value.problems[0]


# -- Hardmax: ArgMinMax + a Gather of identity rows (20.08 format on) ---------------------------
def hardmax_x():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    x[0, :, 1] = x[0, :, 2] = 5.0  # ties: the first index wins, as ONNX says
    x[1, 2, :] = -1.0
    return x


HARDMAX = {
    "axis1-opset13": (13, {"axis": 1}),
    "last-opset13": (13, {}),
    "axis0-opset13": (13, {"axis": 0}),
    "flat-axis1-opset11": (11, {"axis": 1}),  # before 13: on x flattened to 2-D at axis
}


@pytest.mark.parametrize("target", ["20.08", "23.08"])
@pytest.mark.parametrize("name", HARDMAX)
def test_hardmax(name, target, armnn_runner_for, tmp_path):
    opset, attrs = HARDMAX[name]
    m = model(h.make_node("Hardmax", ["x"], ["y"], **attrs), [("x", TP.FLOAT, (2, 3, 4))], TP.FLOAT, opset)
    check_on_runtimes(m, {"x": hardmax_x()}, target, armnn_runner_for, tmp_path)


def test_hardmax_19_02_names_the_target():
    m = model(h.make_node("Hardmax", ["x"], ["y"]), [("x", TP.FLOAT, (2, 3))], TP.FLOAT, 13)
    p = refused(m, "19.02")
    assert p.code == "needs-target" and "20.08" in p.hint, p


# -- Trilu of integers: x times a constant 0/1 mask (every target) -------------------------------
@pytest.mark.parametrize("target", ["19.02", "20.08", "23.08"])
@pytest.mark.parametrize("upper,k", [(1, 0), (0, -1), (1, 2)])
def test_trilu_int64(upper, k, target, armnn_runner_for, tmp_path):
    m = model(h.make_node("Trilu", ["x", "k"], ["y"], upper=upper), [("x", TP.INT64, (2, 4, 5))], TP.INT64, 14,
              [nh.from_array(np.array(k, np.int64), "k")])
    x = RNG.integers(-1000, 1000, (2, 4, 5)).astype(np.int64)
    check_on_runtimes(m, {"x": x}, target, armnn_runner_for, tmp_path)


def test_float_trilu_of_many_runs_is_refused_with_its_reason():
    # (session 12: float Trilu is a constant gather; tests/onnx/test_onnx_node_gaps2.py)
    m = model(h.make_node("Trilu", ["x"], ["y"]), [("x", TP.FLOAT, (80, 80))], TP.FLOAT, 14)
    assert "inf" in refused(m, "19.02").reason


# -- IsInf and IsNaN ------------------------------------------------------------------------------
SPECIAL = np.array([[-1.5, np.nan, np.inf, 3.0e38, -np.inf, 0.0], [-0.0, 65504.0, -3.4e38, 7.0, np.inf, -np.nan]],
                   np.float32)
SPECIAL16 = np.array([[-1.5, np.nan, np.inf, 6.0e4, -np.inf, 0.0], [-0.0, 65504.0, -65504.0, 7.0, np.inf, -np.nan]],
                     np.float16)
ISINF = {"both": (SPECIAL, {}), "positive": (SPECIAL, {"detect_negative": 0}),
         "negative": (SPECIAL, {"detect_positive": 0}), "both-float16": (SPECIAL16, {})}


@pytest.mark.parametrize("target", ["19.02", "20.08", "23.08"])
@pytest.mark.parametrize("name", ISINF)
def test_isinf(name, target, armnn_runner_for, tmp_path):
    x, attrs = ISINF[name]
    elem = TP.FLOAT16 if x.dtype == np.float16 else TP.FLOAT
    m = model(h.make_node("IsInf", ["x"], ["y"], **attrs), [("x", elem, (2, 6))], TP.BOOL, 20)
    check_on_runtimes(m, {"x": x}, target, armnn_runner_for, tmp_path)


@pytest.mark.parametrize("target", ["20.08", "23.08"])
def test_isnan(target, armnn_runner_for, tmp_path):
    m = model(h.make_node("IsNaN", ["x"], ["y"]), [("x", TP.FLOAT, (2, 6))], TP.BOOL, 20)
    check_on_runtimes(m, {"x": SPECIAL}, target, armnn_runner_for, tmp_path)


# -- Boolean logic of graph inputs in the 20.08 format (Comparison layers) -----------------------
@pytest.mark.parametrize("op", ["And", "Or", "Xor", "Not"])
def test_boolean_logic_20_08(op, armnn_runner_for, tmp_path):
    ins = ["a"] if op == "Not" else ["a", "b"]
    m = model(h.make_node(op, ins, ["y"]), [(n, TP.BOOL, (3, 4)) for n in ins], TP.BOOL, 18)
    feeds = {n: RNG.random((3, 4)) > 0.5 for n in ins}
    check_on_runtimes(m, feeds, "20.08", armnn_runner_for, tmp_path)


def test_boolean_broadcast_of_two_ranks_names_23_08():
    m = model(h.make_node("And", ["a", "b"], ["y"]), [("a", TP.BOOL, (2, 3, 4)), ("b", TP.BOOL, (4,))], TP.BOOL)
    p = refused(m, "20.08")
    assert p.code == "needs-target" and "23.08" in p.hint, p


# -- int32 arithmetic and comparisons with an integer constant -----------------------------------
@pytest.mark.parametrize("target", ["19.02", "20.08", "23.08"])
@pytest.mark.parametrize("op,out", [("Add", TP.INT64), ("Sub", TP.INT64), ("Mul", TP.INT64), ("Less", TP.BOOL),
                                    ("Equal", TP.BOOL)])
def test_int_with_constant(op, out, target, armnn_runner_for, tmp_path):
    c = nh.from_array(np.array([[3], [-7], [0]], np.int64), "c")
    m = model(h.make_node(op, ["x", "c"], ["y"]), [("x", TP.INT64, (3, 4))], out, 18, [c])
    x = RNG.integers(-9, 9, (3, 4)).astype(np.int64)
    check_on_runtimes(m, {"x": x}, target, armnn_runner_for, tmp_path)


# -- Softplus (23.08 format: max(x, 0) - log(sigmoid(|x|))), and tanh(softplus(x)) on every target ----
def test_softplus_23_08(armnn_runner_for, tmp_path):
    """Softplus over -100..100 with infinities and NaN (onnxruntime gives x, not inf, past x = 88),
    within float rounding of onnxruntime; below 23.08 (no Log) a Softplus that is a graph output is refused."""
    x = np.concatenate([np.linspace(-100, 100, 397), [np.inf, -np.inf, np.nan, 88.5, 89.0, 0.0]]).astype(np.float32)
    x = x.reshape(1, -1)
    m = model(h.make_node("Softplus", ["x"], ["y"]), [("x", TP.FLOAT, x.shape)], TP.FLOAT, 17)
    check_on_runtimes(m, {"x": x}, "23.08", armnn_runner_for, tmp_path, atol=1e-6)
    p = refused(m, "20.08")
    assert p.code == "needs-target" and "23.08" in p.hint, p


@pytest.mark.parametrize("target", ["19.02", "20.08", "23.08"])
def test_mish_before_opset_18(target, armnn_runner_for, tmp_path):
    """torch's Mish exported before opset 18: x * tanh(softplus(x)). Below 23.08 the Softplus that only
    Tanh reads becomes the Mish lowering's log-free fraction."""
    g = h.make_graph([h.make_node("Softplus", ["x"], ["s"]), h.make_node("Tanh", ["s"], ["t"]),
                      h.make_node("Mul", ["x", "t"], ["y"])], "mish", [h.make_tensor_value_info("x", TP.FLOAT, [1, 3, 8, 8])],
                     [h.make_tensor_value_info("y", TP.FLOAT, None)])
    mish = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=9)
    x = (RNG.standard_normal((1, 3, 8, 8)) * 8).astype(np.float32)
    x.flat[:4] = [30.0, -30.0, 90.0, -90.0]
    check_on_runtimes(mish, {"x": x}, target, armnn_runner_for, tmp_path, atol=1e-5)


def test_boolean_input_with_comparisons_20_08(armnn_runner_for, tmp_path):
    """A Boolean graph input And a float comparison, its Not, and a Where and Cast on comparisons:
    the Boolean-input part is Comparison layers, the comparison-only part keeps its float masks."""
    nodes = [h.make_node("Greater", ["a", "b"], ["g"]), h.make_node("Less", ["a", "zero"], ["l"]),
             h.make_node("Or", ["g", "l"], ["o"]), h.make_node("Not", ["o"], ["n"]),
             h.make_node("Where", ["n", "a", "b"], ["w"]), h.make_node("And", ["m", "g"], ["am"]),
             h.make_node("Not", ["am"], ["y"])]
    g = h.make_graph(nodes, "mix", [h.make_tensor_value_info("a", TP.FLOAT, [3, 4]),
                                    h.make_tensor_value_info("b", TP.FLOAT, [3, 4]),
                                    h.make_tensor_value_info("m", TP.BOOL, [3, 4])],
                     [h.make_tensor_value_info("y", TP.BOOL, None), h.make_tensor_value_info("w", TP.FLOAT, None)],
                     [nh.from_array(np.array(0.0, np.float32), "zero")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=9)
    feeds = {"a": RNG.standard_normal((3, 4)).astype(np.float32), "b": RNG.standard_normal((3, 4)).astype(np.float32),
             "m": RNG.random((3, 4)) > 0.5}
    src = tmp_path / "mix.onnx"
    onnx.save(m, src)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    out = tmp_path / "mix.armnn"
    assert cli.main([str(src), "-o", str(out), "-q", "--target", "20.08"]) == 0
    net = armnn_import.convert(m, target="20.08").network
    xs = [feeds[layer.name] for layer in net.input_layers]
    for release in READERS["20.08"]:
        got = armnn_runner_for(release)(out.read_bytes(), xs)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a.reshape(b.shape), b, err_msg=release)
