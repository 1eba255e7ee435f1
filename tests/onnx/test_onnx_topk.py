"""TopK from --target 20.08, judged on Arm NN 20.08 and 23.08 against onnxruntime: k = 1 is the
largest (smallest for largest=0) value and its first index (an ArgMinMax, as onnxruntime breaks
ties); k > 1 counts each element's rank pairwise (lowering/topk.py), sorted, ties by the lower
index; int32 values from 23.08; rows too long for the pairwise count are refused."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

import armnn_import
from armnn_import.errors import UnsupportedModelError


def _model(shape, axis, largest, opset=11, k=1, dtype=T.FLOAT):
    inits = [onnx.numpy_helper.from_array(np.array([k], np.int64), "k")] if opset >= 10 else []
    attrs = {"axis": axis, **({"largest": largest} if opset >= 11 else {}), **({"k": k} if opset < 10 else {})}
    node = h.make_node("TopK", ["x", "k"] if opset >= 10 else ["x"], ["v", "i"], **attrs)
    g = h.make_graph([node], "topk", [h.make_tensor_value_info("x", dtype, shape)],
                     [h.make_tensor_value_info("v", dtype, None), h.make_tensor_value_info("i", T.INT64, None)], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


CASES = [((2, 5), -1, 1, 11), ((2, 5, 3), 1, 0, 11), ((3, 4), 0, 1, 9), ((2, 3, 4, 5), 2, 1, 10)]


@pytest.mark.parametrize("target, release", [("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")])
@pytest.mark.parametrize("shape, axis, largest, opset", CASES)
def test_k1_matches_onnxruntime_with_ties(shape, axis, largest, opset, target, release, armnn_runner_for):
    import onnxruntime as ort
    m = _model(shape, axis, largest, opset)
    x = np.random.default_rng(len(shape)).integers(-3, 4, shape).astype(np.float32)  # (many ties)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = armnn_runner_for(release)(armnn_import.convert(m, target=target).to_bytes(), [x])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.reshape(w.shape), w)


K_CASES = [((2, 5), -1, 1, 11, 3), ((2, 5, 3), 1, 0, 11, 4), ((3, 4), 0, 1, 9, 2), ((2, 3, 4, 5), 2, 1, 10, 4),
           ((1, 6), -1, 0, 11, 6)]


@pytest.mark.parametrize("target, release", [("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")])
@pytest.mark.parametrize("shape, axis, largest, opset, k", K_CASES)
def test_k_matches_onnxruntime_with_ties(shape, axis, largest, opset, k, target, release, armnn_runner_for):
    import onnxruntime as ort
    m = _model(shape, axis, largest, opset, k)
    x = np.random.default_rng(k).integers(-3, 4, shape).astype(np.float32)  # (many ties)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = armnn_runner_for(release)(armnn_import.convert(m, target=target).to_bytes(), [x])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.reshape(w.shape), w)


@pytest.mark.parametrize("target, release", [("20.08", "20.08"), ("23.08", "23.08")])
def test_top5_of_1000_classes_with_infinities(target, release, armnn_runner_for):
    import onnxruntime as ort
    m = _model((1, 1000), -1, 1, 11, 5)
    x = np.random.default_rng(0).standard_normal((1, 1000)).astype(np.float32)
    x[0, [3, 500]], x[0, 9], x[0, 10] = np.inf, -np.inf, -0.0  # (equal infinities tie: the lower index first)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = armnn_runner_for(release)(armnn_import.convert(m, target=target).to_bytes(), [x])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.reshape(w.shape), w)


def test_int32_values_at_23_08(armnn_runner_for):
    import onnxruntime as ort
    m = _model((2, 9), -1, 1, 11, 4, dtype=T.INT32)
    x = np.random.default_rng(5).integers(-(1 << 24), 1 << 24, (2, 9)).astype(np.int32)
    x[0, :3] = 7  # (ties)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    net = armnn_import.convert(m, target="23.08")
    assert any("within +-2^24" in w for w in net.report.warnings)
    got = armnn_runner_for("23.08")(net.to_bytes(), [x])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.reshape(w.shape), w)
    with pytest.raises(UnsupportedModelError, match="Signed32 tensor.*--target 23.08 takes int32"):
        armnn_import.convert(m, target="20.08")


def test_rows_too_long_for_the_pairwise_count_refused():
    with pytest.raises(UnsupportedModelError, match="compares every pair of a row"):
        armnn_import.convert(_model((1, 4096), -1, 1, k=3), target="23.08")
    with pytest.raises(UnsupportedModelError, match="k = 6 for an axis of 5"):
        armnn_import.convert(_model((2, 5), -1, 1, k=6), target="23.08")


def test_needs_20_08():
    with pytest.raises(UnsupportedModelError, match="needs the Arm NN 20.08 format"):
        armnn_import.convert(_model((2, 5), -1, 1), target="19.02")
