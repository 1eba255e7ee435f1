"""TFLite TRANSPOSE_CONV and ONNX ConvTranspose as one TransposeConvolution2d layer from the 20.08
format on (float32, one group, no dilation). Arm NN's TransposeConvolution2d.cpp scatters input pixel
i at i * stride - pad + k, which is both runtimes' formula, and its output size (in - 1) * stride + k
- pads must be the model's: where a pad would be negative (an output past the full result), or at
the 20.08 target with a batch N > 1 and O >= N output channels or N not a multiple of O (20.08's
InferOutputShapes then divides the output channels by the batch; 23.08 does not), the decomposition
stays, as it does at 19.02. Checked through the CLI's
file on every runtime that reads the target, against LiteRT and onnxruntime."""
from __future__ import annotations

import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tflite"))
from tfl_builder import ModelBuilder, run_litert  # noqa: E402

from armnn_import import cli  # noqa: E402
from armnn_import.serialize import read  # noqa: E402

PAIRS = [("19.02", "20.08"), ("19.02", "23.08"), ("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]
TOL = dict(rtol=1e-5, atol=1e-5)
# TFLite: id -> (padding, (stride_h, stride_w), (kh, kw), output (h, w) for a 5 x 6 input, batch)
TFL = {"same-s2-k3": ("SAME", (2, 2), (3, 3), (10, 12), 1),
       "same-s2x1-k4x2": ("SAME", (2, 1), (4, 2), (10, 6), 1),
       "valid-s2-k3": ("VALID", (2, 2), (3, 3), (11, 13), 1),
       "valid-s3-k2": ("VALID", (3, 3), (2, 2), (15, 18), 1),         # k < stride: past the full result
       "valid-s2-k3-bigger": ("VALID", (2, 2), (3, 3), (12, 14), 1),   # past the full result: no layer
       "same-s1-k3": ("SAME", (1, 1), (3, 3), (5, 6), 1),
       "same-s2-k3-batch2": ("SAME", (2, 2), (3, 3), (10, 12), 2),
       "same-s2-k3-batch4-cout2": ("SAME", (2, 2), (3, 3), (10, 12), 4)}
TFL_NO_LAYER = {"valid-s3-k2", "valid-s2-k3-bigger"}   # output (in - 1) * stride + k plus more: no layer


def _tflite(case):
    padding, (sh, sw), (kh, kw), (oh, ow), n = TFL[case]
    o = _tfl_out_channels(case)
    rng = np.random.default_rng(sum(map(ord, case)))
    mb = ModelBuilder()
    x = mb.input("x", (n, 5, 6, 3))
    w = mb.const("w", rng.standard_normal((o, kh, kw, 3)).astype(np.float32))
    b = mb.const("b", rng.standard_normal(o).astype(np.float32))
    shape = mb.const("shape", np.array([n, oh, ow, o], np.int32))
    y = mb.op("TRANSPOSE_CONV", [shape, w, x, b], "TransposeConvOptions", out_shape=(n, oh, ow, o), version=3,
              out_dtype=np.float32, padding=padding, stride_w=sw, stride_h=sh)
    mb.output(y)
    return mb.build(infer_shapes=False), rng.standard_normal((n, 5, 6, 3)).astype(np.float32)


def _convert(src, out, target):
    assert cli.main([str(src), "-o", str(out), "--target", target, "-q"]) == 0
    return [l.type.name for l in read(out.read_bytes()).layers]


def _tfl_out_channels(case):
    return 2 if "cout2" in case else 4


def _layer_expected(target, case_batch, exact=True, out_channels=4):
    # 20.08 infers O output channels for a batch N where N = 1, or O < N with N a multiple of O
    fits = case_batch == 1 or (out_channels < case_batch and case_batch % out_channels == 0)
    return target != "19.02" and exact and (fits or target == "23.08")


@pytest.mark.parametrize("target, release", PAIRS)
@pytest.mark.parametrize("case", list(TFL))
def test_tflite_transpose_conv(tmp_path, case, target, release, armnn_runner_for):
    data, x = _tflite(case)
    want = run_litert(data, [x])[0]
    src = tmp_path / "m.tflite"
    src.write_bytes(data)
    types = _convert(src, tmp_path / "m.armnn", target)
    layer = _layer_expected(target, TFL[case][4], exact=case not in TFL_NO_LAYER, out_channels=_tfl_out_channels(case))
    assert ("TransposeConvolution2d" in types) == layer, types
    if layer:
        assert "Convolution2d" not in types and "BatchToSpaceNd" not in types
    (got,) = armnn_runner_for(release)(tmp_path / "m.armnn", [x])
    np.testing.assert_allclose(got.reshape(want.shape), want, **TOL)


# ONNX: id -> attributes, input [N, C, H, W] (or [N, C, L]), weights [Cin, Cout / group, kH, kW]
ONNX = {"s2-k3-pads": (dict(strides=[2, 2], pads=[1, 0, 0, 1]), (1, 3, 5, 6), (3, 4, 3, 3)),
        "s2-k4-p1": (dict(strides=[2, 2], pads=[1, 1, 1, 1]), (1, 3, 5, 6), (3, 2, 4, 4)),
        "s3x2-k2x3": (dict(strides=[3, 2]), (1, 3, 5, 6), (3, 4, 2, 3)),
        "s2-outpad": (dict(strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]), (1, 3, 5, 6), (3, 4, 3, 3)),
        "s2-outpad-nopad": (dict(strides=[2, 2], output_padding=[1, 0]), (1, 3, 5, 6), (3, 4, 3, 3)),
        "same-upper": (dict(strides=[2, 2], auto_pad="SAME_UPPER"), (1, 3, 5, 6), (3, 4, 3, 3)),
        "output-shape": (dict(strides=[2, 2], output_shape=[12, 14]), (1, 3, 5, 6), (3, 4, 3, 3)),
        "1d": (dict(strides=[2], pads=[1, 0]), (1, 3, 7), (3, 4, 3)),
        "batch2": (dict(strides=[2, 2], pads=[1, 1, 1, 1]), (2, 3, 5, 6), (3, 4, 3, 3)),
        "batch3-cout2": (dict(strides=[2, 2]), (3, 3, 5, 6), (3, 2, 3, 3)),  # (20.08 would assert: 9 % 6)
        "batch4-cout2": (dict(strides=[2, 2], pads=[1, 0, 0, 1]), (4, 3, 5, 6), (3, 2, 3, 3)),  # 20.08: O < N, N % O == 0
        "batch2-cout1": (dict(strides=[2, 1]), (2, 3, 5, 6), (3, 1, 3, 2)),
        "group2": (dict(strides=[2, 2], group=3), (1, 3, 5, 6), (3, 2, 3, 3)),
        "dilated": (dict(strides=[2, 2], dilations=[2, 1]), (1, 3, 5, 6), (3, 4, 3, 3))}
# output (output_padding, output_shape) past the full result; groups; dilation
NO_LAYER = {"s2-outpad-nopad", "output-shape", "group2", "dilated"}


def _onnx(case):
    attrs, xs, ws = ONNX[case]
    rng = np.random.default_rng(sum(map(ord, case)))
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[1] * attrs.get("group", 1)).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)
    graph = helper.make_graph([node], "tconv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(xs))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list("nchw"[:len(xs)]))],
                              initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model, rng.standard_normal(xs).astype(np.float32)


@pytest.mark.parametrize("target, release", PAIRS)
@pytest.mark.parametrize("case", list(ONNX))
def test_onnx_conv_transpose(tmp_path, case, target, release, armnn_runner_for):
    model, x = _onnx(case)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    src = tmp_path / "m.onnx"
    onnx.save(model, str(src))
    types = _convert(src, tmp_path / "m.armnn", target)
    layer = _layer_expected(target, ONNX[case][1][0], exact=case not in NO_LAYER,
                            out_channels=ONNX[case][2][1] * ONNX[case][0].get("group", 1))
    assert ("TransposeConvolution2d" in types) == layer, types
    (got,) = armnn_runner_for(release)(tmp_path / "m.armnn", [x])
    np.testing.assert_allclose(got.reshape(want.shape), want, **TOL)


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the reference models whose 20.08 / 23.08 files this layer changes, with their source runtime's outputs
REFERENCE = ["tflite/ops/transpose_conv.float32", "tflite/ops/transpose_conv_valid.float32",
             "onnx/dynamo_conv_block", "onnx/dynamo_conv_block_op23"]


@pytest.mark.parametrize("target, release", PAIRS[2:])
@pytest.mark.parametrize("model", REFERENCE)
def test_reference_models(tmp_path, model, target, release, armnn_runner_for):
    base = os.path.join(ROOT, "test_models", model)
    src = base + (".tflite" if model.startswith("tflite") else ".onnx")
    ref = np.load(base + ".npz")  # LiteRT's / onnxruntime's outputs (the manifests)
    types = _convert(src, tmp_path / "m.armnn", target)
    assert "TransposeConvolution2d" in types
    (got,) = armnn_runner_for(release)(tmp_path / "m.armnn", [ref["input_0"]])
    np.testing.assert_allclose(got.reshape(ref["output_0"].shape), ref["output_0"], **TOL)


@pytest.mark.parametrize("target, release", PAIRS[2:])
@pytest.mark.parametrize("model", ["transpose_conv.int8", "transpose_conv_valid.int8", "transpose_conv.uint8io",
                                   "transpose_conv_valid.uint8io"])
def test_quantized_per_channel_models(tmp_path, model, target, release, armnn_runner_for):
    """Per-channel int8 weights as QSymmS8 per axis (the scale picked by output channel, as the
    workload's SetIndex(weightsIndex, dOutput)), an int8 input kept QAsymmS8: CpuRef decodes, sums
    in float and rounds once, within 1 level of LiteRT's integer kernel (1 measured, as the
    decomposition's)."""
    base = os.path.join(ROOT, "test_models", "tflite", "ops", model)
    ref = np.load(base + ".npz")
    types = _convert(base + ".tflite", tmp_path / "m.armnn", target)
    assert types == ["Input", "TransposeConvolution2d", "Output"], types
    (got,) = armnn_runner_for(release)(tmp_path / "m.armnn", [ref["input_0"]])
    assert got.dtype == ref["output_0"].dtype
    diff = np.abs(got.astype(np.int32).reshape(ref["output_0"].shape) - ref["output_0"].astype(np.int32))
    assert diff.max() <= 1


def _random_onnx(seed):
    """A random ConvTranspose the layer takes: strides 1-3, kernels 1-4, pads below the kernel,
    output_padding within the end pad and below the stride, either spatial rank."""
    r = np.random.default_rng(seed)
    s, k = [int(v) for v in r.integers(1, 4, 2)], [int(v) for v in r.integers(1, 5, 2)]
    begin = [int(r.integers(0, kk)) for kk in k]
    end = [int(r.integers(0, kk)) for kk in k]
    out_pad = [int(r.integers(0, min(ss - 1, e) + 1)) for ss, e in zip(s, end)]
    cin, cout = (int(v) for v in r.integers(1, 5, 2))
    xs = (1, cin, int(r.integers(1, 7)), int(r.integers(1, 7)))
    attrs = dict(strides=s, pads=begin + end, output_padding=out_pad, kernel_shape=k)
    if min((i - 1) * ss + kk + op - b - e for i, ss, kk, op, b, e in zip(xs[2:], s, k, out_pad, begin, end)) < 1:
        attrs["pads"] = [0, 0, 0, 0]
        attrs["output_padding"] = [0, 0]
    return attrs, xs, (cin, cout, *k)


@pytest.mark.parametrize("target, release", PAIRS[2:])
@pytest.mark.parametrize("seed", range(24))
def test_random_onnx_configurations(tmp_path, seed, target, release, armnn_runner_for, monkeypatch):
    monkeypatch.setitem(ONNX, "random", _random_onnx(seed))
    test_onnx_conv_transpose(tmp_path, "random", target, release, armnn_runner_for)


@pytest.mark.parametrize("target, release", PAIRS[2:])
@pytest.mark.parametrize("case", ["s2-k3-pads", "s2-outpad", "1d"])
def test_float16_model(tmp_path, case, target, release, armnn_runner_for):
    """A float16 ConvTranspose (a Float16 network): the one layer, which CpuRef runs on Float16
    tensors summing in float and rounding once, against onnxruntime's float16 kernel."""
    model, x = _onnx(case)
    for t in model.graph.initializer:
        t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
    for vi in list(model.graph.input) + list(model.graph.output):
        vi.type.tensor_type.elem_type = TensorProto.FLOAT16
    x = x.astype(np.float16)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    src = tmp_path / "m.onnx"
    onnx.save(model, str(src))
    types = _convert(src, tmp_path / "m.armnn", target)
    assert "TransposeConvolution2d" in types and "Convolution2d" not in types, types
    (got,) = armnn_runner_for(release)(tmp_path / "m.armnn", [x])
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32).reshape(want.shape), want.astype(np.float32),
                               rtol=1e-2, atol=2e-3 * float(np.abs(want).max()))
