"""The nine model-zoo networks shipped inside the onnx wheel (tests/onnx/wheel_models.py), converted
by the CLI at every target and run on the real Arm NN runtimes that read each file (19.02 and 20.08
files on 20.08 and 23.08, 23.08 files on 23.08):

- as shipped (every weight ConstantOfShape(0.02)): against the *_output_0.pb that onnx ships, on
  the input onnx's own backend test feeds them, and against onnxruntime;
- with real numerics (seeded random weights, a seeded random input, the logits as a second
  output): against onnxruntime; and once or twice with --layout nhwc at 23.08.

CpuRef seconds per inference, measured on this 2-core machine shared at load 5-6 (20.08 / 23.08
runtime): SqueezeNet 9-37, ShuffleNet 8-13, AlexNet 5-22, ZFNet-512 16-74, Inception v1 35-83,
Inception v2 41-94, DenseNet-121 42-93, ResNet-50 59-250, VGG-19 224-730. SqueezeNet and ShuffleNet
(5 MB files) are in the default run (21 tests, 82 s of CPU); the seven others write 28-575 MB
files and take 2 min (AlexNet) to an hour (VGG-19) each at that load, so they are in the long
tier: marked ``slow`` and run only with ``-m slow`` or ARMNN_IMPORT_LONG=1 (CI's default run skips
them, saying so).
"""
from __future__ import annotations

import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from armnn_import import cli
from armnn_import.ir.types import LayerType
from armnn_import.serialize import read

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # pytest runs with --import-mode=importlib
import wheel_models as W  # noqa: E402

if not W.LIGHT.is_dir():
    pytest.skip(f"this onnx ({onnx.__version__}) ships no model-zoo networks in {W.LIGHT}",
                allow_module_level=True)

DEFAULT = ("squeezenet", "shufflenet")
LONG = pytest.mark.skipif("not (os.environ.get('ARMNN_IMPORT_LONG') == '1' or 'slow' in config.getoption('markexpr'))",
                          reason="long tier (minutes on CpuRef): run with -m slow or ARMNN_IMPORT_LONG=1")
#: (file target, runtime release): every release that reads the file
PAIRS = [("19.02", "20.08"), ("19.02", "23.08"), ("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]
#: onnx's own tolerances for these models (onnx/backend/test/case/model/__init__.py)
RTOL = {"densenet121": 2e-3}
TIMEOUT = 3600  # s: VGG-19 took 730 s an inference on 20.08's CpuRef under load


def _param(name, *rest):
    marks = () if name in DEFAULT else (LONG, pytest.mark.slow)
    return pytest.param(name, *rest, marks=marks, id="-".join([name, *rest]))


RUNS = [_param(n, t, r) for n in W.NAMES for t, r in PAIRS]


class _Files:
    """The last converted file, kept while the next test converts the same model at the same
    target (they run one after the other); the files are up to 575 MB, so only one is kept."""

    def __init__(self, root):
        self.root, self.key, self.path = root, None, None

    def get(self, key, source, *args):
        if key != self.key:
            if self.path is not None:
                self.path.unlink(missing_ok=True)
            self.key, self.path = key, self.root / ("-".join(key) + ".armnn")
            assert cli.main([str(source), "-o", str(self.path), "-q", *args]) == 0
        return self.path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return _Files(tmp_path_factory.mktemp("wheel_models"))


@pytest.fixture(scope="module")
def real_models(tmp_path_factory):
    """name -> (path of the model with real weights, input, onnxruntime's outputs), made once."""
    root, made = tmp_path_factory.mktemp("wheel_real"), {}

    def get(name):
        if name not in made:
            made.clear()  # one at a time: VGG-19 with its weights is 575 MB
            model = W.with_real_weights(name)
            path = root / f"{name}.onnx"
            onnx.save(model, str(path))
            x = W.random_input(model)
            made[name] = path, x, _onnxruntime(path, x)
        return made[name]

    return get


def _onnxruntime(path, x):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})


def _assert_close(got, want, rtol):
    # an absolute floor scaled to the tensor: the random-weight logits run from 1 to 60
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=rtol, atol=1e-5 * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("name, target, release", RUNS)
def test_shipped_model_matches_its_stored_output(name, target, release, files, armnn_runner_for):
    path = W.model_path(name)
    x = W.shipped_input(onnx.load(str(path)))
    out = files.get(("shipped", name, target), path, "--target", target)
    (got,) = armnn_runner_for(release)(out, [x], timeout=TIMEOUT)
    rtol = RTOL.get(name, 1e-3)
    _assert_close(got, W.shipped_output(name), rtol)
    _assert_close(got, _onnxruntime(path, x)[0], rtol)


@pytest.mark.parametrize("name, target, release", RUNS)
def test_real_weights_match_onnxruntime(name, target, release, files, real_models, armnn_runner_for):
    path, x, want = real_models(name)
    out = files.get(("real", name, target), path, "--target", target)
    got = armnn_runner_for(release)(out, [x], timeout=TIMEOUT)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _assert_close(g, w, 1e-3)


@pytest.mark.parametrize("name", [_param("squeezenet"), _param("resnet50")])
def test_nhwc_at_23_08_matches_onnxruntime(name, files, real_models, armnn_runner_for):
    """--layout nhwc at 23.08: NHWC convolutions and pooling, no Permute inside, an NHWC input."""
    path, x, want = real_models(name)
    out = files.get(("nhwc", name), path, "--target", "23.08", "--layout", "nhwc")
    graph = read(out.read_bytes())
    assert not [l for l in graph.layers if l.type in (LayerType.Permute, LayerType.Transpose)]
    assert graph.input_layers[0].outputs[0].shape[-1] == 3
    got = armnn_runner_for("23.08")(out, [x.transpose(0, 2, 3, 1)], timeout=TIMEOUT)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _assert_close(g, w, 1e-3)
