"""The structural layers of the 20.08 format (Concat, Transpose, Resize), following
Arm NN's CpuRef reference workloads (src/backends/reference/workloads: Concatenate.cpp,
armnnUtils/Transpose.cpp, Resize.cpp; identical in 20.08 and 23.08)."""
from __future__ import annotations

import numpy as np

from ..ir.types import LayerType, ResizeMethod
from .common import from_nchw as _from_nchw, input_nchw as _input_nchw, layer_fn
from .layers import merger
from .numeric import F32, decode, encode

# ConcatLayer is the 19.02 MergerLayer under its later name (one ParseConcat, one workload)
layer_fn(LayerType.Concat)(merger)


@layer_fn(LayerType.Transpose)
def transpose(layer, ins, infos):
    # armnnUtils::Transpose: output dimension i is input dimension dim_mappings[i] (a byte copy)
    return [np.ascontiguousarray(ins[0].transpose(tuple(layer.desc.dim_mappings)))]


def _resize_scale(n_in: int, n_out: int, align: bool) -> np.float32:
    # CalculateResizeScale
    if align and n_out > 1:
        return F32(n_in - 1) / F32(n_out - 1)
    return F32(n_in) / F32(n_out)


def resize_axis(n_in: int, n_out: int, method: ResizeMethod, align: bool, half: bool):
    """Per output index along one axis: (i0, i1, weight of i1) as Resize.cpp computes them
    in float32. Nearest neighbour reads i0 only: the corner (floor, or roundf with
    align_corners) is always at distance 0 of itself, so the distance search picks it."""
    s = _resize_scale(n_in, n_out, align)
    o = np.arange(n_out).astype(F32)
    if half and method == ResizeMethod.Bilinear:
        v = (o + F32(0.5)) * s - F32(0.5)
    elif half:
        v = (o + F32(0.5)) * s
    else:
        v = o * s
    if method == ResizeMethod.NearestNeighbor and align:
        fl = np.where(v < 0, -np.floor(-v + F32(0.5)), np.floor(v + F32(0.5))).astype(F32)  # roundf
    else:
        fl = np.floor(v)
    i0 = np.maximum(fl, F32(0)).astype(np.int64)
    if half:
        i1 = np.minimum(np.ceil(v).astype(np.int64), n_in - 1)
    else:
        i1 = np.minimum(i0 + 1, n_in - 1)
    return i0, np.maximum(i1, 0), (v - fl).astype(F32)


def resize_matrix(n_in: int, n_out: int, method: ResizeMethod, align: bool, half: bool) -> np.ndarray:
    """[n_out, n_in] (float64) weights of Arm NN's Resize along one axis: what a converter
    compares with the source framework's interpolation before choosing the layer."""
    i0, i1, w = resize_axis(n_in, n_out, method, align, half)
    m = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    if method == ResizeMethod.NearestNeighbor:
        m[rows, i0] = 1.0
        return m
    np.add.at(m, (rows, i0), (F32(1) - w).astype(np.float64))
    np.add.at(m, (rows, i1), w.astype(np.float64))
    return m


@layer_fn(LayerType.Resize)
def resize(layer, ins, infos):
    d, out_info = layer.desc, layer.outputs[0]
    x = _input_nchw(layer, ins, infos)
    _, _, h, w = x.shape
    y0, y1, yw = resize_axis(h, d.target_height, d.method, d.align_corners, d.half_pixel_centers)
    x0, x1, xw = resize_axis(w, d.target_width, d.method, d.align_corners, d.half_pixel_centers)
    if d.method == ResizeMethod.NearestNeighbor:
        return [encode(_from_nchw(x[:, :, y0][:, :, :, x0], d.data_layout), out_info)]
    xw, yw = xw[None, None, None, :], yw[None, None, :, None]
    one = F32(1)

    def lerp(a, b, t):  # Lerp: w * b + (1 - w) * a
        return t * b + (one - t) * a

    top = lerp(x[:, :, y0][:, :, :, x0], x[:, :, y0][:, :, :, x1], xw)
    bottom = lerp(x[:, :, y1][:, :, :, x0], x[:, :, y1][:, :, :, x1], xw)
    return [encode(_from_nchw(lerp(top, bottom, yw), d.data_layout), out_info)]


@layer_fn(LayerType.SpaceToDepth, LayerType.DepthToSpace)
def depth_space(layer, ins, infos):
    """SpaceToDepth.cpp: output channel (shiftH * b + shiftW) * C + c takes input (c, h * b + shiftH,
    w * b + shiftW); DepthToSpace.cpp is its inverse (the channel blocks in DCR order), in both
    layouts. SpaceToDepth decodes and encodes, DepthToSpace copies bytes."""
    d, out_info = layer.desc, layer.outputs[0]
    b = d.block_size
    x = ins[0] if d.data_layout.name == "NCHW" else ins[0].transpose(0, 3, 1, 2)
    n, c, h, w = x.shape
    if layer.type == LayerType.SpaceToDepth:
        y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4).reshape(n, c * b * b, h // b, w // b)
    else:
        co = c // (b * b)
        y = x.reshape(n, b, b, co, h, w).transpose(0, 3, 4, 1, 5, 2).reshape(n, co, h * b, w * b)
    y = np.ascontiguousarray(y if d.data_layout.name == "NCHW" else y.transpose(0, 2, 3, 1))
    if layer.type == LayerType.SpaceToDepth:
        y = encode(decode(y, infos[0]), out_info)
    return [y]


@layer_fn(LayerType.InstanceNormalization)
def instance_normalization(layer, ins, infos):
    """InstanceNorm.cpp: per batch and channel, the mean and the (biased) variance over H and W,
    each a float32 sum in row-major order, then (x - mean) * gamma / sqrt(var + eps) + beta."""
    from .common import seq_sum as _seq_sum
    d, out_info = layer.desc, layer.outputs[0]
    x = _input_nchw(layer, ins, infos)
    n, c, h, w = x.shape
    flat = x.reshape(n, c, h * w)
    count = F32(h * w)
    with np.errstate(all="ignore"):
        mean = (_seq_sum(flat, 2) / count)[..., None]
        var = (_seq_sum((flat - mean) * (flat - mean), 2) / count)[..., None]
        y = (flat - mean) * F32(d.gamma) / np.sqrt(var + F32(d.eps)) + F32(d.beta)
    return [encode(_from_nchw(y.reshape(n, c, h, w).astype(F32), d.data_layout), out_info)]


@layer_fn(LayerType.Stack)
def stack(layer, ins, infos):
    """Stack.cpp: every input decoded and encoded into the output along the new axis."""
    values = [decode(x, i) for x, i in zip(ins, infos)]
    return [encode(np.stack(values, axis=layer.desc.axis), layer.outputs[0])]
