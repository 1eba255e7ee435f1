"""Convolution3d and Pooling3d (the 23.08 format), following Arm NN 23.08's CpuRef:
Conv3dImpl.cpp (one float sum per output element over kD, kH, kW, then the input
channels, in that loop order; the bias added last) and Pooling3d.cpp (the 2-D rules
per axis: windows clamped to the padded input, padding skipped, windows over padding
only give 0, Exclude divides by the clamped window)."""
from __future__ import annotations

import numpy as np

from ..ir.types import DataLayout, LayerType, PaddingMethod, PoolingAlgorithm
from .common import layer_fn
from .spatial import pool_finish, pool_step, pool_ranges as _pool_ranges
from .numeric import F32, decode, encode


def _to_ncdhw(x, layout):
    return x if layout == DataLayout.NCDHW else x.transpose(0, 4, 1, 2, 3)


def _from_ncdhw(x, layout):
    return x if layout == DataLayout.NCDHW else x.transpose(0, 2, 3, 4, 1)


@layer_fn(LayerType.Convolution3d)
def convolution3d(layer, ins, infos):
    d, out_info = layer.desc, layer.outputs[0]
    x = _to_ncdhw(decode(ins[0], infos[0]), d.data_layout)
    w = decode(ins[1], infos[1])                                  # [kD, kH, kW, I, O]
    n, c, dz, h, wd = x.shape
    od, oh, ow = _to_ncdhw(np.empty(out_info.shape, np.uint8), d.data_layout).shape[2:]
    kd, kh, kw = w.shape[:3]
    xp = np.zeros((n, c, dz + d.pad_front + kd * d.dilation_z, h + d.pad_top + kh * d.dilation_y,
                   wd + d.pad_left + kw * d.dilation_x), F32)
    xp[:, :, d.pad_front:d.pad_front + dz, d.pad_top:d.pad_top + h, d.pad_left:d.pad_left + wd] = x
    acc = np.zeros((n, w.shape[4], od, oh, ow), F32)
    zs, ys, xs = (np.arange(o) * s for o, s in ((od, d.stride_z), (oh, d.stride_y), (ow, d.stride_x)))
    for a in range(kd):
        for b in range(kh):
            for e in range(kw):
                tap = xp[:, :, zs + a * d.dilation_z][:, :, :, ys + b * d.dilation_y][:, :, :, :, xs + e * d.dilation_x]
                for ci in range(c):                               # sequential, as the C++ loop
                    acc += w[a, b, e, ci][None, :, None, None, None] * tap[:, ci:ci + 1]
    if d.bias_enabled:
        acc += decode(ins[2], infos[2])[None, :, None, None, None]
    return [encode(_from_ncdhw(acc, d.data_layout), out_info)]


@layer_fn(LayerType.Pooling3d)
def pooling3d(layer, ins, infos):
    d, out_info = layer.desc, layer.outputs[0]
    x = _to_ncdhw(decode(ins[0], infos[0]), d.data_layout)
    sizes = x.shape[2:]
    outs = _to_ncdhw(np.empty(out_info.shape, np.uint8), d.data_layout).shape[2:]
    geo = [(d.pool_depth, d.stride_z, d.pad_front, d.pad_back), (d.pool_height, d.stride_y, d.pad_top, d.pad_bottom),
           (d.pool_width, d.stride_x, d.pad_left, d.pad_right)]
    ranges = [_pool_ranges(size, o, *g) for size, o, g in zip(sizes, outs, geo)]
    if d.padding_method == PaddingMethod.Exclude:
        spans = [np.clip(e, 0, size) - np.clip(s, 0, size) for (s, e, _), size in zip(ranges, sizes)]
    else:
        spans = [e - s for s, e, _ in ranges]
    area = (spans[0][:, None, None] * spans[1][None, :, None] * spans[2][None, None, :]).astype(F32)
    algo = d.pool_type
    acc = np.full(x.shape[:2] + tuple(outs), np.finfo(F32).min if algo == PoolingAlgorithm.Max else 0, F32)
    for a in range(geo[0][0]):
        for b in range(geo[1][0]):
            for e in range(geo[2][0]):
                idx, ok = [], []
                for (s, _, _), size, k in zip(ranges, sizes, (a, b, e)):
                    i = s + k
                    ok.append((i >= 0) & (i < size))
                    idx.append(np.clip(i, 0, max(size - 1, 0)))
                valid = ok[0][:, None, None] & ok[1][None, :, None] & ok[2][None, None, :]
                if not valid.any():
                    continue
                acc = pool_step(algo, acc, x[:, :, idx[0]][:, :, :, idx[1]][:, :, :, :, idx[2]], valid)
    acc = pool_finish(algo, acc, area)
    pad_only = ranges[0][2][:, None, None] | ranges[1][2][None, :, None] | ranges[2][2][None, None, :]
    acc = np.where(pad_only, F32(0), acc)
    return [encode(_from_ncdhw(acc, d.data_layout), out_info)]
