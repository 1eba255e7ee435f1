"""The Python API: convert() on paths, bytes, onnx.ModelProto and tflite.Model,
the result object, load(), typed errors, and the README's Python examples."""
from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import tflite

import armnn_import
from armnn_import.errors import (ArmnnImportError, ConversionError, GraphError, LoadError, OutputError,
                                 ReadError, SerializationError, UnsupportedModelError)
from armnn_import.executor import run

REPO = Path(__file__).resolve().parents[1]
ONNX_MODEL = REPO / "test_models" / "onnx" / "resnet_small.onnx"
TFLITE_MODEL = REPO / "test_models" / "tflite" / "models" / "mobilenet_v1_mini.float32.tflite"


def readme_python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", (REPO / "README.md").read_text(), re.S | re.M)


def test_readme_python_examples_run(tmp_path, monkeypatch, capsys):
    blocks = readme_python_blocks()
    assert len(blocks) >= 4
    (tmp_path / "test_models").symlink_to(REPO / "test_models")
    monkeypatch.chdir(tmp_path)
    for i, code in enumerate(blocks):
        exec(compile(code, f"README.md python block {i + 1}", "exec"), {"__name__": f"readme_{i}"})
    out = capsys.readouterr().out
    assert "verify: PASS" in out and "LoadError" in out
    assert (tmp_path / "resnet_small.armnn").is_file()


def test_every_kind_of_source_gives_the_same_file():
    data = ONNX_MODEL.read_bytes()
    from_path = armnn_import.convert(ONNX_MODEL).to_bytes()
    assert armnn_import.convert(str(ONNX_MODEL)).to_bytes() == from_path
    assert armnn_import.convert(data).to_bytes() == from_path
    assert armnn_import.convert(onnx.load_from_string(data)).to_bytes() == from_path

    buf = TFLITE_MODEL.read_bytes()
    from_path = armnn_import.convert(TFLITE_MODEL).to_bytes()
    assert armnn_import.convert(buf).to_bytes() == from_path
    assert armnn_import.convert(bytearray(buf)).to_bytes() == from_path
    assert armnn_import.convert(tflite.Model.GetRootAsModel(buf, 0)).to_bytes() == from_path


def test_result_save_load_and_report(tmp_path):
    result = armnn_import.convert(ONNX_MODEL)
    path = tmp_path / "m.armnn"
    result.save(path)
    assert path.read_bytes() == result.to_bytes()
    assert sorted(os.listdir(tmp_path)) == ["m.armnn"]
    graph = armnn_import.load(path)
    assert [l.name for l in graph.layers] == [l.name for l in result.network.layers]
    # the loaded network computes what onnxruntime computes
    data = np.load(ONNX_MODEL.with_suffix(".npz"))
    ref = ort.InferenceSession(str(ONNX_MODEL), providers=["CPUExecutionProvider"]).run(
        None, {"input": data["input_0"]})[0]
    np.testing.assert_allclose(run(graph, [data["input_0"]])[0], ref, rtol=1e-3, atol=1e-4)
    for phase in ("load", "frontend", "passes", "write"):
        assert result.report.timings[phase] >= 0.0
    assert result.report.format == "onnx" and result.report.source == str(ONNX_MODEL)


def test_errors_are_typed():
    for cls in (LoadError, ReadError, UnsupportedModelError, ConversionError, GraphError,
                SerializationError, OutputError):
        assert issubclass(cls, ArmnnImportError)
    for bad, cls in ((b"\x00\x01junk", LoadError), (object(), LoadError), ("no/such/model.onnx", LoadError),
                     (b"", LoadError)):
        with pytest.raises(cls):
            armnn_import.convert(bad)
    with pytest.raises(ConversionError, match="layout"):
        armnn_import.convert(ONNX_MODEL, layout="sideways")
    with pytest.raises(LoadError, match="already an .armnn"):
        armnn_import.convert(armnn_import.convert(ONNX_MODEL).to_bytes())
    with pytest.raises(ReadError):
        armnn_import.load(ONNX_MODEL)
    with pytest.raises(LoadError):
        armnn_import.load("no/such/file.armnn")
    with pytest.raises(OutputError):
        armnn_import.convert(ONNX_MODEL).save("/no/such/folder/m.armnn")


@pytest.mark.parametrize("model", [ONNX_MODEL, TFLITE_MODEL])
def test_fp16_stores_float16_weights(model):
    fp32 = armnn_import.convert(model)
    fp16 = armnn_import.convert(model, fp16=True)
    weights = [sum(t.data.nbytes for l in r.network.layers for t in l.tensors.values()) for r in (fp32, fp16)]
    assert weights[1] * 2 == weights[0]
    assert len(fp16.to_bytes()) < len(fp32.to_bytes())


def test_convert_options_reach_the_frontend():
    q = TFLITE_MODEL.with_name("mobilenet_v1_mini.uint8.tflite")
    assert armnn_import.convert(q).report.inputs[0]["dtype"] == "QuantisedAsymm8"
    assert armnn_import.convert(q, dequantize=True).report.inputs[0]["dtype"] == "Float32"
