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
from ..ir.kinds import BINARY_LAYERS
from ..ir.geometry import strided_slice_range
from ..ir.types import (ActivationFunction, DataLayout, DataType, LayerType, TensorInfo,
                        NormalizationAlgorithmChannel, NormalizationAlgorithmMethod)
from .common import GATHER_WRAPS, const_of, cpp_max, cpp_min, input_nchw, layer_fn, seq_sum, to_nchw, from_nchw
from .numeric import F32, decode, encode

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
    # throws past the end: refused here, but for 23.08's wrap in a 23.08 file (GATHER_WRAPS)
    params, indices = ins
    axis = (layer.desc.axis if layer.desc is not None else 0) % params.ndim
    idx = indices.astype(np.int64)
    if GATHER_WRAPS.get():
        idx = np.where((idx < 0) & (idx >= -params.shape[axis]), idx + params.shape[axis], idx)
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

_FLOAT_BINARY = {
    LayerType.Addition: np.add, LayerType.Subtraction: np.subtract,
    LayerType.Multiplication: np.multiply, LayerType.Division: np.divide,
    LayerType.Maximum: cpp_max, LayerType.Minimum: cpp_min,
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
    LayerType.Maximum: cpp_max, LayerType.Minimum: cpp_min,
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


def activation_fn(x, fn, a, b):
    A, B = F32(a), F32(b)
    if fn == ActivationFunction.Linear:
        return A * x + B
    if fn == ActivationFunction.Sigmoid:
        return F32(1) / (F32(1) + np.exp(-x))
    if fn == ActivationFunction.ReLu:
        return np.where(x > 0, x, F32(0))                  # std::max(0.f, in)
    if fn == ActivationFunction.BoundedReLu:
        return cpp_min(np.full_like(x, A), cpp_max(np.full_like(x, B), x))  # min(a, max(b, in))
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
        return x * cpp_min(np.full_like(x, F32(6)), cpp_max(x + F32(3), np.zeros_like(x))) / F32(6)
    raise ExecutionError(f"unknown activation function {fn!r}")


@layer_fn(LayerType.Activation)
def activation(layer, ins, infos):
    d = layer.desc
    if d.function == ActivationFunction.SoftReLu:
        # Deserializer.cpp ToActivationFunction has no SoftReLu case and returns Sigmoid.
        raise ExecutionError(f"{layer.name}: Arm NN 20.08 loads a SoftReLu activation as Sigmoid")
    with np.errstate(all="ignore"):
        y = activation_fn(decode(ins[0], infos[0]), d.function, d.a, d.b)
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
        y = e / np.expand_dims(seq_sum(e, axis), axis)
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
        y = seq_sum(flat, 1) / F32(count)
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
        xc = to_nchw(x, d.data_layout)
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
        y = from_nchw(y, d.data_layout)
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
    mean, var = const_of(layer, "mean"), const_of(layer, "variance")
    beta, gamma = const_of(layer, "beta"), const_of(layer, "gamma")
    with np.errstate(all="ignore"):
        mult = gamma / np.sqrt(var + F32(d.eps))
        add = beta - mult * mean
    x = input_nchw(layer, ins, infos)
    y = mult[None, :, None, None] * x + add[None, :, None, None]
    return [encode(from_nchw(y, d.data_layout), layer.outputs[0])]
