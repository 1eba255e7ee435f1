"""Layers of the richer formats (the 20.08 format on), following Arm NN's CpuRef
reference workloads of the release that introduced them (20.08:
src/backends/reference/workloads/ArgMinMax.cpp, LogSoftmax.cpp,
RefComparisonWorkload.cpp, RefElementwiseUnaryWorkload.cpp, RefQuantizeWorkload.cpp,
RefDequantizeWorkload.cpp)."""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError
from ..ir.types import ArgMinMaxFunction, ComparisonOperation, DataLayout, LayerType, UnaryOperation
from .common import const_of, cpp_max, from_nchw, input_nchw, layer_fn, to_nchw
from .numeric import F32, decode, encode


@layer_fn(LayerType.ArgMinMax)
def arg_min_max(layer, ins, infos):
    # The first index whose value beats every earlier one with a strict < or >: ties keep
    # the first, and a NaN never wins unless it comes first.
    x = decode(ins[0], infos[0])
    axis = layer.desc.axis % x.ndim
    x = np.moveaxis(x, axis, 0)
    best, index = x[0].copy(), np.zeros(x.shape[1:], np.int32)
    for i in range(1, x.shape[0]):
        better = x[i] < best if layer.desc.arg_min_max_function == ArgMinMaxFunction.Min else x[i] > best
        best = np.where(better, x[i], best)
        index = np.where(better, np.int32(i), index)
    return [index]


@layer_fn(LayerType.LogSoftmax)
def log_softmax(layer, ins, infos):
    x = decode(ins[0], infos[0])
    axis, beta = layer.desc.axis % x.ndim, F32(layer.desc.beta)
    xs = np.moveaxis(x, axis, 0)
    top = xs[0]
    for i in range(1, xs.shape[0]):
        top = cpp_max(top, xs[i])                 # std::max(maxValue, value)
    with np.errstate(all="ignore"):
        total = np.zeros_like(top)
        for i in range(xs.shape[0]):               # the C++ loop's order of summation
            total = (total + np.exp((xs[i] - top) * beta)).astype(F32)
        y = (xs - top) * beta - np.log(total)
    return [encode(np.moveaxis(y, 0, axis), layer.outputs[0])]


_COMPARE = {ComparisonOperation.Equal: np.equal, ComparisonOperation.Greater: np.greater,
            ComparisonOperation.GreaterOrEqual: np.greater_equal, ComparisonOperation.Less: np.less,
            ComparisonOperation.LessOrEqual: np.less_equal, ComparisonOperation.NotEqual: np.not_equal}


@layer_fn(LayerType.Comparison)
def comparison(layer, ins, infos):
    a, b = (decode(x, i) for x, i in zip(ins, infos))
    if a.ndim != b.ndim:
        raise ExecutionError(f"{layer.name}: inputs have ranks {a.ndim} and {b.ndim}")
    with np.errstate(invalid="ignore"):
        return [np.asarray(_COMPARE[layer.desc.operation](a, b), bool)]


_UNARY = {UnaryOperation.Abs: np.abs, UnaryOperation.Exp: np.exp, UnaryOperation.Neg: np.negative,
          UnaryOperation.Rsqrt: lambda x: F32(1) / np.sqrt(x), UnaryOperation.Sqrt: np.sqrt,
          UnaryOperation.Log: np.log, UnaryOperation.Sin: np.sin, UnaryOperation.Ceil: np.ceil,
          UnaryOperation.LogicalNot: np.logical_not}


@layer_fn(LayerType.ElementwiseUnary)
def elementwise_unary(layer, ins, infos):
    op = layer.desc.operation
    if op == UnaryOperation.LogicalNot:  # on Boolean data, no decoding
        return [np.logical_not(np.asarray(ins[0], bool))]
    with np.errstate(all="ignore"):
        y = _UNARY[op](decode(ins[0], infos[0]))
    return [encode(y, layer.outputs[0])]


@layer_fn(LayerType.Quantize)
def quantize_layer(layer, ins, infos):
    # RefQuantizeWorkload: QuantizeImpl decodes to float and encodes into the output's type
    # (armnn::Quantize: round half away, clamp)
    return [encode(decode(ins[0], infos[0]), layer.outputs[0])]


@layer_fn(LayerType.Dequantize)
def dequantize_layer(layer, ins, infos):
    # RefDequantizeWorkload: Dequantize.cpp, decoder to float, float encoder
    return [encode(decode(ins[0], infos[0]), layer.outputs[0])]


@layer_fn(LayerType.Prelu)
def prelu_layer(layer, ins, infos):
    # PreluImpl.cpp (20.08 and 23.08): x < 0 ? alpha * x : x over BroadcastLoop, in float
    x, alpha = (decode(v, i) for v, i in zip(ins, infos))
    with np.errstate(all="ignore"):
        y = np.where(x < 0, (alpha * x).astype(F32), x)
    return [encode(y, layer.outputs[0])]


@layer_fn(LayerType.Splitter)
def splitter_layer(layer, ins, infos):
    # Splitter.cpp (20.08 and 23.08): each view decoded to float and encoded with its output's info
    x, d = decode(ins[0], infos[0]), layer.desc
    outs = []
    for origin, size, info in zip(d.origins.view_origins, d.view_sizes, layer.outputs):
        view = x[tuple(slice(o, o + n) for o, n in zip(origin, size))]
        outs.append(encode(view, info))
    return outs


@layer_fn(LayerType.TransposeConvolution2d)
def transpose_convolution2d(layer, ins, infos):
    # TransposeConvolution2d.cpp (20.08 and 23.08): every input pixel scattered at i * stride - pad + k,
    # outside the output dropped, in float. An output element sums its terms in the loop's order:
    # input row, column ascending (so filter row, column descending), then input channel.
    d, out_info = layer.desc, layer.outputs[0]
    w = const_of(layer, "weights")
    if d.data_layout == DataLayout.NHWC:
        w = w.transpose(0, 3, 1, 2)                     # [O, kH, kW, I] -> [O, I, kH, kW]
    x = input_nchw(layer, ins, infos)
    n, ci, h, wd = x.shape
    o, _, kh, kw = w.shape
    sy, sx = d.stride_y, d.stride_x
    full = np.zeros((n, o, (h - 1) * sy + kh, (wd - 1) * sx + kw), F32)
    for ky in reversed(range(kh)):
        for kx in reversed(range(kw)):
            view = full[:, :, ky:ky + (h - 1) * sy + 1:sy, kx:kx + (wd - 1) * sx + 1:sx]
            for c in range(ci):
                view += w[:, c, ky, kx][None, :, None, None] * x[:, c:c + 1]
    _, _, oh, ow = to_nchw(np.empty(out_info.shape, np.uint8), d.data_layout).shape
    acc = full[:, :, d.pad_top:d.pad_top + oh, d.pad_left:d.pad_left + ow]
    if d.bias_enabled:
        if "biases" not in layer.tensors:
            raise ExecutionError(f"{layer.name}: bias enabled but no bias tensor")
        acc = acc + const_of(layer, "biases").astype(F32)[None, :, None, None]
    return [encode(from_nchw(acc, d.data_layout), out_info)]
