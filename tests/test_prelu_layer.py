"""PRelu / PRELU as one Prelu layer from the 20.08 format on (float): Arm NN's PreluImpl.cpp
computes x < 0 ? alpha * x : x over a broadcast alpha, which is ONNX's and TFLite's formula, so
the file gives onnxruntime's / LiteRT's numbers bit for bit (float), or within one level
(quantized: one rounding, as LiteRT's). Before 20.08 the decomposition ReLu(x) + alpha * min(x, 0)
stays. Checked through the CLI's file on
every runtime that reads the target.
"""
from __future__ import annotations

import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from armnn_import import cli
from armnn_import.serialize import read

PAIRS = [("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPE = [1, 3, 5, 7]
# slope shapes: per channel (NCHW), full, last axis (its 20.08 Constant is [1, 1, 1, 7] and keeps
# the Reshape that 23.08 needs), run-time
SLOPES = {"channel": (3, 1, 1), "full": (1, 3, 5, 7), "last": (7,), "runtime": (3, 1, 1)}


def _model(kind: str) -> onnx.ModelProto:
    rng = np.random.default_rng(7)
    slope = rng.standard_normal(SLOPES[kind]).astype(np.float32)
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)]
    inits = []
    if kind == "runtime":
        ins.append(helper.make_tensor_value_info("s", TensorProto.FLOAT, list(SLOPES[kind])))
    else:
        inits.append(numpy_helper.from_array(slope, "s"))
    graph = helper.make_graph([helper.make_node("PRelu", ["x", "s"], ["y"])], "prelu", ins,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def _convert(src, out, target):
    assert cli.main([str(src), "-o", str(out), "--target", target, "-q"]) == 0
    return read(out.read_bytes())


def _types(graph):
    return [l.type.name for l in graph.layers]


@pytest.mark.parametrize("target, release", PAIRS)
@pytest.mark.parametrize("kind", list(SLOPES))
def test_onnx_prelu_is_one_prelu_layer(tmp_path, kind, target, release, armnn_runner_for):
    model = _model(kind)
    src = tmp_path / "m.onnx"
    onnx.save(model, str(src))
    graph = _convert(src, tmp_path / "m.armnn", target)
    assert _types(graph).count("Prelu") == 1 and "Activation" not in _types(graph)
    rng = np.random.default_rng(3)
    feeds = {"x": rng.standard_normal(SHAPE).astype(np.float32)}
    if kind == "runtime":
        feeds["s"] = rng.standard_normal(SLOPES[kind]).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    (got,) = armnn_runner_for(release)(tmp_path / "m.armnn", list(feeds.values()))
    np.testing.assert_array_equal(got.reshape(want.shape), want)


def test_onnx_prelu_at_19_02_keeps_the_decomposition(tmp_path):
    src = tmp_path / "m.onnx"
    onnx.save(_model("channel"), str(src))
    assert "Prelu" not in _types(_convert(src, tmp_path / "m.armnn", "19.02"))


@pytest.mark.parametrize("target, release", PAIRS)
def test_tflite_prelu_model_on_the_runtime(tmp_path, target, release, armnn_runner_for):
    base = os.path.join(ROOT, "test_models", "tflite", "ops", "prelu.float32")
    ref = np.load(base + ".npz")  # LiteRT's output (test_models/tflite/manifest.json)
    graph = _convert(base + ".tflite", tmp_path / "m.armnn", target)
    assert "Prelu" in _types(graph)
    (got,) = armnn_runner_for(release)(tmp_path / "m.armnn", [ref["input_0"]])
    np.testing.assert_array_equal(got.reshape(ref["output_0"].shape), ref["output_0"])


@pytest.mark.parametrize("target, release", PAIRS)
@pytest.mark.parametrize("model", ["prelu.int8", "prelu.uint8io"])
def test_tflite_quantized_prelu_is_one_prelu_layer(tmp_path, model, target, release, armnn_runner_for):
    """Quantized: CpuRef decodes x and alpha (the model's 8-bit alpha, as it is) and rounds once;
    LiteRT's integer kernel rounds once too, so within 1 level (0 measured; the 19.02
    decomposition is 1 level off)."""
    base = os.path.join(ROOT, "test_models", "tflite", "ops", model)
    ref = np.load(base + ".npz")
    graph = _convert(base + ".tflite", tmp_path / "m.armnn", target)
    assert "Prelu" in _types(graph)
    (got,) = armnn_runner_for(release)(tmp_path / "m.armnn", [ref["input_0"]])
    assert got.dtype == ref["output_0"].dtype
    diff = np.abs(got.astype(np.int32).reshape(ref["output_0"].shape) - ref["output_0"].astype(np.int32))
    assert diff.max() <= 1
