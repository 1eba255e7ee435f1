"""TopK with k = 1 from --target 20.08: the largest (smallest for largest=0) value and its first
index (an ArgMinMax, as onnxruntime breaks ties), judged on Arm NN 20.08 and 23.08 against
onnxruntime; any other k is refused (Arm NN has no sort)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

import armnn_import
from armnn_import.errors import UnsupportedModelError


def _model(shape, axis, largest, opset=11, k=1):
    inits = [onnx.numpy_helper.from_array(np.array([k], np.int64), "k")] if opset >= 10 else []
    attrs = {"axis": axis, **({"largest": largest} if opset >= 11 else {}), **({"k": k} if opset < 10 else {})}
    node = h.make_node("TopK", ["x", "k"] if opset >= 10 else ["x"], ["v", "i"], **attrs)
    g = h.make_graph([node], "topk", [h.make_tensor_value_info("x", T.FLOAT, shape)],
                     [h.make_tensor_value_info("v", T.FLOAT, None), h.make_tensor_value_info("i", T.INT64, None)], inits)
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


def test_other_k_refused():
    with pytest.raises(UnsupportedModelError, match="k = 3: Arm NN has no sort"):
        armnn_import.convert(_model((2, 5), -1, 1, k=3), target="23.08")


def test_needs_20_08():
    with pytest.raises(UnsupportedModelError, match="needs the Arm NN 20.08 format"):
        armnn_import.convert(_model((2, 5), -1, 1), target="19.02")
