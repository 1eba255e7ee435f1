"""A model whose ONNX shape inference crashes, and what converting it must give (shared by
test_onnx_errors.py, in a plain process, and test_isolate.py, with threads running)."""
from __future__ import annotations

import pytest
from onnx import TensorProto as TP
from onnx import helper as h

import armnn_import
from armnn_import.errors import UnsupportedModelError
from armnn_import.report import Report


def assert_shape_inference_crash_refused() -> None:
    """onnx's shape inference segfaults on GatherND with batch_dims=-5 (it runs in a child): the
    model is refused for that node and nothing else. The segfault is an out-of-bounds read, so
    whether it happens depends on the child's memory (a fork of this process, or a small worker's
    child); with or without it the refusal is the same, and a crash is reported as one."""
    g = h.make_graph([h.make_node("GatherND", ["x", "i"], ["y"], name="bad", batch_dims=-5)], "m",
                     [h.make_tensor_value_info("x", TP.FLOAT, [2, 2, 2]),
                      h.make_tensor_value_info("i", TP.INT64, [2, 1])],
                     [h.make_tensor_value_info("y", TP.FLOAT, None)])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    report = Report()
    with pytest.raises(UnsupportedModelError) as info:
        armnn_import.convert(m, report=report)
    assert [p.node for p in info.value.problems] == ["bad"]
    assert all("crashed" in w for w in report.warnings if "shape inference" in w)
