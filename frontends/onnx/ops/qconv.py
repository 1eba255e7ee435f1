"""Quantized convolutions: QLinearConv and the QDQ Conv (see qlinear.py)."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.graph import Port
from armnn_import.ir.types import DataType, LayerType, TensorInfo
from armnn_import.lowering import Unsupported, perchannel
from armnn_import.lowering.quant import quant_conv2d_nchw

from ..quant import DEQUANTIZE_HINT, dequantized, qdq
from .conv_transpose_layer import direct as _transpose_layer
from ..registry import all_checks, needs_const, register
from .conv import back as _back
from .conv import conv_operands as _conv_operands
from .conv import pads as _pads
from .conv import pair as _pair
from .conv import spatial_rank_check as _spatial_rank_check
from .conv import to_4d as _to_4d
from .conv import transpose_geometry as _transpose_geometry
from .qlinear import params as _params, per_axis as _per_axis, qport as _qport
from .qlinear import saturate as _saturate, scales as _scale, zero_points as _zp


def _conv(ctx, node, x: Port, w, bias, yq, wq=None, requantized=None) -> Port:
    """Convolution of x with OIHW (or OIL) weights w: float32, or uint8 with (scale, offset) wq."""
    x, nd = _to_4d(ctx, x, node)
    groups = int(ctx.attr(node, "group", 1))
    w = _conv_operands(x, w, bias, nd, groups)
    strides = _pair(ctx.attr(node, "strides"), nd, 1)
    dil = _pair(ctx.attr(node, "dilations"), nd, 1)
    pads = _pads(ctx, node, nd, x.info.shape[2:], w.shape[2:], strides, dil)
    bias = None if bias is None else np.asarray(bias, np.float32).reshape(-1)
    if yq is None:
        y = ctx.b.conv2d(x, w.astype(np.float32), bias, ctx.name(node), strides=strides, pads=pads,
                         dilations=dil, groups=groups)
    else:
        def fallback():  # requantized per-tensor weights, brought to 4-D as w was
            data, q = requantized()
            return _conv_operands(x, data, bias, nd, groups), q
        y = quant_conv2d_nchw(ctx.b, x, w, wq, bias, yq, ctx.name(node), strides=strides, pads=pads,
                              dilations=dil, groups=groups, requantized=requantized and fallback)
    return _back(ctx, y, nd, node)


def _conv_per_axis(ctx, node, x: Port, pa, bias, yq):
    """_conv with per-axis weights (lowering/perchannel.py), or None (grouped convolutions)."""
    q, sc = pa
    groups = int(ctx.attr(node, "group", 1))
    cin = ctx.lshape(x)[1]
    if not (groups == 1 or (groups == cin and q.shape[1] == 1)):
        return None
    x, nd = _to_4d(ctx, x, node)
    w = _conv_operands(x, q, bias, nd, groups)
    strides, dil = _pair(ctx.attr(node, "strides"), nd, 1), _pair(ctx.attr(node, "dilations"), nd, 1)
    pads = _pads(ctx, node, nd, x.info.shape[2:], w.shape[2:], strides, dil)
    b = None if bias is None else perchannel.bias(np.asarray(bias, np.float64).reshape(-1), x.info.scale, sc)
    y = perchannel.conv2d(ctx.b, x, w, sc, b, yq, ctx.name(node), strides=strides, pads=pads,
                          dilations=dil, groups=groups)
    return _back(ctx, y, nd, node)


@register("QLinearConv", since=10, layers=("Convolution2d", "DepthwiseConvolution2d", "FullyConnected", "Permute",
                                          "Reshape", "Pad", "Addition", "StridedSlice", "SpaceToBatchNd",
                                          "BatchToSpaceNd", "Merger", "BatchNormalization"),
          check=all_checks(needs_const(1, 2, 3, 4, 5, 6, 7, 8, what="weights/parameters"), _spatial_rank_check),
          notes="per-channel weights exact as one convolution per run of channels sharing a scale (up to "
                "64, joined by Mergers), else requantized per tensor (reported); the bias inside the layer "
                "(FullyConnected for 1x1, extra constant input channels or rows), else a BatchNormalization")
def qlinear_conv(ctx, node):
    x = _qport(ctx, node, 0, 1, 2)
    w = ctx.const(node, 3, "weights")
    ws, wz = _scale(ctx, node, 4), _zp(ctx, node, 5, w)
    real = dequantized(w, ws, wz, 0)
    bias = None
    if ctx.has(node, 8):
        xs = np.float64(_scale(ctx, node, 1)[0])
        bias = ctx.const(node, 8, "bias").astype(np.float64).reshape(-1) * xs * ws.astype(np.float64)
    if ctx.quant.dequantize:
        ctx.quant.note_dequantized(node.inputs[3])
        return _saturate(ctx, node, _conv(ctx, node, x, real, bias, None), 6, 7)
    pa = _per_axis(ctx, real, (w, ws, wz))
    y = None if pa is None else _conv_per_axis(ctx, node, x, pa, bias, _params(ctx, node, 6, 7))
    if y is not None:
        return y
    wu8, wq, fallback = ctx.quant.conv_weights(ctx.name(node), node.inputs[3], real, (w, ws, wz, 0))
    return _conv(ctx, node, x, wu8, bias, _params(ctx, node, 6, 7), wq, fallback)


@qdq("Conv", layers=("Convolution2d", "DepthwiseConvolution2d", "Addition", "FullyConnected", "Merger", "Pad",
                     "Permute", "Reshape", "SpaceToBatchNd", "StridedSlice"))
def qdq_conv(ctx, node):
    x = ctx.port(node, 0, dtypes=None)
    real = ctx.const(node, 1, "weights").astype(np.float32)
    bias = ctx.const(node, 2, "bias").reshape(-1) if ctx.has(node, 2) else None
    src = ctx.quant.weight(ctx, node.inputs[1])
    pa = _per_axis(ctx, real, src)
    y = None if pa is None else _conv_per_axis(ctx, node, x, pa, bias, ctx.quant.out_quant(node))
    if y is not None:
        return y
    wu8, wq, fallback = ctx.quant.conv_weights(ctx.name(node), node.inputs[1], real, src)
    return _conv(ctx, node, x, wu8, bias, ctx.quant.out_quant(node), wq, fallback)


def _transpose_scales(ctx, w, src):
    """The per-output-channel scales of symmetric int8 ConvTranspose weights [Cin, Cout, kH, kW]
    (DequantizeLinear axis 1, real = q * scale checked), from the 20.08 format on; else None."""
    if src is None or not ctx.b.g.target.at_least("20.08") or src[3] != 1 or np.size(src[1]) < 2:
        return None
    q, sc = np.asarray(src[0]), np.asarray(src[1], np.float32).reshape(-1)
    if q.size != w.size or sc.size != w.shape[1] or not perchannel.symmetric_int8(q, src[2]):
        return None
    q = q.reshape(w.shape)  # (1-D: [Cin, Cout, 1, L])
    real = q.astype(np.float64) * sc.astype(np.float64).reshape(1, -1, 1, 1)
    return sc if np.allclose(real, w, rtol=1e-6, atol=0) else None


@qdq("ConvTranspose", layers=("TransposeConvolution2d", "Reshape"),
     notes="from --target 20.08 one TransposeConvolution2d layer on per-tensor 8-bit weights or symmetric "
           "int8 ones per output channel (at 20.08 "
           "batch 1, or a batch N that is a multiple of the output channels O < N; one group, no dilation, "
           "the output within the full result), else refused")
def qdq_conv_transpose(ctx, node):
    """CpuRef's TransposeConvolution2d decodes input, uint8 weights and the Signed32 bias to float,
    sums in float and rounds once into the output's quantization (within 1 level of onnxruntime)."""
    x, nd = _to_4d(ctx, ctx.port(node, 0, dtypes=None), node)
    real = ctx.const(node, 1, "weights").astype(np.float32)
    bias = ctx.const(node, 2, "bias").astype(np.float64).reshape(-1) if ctx.has(node, 2) else None
    groups = int(ctx.attr(node, "group", 1))
    w = _conv_operands(x, real, bias, nd, groups, transposed=True)
    if bias is not None and bias.size != w.shape[1] * groups:
        raise Unsupported(f"bias of {bias.size} values for {w.shape[1] * groups} output channels", code="bad-model")
    src = ctx.quant.weight(ctx, node.inputs[1])
    strides, dil, out_pad, _, pads = _transpose_geometry(ctx, node, x, w, nd)
    geometry = dict(strides=strides, dilations=dil, out_pad=out_pad, pads=pads, groups=groups,
                    quant=ctx.quant.out_quant(node))
    scales = _transpose_scales(ctx, w, src)
    if scales is not None:
        y = _transpose_layer(ctx, x, src[0].reshape(w.shape), bias, ctx.name(node), scales=scales, **geometry)
    elif src is None or np.size(src[1]) != 1 or np.size(src[2]) != 1:
        raise Unsupported("the weights are neither per-tensor 8-bit (DequantizeLinear of one scale) nor, from "
                          "--target 20.08 on, symmetric int8 per output channel: no exact quantized "
                          "TransposeConvolution2d", DEQUANTIZE_HINT)
    else:
        wu8, wq = ctx.quant.weights_u8(ctx.name(node), node.inputs[1], real, src, 0)
        y = _transpose_layer(ctx, x, wu8.reshape(w.shape), bias, ctx.name(node),
                             weight_info=TensorInfo(w.shape, DataType.QuantisedAsymm8, *wq), **geometry)
    if y is None:
        if not ctx.b.g.target.has(LayerType.TransposeConvolution2d):
            raise Unsupported("on quantized inputs it is exact as one TransposeConvolution2d layer, which needs "
                              "the Arm NN 20.08 format (--target 20.08)", DEQUANTIZE_HINT, code="needs-target")
        raise Unsupported("on quantized inputs only one TransposeConvolution2d layer is exact: it needs one group, "
                          "no dilation, the output within the full result, and at the 20.08 target batch 1 "
                          "or a batch N that is a multiple of the output channels O < N",
                          DEQUANTIZE_HINT)
    return _back(ctx, y, nd, node)
