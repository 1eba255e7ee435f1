"""Hostile inputs of issue 17: a FIFO or a device given as the model (item 2), and the
exit code of an internal error inside conversion (item 5: 4, never 1)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from armnn_import import cli

ROOT = Path(__file__).resolve().parents[1]
ONNX_MODEL = ROOT / "test_models" / "onnx" / "resnet_small.onnx"
TFLITE_MODEL = ROOT / "test_models" / "tflite" / "ops" / "conv_2d.float32.tflite"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def _cli(*args, timeout=60):
    """A real process, so that a hang is a timeout (a failure) and not a hung test run."""
    return subprocess.run([sys.executable, "-m", "armnn_import", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=ENV, stdin=subprocess.DEVNULL)


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "model.onnx"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("command", ["convert", "inspect", "verify source", "verify file"])
def test_fifo_is_refused_not_waited_on(fifo, tmp_path, command):
    args = {"convert": [fifo, "-o", tmp_path / "out.armnn"], "inspect": ["inspect", fifo],
            "verify source": ["verify", fifo, tmp_path / "x.armnn"],
            "verify file": ["verify", ONNX_MODEL, fifo]}[command]
    r = _cli(*args)
    assert r.returncode == 1, r.stderr
    assert r.stderr == (f"armnn-import: error: {fifo}: is a FIFO (named pipe); only a regular file can be read "
                        f"as a {'.armnn' if command == 'inspect' else 'model' if command != 'verify file' else 'model or .armnn'} "
                        "file (save a stream to a file first)\n")
    assert sorted(os.listdir(tmp_path)) == ["model.onnx"]


def test_fifo_through_the_api_is_a_load_error(fifo):
    script = ("import sys, armnn_import\n"
              "for f in (armnn_import.convert, armnn_import.load):\n"
              "    try:\n        f(sys.argv[1])\n    except armnn_import.LoadError as e:\n        print(e)\n")
    r = subprocess.run([sys.executable, "-c", script, str(fifo)], capture_output=True, text=True, timeout=60,
                       env=ENV)
    assert r.returncode == 0, r.stderr
    assert [line.split(": ", 1)[1] for line in r.stdout.splitlines()] == [
        "is a FIFO (named pipe); only a regular file can be read as a model file (save a stream to a file first)",
        "is a FIFO (named pipe); only a regular file can be read as a .armnn file (save a stream to a file first)"]


def test_a_device_is_refused(tmp_path):
    r = _cli("/dev/zero", "-o", tmp_path / "out.armnn")
    assert r.returncode == 1 and "/dev/zero: is a character device; only a regular file" in r.stderr


def test_a_symlink_to_a_model_still_converts(tmp_path):
    link = tmp_path / "link.tflite"
    link.symlink_to(TFLITE_MODEL)
    assert cli.main(["-q", str(link), "-o", str(tmp_path / "out.armnn")]) == 0


# -- exit code 4: an internal error is never reported as a refusal --------------------------------------
def test_exception_inside_an_onnx_lowering_is_exit_4(tmp_path, monkeypatch, capsys):
    """The ONNX frontend collects every node's problem; an unexpected exception among
    them is a bug: exit 4 and said so, not 1 (a refusal of the model)."""
    from armnn_import_frontends.onnx import convert as onnx_convert

    def boom(self, node, *rest):
        raise ValueError("boom")
    monkeypatch.setattr(onnx_convert.Converter, "_lower", boom)
    code = cli.main([str(ONNX_MODEL), "-o", str(tmp_path / "out.armnn")])
    err = capsys.readouterr().err.splitlines()
    assert code == 4
    assert "cannot be lowered (internal error ValueError: boom)" in err[0]
    assert err[-1] == (f"armnn-import: error: {ONNX_MODEL}: internal error: the above is a bug in armnn-import; "
                       "please report it with the command line and the model")
    assert os.listdir(tmp_path) == []


def test_lowering_giving_a_wrong_shape_is_exit_4(tmp_path, monkeypatch, capsys):
    """The check that a lowering's shape is ONNX's (item 5 reached it with a Pad) is an
    internal error too."""
    from armnn_import.lowering.builder import Unsupported
    from armnn_import_frontends.onnx import convert as onnx_convert

    real = onnx_convert.Converter.lshape

    def wrong(self, port):
        shape = real(self, port)
        return tuple(shape[:-1]) + (shape[-1] + 1,) if len(self.g.layers) > 3 else shape
    monkeypatch.setattr(onnx_convert.Converter, "lshape", wrong)
    # without the model's own value_info: a shape the model declares and we disagree with
    # is the model's fault (an invalid model, exit 1), one that only inference gives is ours
    import onnx
    m = onnx.load(str(ONNX_MODEL))
    del m.graph.value_info[:]
    src = tmp_path / "no_value_info.onnx"
    onnx.save(m, str(src))
    code = cli.main([str(src), "-o", str(tmp_path / "out.armnn")])
    err = capsys.readouterr().err
    assert code == 4 and "ONNX shape inference says" in err and "internal error" in err, err
    assert Unsupported  # (the check no longer raises Unsupported: that would be a refusal)


def test_exception_inside_a_tflite_converter_is_exit_4(tmp_path, monkeypatch, capsys):
    from armnn_import_frontends.tflite import convert as tfl_convert

    def boom(*a, **k):
        raise RuntimeError("boom")
    monkeypatch.setattr(tfl_convert.Ctx, "node", boom)
    code = cli.main([str(TFLITE_MODEL), "-o", str(tmp_path / "out.armnn")])
    err = capsys.readouterr().err
    assert code == 4 and "internal error: RuntimeError: boom -- this is a bug" in err, err
    assert os.listdir(tmp_path) == []


def test_a_refusal_is_still_exit_1(tmp_path, capsys):
    model = ROOT / "test_models" / "tflite" / "ops" / "exp.int8.tflite"
    assert cli.main([str(model), "-o", str(tmp_path / "out.armnn")]) == 1
    assert "internal" not in capsys.readouterr().err
