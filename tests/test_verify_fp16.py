"""verify's defaults for a Float16 network (--fp16): its outputs carry Float16 roundings, so the
default float tolerance is rtol 1e-2 plus 2% of each output's largest |value|; a tolerance the
user gives stays as given, and a wrong weight still fails. Expected numbers: onnxruntime / LiteRT
against Arm NN CpuRef (and the numpy executor)."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import armnn_import
from armnn_import import cli
from armnn_import.errors import UnsupportedModelError
from armnn_import.ir.types import LayerType
from armnn_import.verify_cmd import Tolerance, verify
from armnn_import.verify_compare import FLOAT16, FLOAT32

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_models import ROOT, all_models, flip_weight  # noqa: E402

# float models with stored inputs whose Float16 networks are off by more than the Float32
# defaults allow (checked below), so the Float16 defaults are what lets them pass
NEED_FLOAT16_DEFAULTS = {"onnx/resnet_small.onnx", "onnx/gru_2layer_bidir.onnx",
                         "tflite/models/mobilenet_v2_035.float32.tflite"}
FLOAT_MODELS = [i for i, p, _ in all_models()
                if (i.startswith("onnx/") and p.suffix == ".onnx" or i.endswith(".float32.tflite"))
                # (its Where of the padding mask selects with +-FLT_MAX / 2 * 4 = +-inf: past Float16,
                # so --fp16 refuses it, as it should)
                and i != "onnx/padded_encoder.onnx"]
# (each target on the oldest runtime that reads it; the 19.02 format on 20.08 too)
TARGETS = [("19.02", "20.08"), ("20.08", "20.08"), ("23.08", "23.08")]


def _npz(model: str) -> str:
    return str(ROOT / model).rsplit(".", 1)[0] + ".npz"


def _inputs(model: str) -> list:
    """The stored inputs (the .npz also holds the expected outputs, output_N)."""
    with np.load(_npz(model)) as z:
        return [z[k] for k in sorted(z.files) if k.startswith("input_")]


@pytest.mark.parametrize("target,release", TARGETS)
@pytest.mark.parametrize("model", FLOAT_MODELS)
def test_float16_network_passes_with_the_defaults_on_the_runtime(model, target, release, armnn_runner_for):
    xs = _inputs(model)
    try:
        result = armnn_import.convert(ROOT / model, fp16=True, target=target, fp16_inputs=xs)
    except UnsupportedModelError as e:  # a layer only a richer target has: not a Float16 question
        assert target != "23.08", e  # (23.08 takes every float reference model)
        pytest.skip(f"not convertible at {target}")
    data = result.to_bytes()
    runtime = armnn_runner_for(release).path
    check = verify(ROOT / model, data, inputs=xs, armnn_runtime=runtime)
    assert check.ok, check.format()
    assert "x max |ref|" in check.format()
    if model in NEED_FLOAT16_DEFAULTS:  # the Float16 defaults are needed, not merely allowed
        strict = verify(ROOT / model, data, inputs=xs, armnn_runtime=runtime, tolerance=FLOAT32)
        assert not strict.ok, strict.format()


def test_float32_network_keeps_the_float32_defaults():
    xs = _inputs("onnx/resnet_small.onnx")
    check = verify(ROOT / "onnx/resnet_small.onnx", armnn_import.convert(ROOT / "onnx/resnet_small.onnx").to_bytes(),
                   inputs=xs)
    assert check.ok and "rtol 0.001, atol 0.0001, 1 LSB" in check.format()


def test_given_tolerance_stays_absolute(tmp_path, capsys):
    model = ROOT / "onnx/resnet_small.onnx"
    out = tmp_path / "r16.armnn"
    code = cli.main([str(model), "--fp16", "--inputs", _npz("onnx/resnet_small.onnx"), "-o", str(out)])
    assert code == 0
    capsys.readouterr()
    code = cli.main(["verify", str(model), str(out), "--inputs", _npz("onnx/resnet_small.onnx")])
    text = capsys.readouterr().out
    assert code == 0 and "verify: PASS (rtol 0.01, atol 0.02 x max |ref|, 1 LSB)" in text
    code = cli.main(["verify", str(model), str(out), "--inputs", _npz("onnx/resnet_small.onnx"),
                     "--atol", "1e-6", "--rtol", "0"])
    text = capsys.readouterr().out
    assert code == 1 and "verify: FAIL (rtol 0, atol 1e-06, 1 LSB)" in text
    # --rtol alone keeps the Float16 atol
    code = cli.main(["verify", str(model), str(out), "--inputs", _npz("onnx/resnet_small.onnx"), "--rtol", "0.05"])
    assert code == 0 and "(rtol 0.05, atol 0.02 x max |ref|, 1 LSB)" in capsys.readouterr().out


def test_wrong_weight_in_a_float16_network_still_fails(armnn_runner_for):
    model = "onnx/resnet_small.onnx"
    xs = _inputs(model)
    result = armnn_import.convert(ROOT / model, fp16=True, fp16_inputs=xs)
    layer = flip_weight(result, LayerType.Convolution2d)
    assert layer.tensors["weights"].data.dtype == np.float16
    for runtime in (None, armnn_runner_for("20.08").path):
        check = verify(ROOT / model, result.to_bytes(), inputs=xs, armnn_runtime=runtime)
        assert not check.ok, check.format()


def test_tolerance_resolution():
    assert Tolerance().resolved() == FLOAT32
    assert Tolerance().resolved(float16=True) == FLOAT16
    given = Tolerance(atol=1e-3).resolved(float16=True)
    assert (given.rtol, given.atol, given.atol_of_max) == (FLOAT16.rtol, 1e-3, False)
    ref = np.array([0.5, -40.0, np.inf], np.float32)
    assert FLOAT16.atol_for(ref) == pytest.approx(0.8)  # 2% of the largest finite |ref|
    assert Tolerance(atol=1e-3).atol_for(ref) == 1e-3
    assert str(Tolerance(lsb=2)) == "rtol 0.001, atol 0.0001, 2 LSB"
    assert str(FLOAT16) == "rtol 0.01, atol 0.02 x max |ref|, 1 LSB"
