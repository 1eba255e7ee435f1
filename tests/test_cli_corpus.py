"""Every reference model of test_models/ through the CLI, the path users take (issue 12).

The CLI streams large constants from the model to the file (write_chunks); the API's
to_bytes() builds the whole buffer. A bug in the streaming path wrote 3.4 MB of other
data before the network on real models while the tests compared to_bytes() only. Here
the file the CLI writes must be exactly convert(...).to_bytes(), the size it prints must
be the file's, and the file must read back (the reader, and `armnn-import inspect` in a
real process for a few). The CLI's main() runs in-process (about 370 models, ~20 s); a
few models go through a real `python -m armnn_import` process.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import armnn_import
from armnn_import import cli
from armnn_import.errors import ArmnnImportError
from armnn_import.serialize import read

ROOT = Path(__file__).resolve().parents[1]
MODELS = sorted(p for ext in ("onnx", "tflite") for p in (ROOT / "test_models").rglob(f"*.{ext}"))
LONG_NAMES = ROOT / "test_models" / "tflite" / "models" / "long_names_mlp.float32.tflite"
SUBPROCESS_MODELS = [LONG_NAMES, ROOT / "test_models" / "tflite" / "models" / "resnet_mini.float32.tflite",
                     ROOT / "test_models" / "onnx" / "resnet_small.onnx"]
_SAID = re.compile(r" -> (.+) \((\d+) layers, ([\d,]+) parameters, ([\d,]+) bytes\)$")


def _id(p: Path) -> str:
    return str(p.relative_to(ROOT / "test_models"))


@pytest.mark.parametrize("model", MODELS, ids=[_id(p) for p in MODELS])
def test_cli_file_is_to_bytes(model, tmp_path, capsys):
    out = tmp_path / "out.armnn"
    try:
        want = armnn_import.convert(str(model)).to_bytes()
    except ArmnnImportError as e:  # refused models: the CLI refuses them too, and writes nothing
        code = cli.main([str(model), "-o", str(out)])
        err = capsys.readouterr().err
        assert code == 1 and not e.internal, err
        assert e.lines()[0] in err and os.listdir(tmp_path) == []
        return
    code = cli.main([str(model), "-o", str(out)])
    stdout, err = capsys.readouterr()
    assert code == 0, err
    said = _SAID.search(stdout.strip())
    assert said and said.group(1) == str(out), stdout
    got = out.read_bytes()
    assert int(said.group(4).replace(",", "")) == len(got) == len(want)
    assert got == want, "the CLI's file differs from convert(...).to_bytes()"
    assert len(read(got).layers) == int(said.group(2))
    assert os.listdir(tmp_path) == ["out.armnn"]


def test_corpus_has_a_model_on_the_streaming_path_of_real_models():
    """long_names_mlp is what Keras models converted by TensorFlow look like to the writer:
    names of hundreds of characters per layer and a constant over 1 MiB, streamed. The
    writer's first buffer estimate before the fix (weights + 4 KiB + 512 B a layer) is too
    small for it, i.e. the buffer grows after the large constant is placed."""
    from armnn_import.serialize.writer import _build
    g = armnn_import.convert(str(LONG_NAMES)).network
    weights = [t.stored.nbytes for l in g.layers for t in l.tensors.values()]
    assert max(weights) > 1 << 20
    assert sum(len(l.name) for l in g.layers) / len(g.layers) > 300
    old_estimate = sum(weights) + 4096 + 512 * len(g.layers)
    size = len(armnn_import.convert(str(LONG_NAMES)).to_bytes())
    assert size > old_estimate
    assert _build(g, defer_min=1 << 20, buffer_size=old_estimate).grown >= 1


@pytest.mark.parametrize("model", SUBPROCESS_MODELS, ids=[_id(p) for p in SUBPROCESS_MODELS])
def test_cli_process_writes_to_bytes_and_inspect_reads_it(model, tmp_path):
    out = tmp_path / "out.armnn"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-m", "armnn_import", str(model), "-o", str(out)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == armnn_import.convert(str(model)).to_bytes()
    r = subprocess.run([sys.executable, "-m", "armnn_import", "inspect", "--json", str(out)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["totals"]["layers"] == len(read(out.read_bytes()).layers)


def test_cli_file_of_the_long_names_model_runs_on_arm_nn(armnn_runner, tmp_path, capsys):
    """The file the CLI writes, run on Arm NN 20.08, against LiteRT's outputs."""
    out = tmp_path / "out.armnn"
    assert cli.main(["-q", str(LONG_NAMES), "-o", str(out)]) == 0, capsys.readouterr().err
    stored = np.load(LONG_NAMES.with_suffix(".npz"))
    got = armnn_runner(str(out), [stored["input_0"]])[0]
    want = stored["output_0"]
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-3, atol=1e-4)
    assert np.ptp(want) > 0.1  # a network whose output depends on the input


# -- the written file is checked before it replaces the old one ----------------------------------------
def _corrupt(kind):
    """A write_chunks() that gets one thing wrong, as the streaming writer once did."""
    from armnn_import.serialize import writer

    real = writer.write_chunks

    def write_chunks(graph, *args, **kw):
        size, chunks = real(graph, *args, **kw)
        data = b"".join(bytes(c) for c in chunks)
        if kind == "stale data first":  # the original bug: other bytes, then the network
            return size, iter([b"\xa1\x9fi\xbb" * 100, data])
        if kind == "short":
            return size, iter([data[:-4]])
        if kind == "identifier":
            return size, iter([data[:4], b"TFL3", data[8:]])
        root = (size - 2).to_bytes(4, "little")  # root table past the end, identifier intact
        return size, iter([root, data[4:]])
    return write_chunks


@pytest.mark.parametrize("kind", ["stale data first", "short", "identifier", "root table"])
def test_a_wrong_file_is_never_renamed_over_the_old_one(kind, tmp_path, monkeypatch, capsys):
    from armnn_import.serialize import writer
    model = ROOT / "test_models" / "tflite" / "ops" / "conv_2d.float32.tflite"
    out = tmp_path / "out.armnn"
    out.write_bytes(b"the previous network")
    monkeypatch.setattr(writer, "write_chunks", _corrupt(kind))
    code = cli.main([str(model), "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 3, err
    assert len(err.splitlines()) == 1 and "the written file is not the network" in err, err
    assert out.read_bytes() == b"the previous network" and os.listdir(tmp_path) == ["out.armnn"]
    with pytest.raises(armnn_import.OutputError, match="is not the network"):
        armnn_import.convert(str(model)).save(out)
    assert out.read_bytes() == b"the previous network" and os.listdir(tmp_path) == ["out.armnn"]
