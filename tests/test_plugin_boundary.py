"""The plugin boundary: the core (armnn_import/) names no model format; a frontend plugin
declares its format's facts (edge layout, identifier, how to run its models for verify),
and a third, toy plugin registered here converts end to end through the CLI, on real Arm NN."""
from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from pathlib import Path

import numpy as np
import pytest

from armnn_import import cli
from armnn_import.ir.graph import Graph
from armnn_import.ir.types import ActivationFunction, DataType, LayerType, TensorInfo
from armnn_import.lowering.builder import NetBuilder
from armnn_import.registry import OpRegistry
from armnn_import.serialize import read
from armnn_import.verify_source import IoSpec, Node

CORE = Path(__file__).resolve().parents[1] / "armnn_import"
FORMAT_WORD = re.compile(r"onnx|tflite|litert|tfl3", re.I)
#: the tokens whose text is scanned. From Python 3.12 on an f-string is not one STRING token but
#: FSTRING_START, FSTRING_MIDDLE (its literal text), the replacement fields' tokens, FSTRING_END
#: (3.14 adds TSTRING_* for t-strings): without the middles the scan misses every f-string there.
SCANNED_TOKENS = {tokenize.NAME, tokenize.STRING} | {
    getattr(tokenize, t) for t in ("FSTRING_MIDDLE", "TSTRING_MIDDLE") if hasattr(tokenize, t)}

#: (file, text on the line) -> why the core may name a format there. Docstrings and comments
#: are prose and not scanned; names, imports and string literals are.
ALLOWED = {
    ("cli.py", 'description="Convert ONNX and TFLite models to Arm NN'):
        "--help: the formats this distribution ships plugins for (built before any plugin loads)",
    ("cli.py", 'description="Convert ONNX or TFLite models to .armnn.'): "--help, as above",
    ("cli.py", 'help="ONNX or TFLite model files"'): "--help, as above",
    ("cli.py", 'description="Run the source model in its own runtime (onnxruntime or LiteRT'): "--help, as above",
    ("cli.py", 'help="the ONNX or TFLite model"'): "--help, as above",
    ("cli.py", 'help="only this model format (onnx or tflite)"'): "--help, as above",
    ("testing/armnn_runtime.py", '"armnn-tflite-anchor"'):
        "test support: the harness's build of Arm NN's own TfLite parser, a reference, not conversion",
    ("testing/armnn_runtime.py", 'f"armnn-tflite-anchor.{kind}"'): "test support, as above",
}


def _code_lines_naming_a_format(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every name, import or string literal (docstrings left out) that
    names a model format."""
    src = path.read_text()
    prose = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                prose.update(range(first.lineno, first.end_lineno + 1))
    lines = src.splitlines()
    hits = {t.start[0] for t in tokenize.generate_tokens(io.StringIO(src).readline)
            if t.type in SCANNED_TOKENS and FORMAT_WORD.search(t.string)
            and t.start[0] not in prose}
    return [(n, lines[n - 1].strip()) for n in sorted(hits)]


def test_the_core_names_no_model_format():
    used, unexpected = set(), []
    for path in sorted(CORE.rglob("*.py")):
        if path.name.endswith("_generated.py"):  # flatc output of the Arm NN schema
            continue
        rel = path.relative_to(CORE).as_posix()
        for n, text in _code_lines_naming_a_format(path):
            key = next((k for k in ALLOWED if k[0] == rel and k[1] in text), None)
            if key is None:
                unexpected.append(f"armnn_import/{rel}:{n}: {text}")
            used.add(key)
    assert unexpected == [], "format knowledge in the core (move it to the frontend plugin):\n" + \
        "\n".join(unexpected)
    assert set(ALLOWED) - used == set(), "allow-list entries that match nothing any more"


def test_the_scan_sees_imports_names_and_strings_but_not_prose(tmp_path):
    f = tmp_path / "m.py"
    f.write_text('"""About ONNX."""\nimport onnx\n# tflite\nx = "TFLite"\nlooks_like_onnx = 1\n'
                 'def f():\n    """TFLite."""\n    return f"{x}.tflite"\n')
    assert [n for n, _ in _code_lines_naming_a_format(f)] == [2, 4, 5, 8]


# -- a toy format: b"TOY1" + JSON {"shape": NHWC input shape, "scale": one factor per channel} ----
# Its model computes relu(x * scale) with the scale along the last (channel) axis.

def _toy_model(shape, scale) -> bytes:
    return b"TOY1" + json.dumps({"shape": list(shape), "scale": list(scale)}).encode()


def _toy_reference(x, scale):
    return np.maximum(x * np.asarray(scale, np.float32), 0)


def _parse(source) -> dict:
    data = source if isinstance(source, bytes) else Path(source).read_bytes()
    return json.loads(data[4:])


class ToySource:
    """The toy format's own runtime (numpy), for `armnn-import verify`."""
    runtime = "the toy runtime"

    def __init__(self, source):
        self.model = _parse(source)
        self.inputs = [IoSpec("x", tuple(self.model["shape"]), np.dtype(np.float32), None)]
        self.outputs = [IoSpec("y", tuple(self.model["shape"]), np.dtype(np.float32), None)]
        self.nodes = [Node("y", "ScaleRelu", "y", [])]

    def run(self, arrays):
        return [_toy_reference(arrays[0], self.model["scale"])]

    def intermediates(self, arrays):
        return {"y": (self.run(arrays)[0], None)}


class ToyFrontend:
    name = "toy"
    title = "Toy"
    version_word = "version"
    extensions = (".toy",)
    identifier = (0, b"TOY1")
    registry = OpRegistry("toy")

    def __init__(self, io_layout="NHWC"):
        self.io_layout = io_layout

    def sniff(self, head, complete=False):
        return False  # the identifier is enough

    def accepts(self, obj):
        return False

    def convert(self, source, options, report):
        m = _parse(source)
        b = NetBuilder(Graph(options.target), report)
        x = b.g.add_input("x", TensorInfo(tuple(m["shape"]), DataType.Float32))
        k = np.asarray(m["scale"], np.float32).reshape(1, 1, 1, -1)
        y = b.activation(b.binary_const(LayerType.Multiplication, x, k, "scale"), ActivationFunction.ReLu, "relu")
        b.g.add_output("y", y)
        return b.g

    def source_runner(self, source):
        return ToySource(source)


class _EntryPoint:
    def __init__(self, obj):
        self.obj = obj

    def load(self):
        return self.obj


@pytest.fixture
def with_toy(monkeypatch):
    """Registers the toy plugin next to the installed ones; returns a setter of its io_layout."""
    import armnn_import.discovery as discovery
    installed = discovery.available_frontends()
    toy = ToyFrontend()
    monkeypatch.setattr(discovery, "available_frontends", lambda: {**installed, "toy": _EntryPoint(toy)})
    return toy


SHAPE, SCALE = (1, 2, 3, 5), [0.5, -1.0, 2.0, 3.0, -0.25]


def _cli(capsys, *args):
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("declared, layout, want_input", [
    ("NHWC", "keep", SHAPE),                    # the model's own layout
    ("NHWC", "nchw", (1, 5, 2, 3)),             # the other one: Permutes at the edges
    ("NHWC", "nhwc", SHAPE),                    # what the plugin declares: nothing to do
    ("NCHW", "nhwc", (1, 3, 5, 2)),             # the same model declared NCHW: (N, C=2, H=3, W=5)
])
def test_a_toy_plugin_declares_its_layout_and_converts_through_the_cli(
        tmp_path, capsys, with_toy, armnn_runner, declared, layout, want_input):
    with_toy.io_layout = declared
    model, out = tmp_path / "m.toy", tmp_path / "m.armnn"
    model.write_bytes(_toy_model(SHAPE, SCALE))
    code, _, err = _cli(capsys, model, "-o", out, "--layout", layout, "--report", tmp_path / "r.json")
    assert code == 0 and f"{model} (toy): " in err, err  # the summary names the plugin's format
    g = read(out.read_bytes())
    assert g.input_layers[0].outputs[0].shape == want_input
    assert g.output_layers[0].inputs[0].info.shape == want_input
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["format"] == "toy"
    assert report["inputs"][0]["source_layout"] == declared
    x = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
    perm = {("NHWC", "nchw"): (0, 3, 1, 2), ("NCHW", "nhwc"): (0, 2, 3, 1)}.get((declared, layout))
    want = _toy_reference(x, SCALE)
    feed, want = (x, want) if perm is None else (x.transpose(perm), want.transpose(perm))
    got = armnn_runner(str(out), [np.ascontiguousarray(feed)])[0]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    # verify runs the source model with the plugin's runner
    code, text, err = _cli(capsys, "verify", model, out, "--report", tmp_path / "r.json")
    assert (code, err) == (0, "") and "the toy runtime" in text and "verify: PASS" in text


def test_a_plugin_without_a_layout_refuses_a_layout_change(tmp_path, capsys, with_toy):
    with_toy.io_layout = None
    model = tmp_path / "m.toy"
    model.write_bytes(_toy_model(SHAPE, SCALE))
    code, _, err = _cli(capsys, model, "-o", tmp_path / "m.armnn", "--layout", "nchw")
    assert code == 1 and len(err.splitlines()) == 1
    assert "the Toy frontend declares no layout" in err and "--layout keep" in err
    code, _, err = _cli(capsys, model, "-o", tmp_path / "m.armnn")
    assert code == 0, err


def test_a_plugins_identifier_claims_the_file_and_names_the_format_in_messages(tmp_path, with_toy):
    from armnn_import.discovery import formats_wanted, frontend_for
    (tmp_path / "m.onnx").write_bytes(_toy_model(SHAPE, SCALE))  # the content decides, not the name
    assert frontend_for(tmp_path / "m.onnx") == "toy"
    assert "Toy (.toy)" in formats_wanted() and "ONNX (.onnx)" in formats_wanted()


def test_the_shipped_plugins_declare_their_facts():
    from armnn_import.discovery import load_frontend
    onnx_fe, tflite_fe = load_frontend("onnx"), load_frontend("tflite")
    assert (onnx_fe.io_layout, tflite_fe.io_layout) == ("NCHW", "NHWC")
    assert (onnx_fe.title, tflite_fe.title) == ("ONNX", "TFLite")
    assert onnx_fe.identifier is None and tflite_fe.identifier == (4, b"TFL3")
    assert callable(onnx_fe.source_runner) and callable(tflite_fe.source_runner)


def test_an_identifier_wins_over_any_plugins_heuristic(tmp_path, monkeypatch):
    """A plugin whose sniff() claims every file (asked first: plugins go in name order) still
    loses a file that carries another format's identifier, and an .armnn file stays the core's."""
    import armnn_import.discovery as discovery
    from armnn_import.discovery import frontend_for

    class Greedy(ToyFrontend):
        identifier = None

        def sniff(self, head, complete=False):
            return True
    installed = discovery.available_frontends()
    monkeypatch.setattr(discovery, "available_frontends", lambda: {**installed, "aaa": _EntryPoint(Greedy())})
    tfl = next((Path(__file__).resolve().parents[1] / "test_models" / "tflite" / "models").glob("*.tflite"))
    assert frontend_for(tfl) == "tflite"
    (tmp_path / "m.toy").write_bytes(_toy_model(SHAPE, SCALE))
    assert frontend_for(tmp_path / "m.toy") == "aaa"  # no plugin has its identifier: the heuristic decides
    (tmp_path / "n.armnn").write_bytes(b"\x10\x00\x00\x00ARMN" + bytes(8))
    assert frontend_for(tmp_path / "n.armnn") == "armnn"
