"""LOG and SIN (an ElementwiseUnary layer of the 23.08 format), LOG_SOFTMAX (the 20.08 format's
LogSoftmax), EXP (one Exp layer from 23.08, sigmoid(x) / sigmoid(-x) before) and POW (23.08: an
ElementwiseBinary Power), judged on the Arm NN runtime of each target against LiteRT."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import armnn_import
from armnn_import import cli

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tfl_builder import ModelBuilder, run_litert  # noqa: E402

READS = [("19.02", "20.08"), ("19.02", "23.08"), ("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]
OPS = {"LOG": ("23.08", 0.01, None), "SIN": ("23.08", -20.0, None),
       "LOG_SOFTMAX": ("20.08", -20.0, "LogSoftmaxOptions"), "EXP": ("19.02", -20.0, None)}


def _model(op):
    mb = ModelBuilder()
    mb.output(mb.op(op, [mb.input("x", (2, 3, 7))], OPS[op][2]))
    return mb.build()


@pytest.mark.parametrize("target, release", READS)
@pytest.mark.parametrize("op", sorted(OPS))
def test_matches_litert_from_its_target(op, target, release, armnn_runner_for, tmp_path):
    first, lo, _ = OPS[op]
    src, out = tmp_path / "m.tflite", tmp_path / "m.armnn"
    src.write_bytes(_model(op))
    if float(target) < float(first):
        with pytest.raises(armnn_import.ArmnnImportError, match=f"needs the Arm NN {first} format"):
            armnn_import.convert(str(src), target=target)
        return
    x = np.random.default_rng(5).uniform(lo, 20.0, (2, 3, 7)).astype(np.float32)
    assert cli.main([str(src), "-o", str(out), "-q", "--target", target]) == 0
    got, = armnn_runner_for(release)(str(out), [x])
    want, = run_litert(src.read_bytes(), [x])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * np.abs(want).max())


def test_exp_is_one_layer_at_23_08():
    kinds = [layer.type.name for layer in armnn_import.convert(_model("EXP"), target="23.08").network.layers]
    assert kinds == ["Input", "ElementwiseUnary", "Output"]
    assert "ElementwiseUnary" not in [layer.type.name for layer in
                                      armnn_import.convert(_model("EXP"), target="20.08").network.layers]


def pow_model(eshape, const):
    """x ** e of float32 tensors, e a constant or an input; (model, e)."""
    ev = np.random.default_rng(len(eshape)).uniform(-2, 3, eshape).astype(np.float32)
    mb = ModelBuilder()
    x = mb.input("x", (2, 3, 7))
    mb.output(mb.op("POW", [x, mb.const("e", ev) if const else mb.input("e", eshape)]))
    return mb.build(), ev


@pytest.mark.parametrize("eshape, const", [((), True), ((7,), True), ((3, 1), False), ((2, 3, 7), False)])
def test_pow_one_power_layer_at_23_08(eshape, const, armnn_runner_for):
    """POW of float32 tensors (negative bases to fractional powers: NaN, as LiteRT's std::pow)."""
    rng = np.random.default_rng(len(eshape) + 10)
    data, ev = pow_model(eshape, const)
    xv = rng.uniform(-3, 3, (2, 3, 7)).astype(np.float32)
    ins = [xv] if const else [xv, ev]
    want, = run_litert(data, ins)
    assert np.isnan(want).any() and np.isfinite(want).any()
    result = armnn_import.convert(data, target="23.08")
    assert "ElementwiseBinary" in [layer.type.name for layer in result.network.layers]
    got, = armnn_runner_for("23.08")(result.to_bytes(), ins)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, equal_nan=True)
    with pytest.raises(armnn_import.ArmnnImportError, match="needs the Arm NN 23.08 format"):
        armnn_import.convert(data, target="20.08")
