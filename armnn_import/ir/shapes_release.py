"""Output shapes of the layers the 20.08 and 23.08 formats add (InferOutputShapes of
src/armnn/layers/*.cpp of those releases); ir/shapes.py registers them."""
from __future__ import annotations

from ..errors import GraphError
from .geometry import broadcast_shape, conv_out_size, hw_axes, pool_out_size
from .types import DataLayout, DataType, LayerType, TensorInfo


def quantized_type(layer) -> DataType:
    """A Quantize layer's output type: the one it has (QAsymmS8 from lowering/int8.py), else uint8."""
    out = layer.outputs[0].dtype if layer.outputs else None
    return out if out is not None and out.is_quantized else DataType.QuantisedAsymm8

def transpose(layer, ins):
    m, x = layer.desc.dim_mappings, ins[0].shape
    if sorted(m) != list(range(len(x))):
        raise GraphError(f"{layer.name}: dim_mappings {tuple(m)} is not a permutation of rank {len(x)}")
    return [ins[0].with_shape([x[a] for a in m])]  # armnnUtils::TransposeTensorShape


def cast(layer, ins):
    # CastLayer: the shape of its input, the data type its output was given (the builder sets it)
    if not layer.outputs:
        raise GraphError(f"{layer.name}: a Cast layer's output data type must be given")
    return [TensorInfo(ins[0].shape, layer.outputs[0].dtype)]


def batch_matmul(layer, ins):
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


def lstm(layer, ins):
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


def dhw_axes(layout: DataLayout) -> tuple[int, int, int, int]:
    """(channel, depth, height, width) axes of a 5-D tensor in this layout."""
    return (1, 2, 3, 4) if layout == DataLayout.NCDHW else (4, 1, 2, 3)


def conv3d(layer, ins):
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


def pool3d(layer, ins):
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


def tile(layer, ins):
    x, m = ins[0].shape, tuple(layer.desc.m_multiples)
    if len(m) != len(x):
        raise GraphError(f"{layer.name}: {len(m)} multiples for a rank-{len(x)} input")
    return [ins[0].with_shape(tuple(d * k for d, k in zip(x, m)))]


def gather_nd(layer, ins):
    """GatherNdLayer::InferOutputShapes: indices[:-1] + params[indices[-1]:]."""
    x, idx = ins[0].shape, ins[1].shape
    nd = idx[-1] if idx else 0
    out = tuple(idx[:-1]) + tuple(x[nd:])
    if not 1 <= nd <= len(x) or not out:
        raise GraphError(f"{layer.name}: indices {tuple(idx)} for params {tuple(x)} (the last index "
                         "dimension must be 1 to the params' rank, and the result at least 1-D)")
    return [ins[0].with_shape(out)]


def depth_space(layer, ins):
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


def stack(layer, ins):
    """StackLayer::InferOutputShapes: input_shape with num_inputs inserted at axis."""
    d = layer.desc
    shape = tuple(d.input_shape)
    if d.num_inputs != len(ins) or any(i.shape != shape for i in ins) or not 0 <= d.axis <= len(shape):
        raise GraphError(f"{layer.name}: Stack of {d.num_inputs} inputs of shape {shape} on axis {d.axis}, "
                         f"got inputs {[i.shape for i in ins]}")
    return [ins[0].with_shape(shape[:d.axis] + (len(ins),) + shape[d.axis:])]


def splitter(layer, ins):
    """SplitterLayer::InferOutputShapes: one output a view, of its view size; the views must lie
    inside the input (ViewsDescriptor's origins and view_sizes, one coordinate an axis)."""
    d, x = layer.desc, ins[0]
    views = tuple(zip(d.origins.view_origins, d.view_sizes)) if d.origins is not None else ()
    for origin, size in views:
        if len(origin) != x.rank or len(size) != x.rank or \
                any(o + n > m for o, n, m in zip(origin, size, x.shape)):
            raise GraphError(f"{layer.name}: Splitter view at {origin} of size {size} is not inside {x.shape}")
    if not views or len(d.view_sizes) != d.origins.num_views:
        raise GraphError(f"{layer.name}: Splitter of {len(d.view_sizes)} view sizes for {len(views)} views")
    return [x.with_shape(size) for _, size in views]
