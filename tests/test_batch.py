"""Several models in one command (a failure does not stop the others; a summary
table at the end) and the progress bar for large models."""
from __future__ import annotations

import io
import os
import sys
from pathlib import Path

from armnn_import import cli, progress
from armnn_import.serialize import read

REPO = Path(__file__).resolve().parents[1]
ONNX_MODEL = REPO / "test_models" / "onnx" / "squeezenet_small.onnx"
TFLITE_MODEL = REPO / "test_models" / "tflite" / "models" / "mobilenet_v1_mini.int8.tflite"


def main(capsys, *args):
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def table(out: str) -> dict[str, list[str]]:
    """The summary table's rows by model (columns split on runs of 2+ spaces)."""
    import re
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("model "))
    head = re.split(r"\s{2,}", lines[start].strip())
    assert head == ["model", "output", "status", "layers", "output size", "time"]
    rows = {}
    for line in lines[start + 1:]:
        if " converted" in line:
            break
        cells = re.split(r"\s{2,}", line.strip())
        rows[cells[0]] = cells[1:]
    return rows


def test_one_failure_does_not_stop_the_others(tmp_path, capsys):
    broken = tmp_path / "broken.tflite"
    broken.write_bytes(TFLITE_MODEL.read_bytes()[:2000])  # truncated
    outdir = tmp_path / "outdir"
    code, out, err = main(capsys, ONNX_MODEL, broken, TFLITE_MODEL, "-o", str(outdir) + "/")
    assert code == 1
    assert sorted(os.listdir(outdir)) == ["mobilenet_v1_mini.int8.armnn", "squeezenet_small.armnn"]
    assert err and all(line.startswith(f"armnn-import: error: {broken}: ") for line in err.splitlines())
    rows = table(out)
    assert list(rows) == [str(ONNX_MODEL), str(broken), str(TFLITE_MODEL)]
    assert rows[str(broken)][0] == "failed" and len(rows[str(broken)]) == 2  # status and time only
    for model, name in ((ONNX_MODEL, "squeezenet_small.armnn"), (TFLITE_MODEL, "mobilenet_v1_mini.int8.armnn")):
        output, status, layers, size, seconds = rows[str(model)]
        assert output == os.path.join(str(outdir) + "/", name)
        data = (outdir / name).read_bytes()
        assert status == "ok" and int(layers) == len(read(data).layers)
        assert size.endswith(("KiB", "MiB", " B")) and seconds.endswith(" s")
    assert out.splitlines()[-1] == "2 of 3 converted, 1 failed"


def test_all_converted_exit_0_and_quiet_prints_nothing(tmp_path, capsys):
    code, out, err = main(capsys, ONNX_MODEL, TFLITE_MODEL, "-o", tmp_path)
    assert (code, err) == (0, "") and out.splitlines()[-1] == "2 of 2 converted"
    assert [r[1] for r in table(out).values()] == ["ok", "ok"]
    code, out, err = main(capsys, "--quiet", ONNX_MODEL, TFLITE_MODEL, "-o", tmp_path)
    assert (code, out, err) == (0, "", "")


def test_verify_failure_in_a_batch(tmp_path, capsys):
    # zero float tolerance: the float model's float32 rounding (about 1e-6) fails it; the
    # quantized model is still judged in LSB
    code, out, err = main(capsys, ONNX_MODEL, TFLITE_MODEL, "-o", tmp_path, "--verify", "--rtol", "0", "--atol", "0")
    assert code == 1
    rows = table(out)
    assert rows[str(ONNX_MODEL)][1] == "verify failed" and rows[str(TFLITE_MODEL)][1] == "ok"
    assert (tmp_path / "squeezenet_small.armnn").exists()  # written before it was verified
    assert err.splitlines() == [next(line for line in err.splitlines() if "verify failed" in line)]
    assert out.splitlines()[-1] == "2 of 2 converted, 1 failed verification"


def _zoo(tmp_path, layout):
    """Reference models copied to the relative paths of `layout` (path -> source model)."""
    for rel, src in layout.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(src.read_bytes())
    return [tmp_path / rel for rel in layout]


ONNX_DIR = REPO / "test_models" / "onnx"


def test_same_named_models_go_to_distinct_subfolders(tmp_path, capsys):
    """Model zoos name every file model.onnx: the outputs take the shortest distinct suffix of
    their paths, each file equal to the model's conversion on its own."""
    models = _zoo(tmp_path, {"a/model.onnx": ONNX_MODEL, "b/model.onnx": ONNX_DIR / "resnet_small.onnx",
                             "c/x/model.onnx": ONNX_DIR / "mobilenetv2_small.onnx"})
    outdir = tmp_path / "out"
    code, out, err = main(capsys, *models, "-o", outdir)
    assert (code, err) == (0, "")
    names = ["a/model.armnn", "b/model.armnn", "x/model.armnn"]
    assert sorted(str(p.relative_to(outdir)) for p in outdir.rglob("*.armnn")) == names
    rows = table(out)
    assert [rows[str(m)][:2] for m in models] == [[str(outdir / n), "ok"] for n in names]
    for m, n in zip(models, names):
        code, _, _ = main(capsys, m, "-o", tmp_path / "single.armnn")
        assert code == 0 and (outdir / n).read_bytes() == (tmp_path / "single.armnn").read_bytes()
        assert len(read((outdir / n).read_bytes()).layers) == int(rows[str(m)][2])


def test_shortest_suffix_per_model_and_extensions_kept_in_one_folder(tmp_path):
    paths = [str(tmp_path / p) for p in ("p/a/model.onnx", "q/a/model.onnx", "b/model.onnx", "b/model.tflite",
                                         "other.onnx")]
    assert cli._batch_names(paths) == ["p/a/model", "q/a/model", "model.onnx", "model.tflite", "other"]
    assert cli._batch_names([str(tmp_path / "a.onnx"), str(tmp_path / "b.onnx")]) == ["a", "b"]  # unchanged
    # without -o each output goes next to its model
    assert cli._output_paths(paths[2:4], None) == [str(tmp_path / "b/model.onnx.armnn"),
                                                    str(tmp_path / "b/model.tflite.armnn")]


def test_the_same_file_twice_is_refused(tmp_path, capsys):
    (model,) = _zoo(tmp_path, {"a/model.onnx": ONNX_MODEL})
    (tmp_path / "link").symlink_to(tmp_path / "a")
    os.link(model, tmp_path / "a" / "hard.onnx")
    for other in (tmp_path / "a" / ".." / "a" / "model.onnx", tmp_path / "link" / "model.onnx",
                  tmp_path / "a" / "hard.onnx"):
        code, out, err = main(capsys, model, other, "-o", tmp_path / "out")
        assert (code, out) == (2, "")
        assert err == f"armnn-import: error: {model} and {other} are the same file; give it once\n"
        assert not (tmp_path / "out").exists()


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_on_a_terminal_for_large_models(tmp_path, capsys, monkeypatch):
    fake = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", fake)
    monkeypatch.setattr(progress, "LARGE_MODEL", 1000)  # the reference model is small
    code = cli.main([str(ONNX_MODEL), "-o", str(tmp_path / "m.armnn"), "--verify"])
    assert code == 0
    text = fake.getvalue()
    frames = [f for f in text.split("\r") if f]
    shown = [f.split("] ", 1)[1].split("\x1b")[0] for f in frames if "] " in f]
    phases = [s.split()[1].rstrip(":") for s in shown]
    for name in ("load", "frontend", "passes", "write", "verify"):
        assert name in phases
    assert phases.index("load") < phases.index("frontend") < phases.index("passes") < phases.index("write")
    assert any(s.split()[1] == "passes:" and len(s.split()) == 3 for s in shown)  # e.g. "passes: fold_constants"
    percents = [int(s.split("%")[0]) for s in shown]
    assert percents == sorted(percents) and percents[0] == 0 and percents[-1] < 100
    assert text.endswith("\r\x1b[K")  # the bar is erased when done
    assert capsys.readouterr().out.count("verify: PASS") == 1


def test_no_progress_bar_when_quiet_small_or_not_a_terminal(tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "LARGE_MODEL", 1000)
    assert progress.wanted(ONNX_MODEL, quiet=False, stream=FakeTerminal())
    assert not progress.wanted(ONNX_MODEL, quiet=True, stream=FakeTerminal())
    assert not progress.wanted(ONNX_MODEL, quiet=False, stream=io.StringIO())
    monkeypatch.setattr(progress, "LARGE_MODEL", 20 * 1024 * 1024)
    assert not progress.wanted(ONNX_MODEL, quiet=False, stream=FakeTerminal())  # 2 MB model
    assert not progress.wanted(tmp_path / "missing.onnx", quiet=False, stream=FakeTerminal())
