"""The conversion report: `--report report.json`, the summary on stderr, phase
timings and what the report says about inputs, outputs and quantization
(checked against the model files read with onnx and LiteRT)."""
from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest
from ai_edge_litert.interpreter import Interpreter

import armnn_import
from armnn_import import cli
from armnn_import.report import Report, format_summary
from armnn_import.serialize import read

REPO = Path(__file__).resolve().parents[1]
ONNX_MODEL = REPO / "test_models" / "onnx" / "resnet_small.onnx"
INT8_MODEL = REPO / "test_models" / "tflite" / "models" / "mobilenet_v1_mini.int8.tflite"


def main(capsys, *args):
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_report_json_of_an_onnx_model(tmp_path, capsys):
    out_file, report_file = tmp_path / "m.armnn", tmp_path / "r.json"
    code, out, err = main(capsys, ONNX_MODEL, "-o", out_file, "--report", report_file)
    assert code == 0
    rep = json.loads(report_file.read_text())
    model = onnx.load(ONNX_MODEL)
    assert rep["format"] == "onnx" and rep["source"] == str(ONNX_MODEL) and rep["status"] == "ok"
    assert [(n["node"], n["op"]) for n in rep["nodes"]] == [(n.name, n.op_type) for n in model.graph.node]
    graph = read(out_file.read_bytes())
    names = {l.name for l in graph.layers}
    assert all(n["layers"] for n in rep["nodes"])
    # every node's layers are in the file, but the Flatten before the Gemm: its Reshape is the
    # FullyConnected's own flatten, which passes/fc_flatten.py drops (the FC reads the 4-D tensor)
    gone = [n["op"] for n in rep["nodes"] if not set(n["layers"]) & names]
    assert gone == ["Flatten"], gone
    assert rep["output"] == {"path": str(out_file), "bytes": out_file.stat().st_size, "layers": len(graph.layers)}
    for phase in ("load", "frontend", "passes", "write"):
        assert 0.0 <= rep["timings"][phase] < 60
    assert rep["timings"]["passes"] >= sum(v for k, v in rep["timings"].items() if k.startswith("pass:")) * 0.99
    [inp], [outp] = rep["inputs"], rep["outputs"]
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert (inp["name"], inp["shape"], inp["dtype"]) == (model.graph.input[0].name, dims, "Float32")
    assert (inp["source_layout"], inp["layout"]) == ("NCHW", "NCHW")
    assert (outp["name"], outp["shape"]) == (model.graph.output[0].name, [1, 10])
    assert "layout" not in outp  # 2-D: no layout
    assert rep["passes"] and all(isinstance(v, int) for v in rep["passes"].values())
    # the summary on stderr
    lines = err.splitlines()
    assert lines[0] == f"{ONNX_MODEL} (onnx): {len(model.graph.node)} nodes -> {len(graph.layers)} layers"
    assert any(line.startswith("  time: load ") and "frontend" in line and "write" in line for line in lines)
    assert "  inputs: input 1x3x40x48 Float32 (NCHW)" in lines


def test_report_of_a_quantized_model(tmp_path, capsys):
    report_file = tmp_path / "r.json"
    code, _, err = main(capsys, INT8_MODEL, "-o", tmp_path / "m.armnn", "--report", report_file)
    assert code == 0
    rep = json.loads(report_file.read_text())
    it = Interpreter(model_path=str(INT8_MODEL))
    (scale, zero_point), name = it.get_input_details()[0]["quantization"], it.get_input_details()[0]["name"]
    [inp] = rep["inputs"]
    assert inp["name"] == name and inp["dtype"] == "QuantisedAsymm8"
    assert inp["quantization"]["offset"] == zero_point + 128
    assert inp["quantization"]["scale"] == pytest.approx(scale, rel=1e-6)
    decisions = [q["decision"] for q in rep["quantization"]]
    assert any("int8 model input becomes uint8 (value + 128)" in d for d in decisions)
    # per-channel int8 weights: kept exact (a convolution per channel run), or requantized per
    # tensor with the error reported
    per_channel = [q for q in rep["quantization"] if "per-channel" in q["decision"]]
    assert per_channel and all("kept exact" in q["decision"] or 0 <= q["worst_error"] < 1 for q in per_channel)
    assert "quantization decisions:" in err
    assert ("worst weight error" in err) == any("worst_error" in q for q in per_channel)


def test_quiet_and_no_report_print_no_summary(tmp_path, capsys):
    code, out, err = main(capsys, "--quiet", ONNX_MODEL, "-o", tmp_path / "m.armnn", "--report", tmp_path / "r.json")
    assert (code, out, err) == (0, "", "")
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "ok"
    code, out, err = main(capsys, ONNX_MODEL, "-o", tmp_path / "m.armnn")
    assert code == 0 and err == ""


def test_report_of_several_models_with_a_failure(tmp_path, capsys):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07" + b"\xff" * 10)  # starts like a ModelProto, then garbage
    report_file = tmp_path / "r.json"
    code, _, err = main(capsys, ONNX_MODEL, bad, "-o", tmp_path / "out", "--report", report_file, "--verify")
    assert code == 1
    reps = json.loads(report_file.read_text())
    assert [r["status"] for r in reps] == ["ok", "failed"]
    assert reps[0]["verify"]["ok"] is True and reps[0]["verify"]["outputs"][0]["name"] == "output"
    assert reps[0]["timings"]["verify"] > 0
    assert reps[1]["errors"] and all(str(bad) in e for e in reps[1]["errors"])
    assert all(f"armnn-import: error: {e}" in err for e in reps[1]["errors"])


def test_report_path_that_cannot_be_written(tmp_path, capsys):
    code, _, err = main(capsys, ONNX_MODEL, "-o", tmp_path / "m.armnn", "--report", tmp_path / "no" / "r.json")
    assert code == 3 and err.splitlines()[-1].startswith("armnn-import: error: --report ")


def test_listener_sees_the_phases_in_order():
    seen = []
    report = Report(listener=seen.append)
    result = armnn_import.convert(ONNX_MODEL, report=report)
    result.to_bytes()
    top = [p for p in seen if p in ("load", "frontend", "passes", "write")]
    assert top == ["load", "frontend", "passes", "write"]
    passes = [p for p in seen if p.startswith("pass:")]
    assert passes and seen.index("passes") < seen.index(passes[0])
    d = report.to_dict()
    assert "listener" not in d
    json.dumps(d)  # plain data


def test_summary_mentions_decisions():
    report = Report(source="m.tflite", format="tflite", warnings=["w1", "w2"],
                    decompositions={"HARD_SWISH": "x * relu6(x + 3) / 6"}, folded=["a"],
                    quantization=[{"decision": "per-channel int8 weights requantized", "worst_error": 0.031}],
                    timings={"load": 0.5, "frontend": 1.25, "pass:x": 0.1})
    text = format_summary(report, layers=7)
    assert text.splitlines() == [
        "m.tflite (tflite): 0 nodes -> 7 layers",
        "  decomposed: HARD_SWISH",
        "  folded to constants: 1",
        "  quantization decisions: 1 (worst weight error 3.10% of a channel's range)",
        "  warnings: 2",
        "  time: load 0.50 s, frontend 1.25 s",
    ]
