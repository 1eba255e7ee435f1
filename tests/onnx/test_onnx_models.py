"""The real-architecture ONNX reference models (test_models/onnx) convert and
match onnxruntime's stored outputs on the real Arm NN 20.08 and 23.08 runtimes, with no
Constant layers; a model that needs a later format is converted for the release it runs on."""
import json
import os
import sys

import numpy as np
import pytest

import armnn_import

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from reference_models import NOT_CONVERTING_YET  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "test_models", "onnx")
MODELS = json.load(open(os.path.join(ROOT, "manifest.json")))["models"]


@pytest.mark.parametrize("entry", MODELS, ids=lambda e: e["file"])
def test_model_matches_onnxruntime_on_armnn(entry, armnn_release_runner):
    # a model the default target refuses (it needs a later format's layers) is converted for the
    # release it runs on
    richer = f"onnx/{entry['file']}" in NOT_CONVERTING_YET
    target = armnn_release_runner.release if richer else None
    result = armnn_import.convert(os.path.join(ROOT, entry["file"]), target=target)
    data = np.load(os.path.join(ROOT, entry["data"]))
    inputs = [data[f"input_{i}"] for i in range(len(result.network.input_layers))]
    # int64 token ids are a Signed32 input (Arm NN has no int64): feed them as int32, as a user does
    inputs = [x.astype(np.int32) if x.dtype == np.int64 else x for x in inputs]
    # and a bool input used as numbers is a uint8 input: 0 or 1
    inputs = [x.astype(np.uint8) if x.dtype == bool and layer.outputs[0].dtype.name == "QuantisedAsymm8" else x
              for x, layer in zip(inputs, result.network.input_layers)]
    outputs = armnn_release_runner(result.to_bytes(), inputs)
    expected = [data[k] for k in sorted(k for k in data.files if k.startswith("output_"))]
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-3, atol=1e-4)
    if not richer:  # (an embedding table is a Constant layer in the richer formats)
        assert "Constant" not in result.network.summary()
