"""One function per layer type, following the Arm NN 20.08 CpuRef reference
workloads (src/backends/reference/workloads). Each takes the layer, its input
arrays (raw data: float32, float16, uint8, int32 or bool) and the TensorInfos
of those inputs, and returns the raw output arrays.

Float results are computed in float32 with the workloads' order of
operations where it changes rounding (sums accumulate sequentially in the
C++ loop order), so they match the runtime closely and quantized results
round the same way.
"""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError
from ..ir.descriptors import BINARY_LAYERS
from ..ir.shapes import strided_slice_range
from ..ir.types import (ActivationFunction, DataLayout, DataType, LayerType, TensorInfo,
                        NormalizationAlgorithmChannel, NormalizationAlgorithmMethod,
                        PaddingMethod, PoolingAlgorithm)
from .numeric import F32, decode, encode

LAYER_FUNCTIONS = {}


def layer_fn(*types):
    def register(fn):
        for t in types:
            LAYER_FUNCTIONS[t] = fn
        return fn
    return register


def _to_nchw(x, layout):
    return x if layout == DataLayout.NCHW else x.transpose(0, 3, 1, 2)


def _input_nchw(layer, ins, infos):
    """The decoded 4-D input of a layer with a data_layout, as NCHW."""
    if ins[0].ndim != 4:
        raise ExecutionError(f"{layer.name}: {layer.type.name} needs a 4-D input, got {ins[0].shape}")
    return _to_nchw(decode(ins[0], infos[0]), layer.desc.data_layout)


def _from_nchw(x, layout):
    return x if layout == DataLayout.NCHW else x.transpose(0, 2, 3, 1)


def _seq_sum(x, axis):
    """Sum along `axis` accumulating left to right in float32, like a C++ loop
    (numpy's sum is pairwise); add.accumulate is strictly sequential."""
    x = np.moveaxis(x, axis, -1)
    if x.shape[-1] == 0:
        return np.zeros(x.shape[:-1], F32)
    return np.add.accumulate(x, axis=-1, dtype=F32)[..., -1]


def _const(layer, name):
    t = layer.tensors[name]
    return decode(t.data, t.info)


# -- sources and copies ------------------------------------------------------------

@layer_fn(LayerType.Constant)
def constant(layer, ins, infos):
    return [layer.tensors["input"].data.copy()]


@layer_fn(LayerType.Reshape)
def reshape(layer, ins, infos):
    # RefReshapeWorkload: memcpy, so quantized bytes are not requantized.
    return [ins[0].reshape(layer.outputs[0].shape)]


@layer_fn(LayerType.Permute)
def permute(layer, ins, infos):
    # armnnUtils::Permute: input dimension i goes to output dimension dim_mappings[i].
    m = layer.desc.dim_mappings
    axes = [0] * len(m)
    for i, d in enumerate(m):
        axes[d] = i
    return [np.ascontiguousarray(ins[0].transpose(axes))]


@layer_fn(LayerType.StridedSlice)
def strided_slice(layer, ins, infos):
    # StridedSlice.cpp copies bytes: no requantization.
    d, x = layer.desc, ins[0]
    if x.ndim > 4:
        raise ExecutionError(f"{layer.name}: Arm NN's StridedSlice handles at most 4 dimensions, got {x.ndim}")
    index = []
    for axis in range(x.ndim):
        if d.shrink_axis_mask & (1 << axis) and (d.stride[axis] < 0 or abs(d.begin[axis] - d.end[axis]) > 1):
            # StridedSliceLayer::InferOutputShapes refuses these
            raise ExecutionError(f"{layer.name}: a shrunk axis needs a positive stride and |begin - end| <= 1")
        start, stop, _ = strided_slice_range(d, x.shape, axis)
        index.append(np.arange(start, stop, d.stride[axis]))
    out = x[np.ix_(*index)] if index else x
    return [out.reshape(layer.outputs[0].shape)]


@layer_fn(LayerType.Gather)
def gather(layer, ins, infos):
    # Gather.cpp: 20.08 takes axis 0, fails on a negative index (numeric_cast) and does not check
    # one past the end (reads out of bounds); 23.08 takes any axis, wraps negative indices and
    # throws past the end: both refused here
    params, indices = ins
    axis = (layer.desc.axis if layer.desc is not None else 0) % params.ndim
    idx = indices.astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= params.shape[axis]):
        raise ExecutionError(f"{layer.name}: Gather index out of range [0, {params.shape[axis]}): "
                             f"{int(idx.min()) if idx.min() < 0 else int(idx.max())} (Arm NN 20.08 reads out of "
                             "bounds, 23.08 fails; a negative one fails on 20.08 and wraps on 23.08)")
    values = np.take(decode(params, infos[0]), idx.reshape(-1), axis=axis)
    return [encode(values.reshape(layer.outputs[0].shape), layer.outputs[0])]


@layer_fn(LayerType.Merger)
def merger(layer, ins, infos):
    # Concatenate.cpp: each output element comes from the first view that contains it.
    out_info = layer.outputs[0]
    out = np.zeros(out_info.shape, F32)
    covered = np.zeros(out_info.shape, bool)
    origins = layer.desc.view_origins
    if len(origins) != len(ins):
        raise ExecutionError(f"{layer.name}: {len(origins)} view origins for {len(ins)} inputs")
    for x, info, origin in reversed(list(zip(ins, infos, origins))):
        if len(origin) != out.ndim or any(o + n > m for o, n, m in zip(origin, x.shape, out.shape)):
            raise ExecutionError(f"{layer.name}: view at {tuple(origin)} of shape {x.shape} "
                                 f"is outside the output {out.shape}")
        region = tuple(slice(o, o + n) for o, n in zip(origin, x.shape))
        out[region] = decode(x, info)
        covered[region] = True
    if not covered.all():
        raise ExecutionError(f"{layer.name}: the views leave part of the output unset")
    return [encode(out, out_info)]


@layer_fn(LayerType.Pad)
def pad(layer, ins, infos):
    d, out_info = layer.desc, layer.outputs[0]
    x = ins[0]
    if d.padding_mode != 0:  # 23.08 MirrorPad.cpp: Reflect / Symmetric, any rank
        mode = "reflect" if d.padding_mode == 1 else "symmetric"
        pairs = [tuple(d.pad_list[2 * i:2 * i + 2]) for i in range(x.ndim)]
        return [encode(np.pad(decode(x, infos[0]), pairs, mode=mode), out_info)]
    # Pad.cpp fills with the pad value encoded with scale 1, offset 0 (a raw level for
    # quantized outputs; 0 in the 19.02 format, which has no value), and copies the input
    # only for ranks 1 to 4.
    fill = TensorInfo(out_info.shape, out_info.dtype) if out_info.dtype.is_quantized else out_info
    out = encode(np.full(out_info.shape, F32(d.pad_value), F32), fill)
    if 1 <= x.ndim <= 4:
        p = d.pad_list
        region = tuple(slice(p[2 * i], p[2 * i] + n) for i, n in enumerate(x.shape))
        out[region] = encode(decode(x, infos[0]), out_info)
    return [out]


# -- elementwise ---------------------------------------------------------------------

def _cpp_max(a, b):
    return np.where(a < b, b, a)   # std::max(a, b)


def _cpp_min(a, b):
    return np.where(b < a, b, a)   # std::min(a, b)


_FLOAT_BINARY = {
    LayerType.Addition: np.add, LayerType.Subtraction: np.subtract,
    LayerType.Multiplication: np.multiply, LayerType.Division: np.divide,
    LayerType.Maximum: _cpp_max, LayerType.Minimum: _cpp_min,
    LayerType.Equal: np.equal, LayerType.Greater: np.greater,
}


def _int_divide(a, b):
    # std::divides<int32_t>: truncates toward zero.
    if (b == 0).any():
        raise ExecutionError("Signed32 division by zero")
    q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
    return (np.sign(a.astype(np.int64)) * np.sign(b.astype(np.int64)) * q).astype(np.int32)


_INT_BINARY = {
    LayerType.Addition: np.add, LayerType.Subtraction: np.subtract,
    LayerType.Multiplication: np.multiply, LayerType.Division: _int_divide,
    LayerType.Maximum: _cpp_max, LayerType.Minimum: _cpp_min,
}


@layer_fn(*BINARY_LAYERS)
def binary(layer, ins, infos):
    a, b = ins
    if a.ndim != b.ndim:
        raise ExecutionError(f"{layer.name}: inputs have ranks {a.ndim} and {b.ndim}")
    out_info = layer.outputs[0]
    if infos[0].dtype == DataType.Signed32 and layer.type in _INT_BINARY:
        # RefElementwiseWorkload<int32_t>: exact integer arithmetic (wrapping).
        with np.errstate(over="ignore"):
            return [_INT_BINARY[layer.type](a, b).astype(np.int32)]
    with np.errstate(all="ignore"):
        r = _FLOAT_BINARY[layer.type](decode(a, infos[0]), decode(b, infos[1]))
    if out_info.dtype == DataType.Boolean:
        return [np.asarray(r, bool)]
    return [encode(r, out_info)]


def _activation(x, fn, a, b):
    A, B = F32(a), F32(b)
    if fn == ActivationFunction.Linear:
        return A * x + B
    if fn == ActivationFunction.Sigmoid:
        return F32(1) / (F32(1) + np.exp(-x))
    if fn == ActivationFunction.ReLu:
        return np.where(x > 0, x, F32(0))                  # std::max(0.f, in)
    if fn == ActivationFunction.BoundedReLu:
        return _cpp_min(np.full_like(x, A), _cpp_max(np.full_like(x, B), x))  # min(a, max(b, in))
    if fn == ActivationFunction.LeakyReLu:
        return np.where(x > 0, x, x * A)
    if fn == ActivationFunction.Abs:
        return np.where(x < 0, -x, x)
    if fn == ActivationFunction.Sqrt:
        return np.sqrt(x)
    if fn == ActivationFunction.Square:
        return x * x
    if fn == ActivationFunction.TanH:
        return A * np.tanh(B * x)
    if fn == ActivationFunction.HardSwish:   # Activation.cpp: in * min(max(in + 3, 0), 6) / 6
        return x * _cpp_min(np.full_like(x, F32(6)), _cpp_max(x + F32(3), np.zeros_like(x))) / F32(6)
    raise ExecutionError(f"unknown activation function {fn!r}")


@layer_fn(LayerType.Activation)
def activation(layer, ins, infos):
    d = layer.desc
    if d.function == ActivationFunction.SoftReLu:
        # Deserializer.cpp ToActivationFunction has no SoftReLu case and returns Sigmoid.
        raise ExecutionError(f"{layer.name}: Arm NN 20.08 loads a SoftReLu activation as Sigmoid")
    with np.errstate(all="ignore"):
        y = _activation(decode(ins[0], infos[0]), d.function, d.a, d.b)
    return [encode(y, layer.outputs[0])]


@layer_fn(LayerType.Rsqrt)
def rsqrt(layer, ins, infos):
    with np.errstate(all="ignore"):
        y = F32(1) / np.sqrt(decode(ins[0], infos[0]))
    return [encode(y, layer.outputs[0])]


@layer_fn(LayerType.Floor)
def floor(layer, ins, infos):
    return [encode(np.floor(decode(ins[0], infos[0])), layer.outputs[0])]


# -- reductions and normalizations ------------------------------------------------------

@layer_fn(LayerType.Softmax)
def softmax(layer, ins, infos):
    # Softmax.cpp over the descriptor's axis (the last one before the 23.08 format).
    x = decode(ins[0], infos[0])
    axis = layer.desc.axis % x.ndim
    beta = F32(layer.desc.beta)
    with np.errstate(all="ignore"):
        e = np.exp((x - np.max(x, axis=axis, keepdims=True)) * beta)
        y = e / np.expand_dims(_seq_sum(e, axis), axis)
    return [encode(y, layer.outputs[0])]


@layer_fn(LayerType.Mean)
def mean(layer, ins, infos):
    # Mean.cpp: float sums in input order, then one division by the element count.
    x = decode(ins[0], infos[0])
    axes = sorted(set(layer.desc.axis)) if layer.desc.axis else list(range(x.ndim))
    kept = [i for i in range(x.ndim) if i not in axes]
    count = int(np.prod([x.shape[i] for i in axes]))
    flat = x.transpose(kept + axes).reshape(int(np.prod([x.shape[i] for i in kept])), count)
    with np.errstate(all="ignore"):
        y = _seq_sum(flat, 1) / F32(count)
    return [encode(y.reshape(layer.outputs[0].shape), layer.outputs[0])]


@layer_fn(LayerType.L2Normalization)
def l2_normalization(layer, ins, infos):
    # RefL2NormalizationWorkload: tensors of rank < 4 are padded with leading 1s in the
    # descriptor's layout, so the reduced "channel" dimension depends on the layout.
    x = decode(ins[0], infos[0])
    layout = layer.desc.data_layout
    x4 = x.reshape((1,) * (4 - x.ndim) + x.shape)
    c_axis = 1 if layout == DataLayout.NCHW else 3
    acc = np.zeros(x4.shape[:c_axis] + (1,) + x4.shape[c_axis + 1:], F32)
    for d in range(x4.shape[c_axis]):
        v = np.take(x4, [d], axis=c_axis)
        acc = acc + v * v
    eps = F32(1e-12)  # the schema has no eps; the deserializer keeps the descriptor default
    with np.errstate(all="ignore"):
        scale = F32(1) / np.sqrt(np.where(acc < eps, eps, acc))
    return [encode((x4 * scale).reshape(x.shape), layer.outputs[0])]


@layer_fn(LayerType.Normalization)
def normalization(layer, ins, infos):
    d = layer.desc
    if d.norm_method_type != NormalizationAlgorithmMethod.LocalBrightness:
        raise ExecutionError(f"{layer.name}: Arm NN 20.08 CpuRef does not implement LocalContrast "
                             "normalization (it leaves the output unwritten)")
    if ins[0].ndim != 4:
        raise ExecutionError(f"{layer.name}: Normalization needs a 4-D input")
    x = decode(ins[0], infos[0])
    alpha, beta, k = F32(d.alpha), F32(d.beta), F32(d.k)
    radius = d.norm_size // 2
    if d.norm_channel_type == NormalizationAlgorithmChannel.Across:
        xc = _to_nchw(x, d.data_layout)
        depth = xc.shape[1]
        acc = np.zeros_like(xc)
        for z in range(-radius, radius + 1):
            # acc[c] += x[c + z]^2 where 0 <= c + z < depth
            lo, hi = max(0, -z), min(depth, depth - z)
            if lo < hi:
                v = xc[:, lo + z:hi + z]
                acc[:, lo:hi] = acc[:, lo:hi] + v * v
        with np.errstate(all="ignore"):
            y = np.power(k + acc * alpha, -beta) * xc
        y = _from_nchw(y, d.data_layout)
    else:
        # NormalizeWithinUingLbr indexes the tensor as NCHW whatever the data layout.
        n, c, h, w = x.shape
        acc = np.zeros_like(x)
        for dy in range(-radius, radius + 1):
            for dx in range(-radius, radius + 1):
                y0, y1 = max(0, -dy), min(h, h - dy)
                x0, x1 = max(0, -dx), min(w, w - dx)
                if y0 < y1 and x0 < x1:
                    v = x[:, :, y0 + dy:y1 + dy, x0 + dx:x1 + dx]
                    acc[:, :, y0:y1, x0:x1] = acc[:, :, y0:y1, x0:x1] + v * v
        with np.errstate(all="ignore"):
            y = x / np.power(k + acc * alpha, beta)
    # RefNormalizationWorkload encodes with the INPUT's TensorInfo.
    return [encode(y, infos[0])]


@layer_fn(LayerType.BatchNormalization)
def batch_normalization(layer, ins, infos):
    d = layer.desc
    mean, var = _const(layer, "mean"), _const(layer, "variance")
    beta, gamma = _const(layer, "beta"), _const(layer, "gamma")
    with np.errstate(all="ignore"):
        mult = gamma / np.sqrt(var + F32(d.eps))
        add = beta - mult * mean
    x = _input_nchw(layer, ins, infos)
    y = mult[None, :, None, None] * x + add[None, :, None, None]
    return [encode(_from_nchw(y, d.data_layout), layer.outputs[0])]


# -- windows: convolution, pooling, resize --------------------------------------------------

def _taps(size_in, size_out, k, stride, pad_lo, dilation=1):
    """Zero-padded input length and, per tap, the slice giving every output position."""
    need = (size_out - 1) * stride + dilation * (k - 1) + 1
    hi = max(0, need - pad_lo - size_in)
    return hi, [slice(t * dilation, t * dilation + (size_out - 1) * stride + 1, stride) for t in range(k)]


def _conv_input(x, layer, out_shape_nchw, kh, kw):
    d = layer.desc
    _, _, oh, ow = out_shape_nchw
    pad_b, ys = _taps(x.shape[2], oh, kh, d.stride_y, d.pad_top, d.dilation_y)
    pad_r, xs = _taps(x.shape[3], ow, kw, d.stride_x, d.pad_left, d.dilation_x)
    # ConvImpl.cpp reads 0.0f in the padding (not the zero point) and ignores pad_bottom/right:
    # the output shape decides which input rows are read.
    xp = np.pad(x, ((0, 0), (0, 0), (d.pad_top, pad_b), (d.pad_left, pad_r)))
    return xp, ys, xs


def _bias(layer):
    if layer.desc.bias_enabled:
        if "biases" not in layer.tensors:
            raise ExecutionError(f"{layer.name}: bias enabled but no bias tensor")
        return _const(layer, "biases")
    return None


@layer_fn(LayerType.Convolution2d)
def convolution2d(layer, ins, infos):
    d, out_info = layer.desc, layer.outputs[0]
    w = _const(layer, "weights")
    if d.data_layout == DataLayout.NHWC:
        w = w.transpose(0, 3, 1, 2)                     # [O, kH, kW, I] -> [O, I, kH, kW]
    x = _input_nchw(layer, ins, infos)
    out_shape = _to_nchw(np.empty(out_info.shape, np.uint8), d.data_layout).shape
    o, ci, kh, kw = w.shape
    xp, ys, xs = _conv_input(x, layer, out_shape, kh, kw)
    acc = np.zeros(out_shape, F32)
    # Accumulate in the C++ order: input channel, filter row, filter column.
    for c in range(ci):
        for ky in range(kh):
            for kx in range(kw):
                acc += w[:, c, ky, kx][None, :, None, None] * xp[:, c:c + 1, ys[ky], xs[kx]]
    b = _bias(layer)
    if b is not None:
        acc += b[None, :, None, None]
    return [encode(_from_nchw(acc, d.data_layout), out_info)]


@layer_fn(LayerType.DepthwiseConvolution2d)
def depthwise_convolution2d(layer, ins, infos):
    d, out_info = layer.desc, layer.outputs[0]
    t = layer.tensors["weights"]                        # [M, C, kH, kW] in both layouts
    m, c, kh, kw = t.info.shape
    if t.info.scales is not None:  # ConvImpl.cpp: SetIndex(filterIndex, cOutput), scale per output channel
        w = t.data.astype(F32).transpose(1, 0, 2, 3).reshape(c * m, kh, kw) * \
            np.asarray(t.info.scales, F32)[:, None, None]
    else:
        w = _const(layer, "weights").transpose(1, 0, 2, 3).reshape(c * m, kh, kw)  # output channel c * M + m
    x = _input_nchw(layer, ins, infos)
    x = np.repeat(x, m, axis=1)
    out_shape = _to_nchw(np.empty(out_info.shape, np.uint8), d.data_layout).shape
    xp, ys, xs = _conv_input(x, layer, out_shape, kh, kw)
    acc = np.zeros(out_shape, F32)
    for ky in range(kh):
        for kx in range(kw):
            acc += w[:, ky, kx][None, :, None, None] * xp[:, :, ys[ky], xs[kx]]
    b = _bias(layer)
    if b is not None:
        acc += b[None, :, None, None]
    return [encode(_from_nchw(acc, d.data_layout), out_info)]


@layer_fn(LayerType.FullyConnected)
def fully_connected(layer, ins, infos):
    d, out_info = layer.desc, layer.outputs[0]
    x = decode(ins[0], infos[0])
    x = x.reshape(x.shape[0], -1)                       # [N, product of the other dims]
    k = x.shape[1]
    w = _const(layer, "weights").reshape(-1)
    n_out = w.size // k if k else 0
    w = w.reshape(n_out, k).T if d.transpose_weights_matrix else w.reshape(k, n_out)
    acc = np.zeros((x.shape[0], n_out), F32)
    for i in range(k):                                  # FullyConnected.cpp: sequential over inputs
        acc += w[i][None, :] * x[:, i:i + 1]
    b = _bias(layer)
    if b is not None:
        acc += b[None, :]
    return [encode(acc.reshape(out_info.shape), out_info)]


def _pool_ranges(size_in, size_out, k, stride, pad_lo, pad_hi):
    start = np.arange(size_out) * stride - pad_lo
    end = np.minimum(start + k, size_in + pad_hi)       # clamped to the padded input
    only_pad = (end <= 0) | (start > size_in)
    return start, end, only_pad


@layer_fn(LayerType.Pooling2d)
def pooling2d(layer, ins, infos):
    d, out_info = layer.desc, layer.outputs[0]
    x = _input_nchw(layer, ins, infos)
    _, _, h, w = x.shape
    out_shape = _to_nchw(np.empty(out_info.shape, np.uint8), d.data_layout).shape
    oh, ow = out_shape[2:]
    hs, he, hpad = _pool_ranges(h, oh, d.pool_height, d.stride_y, d.pad_top, d.pad_bottom)
    ws, we, wpad = _pool_ranges(w, ow, d.pool_width, d.stride_x, d.pad_left, d.pad_right)
    if d.padding_method == PaddingMethod.Exclude:
        # Pooling2d.cpp: the divisor is the window clamped to the real input.
        area = np.outer(np.clip(he, 0, h) - np.clip(hs, 0, h), np.clip(we, 0, w) - np.clip(ws, 0, w))
    else:
        area = np.outer(he - hs, we - ws)
    area = area.astype(F32)
    algo = d.pool_type
    acc = np.full(out_shape, np.finfo(F32).min if algo == PoolingAlgorithm.Max else 0, F32)
    # Windows are visited tap by tap (row-major like the C++ loops); padding is skipped.
    for ky in range(d.pool_height):
        rows = hs + ky
        rv = (rows >= 0) & (rows < h)
        rc = np.clip(rows, 0, max(h - 1, 0))
        for kx in range(d.pool_width):
            cols = ws + kx
            cv = (cols >= 0) & (cols < w)
            cc = np.clip(cols, 0, max(w - 1, 0))
            valid = rv[:, None] & cv[None, :]
            if not valid.any():
                continue
            acc = pool_step(algo, acc, x[:, :, rc][:, :, :, cc], valid)
    acc = pool_finish(algo, acc, area)
    # A window over padding only gives 0.
    acc = np.where(hpad[:, None] | wpad[None, :], F32(0), acc)
    return [encode(_from_nchw(acc, d.data_layout), out_info)]


@layer_fn(LayerType.ResizeBilinear)
def resize_bilinear(layer, ins, infos):
    # Resize.cpp with align_corners = half_pixel_centers = false: the output pixel's
    # top-left corner maps to input coordinate out * (in / out).
    d, out_info = layer.desc, layer.outputs[0]
    x = _input_nchw(layer, ins, infos)
    _, _, h, w = x.shape

    def axis(size_in, size_out):
        scale = F32(size_in) / F32(size_out)
        pos = np.arange(size_out).astype(F32) * scale
        fl = np.floor(pos)
        i0 = np.maximum(fl, 0).astype(np.int64)
        return i0, np.minimum(i0 + 1, size_in - 1), pos - fl

    y0, y1, yw = axis(h, d.target_height)
    x0, x1, xw = axis(w, d.target_width)
    xw, yw = xw[None, None, None, :], yw[None, None, :, None]
    one = F32(1)

    def lerp(a, b, t):
        return t * b + (one - t) * a

    top = lerp(x[:, :, y0][:, :, :, x0], x[:, :, y0][:, :, :, x1], xw)
    bottom = lerp(x[:, :, y1][:, :, :, x0], x[:, :, y1][:, :, :, x1], xw)
    return [encode(_from_nchw(lerp(top, bottom, yw), d.data_layout), out_info)]


# -- batch/space rearrangements ----------------------------------------------------------

@layer_fn(LayerType.SpaceToBatchNd)
def space_to_batch_nd(layer, ins, infos):
    d, out_info = layer.desc, layer.outputs[0]
    x = _input_nchw(layer, ins, infos)
    n, c, _, _ = x.shape
    bh, bw = d.block_shape
    on, _, oh, ow = _to_nchw(np.empty(out_info.shape, np.uint8), d.data_layout).shape
    top, bottom, left, right = d.pad_list
    # SpaceToBatchNd.cpp writes 0.0f (encoded) in the padding.
    xp = np.pad(x, ((0, 0), (0, 0), (top, max(0, oh * bh - top - x.shape[2])),
                    (left, max(0, ow * bw - left - x.shape[3]))))[:, :, :oh * bh, :ow * bw]
    # out batch (sh * bw + sw) * N + n holds padded[n, :, oh * bh + sh, ow * bw + sw]
    y = xp.reshape(n, c, oh, bh, ow, bw).transpose(3, 5, 0, 1, 2, 4).reshape(on, c, oh, ow)
    return [encode(_from_nchw(y, d.data_layout), out_info)]


@layer_fn(LayerType.BatchToSpaceNd)
def batch_to_space_nd(layer, ins, infos):
    d, out_info = layer.desc, layer.outputs[0]
    x = _input_nchw(layer, ins, infos)
    n_in, c, h, w = x.shape
    bh, bw = d.block_shape
    on, _, oh, ow = _to_nchw(np.empty(out_info.shape, np.uint8), d.data_layout).shape
    top, left = d.crops[0], d.crops[2]
    # in batch (sh * bw + sw) * N + n lands at out[n, :, h * bh + sh - top, w * bw + sw - left]
    full = x.reshape(bh, bw, on, c, h, w).transpose(2, 3, 4, 0, 5, 1).reshape(on, c, h * bh, w * bw)
    y = full[:, :, top:top + oh, left:left + ow]
    if y.shape[2:] != (oh, ow):
        raise ExecutionError(f"{layer.name}: crops leave part of the output unset")
    return [encode(_from_nchw(y, d.data_layout), out_info)]


# The helpers other modules reuse (releases.py: std::max; fp16_range.py: a convolution's
# accumulators), under public names; the layer functions here call them by the short ones.
cpp_max, const_of, bias_of, conv_input = _cpp_max, _const, _bias, _conv_input
to_nchw, from_nchw, input_nchw = _to_nchw, _from_nchw, _input_nchw
pool_ranges, activation_fn, const_value, cpp_min, seq_sum = _pool_ranges, _activation, _const, _cpp_min, _seq_sum


def pool_step(algo, acc, v, valid):
    """One window position of Pooling2d.cpp / Pooling3d.cpp: max, sum or sum of squares,
    over the valid (not padding) elements only."""
    if algo == PoolingAlgorithm.Max:
        return np.where(valid & (v > acc), v, acc)
    if algo == PoolingAlgorithm.Average:
        return acc + np.where(valid, v, F32(0))
    return acc + np.where(valid, v * v, F32(0))


def pool_finish(algo, acc, area):
    """Average: the sum over the area; L2: the root of the mean square; Max as it is."""
    with np.errstate(all="ignore"):
        if algo == PoolingAlgorithm.Average:
            return acc / area
        if algo == PoolingAlgorithm.L2:
            return np.sqrt(acc / area)
    return acc
