"""Reason codes: every code of armnn_import.errors.REASON_CODES is produced by a real model, the
CLI's line for the problem ends with it, the JSON report (--report) and its text summary carry
it, and `armnn-import ops` (text, --json, --markdown) shows the codes of the registry's
refusals. The models are built here with onnx.helper and tests/tflite/tfl_builder.py, written
to files, and converted by the CLI as a user would."""
from __future__ import annotations

import dataclasses
import json
import os
import sys

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

from armnn_import import cli
from armnn_import.errors import REASON_CODES, Problem, check_code

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tflite"))
from tfl_builder import ModelBuilder  # noqa: E402


def main(capsys, *args):
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _vi(name, shape, t=TP.FLOAT):
    return h.make_tensor_value_info(name, t, shape)


def _onnx(path, nodes, inputs, outputs=None, inits=(), domains=()):
    import onnx
    g = h.make_graph(nodes, "m", inputs, outputs or [_vi("y", None)], list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)] + [h.make_opsetid(d, 1) for d in domains])
    onnx.save(m, path)
    return path


def _x(shape=(1, 3, 4, 4)):
    return [_vi("x", list(shape))]


def _tflite(path, build):
    mb = ModelBuilder()
    build(mb)
    path.write_bytes(mb.build(infer_shapes=False))
    return path


def _tfl_conv(mb, inputs=None, **opts):
    x = mb.input("x", [1, 6, 6, 2])
    w = mb.const("w", np.ones((3, 3, 3, 2), np.float32))
    o = dict(padding="SAME", stride_w=1, stride_h=1, dilation_w_factor=1, dilation_h_factor=1)
    o.update(opts)
    mb.output(mb.op("CONV_2D", inputs or [x, w, -1], "Conv2DOptions", out_shape=[1, 6, 6, 3],
                    out_names=["conv"], **o))


def _boom(monkeypatch):
    """A converter with a bug (it raises RuntimeError): an internal problem, never a refusal."""
    from armnn_import_frontends.onnx.ops import REGISTRY

    def broken(ctx, node):
        raise RuntimeError("boom")
    entries = [dataclasses.replace(e, fn=broken) for e in REGISTRY._entries["Relu"]]
    monkeypatch.setitem(REGISTRY._entries, "Relu", entries)


# code -> [(file name, make(path, monkeypatch), node, words of the reason)]
CASES = {
    "unsupported-op": [
        ("m.onnx", lambda p, mp: _onnx(p, [h.make_node("Foo", ["x"], ["y"], name="foo", domain="com.example")],
                                       _x(), domains=["com.example"]), "foo", "domain 'com.example'"),
        ("m.tflite", lambda p, mp: _tflite(p, lambda mb: mb.output(mb.op(
            "CUSTOM", [mb.input("x", [1, 4])], out_shape=(1, 4), custom_code="MyOp", out_names=["custom"]))),
         "custom", "custom operator 'MyOp'")],
    "inexpressible": [
        ("m.onnx", lambda p, mp: _onnx(p, [h.make_node("Cos", ["x"], ["y"], name="cos")], _x()),
         "cos", "no cosine or tangent"),
        ("m.tflite", lambda p, mp: _tflite(p, lambda mb: mb.output(mb.op(
            "COS", [mb.input("x", [1, 4])], out_shape=(1, 4), out_names=["cos"]))), "cos", "no cosine")],
    "needs-target": [
        ("m.onnx", lambda p, mp: _onnx(p, [h.make_node("ArgMax", ["x"], ["y"], name="argmax", axis=1)], _x()),
         "argmax", "needs the Arm NN 20.08 format")],
    "bad-attribute": [
        ("m.onnx", lambda p, mp: _onnx(p, [h.make_node("Softmax", ["x"], ["y"], name="softmax", axis=7)], _x()),
         "softmax", "out of range"),
        ("m.tflite", lambda p, mp: _tflite(p, lambda mb: _tfl_conv(mb, stride_h=0)), "conv",
         "option stride_h = 0 is out of range")],
    "bad-model": [
        ("m.onnx", lambda p, mp: _onnx(p, [h.make_node("Add", ["x"], ["y"], name="add")], _x()),
         "add", "the model is invalid"),
        ("m.tflite", lambda p, mp: _tflite(p, lambda mb: _tfl_conv(mb, inputs=[mb.input("x", [1, 6, 6, 2])])),
         "conv", "needs 2 input tensors, has 1")],
    "dynamic-shape": [
        ("m.onnx", lambda p, mp: _onnx(p, [h.make_node("NonZero", ["x"], ["y"], name="nonzero")], _x(),
                                       [_vi("y", None, TP.INT64)]), "nonzero", "depends on the data")],
    "needs-constant": [
        ("m.onnx", lambda p, mp: _onnx(p, [h.make_node("Conv", ["x", "w"], ["y"], name="conv")],
                                       _x() + [_vi("w", [2, 3, 1, 1])]), "conv", "must be a constant"),
        ("m.tflite", lambda p, mp: _tflite(p, lambda mb: mb.output(mb.op(
            "TILE", [mb.input("x", [1, 4]), mb.input("reps", [2], np.int32)], out_shape=(2, 4),
            out_names=["tile"]))), "tile", "is not a constant")],
    "unsupported-type": [
        ("m.onnx", lambda p, mp: _onnx(p, [h.make_node("Relu", ["x"], ["y"], name="relu")],
                                       [_vi("x", [1, 4], TP.INT8)], [_vi("y", None, TP.INT8)]),
         "x", "has element type INT8")],
    "internal": [
        ("m.onnx", lambda p, mp: (_boom(mp), _onnx(p, [h.make_node("Relu", ["x"], ["y"], name="relu")], _x()))[1],
         "relu", "internal error RuntimeError: boom")],
}


def test_every_code_has_a_case():
    assert set(CASES) == set(REASON_CODES)


@pytest.mark.parametrize("code,case", [(c, k) for c, cases in CASES.items() for k in range(len(cases))],
                         ids=[f"{c}-{cases[k][0].split('.')[1]}" for c, cases in CASES.items() for k in range(len(cases))])
def test_a_real_model_gets_the_code_on_the_cli_line_and_in_the_report(code, case, tmp_path, capsys, monkeypatch):
    name, make, node, words = CASES[code][case]
    model = make(tmp_path / name, monkeypatch)
    rc, out, err = main(capsys, model, "-o", tmp_path / "m.armnn", "--report", tmp_path / "r.json")
    assert rc == (4 if code == "internal" else 1) and out == "", err
    assert not (tmp_path / "m.armnn").exists()
    line = next((l for l in err.splitlines() if f"(node {node!r}): " in l), None)
    assert line is not None, err
    assert line.startswith(f"armnn-import: error: {model}: ") and words in line and line.endswith(f" [{code}]"), line
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["status"] == "failed"
    mine = [p for p in report["problems"] if p["node"] == node]
    assert [p["code"] for p in mine] == [code] and words in mine[0]["reason"], report["problems"]
    # the text summary (--report) counts the refusals by code
    assert any(l.startswith("  refused: ") and f"{code} 1" in l for l in err.splitlines()), err


def test_problem_codes_are_checked():
    assert Problem("Relu", "r", "x").code == "inexpressible"
    assert Problem("Relu", "r", "x", internal=True).code == "internal"
    assert Problem("Relu", "r", "x", code="bad-model").line() == "Relu (node 'r'): x [bad-model]"
    with pytest.raises(ValueError, match="unknown reason code 'no-such-code'"):
        Problem("Relu", "r", "x", code="no-such-code")
    with pytest.raises(ValueError):
        check_code("Inexpressible")


def test_ops_json_shows_refusals_and_codes(capsys):
    rc, out, err = main(capsys, "ops", "--json")
    assert (rc, err) == (0, "")
    d = json.loads(out)
    assert d["reason_codes"] == REASON_CODES
    refused = {r["op"]: r for r in d["onnx"]["refused"]}
    assert refused["NonZero"]["code"] == "dynamic-shape" and "depends on the data" in refused["NonZero"]["reason"]
    assert refused["Cos"]["code"] == "inexpressible"
    assert {r["op"] for r in d["tflite"]["refused"]} >= {"WHILE", "COS"}
    argmax = next(e for e in d["onnx"]["entries"] if e["op"] == "ArgMax")
    assert argmax["refusals"] == [{"code": "needs-target", "targets": ["19.02"], "reason": argmax["refusals"][0]["reason"],
                                   "hint": "convert with --target 20.08 (read by Arm NN 20.08 and later)"}]
    relu = next(e for e in d["onnx"]["entries"] if e["op"] == "Relu")
    assert relu["refusals"] == [] and relu["needs"] == "19.02"
    for fe in ("onnx", "tflite"):
        for e in d[fe]["entries"] + d[fe]["quantized"]:
            assert all(r["code"] in REASON_CODES for r in e["refusals"])
    # with a target, only what its format holds, and nothing refused for want of a target
    rc, out, _ = main(capsys, "ops", "--json", "--target", "20.08", "--format", "onnx")
    d = json.loads(out)
    assert rc == 0 and set(d) == {"reason_codes", "target", "onnx"} and d["target"] == "20.08"
    assert "Log" not in {e["op"] for e in d["onnx"]["entries"]}
    assert any(e["op"] == "ArgMax" for e in d["onnx"]["entries"])


def test_ops_text_and_markdown_show_the_codes(capsys):
    rc, out, _ = main(capsys, "ops", "--format", "onnx")
    assert rc == 0
    assert any(l.split()[:2] == ["NonZero", "[dynamic-shape]"] for l in out.splitlines()), out
    assert any(l.split()[:2] == ["ArgMax", "1+"] and "[needs-target]" in l for l in out.splitlines())
    rc, out, _ = main(capsys, "ops", "--markdown")
    assert rc == 0
    for code, text in REASON_CODES.items():
        assert f"| {code} | {text} |" in out
    assert "| NonZero | dynamic-shape | output shape depends on the data |" in out
    assert "| WHILE | inexpressible | a WHILE loop whose trip count is not fixed at conversion time" in out
    rc, _, err = main(capsys, "ops", "--markdown", "--json")
    assert rc == 2 and "exclude each other" in err


@pytest.mark.parametrize("fe", ["onnx", "tflite"])
def test_no_operator_is_both_refused_and_registered(fe):
    """A refusal names an operator without a converter: were it registered too, the catalogue
    would list it twice, once as refused."""
    from armnn_import.catalogue import registries
    reg = registries([fe])[fe]
    assert reg.refusals() and not set(reg.refusals()) & set(reg.ops())


def test_a_symbolic_input_dimension_is_a_dynamic_shape_error(tmp_path, capsys):
    """Not a node's problem but the model's (a ConversionError): its line carries the code too."""
    model = _onnx(tmp_path / "m.onnx", [h.make_node("Relu", ["x"], ["y"], name="relu")], [_vi("x", [1, "n"])])
    rc, _, err = main(capsys, model, "-o", tmp_path / "m.armnn")
    assert rc == 1 and err.splitlines() == [
        f"armnn-import: error: {model}: input 'x': dimension 1 is symbolic ('n'); Arm NN needs static shapes, "
        "give them with --input-shape x=d0,d1,... [dynamic-shape]"]
