"""Booleans used as numbers (Where, Cast): the 0/1 mask of an int32 comparison at --target 23.08
(made in int32 arithmetic, then a Cast; causal and padding masks of positions), and x == -inf
against a constant infinity (an attention row that is all masked), on Arm NN 23.08 against
onnxruntime."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

import armnn_import
from armnn_import import cli


def _ort(m, feeds):
    import onnxruntime as ort
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def _int_mask_model(op):
    """y = Where(op(pos, lim), x, -1e9): the mask of a comparison of two int64 inputs."""
    ins = [h.make_tensor_value_info("x", T.FLOAT, [2, 6]), h.make_tensor_value_info("pos", T.INT64, [2, 6]),
           h.make_tensor_value_info("lim", T.INT64, [2, 1])]
    fill = onnx.numpy_helper.from_array(np.array(-1e9, np.float32), "fill")
    nodes = [h.make_node(op, ["pos", "lim"], ["m"]), h.make_node("Where", ["m", "x", "fill"], ["y"])]
    g = h.make_graph(nodes, "mask", ins, [h.make_tensor_value_info("y", T.FLOAT, [2, 6])], [fill])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 13)])


@pytest.mark.parametrize("op", ["Less", "Greater", "Equal", "LessOrEqual", "GreaterOrEqual"])
def test_int32_comparison_masks_at_23_08(op, tmp_path, armnn_runner_for):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 6)).astype(np.float32)
    pos = np.array([[0, 1, 2, 3, 4, 5], [-7, 100000, 3, -2, 9, 9]], np.int64)
    lim = np.array([[3], [9]], np.int64)
    m = _int_mask_model(op)
    src, out = tmp_path / "m.onnx", tmp_path / "m.armnn"
    onnx.save(m, src)
    assert cli.main([str(src), "-o", str(out), "-q", "--target", "23.08"]) == 0
    got, = armnn_runner_for("23.08")(str(out), [x, pos.astype(np.int32), lim.astype(np.int32)])
    np.testing.assert_array_equal(got, _ort(m, {"x": x, "pos": pos, "lim": lim}))


def test_int32_comparison_mask_refused_at_20_08_with_the_hint(tmp_path, capsys):
    src = tmp_path / "m.onnx"
    onnx.save(_int_mask_model("Less"), src)
    assert cli.main([str(src), "-o", str(tmp_path / "m.armnn"), "--target", "20.08"]) == 1
    err = capsys.readouterr().err
    assert "Signed32 tensors used as a mask" in err and "--target 23.08" in err


def test_all_masked_row_equals_minus_infinity(armnn_runner_for):
    """x == -inf with x = -inf: x - (-inf) is NaN, so the mask is [-x - FLT_MAX > 0]."""
    x = h.make_tensor_value_info("x", T.FLOAT, [2, 4])
    consts = [onnx.numpy_helper.from_array(np.array(-np.inf, np.float32), "c"),
              onnx.numpy_helper.from_array(np.array(0, np.float32), "z")]
    nodes = [h.make_node("Equal", ["x", "c"], ["m"]), h.make_node("Where", ["m", "z", "x"], ["y"])]
    m = h.make_model(h.make_graph(nodes, "g", [x], [h.make_tensor_value_info("y", T.FLOAT, [2, 4])], consts),
                     opset_imports=[h.make_opsetid("", 13)])
    xv = np.array([[-np.inf, 1, np.inf, -3.4028235e38], [3.4028235e38, 0, -np.inf, -1]], np.float32)
    got, = armnn_runner_for("23.08")(armnn_import.convert(m, target="23.08").to_bytes(), [xv])
    np.testing.assert_array_equal(got, _ort(m, {"x": xv}))
