"""Compress with a constant condition (frontends/onnx/ops/gathernd.py) on the real runtimes against
onnxruntime: along an axis, a negative axis, the flattened input, a condition shorter than the
axis, and the empty selection refused. Files as the CLI writes them."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import armnn_import
from armnn_import.cli import main

ort = pytest.importorskip("onnxruntime")
READS = [("19.02", "20.08"), ("20.08", "20.08"), ("23.08", "23.08")]


def _model(cond, **attrs):
    g = h.make_graph([h.make_node("Compress", ["x", "c"], ["y"], **attrs)], "c",
                     [h.make_tensor_value_info("x", TP.FLOAT, [3, 4, 5])], [h.make_tensor_value_info("y", TP.FLOAT, None)],
                     [nh.from_array(np.array(cond, bool), "c")])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 11)])


@pytest.mark.parametrize("target, release", READS)
@pytest.mark.parametrize("cond, attrs", [([0, 1, 1], {"axis": 0}), ([1, 0, 1, 1, 0], {"axis": -1}),
                                         ([1, 0, 1], {"axis": 1}), ([0, 1] * 20, {})])
def test_compress(cond, attrs, target, release, armnn_runner_for, tmp_path):
    model = _model(cond, **attrs)
    x = np.random.default_rng(1).standard_normal((3, 4, 5)).astype(np.float32)
    (want,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    src, dst = tmp_path / "m.onnx", tmp_path / "m.armnn"
    src.write_bytes(model.SerializeToString())
    assert main([str(src), "-o", str(dst), "-q", "--target", target]) == 0
    got = armnn_runner_for(release)(str(dst), [x])[0]
    assert got.size == want.size
    np.testing.assert_array_equal(got.reshape(want.shape), want)


def test_empty_selection_refused():
    with pytest.raises(armnn_import.UnsupportedModelError, match="selects nothing"):
        armnn_import.convert(_model([0, 0, 0], axis=0))
