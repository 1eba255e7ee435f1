"""TFLite TRANSPOSE_CONV with per-tensor 8-bit weights, and ONNX's QDQ ConvTranspose, as one quantized
TransposeConvolution2d layer from the 20.08 format on (at 20.08 batch 1, or a batch that is a multiple of
more than the output channels: 20.08's shape inference): uint8 weights as stored
(symmetric int8 ones + 128, exact), the bias Signed32 at input scale x weight scale. Arm NN's
TransposeConvolution2d.cpp decodes input, weights and bias to float, sums in float and rounds once
into the output's quantization: within 1 level of LiteRT's integer kernel and of onnxruntime's graph,
checked on the real runtimes (the reference models and seeded random ones, uint8 and int8).
ONNX QDQ weights that are symmetric int8 per output channel are QSymmS8 with per-axis scales on
dimension 0 of the [O, I, kH, kW] weights (CpuRef's per-axis decoder), the bias per axis too."""
from __future__ import annotations

import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tflite"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from tfl_builder import ModelBuilder, run_litert  # noqa: E402
from reference_io import run_ort  # noqa: E402

from armnn_import import cli  # noqa: E402
from armnn_import.serialize import read  # noqa: E402

PAIRS = [("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]
ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "test_models", "tflite", "ops")


def _convert(src, out, target):
    assert cli.main([str(src), "-o", str(out), "--target", target, "-q"]) == 0
    return [l.type.name for l in read(out.read_bytes()).layers]


def _within_one_level(got, want):
    assert got.dtype == want.dtype
    diff = np.abs(got.astype(np.int32).reshape(want.shape) - want.astype(np.int32))
    assert diff.max() <= 1, diff.max()


@pytest.mark.parametrize("target, release", PAIRS)
@pytest.mark.parametrize("model", ["transpose_conv.uint8", "transpose_conv_valid.uint8"])
def test_reference_models(tmp_path, model, target, release, armnn_runner_for):
    ref = np.load(os.path.join(ROOT, model + ".npz"))  # LiteRT's outputs (the manifest)
    types = _convert(os.path.join(ROOT, model + ".tflite"), tmp_path / "m.armnn", target)
    assert types == ["Input", "TransposeConvolution2d", "Output"], types
    (got,) = armnn_runner_for(release)(tmp_path / "m.armnn", [ref["input_0"]])
    _within_one_level(got, ref["output_0"])


# id -> (dtype, padding, strides, kernel, output (h, w) for a 5 x 6 input, bias)
CASES = {"uint8-same-s2-k3": (np.uint8, "SAME", (2, 2), (3, 3), (10, 12), True),
         "uint8-valid-s2x1-k2x3": (np.uint8, "VALID", (2, 1), (2, 3), (10, 8), False),
         "int8-same-s2-k4": (np.int8, "SAME", (2, 2), (4, 4), (10, 12), True),
         "int8-same-s1-k3": (np.int8, "SAME", (1, 1), (3, 3), (5, 6), True)}


def _model(case):
    dtype, padding, (sh, sw), (kh, kw), (oh, ow), with_bias = CASES[case]
    rng = np.random.default_rng(sum(map(ord, case)))
    lo = np.iinfo(dtype).min
    zx, zw, zy = (120, 131, 121) if dtype == np.uint8 else (-8, 0, -7)  # (int8 weights: symmetric, as TFLite wants)
    xq, wq, yq = (0.03, zx), (0.01, zw), (0.05, zy)
    mb = ModelBuilder()
    x = mb.input("x", (1, 5, 6, 3), dtype, quant=([xq[0]], [xq[1]]))
    w = mb.const("w", rng.integers(lo, lo + 256, (4, kh, kw, 3)).astype(dtype), quant=([wq[0]], [wq[1]]))
    shape = mb.const("shape", np.array([1, oh, ow, 4], np.int32))
    ins = [shape, w, x]
    if with_bias:
        ins.append(mb.const("b", rng.integers(-2000, 2000, 4).astype(np.int32), quant=([xq[0] * wq[0]], [0])))
    y = mb.op("TRANSPOSE_CONV", ins, "TransposeConvOptions", out_shape=(1, oh, ow, 4), version=3,
              out_dtype=dtype, out_quant=([yq[0]], [yq[1]]), padding=padding, stride_w=sw, stride_h=sh)
    mb.output(y)
    x_data = rng.integers(lo, lo + 256, (1, 5, 6, 3)).astype(dtype)
    return mb.build(infer_shapes=False), x_data


@pytest.mark.parametrize("target, release", PAIRS)
@pytest.mark.parametrize("case", list(CASES))
def test_random_per_tensor_models(tmp_path, case, target, release, armnn_runner_for):
    data, x = _model(case)
    want = run_litert(data, [x])[0]
    src = tmp_path / "m.tflite"
    src.write_bytes(data)
    types = _convert(src, tmp_path / "m.armnn", target)
    assert types == ["Input", "TransposeConvolution2d", "Output"], types
    (got,) = armnn_runner_for(release)(tmp_path / "m.armnn", [x])
    _within_one_level(got, want)


# ONNX QDQ: id -> (weights dtype, ConvTranspose attributes, input [N, C, H, W] or [N, C, L], weights, bias)
QDQ = {"u8-s2-p1": (np.uint8, dict(strides=[2, 2], pads=[1, 1, 1, 1]), (1, 3, 5, 6), (3, 4, 3, 3), True),
       "u8-s3x2-nobias": (np.uint8, dict(strides=[3, 2]), (1, 2, 4, 5), (2, 3, 2, 3), False),
       "i8-s2-outpad": (np.int8, dict(strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]), (1, 3, 5, 6),
                        (3, 4, 3, 3), True),
       "u8-1d": (np.uint8, dict(strides=[2], pads=[1, 0]), (1, 3, 7), (3, 4, 3), True),
       "u8-batch2": (np.uint8, dict(strides=[2, 2]), (2, 3, 4, 5), (3, 2, 3, 3), True),
       "u8-batch4-cout2": (np.uint8, dict(strides=[2, 2], pads=[0, 1, 1, 0]), (4, 3, 4, 5), (3, 2, 3, 3), True),
       # per output channel (symmetric int8, DequantizeLinear axis 1; the bias per channel too): from 20.08 on
       "i8pc-s2-p1": (np.int8, dict(strides=[2, 2], pads=[1, 1, 1, 1]), (1, 3, 5, 6), (3, 4, 3, 3), True),
       "i8pc-s2-outpad-nobias": (np.int8, dict(strides=[2, 2], pads=[0, 0, 1, 1], output_padding=[1, 1]),
                                 (1, 2, 4, 5), (2, 5, 3, 3), False),
       "i8pc-1d": (np.int8, dict(strides=[2], pads=[1, 0]), (1, 3, 7), (3, 4, 3), True)}
XQ, WQ, YQ = (0.03, 120), (0.01, 131), (0.05, 121)


def _qdq(case):
    wdtype, attrs, xs, ws, with_bias = QDQ[case]
    rng = np.random.default_rng(sum(map(ord, case)))
    lo = np.iinfo(wdtype).min
    wz = WQ[1] if wdtype == np.uint8 else 0

    per_channel = "pc" in case
    wscale = (WQ[0] * rng.uniform(0.5, 2, ws[1])).astype(np.float32) if per_channel else np.float32(WQ[0])

    def c(name, v, dt):
        return numpy_helper.from_array(np.array(v, dt), name)
    inits = [c("wq", rng.integers(lo + per_channel, lo + 256, ws), wdtype), c("ws", wscale, np.float32),
             c("wz", np.zeros(ws[1]) if per_channel else wz, wdtype),
             c("xs", XQ[0], np.float32), c("xz", XQ[1], np.uint8), c("ys", YQ[0], np.float32), c("yz", YQ[1], np.uint8)]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], **({"axis": 1} if per_channel else {}))]
    ins = ["xd", "wd"]
    if with_bias:
        inits += [c("bq", rng.integers(-2000, 2000, ws[1]), np.int32), c("bs", np.float32(XQ[0]) * wscale, np.float32)]
        nodes.append(helper.make_node("DequantizeLinear", ["bq", "bs"], ["bd"], **({"axis": 0} if per_channel else {})))
        ins.append("bd")
    nodes += [helper.make_node("ConvTranspose", ins, ["yf"], **attrs),
              helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["yq"]),
              helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    g = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(xs))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, rng.uniform(-3, 3, xs).astype(np.float32)


def _layer_fits(case, target):
    n, o = QDQ[case][2][0], QDQ[case][3][1]
    return target == "23.08" or n == 1 or (o < n and n % o == 0)


@pytest.mark.parametrize("target, release", PAIRS)
@pytest.mark.parametrize("case", list(QDQ))
def test_onnx_qdq_conv_transpose(tmp_path, case, target, release, armnn_runner_for):
    """The graph as written (onnxruntime, optimizations off: reference_io.run_ort), within 1 level."""
    model, x = _qdq(case)
    (want,) = run_ort(model.SerializeToString(), {"x": x})
    src = tmp_path / "m.onnx"
    onnx.save(model, str(src))
    if not _layer_fits(case, target):
        assert cli.main([str(src), "-o", str(tmp_path / "m.armnn"), "--target", target, "-q"]) == 1
        return
    types = _convert(src, tmp_path / "m.armnn", target)
    assert types.count("TransposeConvolution2d") == 1 and "Convolution2d" not in types, types
    (layer,) = [l for l in read((tmp_path / "m.armnn").read_bytes()).layers if l.tensors]
    w = layer.tensors["weights"].info
    assert (w.dtype.name, w.per_axis_quantized) == (("QSymmS8", True) if "pc" in case else ("QuantisedAsymm8", False))
    (got,) = armnn_runner_for(release)(tmp_path / "m.armnn", [x])
    levels = np.abs(got.reshape(want.shape).astype(np.float64) - want) / YQ[0]
    assert levels.max() <= 1 + 1e-4, levels.max()


def test_onnx_qdq_conv_transpose_at_19_02_needs_a_target(tmp_path, capsys):
    src = tmp_path / "m.onnx"
    onnx.save(_qdq("u8-s2-p1")[0], str(src))
    assert cli.main([str(src), "-o", str(tmp_path / "m.armnn")]) == 1
    assert "needs the Arm NN 20.08 format (--target 20.08)" in capsys.readouterr().err
