"""Output TensorInfo inference for every layer type, following the
InferOutputShapes methods of Arm NN 20.08 (src/armnn/layers/*.cpp).

Output data type is the first input's (Boolean for comparisons); output
quantization is the first input's unless the builder sets it.
"""
from __future__ import annotations

import math

from ..errors import GraphError
from . import shapes_release as R
from .geometry import broadcast_shape, conv_out_size, hw_axes, pool_out_size, strided_slice_range
from .kinds import BINARY_LAYERS, COMPARISON_LAYERS
from .types import DataLayout, DataType, LayerType, TensorInfo

# How many inputs each layer type takes (None: one or more).
NUM_INPUTS = {t: 1 for t in LayerType}
NUM_INPUTS.update({t: 2 for t in BINARY_LAYERS})
NUM_INPUTS.update({LayerType.Input: 0, LayerType.Constant: 0, LayerType.Gather: 2,
                   LayerType.Merger: None, LayerType.Comparison: 2, LayerType.Prelu: 2})
NUM_INPUTS[LayerType.Concat] = None
NUM_INPUTS.update({LayerType.LogicalBinary: 2, LayerType.ReverseV2: 2,  # (ReverseV2: data, axes)
                   LayerType.GatherNd: 2, LayerType.ElementwiseBinary: 2})
NUM_INPUTS[LayerType.Stack] = None
NUM_OUTPUTS = {t: 1 for t in LayerType}
NUM_OUTPUTS[LayerType.Output] = 0
# (input, output state, cell state) -> Lstm: (scratch, output state, cell state, output);
# UnidirectionalSequenceLstm: (output state, cell state, output)
NUM_INPUTS.update({LayerType.Lstm: 3, LayerType.UnidirectionalSequenceLstm: 3})
NUM_OUTPUTS.update({LayerType.Lstm: 4, LayerType.UnidirectionalSequenceLstm: 3})


def _same(layer, ins):
    return [ins[0]]


def _binary(layer, ins):
    shape = broadcast_shape(ins[0].shape, ins[1].shape, layer.name)
    if layer.type in COMPARISON_LAYERS:
        return [TensorInfo(shape, DataType.Boolean)]
    return [ins[0].with_shape(shape)]


def _conv(layer, ins):
    d, x = layer.desc, ins[0].shape
    w = layer.tensors["weights"].shape
    c, h, wd = hw_axes(d.data_layout)
    if len(x) != 4 or len(w) != 4:
        raise GraphError(f"{layer.name}: convolution needs 4-D input and weights, got {x} and {w}")
    if layer.type == LayerType.DepthwiseConvolution2d:
        kh, kw, out_c = w[2], w[3], w[0] * w[1]  # weights [M, C, kH, kW] in both layouts
    elif d.data_layout == DataLayout.NCHW:
        kh, kw, out_c = w[2], w[3], w[0]        # [O, I, kH, kW]
    else:
        kh, kw, out_c = w[1], w[2], w[0]        # [O, kH, kW, I]
    out = list(x)
    out[c] = out_c
    # (dilations are 1 in the 19.02 format, which has no such fields)
    kh, kw = d.dilation_y * (kh - 1) + 1, d.dilation_x * (kw - 1) + 1
    out[h] = conv_out_size(x[h], kh, d.stride_y, d.pad_top, d.pad_bottom)
    out[wd] = conv_out_size(x[wd], kw, d.stride_x, d.pad_left, d.pad_right)
    return [ins[0].with_shape(out)]


def _transpose_conv(layer, ins):
    # TransposeConvolution2dLayer::InferOutputShapes; weights in the data layout ([O, I, kH, kW] / [O, kH, kW, I])
    d, x, w = layer.desc, ins[0].shape, layer.tensors["weights"].shape
    c, h, wd = hw_axes(d.data_layout)
    if len(x) != 4 or len(w) != 4 or w[c] != x[c]:
        raise GraphError(f"{layer.name}: transpose convolution of input {x} with weights {w}")
    out = list(x)
    out[c] = w[0]
    out[h] = (x[h] - 1) * d.stride_y + w[h] - d.pad_top - d.pad_bottom
    out[wd] = (x[wd] - 1) * d.stride_x + w[wd] - d.pad_left - d.pad_right
    if min(out[h], out[wd]) < 1:
        raise GraphError(f"{layer.name}: transpose convolution output {out}")
    return [ins[0].with_shape(out)]


def _pool(layer, ins):
    d, x = layer.desc, ins[0].shape
    if len(x) != 4:
        raise GraphError(f"{layer.name}: pooling needs a 4-D input, got {x}")
    _, h, w = hw_axes(d.data_layout)
    out = list(x)
    out[h] = pool_out_size(x[h], d.pool_height, d.stride_y, d.pad_top, d.pad_bottom, d.output_shape_rounding)
    out[w] = pool_out_size(x[w], d.pool_width, d.stride_x, d.pad_left, d.pad_right, d.output_shape_rounding)
    return [ins[0].with_shape(out)]


def _fully_connected(layer, ins):
    w = layer.tensors["weights"].shape
    return [ins[0].with_shape((ins[0].shape[0], w[0] if layer.desc.transpose_weights_matrix else w[1]))]


def _permute(layer, ins):
    m, x = layer.desc.dim_mappings, ins[0].shape
    if sorted(m) != list(range(len(x))):
        raise GraphError(f"{layer.name}: dim_mappings {tuple(m)} is not a permutation of rank {len(x)}")
    out = [0] * len(x)
    for i, d in enumerate(x):
        out[m[i]] = d
    return [ins[0].with_shape(out)]


def _space_to_batch(layer, ins):
    d, x = layer.desc, list(ins[0].shape)
    _, h, w = hw_axes(d.data_layout)
    bh, bw = d.block_shape
    x[0] *= bh * bw
    x[h] = (x[h] + d.pad_list[0] + d.pad_list[1]) // bh
    x[w] = (x[w] + d.pad_list[2] + d.pad_list[3]) // bw
    return [ins[0].with_shape(x)]


def _batch_to_space(layer, ins):
    d, x = layer.desc, list(ins[0].shape)
    _, h, w = hw_axes(d.data_layout)
    bh, bw = d.block_shape
    x[0] //= bh * bw
    x[h] = x[h] * bh - d.crops[0] - d.crops[1]
    x[w] = x[w] * bw - d.crops[2] - d.crops[3]
    return [ins[0].with_shape(x)]


def _pad(layer, ins):
    p = layer.desc.pad_list
    return [ins[0].with_shape([d + p[2 * i] + p[2 * i + 1] for i, d in enumerate(ins[0].shape)])]


def _resize(layer, ins):
    d, x = layer.desc, list(ins[0].shape)
    _, h, w = hw_axes(d.data_layout)
    x[h], x[w] = d.target_height, d.target_width
    return [ins[0].with_shape(x)]


def _strided_slice(layer, ins):
    d, x = layer.desc, ins[0].shape
    if not (len(d.begin) == len(d.end) == len(d.stride) == len(x)):
        raise GraphError(f"{layer.name}: begin/end/stride need one entry per input dimension ({len(x)})")
    if d.ellipsis_mask or d.new_axis_mask:
        raise GraphError(f"{layer.name}: ellipsis and new-axis masks are not supported by Arm NN")
    if 0 in d.stride:
        raise GraphError(f"{layer.name}: stride 0")
    out = [strided_slice_range(d, x, i)[2] for i in range(len(x))
           if not d.shrink_axis_mask & (1 << i)]
    return [ins[0].with_shape(out or [1])]


def _gather(layer, ins):
    # GatherLayer::InferOutputShapes: params[:axis] + indices + params[axis + 1:] (axis 0 in 19.02)
    x, axis = ins[0].shape, layer.desc.axis if layer.desc is not None else 0
    if not -len(x) <= axis < len(x):
        raise GraphError(f"{layer.name}: axis {axis} out of range for rank {len(x)}")
    axis %= len(x)
    return [ins[0].with_shape(tuple(x[:axis]) + tuple(ins[1].shape) + tuple(x[axis + 1:]))]


def _mean(layer, ins):
    d, x = layer.desc, ins[0].shape
    axes = set(d.axis) if d.axis else set(range(len(x)))
    if any(a >= len(x) for a in axes):
        raise GraphError(f"{layer.name}: mean axis {sorted(axes)} out of range for rank {len(x)}")
    if d.keep_dims:
        out = [1 if i in axes else n for i, n in enumerate(x)]
    else:
        out = [n for i, n in enumerate(x) if i not in axes] or [1]
    return [ins[0].with_shape(out)]


def _merger(layer, ins):
    d = layer.desc
    axis = d.concat_axis
    first = ins[0].shape
    for i in ins[1:]:
        if len(i.shape) != len(first) or any(a != b for k, (a, b) in enumerate(zip(i.shape, first)) if k != axis):
            raise GraphError(f"{layer.name}: Merger inputs {[t.shape for t in ins]} differ off axis {axis}")
    out = list(first)
    out[axis] = sum(i.shape[axis] for i in ins)
    return [ins[0].with_shape(out)]


def _reduced(layer, ins, dtype):
    x, axis = ins[0].shape, layer.desc.axis
    if not -len(x) <= axis < len(x):
        raise GraphError(f"{layer.name}: axis {axis} out of range for rank {len(x)}")
    axis %= len(x)
    return [TensorInfo(x[:axis] + x[axis + 1:], dtype)]


def _comparison(layer, ins):
    return [TensorInfo(broadcast_shape(ins[0].shape, ins[1].shape, layer.name), DataType.Boolean)]


def _reshape(layer, ins):
    target = tuple(layer.desc.target_shape)
    if math.prod(target) != ins[0].num_elements:
        raise GraphError(f"{layer.name}: cannot reshape {ins[0].shape} to {target}")
    return [ins[0].with_shape(target)]


_RULES = {
    LayerType.Activation: _same, LayerType.Softmax: _same, LayerType.Floor: _same,
    LayerType.Rsqrt: _same, LayerType.Normalization: _same, LayerType.L2Normalization: _same,
    LayerType.BatchNormalization: _same,
    LayerType.Convolution2d: _conv, LayerType.DepthwiseConvolution2d: _conv,
    LayerType.Pooling2d: _pool, LayerType.FullyConnected: _fully_connected,
    LayerType.Permute: _permute, LayerType.Reshape: _reshape,
    LayerType.SpaceToBatchNd: _space_to_batch, LayerType.BatchToSpaceNd: _batch_to_space,
    LayerType.Pad: _pad, LayerType.ResizeBilinear: _resize, LayerType.StridedSlice: _strided_slice,
    LayerType.Gather: _gather, LayerType.Mean: _mean, LayerType.Merger: _merger,
    LayerType.Constant: lambda layer, ins: [layer.tensors["input"].info],
    LayerType.Output: lambda layer, ins: [],
    # the 20.08 format
    LayerType.ArgMinMax: lambda layer, ins: _reduced(layer, ins, DataType.Signed32),
    LayerType.Comparison: _comparison, LayerType.ElementwiseUnary: _same, LayerType.LogSoftmax: _same,
    LayerType.TransposeConvolution2d: _transpose_conv,
    LayerType.Prelu: lambda layer, ins: [ins[0].with_shape(broadcast_shape(ins[0].shape, ins[1].shape, layer.name))],
    # float -> QuantisedAsymm8 (its quantization given by the builder) and back
    LayerType.Quantize: lambda layer, ins: [TensorInfo(ins[0].shape, R.quantized_type(layer))],
    LayerType.Dequantize: lambda layer, ins: [TensorInfo(ins[0].shape, DataType.Float32)],
}
_RULES.update({t: _binary for t in BINARY_LAYERS})


# the layers of the 20.08 and 23.08 formats (ir/shapes_release.py; ResizeDescriptor names its sizes as
# ResizeBilinear's, Reduce follows Mean: keep_dims gives 1s, else the axes go, [1] if none is left)
NUM_INPUTS.update({LayerType.BatchMatMul: 2, LayerType.Convolution3d: None, LayerType.Pooling3d: 1})
_RULES.update({
    LayerType.Concat: _merger, LayerType.Transpose: R.transpose, LayerType.Resize: _resize,
    LayerType.Cast: R.cast, LayerType.BatchMatMul: R.batch_matmul,
    LayerType.Lstm: R.lstm, LayerType.UnidirectionalSequenceLstm: R.lstm,
    LayerType.Convolution3d: R.conv3d, LayerType.Pooling3d: R.pool3d,  # (weights and bias as inputs)
    LayerType.Reduce: _mean, LayerType.LogicalBinary: _comparison, LayerType.Tile: R.tile,
    LayerType.ReverseV2: _same, LayerType.SpaceToDepth: R.depth_space, LayerType.DepthToSpace: R.depth_space,
    LayerType.InstanceNormalization: _same, LayerType.Stack: R.stack, LayerType.GatherNd: R.gather_nd,
    LayerType.ElementwiseBinary: _binary,
})
NUM_OUTPUTS[LayerType.Splitter] = None  # one a view
_RULES[LayerType.Splitter] = R.splitter

def infer_outputs(layer) -> list[TensorInfo]:
    """The output TensorInfos of `layer` given its inputs' (raises GraphError)."""
    if layer.type == LayerType.Input:
        raise GraphError(f"{layer.name}: an Input layer's TensorInfo must be given")
    want = NUM_INPUTS[layer.type]
    n = len(layer.inputs)
    if (want is None and n < 1) or (want is not None and n != want):
        raise GraphError(f"{layer.name}: {layer.type.name} takes {want or 'one or more'} inputs, got {n}")
    kind, tensors = layer.kind, layer.tensors
    for name in kind.tensors:
        if name not in tensors and name not in kind.optional:
            raise GraphError(f"{layer.name}: {layer.type.name} needs a constant tensor '{name}'")
    ins = [p[0].outputs[p[1]] for p in layer.inputs]  # (each input's info, without the Port property)
    try:
        return _RULES[layer.type](layer, ins)
    except (IndexError, ValueError, ZeroDivisionError, TypeError) as e:
        raise GraphError(f"{layer.name}: cannot infer the {layer.type.name} output shape: {e}") from e
