"""Keras models as the TFLite converter writes them (scripts/gen_keras_layer_models.py; the whole
sweep is docs/keras-sweep.md), through the CLI, against LiteRT's stored outputs.

- 16x8 mode (int16 activations, int8 weights, int64 biases): refused at every target with the
  --dequantize hint; with --dequantize, a float32 network that matches LiteRT's int16 kernels
  to a few output steps on every runtime that reads the file.
- Keras 3 recurrent layers: a WHILE loop, refused with the unroll=True hint."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from armnn_import import cli

MODELS = Path(__file__).resolve().parents[2] / "test_models" / "tflite" / "models"
CONV_16X8 = MODELS / "keras_conv_big.16x8"
GRU_WHILE = MODELS / "keras_gru_seq.float32"
READS = [("19.02", "20.08"), ("19.02", "23.08"), ("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]


def _refused(path, target, capsys, *args):
    code = cli.main([str(path), "-o", "/nonexistent/never.armnn", "--target", target, *args])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and "internal error" not in err, err
    return [ln for ln in err.splitlines() if ln.startswith("armnn-import: error:")]


@pytest.mark.parametrize("target", ["19.02", "20.08", "23.08"])
def test_16x8_model_is_refused_with_the_dequantize_hint(target, capsys):
    lines = _refused(f"{CONV_16X8}.tflite", target, capsys)
    assert lines and all("16-bit quantized tensor" in ln and "16x8 mode" in ln and
                         "hint: --dequantize converts the model to a float32 network" in ln for ln in lines)


@pytest.mark.parametrize("target, release", READS)
def test_16x8_model_with_dequantize_on_the_runtime(target, release, armnn_runner_for, tmp_path):
    out = tmp_path / "m.armnn"
    assert cli.main([f"{CONV_16X8}.tflite", "-o", str(out), "-q", "--target", target, "--dequantize"]) == 0
    ref = np.load(f"{CONV_16X8}.npz")
    got, = armnn_runner_for(release)(str(out), [ref["input_0"]])
    want = ref["output_0"]
    assert got.dtype == np.float32
    # LiteRT computes in int16 (symmetric, scale = max |output| / 32767): a few of those steps apart
    step = np.abs(want).max() / 32767
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=0, atol=4 * step)


@pytest.mark.parametrize("target", ["19.02", "23.08"])
def test_keras3_recurrent_while_loop_is_refused_with_the_unroll_hint(target, capsys):
    lines = _refused(f"{GRU_WHILE}.tflite", target, capsys)
    assert len(lines) == 1 and "WHILE" in lines[0] and "unroll=True" in lines[0] and "[inexpressible]" in lines[0]
