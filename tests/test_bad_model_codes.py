"""An invalid model is refused as one: every problem whose message says the model is invalid
(or inconsistent) carries the reason code bad-model, not the default (inexpressible). A scan
of the frontends' sources (ast) checks each raise of such a message; models built here, which
onnxruntime refuses as well (the independent word that they are invalid), go through the CLI
and must print `[bad-model]` on their line."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

from armnn_import import cli

ROOT = Path(__file__).resolve().parents[1]
#: what a message says when the model, not the converter, is at fault
SAYS_INVALID = re.compile(r"model is invalid|inconsistent (model|operator)")
#: the problems a converter raises or returns, each taking code=
PROBLEMS = {"Unsupported", "Refusal", "LoadError", "ConversionError"}


def _text(node) -> str:
    """The literal text of a call's arguments (f-string pieces and implicit concatenations)."""
    return " ".join(n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str))


def uncoded(root: Path) -> list[str]:
    """file:line of every problem saying the model is invalid that lacks code="bad-model"."""
    found = []
    for f in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name not in PROBLEMS or not any(SAYS_INVALID.search(_text(a)) for a in node.args):
                continue
            code = next((k.value for k in node.keywords if k.arg == "code"), None)
            if not (isinstance(code, ast.Constant) and code.value == "bad-model"):
                found.append(f"{f.relative_to(root).as_posix()}:{node.lineno}")
    return found


def test_every_invalid_model_problem_in_the_frontends_says_bad_model():
    assert uncoded(ROOT / "frontends") == []


def test_the_scan_sees_a_problem_without_the_code(tmp_path):
    (tmp_path / "m.py").write_text(
        'raise Unsupported(f"x {1} (the model is invalid)")\n'
        'raise Unsupported("a" "(the model is invalid)", code="bad-model")\n'
        'raise errors.LoadError("inconsistent model: " + str(e), code="inexpressible")\n'
        'raise Unsupported("no exact lowering")\n'
        'ok = Refusal(f"{n} inputs (the model is invalid)", "", "bad-model")\n')
    assert uncoded(tmp_path) == ["m.py:1", "m.py:3", "m.py:5"]  # the code must be named


def _vi(name, shape):
    return h.make_tensor_value_info(name, TP.FLOAT, shape)


def _model(path, node, inputs, inits=()):
    g = h.make_graph([node], "m", inputs, [_vi("y", None)], [nh.from_array(a, n) for n, a in inits])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), path)
    return path


W45 = [("w", np.ones((4, 5), np.float32))]
# name -> (node, inputs, initializers, words of the reason); the node is named "n"
CASES = {
    "matmul": (h.make_node("MatMul", ["x", "w"], ["y"], name="n"), [_vi("x", [2, 3])], W45,
               "inner dimensions differ"),
    "gemm": (h.make_node("Gemm", ["x", "w"], ["y"], name="n"), [_vi("x", [2, 3])], W45, "do not multiply"),
    "add": (h.make_node("Add", ["x", "z"], ["y"], name="n"), [_vi("x", [2, 3]), _vi("z", [4])], (),
            "do not broadcast"),
    "concat": (h.make_node("Concat", ["x", "z"], ["y"], name="n", axis=1), [_vi("x", [1, 2, 3]), _vi("z", [1, 2, 4])],
               (), "cannot be concatenated on axis 1"),
    "batchnorm": (h.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="n"), [_vi("x", [1, 3, 2, 2])],
                  [(k, np.ones(2 if k == "s" else 3, np.float32)) for k in "sbmv"], "values for 3 channels"),
    # an attribute of the wrong type: the loader's error (not a node's refusal), with the code too
    "flatten": (h.make_node("Flatten", ["x"], ["y"], name="n", axis=1.0), [_vi("x", [1, 3, 4])], (),
                "attribute 'axis' is FLOAT, but Flatten takes INT"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_invalid_model_prints_bad_model_on_its_line(case, tmp_path, capsys):
    node, inputs, inits, words = CASES[case]
    model = _model(tmp_path / f"{case}.onnx", node, inputs, inits)
    with pytest.raises(Exception):  # onnxruntime: the model is invalid (at load or at run)
        s = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        s.run(None, {i.name: np.zeros(i.shape, np.float32) for i in s.get_inputs()})
    out = tmp_path / "m.armnn"
    rc = cli.main([str(model), "-o", str(out)])
    _, err = capsys.readouterr()
    assert rc == 1 and not out.exists(), err
    line = next(l for l in err.splitlines() if words in l)
    assert line.startswith(f"armnn-import: error: {model}: ") and "(the model is invalid)" in line, line
    assert line.endswith(" [bad-model]"), line
