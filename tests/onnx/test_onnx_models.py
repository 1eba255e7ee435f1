"""The real-architecture ONNX reference models (test_models/onnx) convert and
match onnxruntime's stored outputs on the real Arm NN 20.08 and 23.08 runtimes, with no
Constant layers."""
import json
import os

import numpy as np
import pytest

import armnn_import

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "test_models", "onnx")
MODELS = json.load(open(os.path.join(ROOT, "manifest.json")))["models"]


@pytest.mark.parametrize("entry", MODELS, ids=lambda e: e["file"])
def test_model_matches_onnxruntime_on_armnn(entry, armnn_release_runner):
    result = armnn_import.convert(os.path.join(ROOT, entry["file"]))
    data = np.load(os.path.join(ROOT, entry["data"]))
    inputs = [data[f"input_{i}"] for i in range(len(result.network.input_layers))]
    outputs = armnn_release_runner(result.to_bytes(), inputs)
    expected = [data[k] for k in sorted(k for k in data.files if k.startswith("output_"))]
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-3, atol=1e-4)
    assert "Constant" not in result.network.summary()
