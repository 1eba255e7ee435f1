"""The reference models in test_models/onnx/ are what their manifest says, and their
.npz outputs are what onnxruntime computes (scripts/gen_onnx_models.py makes them)."""

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

MODELS_DIR = Path(__file__).resolve().parents[2] / "test_models" / "onnx"
MANIFEST = json.loads((MODELS_DIR / "manifest.json").read_text())
ENTRIES = {e["name"]: e for e in MANIFEST["models"]}
MAX_BYTES = 3_200_000  # reference models stay small enough to keep in git


def session(path):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def dims(value_info):
    return [d.dim_param if d.HasField("dim_param") else d.dim_value for d in value_info.type.tensor_type.shape.dim]


def test_manifest_covers_the_architectures():
    assert len(ENTRIES) >= 8
    assert "resnet_small" in ENTRIES  # the README's example converts this one
    assert any(isinstance(d, str) for e in ENTRIES.values() for i in e["inputs"] for d in i["shape"])


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_model_matches_manifest(name):
    entry = ENTRIES[name]
    path = MODELS_DIR / entry["file"]
    assert path.stat().st_size <= MAX_BYTES
    onnx.checker.check_model(str(path), full_check=True)
    model = onnx.load(path)
    opset = {o.domain: o.version for o in model.opset_import}[""]
    assert opset == entry["opset"]
    assert sorted({n.op_type for n in model.graph.node}) == entry["op_types"]
    inits = {t.name for t in model.graph.initializer}
    graph_inputs = [v for v in model.graph.input if v.name not in inits]
    for listed, actual in [(entry["inputs"], graph_inputs), (entry["outputs"], model.graph.output)]:
        assert [(v["name"], v["shape"]) for v in listed] == [(v.name, dims(v)) for v in actual]


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_npz_reproduces_with_onnxruntime(name):
    entry = ENTRIES[name]
    data = np.load(MODELS_DIR / entry["data"])
    inputs = {v["name"]: data[f"input_{i}"] for i, v in enumerate(entry["inputs"])}
    for v, x in zip(entry["inputs"], inputs.values()):
        assert x.dtype == np.dtype(v["dtype"])
        assert list(x.shape) == [1 if isinstance(d, str) else d for d in v["shape"]]
    outputs = session(MODELS_DIR / entry["file"]).run(None, inputs)
    assert len(outputs) == len(entry["outputs"])
    for i, out in enumerate(outputs):
        expected = data[f"output_{i}"]
        assert expected.std() > 0.1  # a degenerate (constant) output would hide conversion errors
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_dynamic_batch_model_runs_other_batch_sizes():
    entry = ENTRIES["cnn_dynamic_batch"]
    data = np.load(MODELS_DIR / entry["data"])
    x0 = data["input_0"]
    batch = np.concatenate([x0, np.random.default_rng(7).standard_normal((2, *x0.shape[1:]), np.float32)])
    out = session(MODELS_DIR / entry["file"]).run(None, {entry["inputs"][0]["name"]: batch})[0]
    assert out.shape[0] == 3
    np.testing.assert_allclose(out[:1], data["output_0"], rtol=1e-5, atol=1e-6)
