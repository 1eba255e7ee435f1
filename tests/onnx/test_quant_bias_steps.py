"""A quantized depthwise convolution whose int32 bias is too large for its constant rows at 19.02.

The 19.02 format's convolution carries no bias, so lowering/quant.py adds a quantized convolution's
bias through extra taps over a constant input of m levels (one rounding). When m = 1 does not fit
in the planes allowed, a larger m is taken and the bias moves in steps of m int32 units: close, but
not the bias itself, so the conversion says so. --target 20.08 writes the bias exactly and warns of
nothing. Found by the session-9 zoo sweep (torchvision MNASNet, EfficientNet-B0 QDQ per tensor).
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import armnn_import
from armnn_import import cli

C, H, W = 4, 6, 7
X_SCALE, X_ZP, W_SCALE, W_ZP, Y_SCALE, Y_ZP = 0.02, 120, 0.01, 128, 0.05, 100


def depthwise_model(bias_units: np.ndarray) -> onnx.ModelProto:
    """float in -> QuantizeLinear -> QLinearConv (depthwise 3x3, pads 1, int32 bias) -> DequantizeLinear
    -> float out, as onnxruntime's QOperator models are."""
    rng = np.random.default_rng(3)
    wq = rng.integers(0, 256, (C, 1, 3, 3)).astype(np.uint8)
    inits = [numpy_helper.from_array(np.array(v, dtype=t), n) for n, v, t in (
        ("xs", X_SCALE, np.float32), ("xz", X_ZP, np.uint8), ("ws", W_SCALE, np.float32),
        ("wz", W_ZP, np.uint8), ("ys", Y_SCALE, np.float32), ("yz", Y_ZP, np.uint8))]
    inits += [numpy_helper.from_array(wq, "w"), numpy_helper.from_array(bias_units.astype(np.int32), "b")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("QLinearConv", ["xq", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["yq"],
                              group=C, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    graph = helper.make_graph(nodes, "dw_bias", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, W])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, C, H, W])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def levels_off(armnn_runner, m: onnx.ModelProto, armnn_file, target: str = "19.02") -> int:
    """The largest difference from onnxruntime, in output levels. 19.02 files take and give the
    quantized tensors (uint8); from 20.08 the network keeps the model's float interface."""
    x = np.random.default_rng(4).uniform(-2.0, 2.0, (1, C, H, W)).astype(np.float32)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    if target == "19.02":
        xq = np.clip(np.round(x / np.float32(X_SCALE)) + X_ZP, 0, 255).astype(np.uint8)
        got = (np.asarray(armnn_runner(armnn_file, [xq])[0]).astype(np.float64) - Y_ZP) * Y_SCALE
    else:
        got = np.asarray(armnn_runner(armnn_file, [x])[0]).astype(np.float64)
    return int(np.round(np.abs(got.reshape(want.shape) - want) / Y_SCALE).max())


def test_large_depthwise_bias_at_19_02_is_reported(armnn_runner, tmp_path, capsys):
    # 9 taps of at most 127 levels each take 1,143 units a plane; 5,001 units need 5 planes where
    # 4 are allowed, so the bias goes in steps of 2 units
    m = depthwise_model(np.array([5001, -4999, 37, 5003]))
    src, out = tmp_path / "dw.onnx", tmp_path / "dw.armnn"
    onnx.save(m, str(src))
    capsys.readouterr()
    assert cli.main([str(src), "-o", str(out)]) == 0
    steps = [line for line in capsys.readouterr().err.splitlines() if "steps of" in line]
    assert len(steps) == 1 and "warning" in steps[0] and "--target 20.08 adds every bias exactly" in steps[0], steps
    assert levels_off(armnn_runner, m, str(out)) <= 1


def test_small_depthwise_bias_at_19_02_is_exact_and_silent(armnn_runner):
    m = depthwise_model(np.array([1001, -999, 37, 1003]))
    result = armnn_import.convert(m)
    assert not [w for w in result.report.warnings if "steps of" in w]
    assert levels_off(armnn_runner, m, result.to_bytes(), "19.02") <= 1


def test_large_depthwise_bias_at_20_08_is_silent(armnn_runner):
    m = depthwise_model(np.array([5001, -4999, 37, 5003]))
    result = armnn_import.convert(m, target="20.08")
    assert not [w for w in result.report.warnings if "steps of" in w]
    assert levels_off(armnn_runner, m, result.to_bytes(), "20.08") <= 1
