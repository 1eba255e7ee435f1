"""Output TensorInfo inference for every layer type, following the
InferOutputShapes methods of Arm NN 20.08 (src/armnn/layers/*.cpp).

Output data type is the first input's (Boolean for comparisons); output
quantization is the first input's unless the builder sets it.
"""
from __future__ import annotations

import math

from ..errors import GraphError
from .descriptors import BINARY_LAYERS, COMPARISON_LAYERS
from .types import DataLayout, DataType, LayerType, OutputShapeRounding, TensorInfo

# How many inputs each layer type takes (None: one or more).
NUM_INPUTS = {t: 1 for t in LayerType}
NUM_INPUTS.update({t: 2 for t in BINARY_LAYERS})
NUM_INPUTS.update({LayerType.Input: 0, LayerType.Constant: 0, LayerType.Gather: 2,
                   LayerType.Merger: None, LayerType.Comparison: 2})
NUM_INPUTS[LayerType.Concat] = None
NUM_INPUTS.update({LayerType.LogicalBinary: 2, LayerType.ReverseV2: 2})  # (ReverseV2: data, axes)
NUM_INPUTS[LayerType.Stack] = None
NUM_OUTPUTS = {t: 1 for t in LayerType}
NUM_OUTPUTS[LayerType.Output] = 0
# (input, output state, cell state) -> Lstm: (scratch, output state, cell state, output);
# UnidirectionalSequenceLstm: (output state, cell state, output)
NUM_INPUTS.update({LayerType.Lstm: 3, LayerType.UnidirectionalSequenceLstm: 3})
NUM_OUTPUTS.update({LayerType.Lstm: 4, LayerType.UnidirectionalSequenceLstm: 3})


def hw_axes(layout: DataLayout) -> tuple[int, int, int]:
    """(channel, height, width) axes of a 4-D tensor in this layout."""
    return (1, 2, 3) if layout == DataLayout.NCHW else (3, 1, 2)


def conv_out_size(size: int, k: int, stride: int, lo: int, hi: int) -> int:
    return (size + lo + hi - k) // stride + 1


def pool_out_size(size: int, k: int, stride: int, lo: int, hi: int, rounding) -> int:
    div = (size + lo + hi - k) / stride
    out = 1 + (math.ceil(div) if rounding == OutputShapeRounding.Ceiling else math.floor(div))
    # Arm NN (like Caffe): the last window must start inside the input or its left padding.
    if (out - 1) * stride >= size + lo:
        out -= 1
    return out


def broadcast_shape(a: tuple, b: tuple, what: str) -> tuple:
    if len(a) != len(b):
        raise GraphError(f"{what}: inputs have ranks {len(a)} and {len(b)}; Arm NN needs equal ranks")
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise GraphError(f"{what}: shapes {a} and {b} do not broadcast")
        out.append(max(x, y))
    return tuple(out)


def strided_slice_range(desc, shape, axis):
    """(start, stop, size) for one axis: StridedSliceDescriptor::GetStartForAxis/GetStopForAxis."""
    big, low = 2 ** 31 - 1, -(2 ** 31)
    dim, stride = shape[axis], desc.stride[axis]
    start = desc.begin[axis]
    if desc.begin_mask & (1 << axis):
        start = low if stride > 0 else big
    if start < 0:
        start += dim
    start = max(0, min(start, dim - 1))
    if desc.shrink_axis_mask & (1 << axis):
        stop = start + 1
    else:
        stop = desc.end[axis]
        if desc.end_mask & (1 << axis):
            stop = big if stride > 0 else low
        if stop < 0:
            stop += dim
        stop = max(0, min(stop, dim)) if stride > 0 else max(-1, min(stop, dim - 1))
    size = ((stop - start) + stride - 1) // stride if stride > 0 else ((start - stop) - stride - 1) // -stride
    return start, stop, max(0, size)


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
    # float -> QuantisedAsymm8 (its quantization given by the builder) and back
    LayerType.Quantize: lambda layer, ins: [TensorInfo(ins[0].shape, _quantized_type(layer))],
    LayerType.Dequantize: lambda layer, ins: [TensorInfo(ins[0].shape, DataType.Float32)],
}
_RULES.update({t: _binary for t in BINARY_LAYERS})


def _quantized_type(layer) -> DataType:
    """A Quantize layer's output type: the one it has (QAsymmS8 from lowering/int8.py), else uint8."""
    out = layer.outputs[0].dtype if layer.outputs else None
    return out if out is not None and out.is_quantized else DataType.QuantisedAsymm8

def _transpose(layer, ins):
    m, x = layer.desc.dim_mappings, ins[0].shape
    if sorted(m) != list(range(len(x))):
        raise GraphError(f"{layer.name}: dim_mappings {tuple(m)} is not a permutation of rank {len(x)}")
    return [ins[0].with_shape([x[a] for a in m])]  # armnnUtils::TransposeTensorShape


# the 20.08 format's structural layers (ResizeDescriptor names its sizes as ResizeBilinear's)
_RULES.update({LayerType.Concat: _merger, LayerType.Transpose: _transpose, LayerType.Resize: _resize})
# -- the 23.08 format: Cast and BatchMatMul (gather worktree) -------------------------------
def _cast(layer, ins):
    # CastLayer: the shape of its input, the data type its output was given (the builder sets it)
    if not layer.outputs:
        raise GraphError(f"{layer.name}: a Cast layer's output data type must be given")
    return [TensorInfo(ins[0].shape, layer.outputs[0].dtype)]


def _batch_matmul(layer, ins):
    # BatchMatMulLayer::InferOutputShapes (NCHW layouts: the last two axes multiply), for equal ranks
    d, x, y = layer.desc, list(ins[0].shape), list(ins[1].shape)
    if len(x) < 2 or len(x) != len(y):
        raise GraphError(f"{layer.name}: BatchMatMul needs two inputs of one rank >= 2, got {x} and {y}")
    if d.transpose_x:
        x[-2], x[-1] = x[-1], x[-2]
    if d.transpose_y:
        y[-2], y[-1] = y[-1], y[-2]
    if x[-1] != y[-2]:
        raise GraphError(f"{layer.name}: BatchMatMul inner dimensions differ: {x} and {y}")
    batch = broadcast_shape(tuple(x[:-2]), tuple(y[:-2]), layer.name)
    return [ins[0].with_shape(batch + (x[-2], y[-1]))]


NUM_INPUTS[LayerType.BatchMatMul] = 2
_RULES.update({LayerType.Cast: _cast, LayerType.BatchMatMul: _batch_matmul})


def _lstm(layer, ins):
    """LstmLayer / UnidirectionalSequenceLstmLayer::InferOutputShapes: the output size is the output
    state's dimension 1, the cell size the rows of inputToOutputWeights."""
    x, h = ins[0], ins[1]
    cells, out = layer.tensors["input_to_output_weights"].info.shape[0], h.shape[1]
    if layer.type == LayerType.Lstm:
        batch = x.shape[0]
        gates = 3 if layer.desc.cifg_enabled else 4
        return [x.with_shape((batch, cells * gates)), x.with_shape((batch, out)), x.with_shape((batch, cells)),
                x.with_shape((batch, out))]
    batch = x.shape[1] if layer.desc.time_major else x.shape[0]
    return [x.with_shape((batch, out)), x.with_shape((batch, cells)), x.with_shape((x.shape[0], x.shape[1], out))]


_RULES.update({LayerType.Lstm: _lstm, LayerType.UnidirectionalSequenceLstm: _lstm})
# Convolution3d: input, weights [kD, kH, kW, I, O] (and the bias [O]) as inputs
NUM_INPUTS.update({LayerType.Convolution3d: None, LayerType.Pooling3d: 1})


def dhw_axes(layout: DataLayout) -> tuple[int, int, int, int]:
    """(channel, depth, height, width) axes of a 5-D tensor in this layout."""
    return (1, 2, 3, 4) if layout == DataLayout.NCDHW else (4, 1, 2, 3)


def _conv3d(layer, ins):
    """Convolution3dLayer::InferOutputShapes."""
    d, x, w = layer.desc, ins[0].shape, ins[1].shape
    if len(x) != 5 or len(w) != 5:
        raise GraphError(f"{layer.name}: Convolution3d needs 5-D input and weights, got {x} and {w}")
    c, dz, h, wd = dhw_axes(d.data_layout)
    out = list(x)
    out[c] = w[4]
    for axis, k, dil, s, lo, hi in ((dz, w[0], d.dilation_z, d.stride_z, d.pad_front, d.pad_back),
                                    (h, w[1], d.dilation_y, d.stride_y, d.pad_top, d.pad_bottom),
                                    (wd, w[2], d.dilation_x, d.stride_x, d.pad_left, d.pad_right)):
        out[axis] = conv_out_size(x[axis], dil * (k - 1) + 1, s, lo, hi)
    return [ins[0].with_shape(out)]


def _pool3d(layer, ins):
    """Pooling3dLayer::InferOutputShapes (the same rule as 2-D, per axis)."""
    d, x = layer.desc, ins[0].shape
    if len(x) != 5:
        raise GraphError(f"{layer.name}: Pooling3d needs a 5-D input, got {x}")
    _, dz, h, w = dhw_axes(d.data_layout)
    out = list(x)
    for axis, k, s, lo, hi in ((dz, d.pool_depth, d.stride_z, d.pad_front, d.pad_back),
                               (h, d.pool_height, d.stride_y, d.pad_top, d.pad_bottom),
                               (w, d.pool_width, d.stride_x, d.pad_left, d.pad_right)):
        out[axis] = pool_out_size(x[axis], k, s, lo, hi, d.output_shape_rounding)
    return [ins[0].with_shape(out)]


_RULES.update({LayerType.Convolution3d: _conv3d, LayerType.Pooling3d: _pool3d})
# -- the 23.08 format (src/armnn/layers/ReduceLayer.cpp, LogicalBinaryLayer.cpp, TileLayer.cpp,
# ReverseV2Layer.cpp of 23.08)

def _tile(layer, ins):
    x, m = ins[0].shape, tuple(layer.desc.m_multiples)
    if len(m) != len(x):
        raise GraphError(f"{layer.name}: {len(m)} multiples for a rank-{len(x)} input")
    return [ins[0].with_shape(tuple(d * k for d, k in zip(x, m)))]


_RULES.update({
    LayerType.Reduce: _mean,  # (the same rule: keep_dims gives 1s, else the axes go, [1] if none is left)
    LayerType.LogicalBinary: _comparison,
    LayerType.Tile: _tile,
    LayerType.ReverseV2: _same,
})


def _depth_space(layer, ins):
    """SpaceToDepth: blocks of H and W into the channels (C * b * b, H / b, W / b); DepthToSpace back."""
    d, x = layer.desc, list(ins[0].shape)
    c, h, w = hw_axes(d.data_layout)
    b = d.block_size
    if len(x) != 4 or b < 1:
        raise GraphError(f"{layer.name}: needs a 4-D input and a block size >= 1, got {x} and {b}")
    if layer.type == LayerType.SpaceToDepth:
        if x[h] % b or x[w] % b:
            raise GraphError(f"{layer.name}: spatial size {x[h]}x{x[w]} is not divisible by block {b}")
        x[c], x[h], x[w] = x[c] * b * b, x[h] // b, x[w] // b
    else:
        if x[c] % (b * b):
            raise GraphError(f"{layer.name}: {x[c]} channels are not divisible by block {b}x{b}")
        x[c], x[h], x[w] = x[c] // (b * b), x[h] * b, x[w] * b
    return [ins[0].with_shape(x)]


_RULES.update({LayerType.SpaceToDepth: _depth_space, LayerType.DepthToSpace: _depth_space,
               LayerType.InstanceNormalization: _same})


def _stack(layer, ins):
    """StackLayer::InferOutputShapes: input_shape with num_inputs inserted at axis."""
    d = layer.desc
    shape = tuple(d.input_shape)
    if d.num_inputs != len(ins) or any(i.shape != shape for i in ins) or not 0 <= d.axis <= len(shape):
        raise GraphError(f"{layer.name}: Stack of {d.num_inputs} inputs of shape {shape} on axis {d.axis}, "
                         f"got inputs {[i.shape for i in ins]}")
    return [ins[0].with_shape(shape[:d.axis] + (len(ins),) + shape[d.axis:])]


_RULES[LayerType.Stack] = _stack


def infer_outputs(layer) -> list[TensorInfo]:
    """The output TensorInfos of `layer` given its inputs' (raises GraphError)."""
    if layer.type == LayerType.Input:
        raise GraphError(f"{layer.name}: an Input layer's TensorInfo must be given")
    want = NUM_INPUTS[layer.type]
    n = len(layer.inputs)
    if (want is None and n < 1) or (want is not None and n != want):
        raise GraphError(f"{layer.name}: {layer.type.name} takes {want or 'one or more'} inputs, got {n}")
    for name in layer.kind.tensors:
        if name not in layer.tensors and name not in layer.kind.optional:
            raise GraphError(f"{layer.name}: {layer.type.name} needs a constant tensor '{name}'")
    ins = [p.info for p in layer.inputs]
    try:
        return _RULES[layer.type](layer, ins)
    except (IndexError, ValueError, ZeroDivisionError, TypeError) as e:
        raise GraphError(f"{layer.name}: cannot infer the {layer.type.name} output shape: {e}") from e
