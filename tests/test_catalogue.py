"""`armnn-import ops`: the operator catalogue read from the frontends' registries,
and docs/operators.md, which is its --markdown output."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import tflite
from tflite.BuiltinOperator import BuiltinOperator

from armnn_import import cli
from armnn_import.catalogue import format_markdown, registries
from armnn_import.ir.types import LayerType

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # pytest runs with --import-mode=importlib
from reference_models import NOT_CONVERTING_YET  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "operators.md"
MODELS = REPO / "test_models"


def main(capsys, *args):
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_docs_operators_md_is_current(capsys):
    code, out, err = main(capsys, "ops", "--markdown")
    assert (code, err) == (0, "")
    assert DOC.read_text() == out, ("docs/operators.md is out of date: regenerate it with "
                                    "`armnn-import ops --markdown > docs/operators.md`")


def _markdown_rows(text: str, section: str) -> list[list[str]]:
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in body.splitlines()
            if line.startswith("| ") and not line.startswith("| operator")]


@pytest.mark.parametrize("fmt, title", [("onnx", "ONNX"), ("tflite", "TFLite")])
def test_every_registry_entry_is_listed(fmt, title):
    reg = registries([fmt])[fmt]
    rows = _markdown_rows(format_markdown({fmt: reg}), title)
    entries = reg.entries() + reg.quantized_entries()
    assert len(rows) == len(entries) > 20
    layer_names = {t.name for t in LayerType}
    for row, e in zip(rows, entries):
        assert row[0] == e.op or (e in reg.quantized_entries() and row[0] == f"{e.op} (quantized)")
        assert row[1] in (e.version_range, str(e.since))
        # the layers column names real Arm NN layer types of the schema
        assert row[2] == "-" or set(row[2].split(", ")) <= layer_names, row


def _has_function_body(op: str, opset: int) -> bool:
    import onnx
    try:
        schema = onnx.defs.get_schema(op, opset, "")
    except Exception:  # noqa: BLE001 - not an operator of this opset
        return False
    return any(v <= opset for v in list(schema.function_opset_versions) +
               list(schema.context_dependent_function_opset_versions))


def test_reference_models_ops_are_in_the_catalogue():
    """Every operator of a reference model that converts is listed (model files read with the
    onnx and tflite packages, not with the frontends)."""
    import onnx

    regs = registries()
    onnx_ops = set(regs["onnx"].ops())
    for e in json.loads((MODELS / "onnx" / "manifest.json").read_text())["models"]:
        used = {n.op_type for n in onnx.load(MODELS / "onnx" / e["file"]).graph.node}
        # folded at conversion (static shapes), so not in the registry; (Mod and Range appear
        # in torch's shape arithmetic, which is folded: no run-time operators)
        # (Identity is passed through by the frontend, never registered)
        # (operators with an ONNX function body, such as Attention-23, are replaced by it:
        # frontends/onnx/expand.py)
        left = used - onnx_ops - {"Constant", "Shape", "ConstantOfShape", "Mod", "Range", "Identity"}
        assert {op for op in left if not _has_function_body(op, e["opset"])} == set(), e["file"]
    names = {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_")}
    tfl_ops = set(regs["tflite"].ops())
    for e in json.loads((MODELS / "tflite" / "manifest.json").read_text())["models"]:
        if e["variant"] != "float32":
            continue
        m = tflite.Model.GetRootAsModel((MODELS / "tflite" / e["file"]).read_bytes(), 0)
        codes = {names[max(m.OperatorCodes(i).BuiltinCode(), m.OperatorCodes(i).DeprecatedBuiltinCode())]
                 for i in range(m.OperatorCodesLength())}
        # (a model kept to show a refusal may use an operator refused on purpose; WHILE is unrolled
        # before the registry sees it, when its trip count is fixed: frontends/tflite/unroll.py)
        allowed = set(regs["tflite"].refusals()) if f"tflite/{e['file']}" in NOT_CONVERTING_YET else {"WHILE"}
        assert codes - tfl_ops - allowed == set(), e["file"]


def test_text_listing_and_format_filter(capsys):
    code, out, err = main(capsys, "ops")
    assert (code, err) == (0, "")
    assert out.startswith("ONNX: ") and "\nTFLite: " in out
    assert any(line.split()[:3] == ["Conv", "1+", "Convolution2d,"] for line in out.splitlines())
    code, out, _ = main(capsys, "ops", "--format", "tflite")
    assert code == 0 and out.startswith("TFLite: ") and "ONNX" not in out
    n_ops = len(registries(["tflite"])["tflite"].ops())
    assert out.splitlines()[0].startswith(f"TFLite: {n_ops} operators")
    code, out, err = main(capsys, "ops", "--format", "caffe")
    assert code == 2 and out == "" and err.startswith("armnn-import: error: --format caffe: no such frontend")
