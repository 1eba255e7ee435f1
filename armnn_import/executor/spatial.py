"""The window layers (Convolution2d, DepthwiseConvolution2d, FullyConnected, Pooling2d, ResizeBilinear)
and the batch/space rearrangements, following the CpuRef workloads (ConvImpl.cpp, Pooling2d.cpp, ...)."""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError
from ..ir.types import DataLayout, LayerType, PaddingMethod, PoolingAlgorithm
from .common import const_of, from_nchw, input_nchw, layer_fn, to_nchw
from .numeric import F32, decode, encode

# -- windows: convolution, pooling, resize --------------------------------------------------

def _taps(size_in, size_out, k, stride, pad_lo, dilation=1):
    """Zero-padded input length and, per tap, the slice giving every output position."""
    need = (size_out - 1) * stride + dilation * (k - 1) + 1
    hi = max(0, need - pad_lo - size_in)
    return hi, [slice(t * dilation, t * dilation + (size_out - 1) * stride + 1, stride) for t in range(k)]


def conv_input(x, layer, out_shape_nchw, kh, kw):
    d = layer.desc
    _, _, oh, ow = out_shape_nchw
    pad_b, ys = _taps(x.shape[2], oh, kh, d.stride_y, d.pad_top, d.dilation_y)
    pad_r, xs = _taps(x.shape[3], ow, kw, d.stride_x, d.pad_left, d.dilation_x)
    # ConvImpl.cpp reads 0.0f in the padding (not the zero point) and ignores pad_bottom/right:
    # the output shape decides which input rows are read.
    xp = np.pad(x, ((0, 0), (0, 0), (d.pad_top, pad_b), (d.pad_left, pad_r)))
    return xp, ys, xs


def bias_of(layer):
    if layer.desc.bias_enabled:
        if "biases" not in layer.tensors:
            raise ExecutionError(f"{layer.name}: bias enabled but no bias tensor")
        return const_of(layer, "biases")
    return None


@layer_fn(LayerType.Convolution2d)
def convolution2d(layer, ins, infos):
    d, out_info = layer.desc, layer.outputs[0]
    w = const_of(layer, "weights")
    if d.data_layout == DataLayout.NHWC:
        w = w.transpose(0, 3, 1, 2)                     # [O, kH, kW, I] -> [O, I, kH, kW]
    x = input_nchw(layer, ins, infos)
    out_shape = to_nchw(np.empty(out_info.shape, np.uint8), d.data_layout).shape
    o, ci, kh, kw = w.shape
    xp, ys, xs = conv_input(x, layer, out_shape, kh, kw)
    acc = np.zeros(out_shape, F32)
    # Accumulate in the C++ order: input channel, filter row, filter column.
    for c in range(ci):
        for ky in range(kh):
            for kx in range(kw):
                acc += w[:, c, ky, kx][None, :, None, None] * xp[:, c:c + 1, ys[ky], xs[kx]]
    b = bias_of(layer)
    if b is not None:
        acc += b[None, :, None, None]
    return [encode(from_nchw(acc, d.data_layout), out_info)]


@layer_fn(LayerType.DepthwiseConvolution2d)
def depthwise_convolution2d(layer, ins, infos):
    d, out_info = layer.desc, layer.outputs[0]
    t = layer.tensors["weights"]                        # [M, C, kH, kW] in both layouts
    m, c, kh, kw = t.info.shape
    if t.info.scales is not None:  # ConvImpl.cpp: SetIndex(filterIndex, cOutput), scale per output channel
        w = t.data.astype(F32).transpose(1, 0, 2, 3).reshape(c * m, kh, kw) * \
            np.asarray(t.info.scales, F32)[:, None, None]
    else:
        w = const_of(layer, "weights").transpose(1, 0, 2, 3).reshape(c * m, kh, kw)  # output channel c * M + m
    x = input_nchw(layer, ins, infos)
    x = np.repeat(x, m, axis=1)
    out_shape = to_nchw(np.empty(out_info.shape, np.uint8), d.data_layout).shape
    xp, ys, xs = conv_input(x, layer, out_shape, kh, kw)
    acc = np.zeros(out_shape, F32)
    for ky in range(kh):
        for kx in range(kw):
            acc += w[:, ky, kx][None, :, None, None] * xp[:, :, ys[ky], xs[kx]]
    b = bias_of(layer)
    if b is not None:
        acc += b[None, :, None, None]
    return [encode(from_nchw(acc, d.data_layout), out_info)]


@layer_fn(LayerType.FullyConnected)
def fully_connected(layer, ins, infos):
    d, out_info = layer.desc, layer.outputs[0]
    x = decode(ins[0], infos[0])
    x = x.reshape(x.shape[0], -1)                       # [N, product of the other dims]
    k = x.shape[1]
    w = const_of(layer, "weights").reshape(-1)
    n_out = w.size // k if k else 0
    w = w.reshape(n_out, k).T if d.transpose_weights_matrix else w.reshape(k, n_out)
    acc = np.zeros((x.shape[0], n_out), F32)
    for i in range(k):                                  # FullyConnected.cpp: sequential over inputs
        acc += w[i][None, :] * x[:, i:i + 1]
    b = bias_of(layer)
    if b is not None:
        acc += b[None, :]
    return [encode(acc.reshape(out_info.shape), out_info)]


def pool_ranges(size_in, size_out, k, stride, pad_lo, pad_hi):
    start = np.arange(size_out) * stride - pad_lo
    end = np.minimum(start + k, size_in + pad_hi)       # clamped to the padded input
    only_pad = (end <= 0) | (start > size_in)
    return start, end, only_pad


@layer_fn(LayerType.Pooling2d)
def pooling2d(layer, ins, infos):
    d, out_info = layer.desc, layer.outputs[0]
    x = input_nchw(layer, ins, infos)
    _, _, h, w = x.shape
    out_shape = to_nchw(np.empty(out_info.shape, np.uint8), d.data_layout).shape
    oh, ow = out_shape[2:]
    hs, he, hpad = pool_ranges(h, oh, d.pool_height, d.stride_y, d.pad_top, d.pad_bottom)
    ws, we, wpad = pool_ranges(w, ow, d.pool_width, d.stride_x, d.pad_left, d.pad_right)
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
    return [encode(from_nchw(acc, d.data_layout), out_info)]


@layer_fn(LayerType.ResizeBilinear)
def resize_bilinear(layer, ins, infos):
    # Resize.cpp with align_corners = half_pixel_centers = false: the output pixel's
    # top-left corner maps to input coordinate out * (in / out).
    d, out_info = layer.desc, layer.outputs[0]
    x = input_nchw(layer, ins, infos)
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
    return [encode(from_nchw(lerp(top, bottom, yw), d.data_layout), out_info)]


# -- batch/space rearrangements ----------------------------------------------------------

@layer_fn(LayerType.SpaceToBatchNd)
def space_to_batch_nd(layer, ins, infos):
    d, out_info = layer.desc, layer.outputs[0]
    x = input_nchw(layer, ins, infos)
    n, c, _, _ = x.shape
    bh, bw = d.block_shape
    on, _, oh, ow = to_nchw(np.empty(out_info.shape, np.uint8), d.data_layout).shape
    top, bottom, left, right = d.pad_list
    # SpaceToBatchNd.cpp writes 0.0f (encoded) in the padding.
    xp = np.pad(x, ((0, 0), (0, 0), (top, max(0, oh * bh - top - x.shape[2])),
                    (left, max(0, ow * bw - left - x.shape[3]))))[:, :, :oh * bh, :ow * bw]
    # out batch (sh * bw + sw) * N + n holds padded[n, :, oh * bh + sh, ow * bw + sw]
    y = xp.reshape(n, c, oh, bh, ow, bw).transpose(3, 5, 0, 1, 2, 4).reshape(on, c, oh, ow)
    return [encode(from_nchw(y, d.data_layout), out_info)]


@layer_fn(LayerType.BatchToSpaceNd)
def batch_to_space_nd(layer, ins, infos):
    d, out_info = layer.desc, layer.outputs[0]
    x = input_nchw(layer, ins, infos)
    n_in, c, h, w = x.shape
    bh, bw = d.block_shape
    on, _, oh, ow = to_nchw(np.empty(out_info.shape, np.uint8), d.data_layout).shape
    top, left = d.crops[0], d.crops[2]
    # in batch (sh * bw + sw) * N + n lands at out[n, :, h * bh + sh - top, w * bw + sw - left]
    full = x.reshape(bh, bw, on, c, h, w).transpose(2, 3, 4, 0, 5, 1).reshape(on, c, h * bh, w * bw)
    y = full[:, :, top:top + oh, left:left + ow]
    if y.shape[2:] != (oh, ow):
        raise ExecutionError(f"{layer.name}: crops leave part of the output unset")
    return [encode(from_nchw(y, d.data_layout), out_info)]




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
