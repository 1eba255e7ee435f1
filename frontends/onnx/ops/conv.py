"""Convolutions and pooling (1-D and 2-D, NCHW)."""
from __future__ import annotations

import math

import numpy as np

from armnn_import.ir import descriptors as D
from armnn_import.ir.geometry import pool_out_size
from armnn_import.ir.types import DataLayout
from armnn_import.ir.types import ActivationFunction as AF
from armnn_import.ir.types import LayerType as L
from armnn_import.ir.types import OutputShapeRounding, PoolingAlgorithm
from armnn_import.lowering import Unsupported
from armnn_import.lowering.padding import same_pads
from armnn_import.lowering.pooling import mean_as_pool

from ..registry import all_checks, needs_const, register
from . import conv3d, conv_transpose_layer
from .common import mean, power


MAX_INT = (1 << 31) - 1  # kernel sizes, strides, dilations and pads: int32/uint32 descriptor fields


def _spatial_rank_check(node, ctx):
    s = ctx.shape(node, 0)
    if s is not None and len(s) == 5 and node.op in THREE_D:
        return conv3d.check(node, ctx, is_conv=node.op == "Conv")
    if s is not None and len(s) not in (3, 4):
        return (f"{len(s) - 2}-D {node.op} (only 1-D and 2-D are supported: Arm NN has 2-D layers only)", "")
    return None


THREE_D = ("Conv", "MaxPool", "AveragePool", "LpPool")  # those with an exact 2-D form in some cases (conv3d.py)


def _is_3d(ctx, node) -> bool:
    return node.op in THREE_D and len(ctx.lshape(ctx.val(node, 0))) == 5


def _to_4d(ctx, x, node):
    """(x as NCHW, spatial rank): a 1-D input [N, C, L] becomes [N, C, 1, L]."""
    shape = ctx.lshape(x)
    if len(shape) == 3:
        return ctx.b.reshape(x, (shape[0], shape[1], 1, shape[2]), ctx.name(node, "to4d")), 1
    if len(shape) != 4:
        raise Unsupported(f"{len(shape) - 2}-D {node.op} (only 1-D and 2-D are supported)")
    return x, 2


def _pair(v, nd, default):
    """An attribute of `nd` spatial values as (h, w) (h = 1 for 1-D)."""
    v = [int(x) for x in v] if v is not None else [default] * nd
    if len(v) != nd or (default == 1 and min(v) < 1) or min(v) < 0:
        raise Unsupported(f"expected {nd} {'positive' if default == 1 else 'non-negative'} values, got {v}")
    if max(v) > MAX_INT:
        raise Unsupported(f"values {v} out of range (Arm NN's limit is {MAX_INT})")
    return (default, v[0]) if nd == 1 else (v[0], v[1])


def _pads(ctx, node, nd, in_hw, kernel, strides, dilations):
    """(top, left, bottom, right) from pads / auto_pad."""
    auto = ctx.attr(node, "auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        out = []
        for size, k, s, d in zip(in_hw, kernel, strides, dilations):
            small, big = same_pads(size, k, s, d)
            out.append((small, big) if auto == "SAME_UPPER" else (big, small))
        return out[0][0], out[1][0], out[0][1], out[1][1]
    if auto == "VALID":
        return 0, 0, 0, 0
    if auto not in ("NOTSET", ""):
        raise Unsupported(f"auto_pad {auto!r}", code="bad-attribute")
    p = ctx.attr(node, "pads")
    if p is None:
        return 0, 0, 0, 0
    if len(p) != 2 * nd:
        raise Unsupported(f"pads {p} for a {nd}-D operation")
    if any(v < 0 for v in p):
        raise Unsupported(f"negative pads {p}")
    if any(v > MAX_INT for v in p):
        raise Unsupported(f"pads {p} out of range (Arm NN's limit is {MAX_INT})")
    return (0, p[0], 0, p[1]) if nd == 1 else (p[0], p[1], p[2], p[3])


def _back(ctx, y, nd, node):
    if nd == 1:
        s = y.info.shape
        return ctx.b.reshape(y, (s[0], s[1], s[3]), ctx.name(node, "to3d"))
    return y


def _conv_operands(x, w, bias, nd, groups, transposed=False):
    """Check a convolution's weights, groups and bias against its 4-D input;
    1-D weights become 2-D (OI1L). Returns the 4-D weights."""
    kind = "transposed convolution" if transposed else "convolution"
    if w.ndim != nd + 2:
        raise Unsupported(f"weights of rank {w.ndim} for a {nd}-D {kind}")
    if 0 in w.shape:  # the kernel size comes from the weights: an empty one is no convolution
        raise Unsupported(f"empty weights {tuple(w.shape)} (the model is invalid)", code="bad-model")
    if nd == 1:
        w = w.reshape(w.shape[0], w.shape[1], 1, w.shape[2])
    cin = x.info.shape[1]
    if groups < 1 or cin % groups or not (w.shape[0] == cin if transposed else
                                          w.shape[1] * groups == cin and w.shape[0] % groups == 0):
        raise Unsupported(f"group {groups} does not fit {cin} input channels and weights {w.shape}")
    if not transposed and bias is not None and np.size(bias) != w.shape[0]:
        raise Unsupported(f"bias of {np.size(bias)} values for {w.shape[0]} output channels")
    return w


@register("Conv", since=1, layers=("Convolution2d", "DepthwiseConvolution2d", "Addition", "Convolution3d", "BatchNormalization", "BatchToSpaceNd", "SpaceToBatchNd", "Reshape",
                          "FullyConnected"),  # (passes/conv_fc.py: a window covering its whole input)
          check=all_checks(needs_const(1, 2, what="weights/bias"), _spatial_rank_check))
def conv(ctx, node):
    if _is_3d(ctx, node):
        return conv3d.lower(ctx, node, conv, is_conv=True)
    x, nd = _to_4d(ctx, ctx.port(node, 0), node)
    w = ctx.const(node, 1, "weights").astype(np.float32, copy=False)
    bias = ctx.const(node, 2, "bias").astype(np.float32).reshape(-1) if ctx.has(node, 2) else None
    groups = int(ctx.attr(node, "group", 1))
    w = _conv_operands(x, w, bias, nd, groups)
    kernel = (w.shape[2], w.shape[3])
    ks = ctx.attr(node, "kernel_shape")
    if ks is not None and tuple(_pair(ks, nd, 1)) != kernel:
        raise Unsupported(f"kernel_shape {ks} differs from the weights {w.shape}")
    strides = _pair(ctx.attr(node, "strides"), nd, 1)
    dil = _pair(ctx.attr(node, "dilations"), nd, 1)
    pads = _pads(ctx, node, nd, x.info.shape[2:], kernel, strides, dil)
    y = ctx.b.conv2d(x, w, bias, ctx.name(node), strides=strides, pads=pads, dilations=dil, groups=groups)
    return _back(ctx, y, nd, node)


def _pool_geometry(ctx, node, x, nd, kernel):
    strides = _pair(ctx.attr(node, "strides"), nd, 1)
    dil = _pair(ctx.attr(node, "dilations"), nd, 1)
    pads = _pads(ctx, node, nd, x.info.shape[2:], kernel, strides, dil)
    if dil != (1, 1):
        ceil = bool(ctx.attr(node, "ceil_mode", 0))
        full = [(size - (k - 1) * d - 1) % s == 0 for size, k, d, s in zip(x.info.shape[2:], kernel, dil, strides)]
        if any(pads) or (ceil and not all(full)):
            raise Unsupported("dilated pooling with padding or partial windows (Arm NN pools without dilation; "
                              "only the unpadded case has an exact SpaceToBatchNd lowering)")
        return strides, pads, False
    ceil = bool(ctx.attr(node, "ceil_mode", 0))
    # The output size ONNX wants (its ceil_mode drops a last window that starts in the end padding)
    want = []
    for size, k, s, lo, hi in zip(x.info.shape[2:], kernel, strides, pads[:2], pads[2:]):
        if ctx.attr(node, "auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER"):
            want.append(math.ceil(size / s))
            continue
        n = (size + lo + hi - k) / s
        out = (math.ceil(n) if ceil else math.floor(n)) + 1
        if ceil and (out - 1) * s >= size + lo:
            out -= 1
        want.append(out)
    rounding = OutputShapeRounding.Ceiling if ceil else OutputShapeRounding.Floor
    have = [pool_out_size(size, k, s, lo, hi, rounding)
            for size, k, s, lo, hi in zip(x.info.shape[2:], kernel, strides, pads[:2], pads[2:])]
    if have != want:
        # e.g. SAME padding with ceil-like windows: try the other rounding
        other = OutputShapeRounding.Floor if ceil else OutputShapeRounding.Ceiling
        alt = [pool_out_size(size, k, s, lo, hi, other)
               for size, k, s, lo, hi in zip(x.info.shape[2:], kernel, strides, pads[:2], pads[2:])]
        if alt != want:
            raise Unsupported(f"output size {want} cannot be reproduced by Arm NN pooling (it gives {have})")
        ceil = not ceil
    if any(k > size + lo + hi for size, k, lo, hi in zip(x.info.shape[2:], kernel, pads[:2], pads[2:])):
        raise Unsupported("kernel larger than the padded input")
    return strides, pads, ceil


def dilated_pool(ctx, x, algo, kernel, strides, dil, name):
    """Unpadded dilated pooling: SpaceToBatchNd splits the dilation phases into the batch,
    each is pooled densely, BatchToSpaceNd interleaves them back, a StridedSlice strides."""
    ctx.report.decomposition("dilated pooling", "SpaceToBatchNd, Pooling2d, BatchToSpaceNd, StridedSlice")
    h, w = x.info.shape[2:]
    (dy, dx), (kh, kw) = dil, kernel
    eh, ew = (-h) % dy, (-w) % dx
    if (h + eh) // dy < kh or (w + ew) // dx < kw:
        raise Unsupported("dilated kernel larger than the input")
    y = ctx.b.add(L.SpaceToBatchNd, f"{name}_s2b", [x],
                  D.SpaceToBatchNdDescriptor((dy, dx), (0, eh, 0, ew), DataLayout.NCHW))
    y = ctx.b.pool2d(y, algo, kernel, f"{name}_pool")
    y = ctx.b.add(L.BatchToSpaceNd, f"{name}_b2s", [y],
                  D.BatchToSpaceNdDescriptor((dy, dx), (0, eh, 0, ew), DataLayout.NCHW))
    if tuple(strides) != (1, 1):
        y = ctx.b.slice(y, [None] * 4, [None] * 4, [1, 1, strides[0], strides[1]], f"{name}_stride")
    return y


def _kernel(ctx, node, nd):
    ks = ctx.attr(node, "kernel_shape")
    if ks is None:
        raise Unsupported("kernel_shape is missing")
    return _pair(ks, nd, 1)


_POOL_LAYERS = ("Pooling2d", "SpaceToBatchNd", "BatchToSpaceNd", "StridedSlice", "Reshape")  # dilated; 1-D


def _pool(algo):
    def convert(ctx, node):
        if len(node.outputs) > 1 and node.outputs[1]:
            raise Unsupported("the Indices output of MaxPool has no Arm NN equivalent")
        if _is_3d(ctx, node):
            return conv3d.lower(ctx, node, convert, is_conv=False)
        x, nd = _to_4d(ctx, ctx.port(node, 0), node)
        kernel = _kernel(ctx, node, nd)
        strides, pads, ceil = _pool_geometry(ctx, node, x, nd, kernel)
        include = bool(ctx.attr(node, "count_include_pad", 0))
        dil = _pair(ctx.attr(node, "dilations"), nd, 1)
        if dil != (1, 1):
            y = dilated_pool(ctx, x, algo, kernel, strides, dil, ctx.name(node))
        else:
            y = ctx.b.pool2d(x, algo, kernel, ctx.name(node), strides=strides, pads=pads, ceil=ceil,
                             exclude_pad=not include)
        return _back(ctx, y, nd, node)
    return convert


register("MaxPool", since=1, layers=_POOL_LAYERS + ("Pooling3d",), check=_spatial_rank_check)(_pool(PoolingAlgorithm.Max))
register("AveragePool", since=1, layers=_POOL_LAYERS + ("Pooling3d",), check=_spatial_rank_check)(_pool(PoolingAlgorithm.Average))


@register("LpPool", since=1, layers=("Pooling2d", "Activation", "BatchToSpaceNd", "Normalization", "Reshape",
                  "SpaceToBatchNd"), check=_spatial_rank_check)
def lp_pool(ctx, node):
    p = float(ctx.attr(node, "p", 2))
    if p <= 0:
        raise Unsupported(f"p={p}")
    if _is_3d(ctx, node):
        return conv3d.lower(ctx, node, lp_pool, is_conv=False)
    x, nd = _to_4d(ctx, ctx.port(node, 0), node)
    kernel = _kernel(ctx, node, nd)
    strides, pads, ceil = _pool_geometry(ctx, node, x, nd, kernel)
    if ceil:
        raise Unsupported("ceil_mode windows are clipped, so the average pool's divisor is not constant")
    n, area = ctx.name(node), kernel[0] * kernel[1]
    dil = _pair(ctx.attr(node, "dilations"), nd, 1)
    # Arm NN 20.08's deserializer has no L2 pooling: average |x|^p with the padding
    # counted (a constant divisor, the kernel area), times the area, then the p-th root.
    ctx.report.decomposition("LpPool", "|x|^p, average Pooling2d counting the padding, times the kernel "
                                       "area, p-th root (Sqrt, or Normalization as a power)")
    t = power(ctx, x if p == 2 else ctx.b.activation(x, AF.Abs, f"{n}_abs"), p, f"{n}_pow")
    if dil != (1, 1):
        y = dilated_pool(ctx, t, PoolingAlgorithm.Average, kernel, strides, dil, f"{n}_avg")
    else:
        y = ctx.b.pool2d(t, PoolingAlgorithm.Average, kernel, f"{n}_avg", strides=strides, pads=pads,
                         exclude_pad=False)
    y = ctx.b.linear(y, float(area), 0.0, n if p == 1 else f"{n}_sum")
    y = power(ctx, y, 1.0 / p, n)
    return _back(ctx, y, nd, node)


def _spatial_axes(ctx, x, node):
    rank = len(ctx.lshape(x))
    if rank < 3:
        raise Unsupported(f"a {rank}-D input (global pooling needs N, C and spatial axes)")
    return list(range(2, rank))


@register("GlobalAveragePool", since=1, layers=("Mean", "Pooling2d", "Reshape"),
          notes="from --target 23.08: an Average Pooling2d (3-D and 5-D through a 4-D view)")
def global_average_pool(ctx, node):
    x = ctx.port(node, 0)
    axes = _spatial_axes(ctx, x, node)
    # from 23.08 the pool over the whole map (3-D/5-D: a 4-D view), bit-identical to Mean and far cheaper
    y = mean_as_pool(ctx.b, x, axes, True, ctx.name(node), layout=DataLayout.NCHW)
    return y if y is not None else mean(ctx, x, axes, ctx.name(node))


def _global_max(ctx, x, name):
    shape = x.info.shape
    flat = ctx.b.reshape(x, (shape[0], shape[1], 1, int(np.prod(shape[2:]))), f"{name}_flat")
    y = ctx.b.pool2d(flat, PoolingAlgorithm.Max, (1, flat.info.shape[3]), name)
    return ctx.b.reshape(y, shape[:2] + (1,) * (len(shape) - 2), f"{name}_shape")


@register("GlobalMaxPool", since=1, layers=("Pooling2d", "Reshape"))
def global_max_pool(ctx, node):
    x = ctx.port(node, 0)
    _spatial_axes(ctx, x, node)
    return _global_max(ctx, x, ctx.name(node))


@register("GlobalLpPool", since=2, layers=("Mean", "Activation"))
def global_lp_pool(ctx, node):
    p = float(ctx.attr(node, "p", 2))
    if p <= 0:
        raise Unsupported(f"p={p}")
    x, n = ctx.port(node, 0), ctx.name(node)
    axes = _spatial_axes(ctx, x, node)
    count = int(np.prod([x.info.shape[a] for a in axes]))
    t = power(ctx, x if p == 2 else ctx.b.activation(x, AF.Abs, f"{n}_abs"), p, f"{n}_pow")
    m = ctx.b.linear(mean(ctx, t, axes, f"{n}_mean"), float(count), 0.0, n if p == 1 else f"{n}_sum")
    return power(ctx, m, 1.0 / p, n)


def _transpose_geometry(ctx, node, x, w, nd):
    """(strides, dilations, output_padding, effective kernel, pads (top, left, bottom, right) of
    the full (in - 1) * stride + k + output_padding result) of a ConvTranspose on 4-D x and w."""
    strides, dil, out_pad = (_pair(ctx.attr(node, a), nd, d) for a, d in
                             (("strides", 1), ("dilations", 1), ("output_padding", 0)))
    keff = [(k - 1) * d + 1 for k, d in zip(w.shape[2:], dil)]
    in_hw = x.info.shape[2:]
    full = [s * (i - 1) + op + ke for s, i, op, ke in zip(strides, in_hw, out_pad, keff)]
    out_shape = ctx.attr(node, "output_shape")
    auto = ctx.attr(node, "auto_pad", "NOTSET")
    if out_shape is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        target = list(_pair(out_shape, nd, 1)) if out_shape is not None else \
            [i * s for i, s in zip(in_hw, strides)]
        begin, end = [], []
        for f, t in zip(full, target):
            total = f - t  # negative: the output extends past the full result (zeros + bias there)
            # the ONNX spec: SAME_UPPER puts the odd one at the end, otherwise at the start
            lo = total // 2 if auto == "SAME_UPPER" else total - total // 2
            begin.append(lo)
            end.append(total - lo)
        pads = (begin[0], begin[1], end[0], end[1])
    else:
        p = ctx.attr(node, "pads") or [0] * (2 * nd)
        if auto == "VALID":
            p = [0] * (2 * nd)
        if len(p) != 2 * nd or any(v < 0 or v > MAX_INT for v in p):
            raise Unsupported(f"pads {p}")
        pads = (0, p[0], 0, p[1]) if nd == 1 else (p[0], p[1], p[2], p[3])
    return strides, dil, out_pad, keff, pads


@register("ConvTranspose", since=1, layers=("Reshape", "Pad", "Convolution2d", "BatchToSpaceNd",
                  "DepthwiseConvolution2d", "SpaceToBatchNd", "StridedSlice", "BatchNormalization",
                  "TransposeConvolution2d"),
          check=all_checks(needs_const(1, 2, what="weights/bias"), _spatial_rank_check))
def conv_transpose(ctx, node):
    """From the 20.08 format on one TransposeConvolution2d layer where it is exact
    (conv_transpose_layer.py); else zero-insertion upsampling (Reshape + Pad + Reshape
    per axis), then an ordinary convolution with the flipped, transposed kernel: exact."""
    x, nd = _to_4d(ctx, ctx.port(node, 0), node)
    n = ctx.name(node)
    w = ctx.const(node, 1, "weights").astype(np.float32, copy=False)
    bias = ctx.const(node, 2, "bias").astype(np.float32).reshape(-1) if ctx.has(node, 2) else None
    groups = int(ctx.attr(node, "group", 1))
    w = _conv_operands(x, w, bias, nd, groups, transposed=True)
    strides, dil, out_pad, keff, pads = _transpose_geometry(ctx, node, x, w, nd)
    y = conv_transpose_layer.direct(ctx, x, w, bias, n, strides=strides, dilations=dil, out_pad=out_pad,
                                    pads=pads, groups=groups)
    if y is not None:
        return _back(ctx, y, nd, node)
    ctx.report.decomposition("ConvTranspose", "zero insertion (Reshape, Pad, Reshape), Pad/StridedSlice, "
                                              "Convolution2d with the flipped kernel")
    y = _zero_insert(ctx, x, strides, n)
    # padding of the upsampled input: keff-1-pad_begin before, keff-1-pad_end+output_padding after
    before = [ke - 1 - pads[i] for i, ke in enumerate(keff)]
    after = [ke - 1 - pads[2 + i] + op for i, (ke, op) in enumerate(zip(keff, out_pad))]
    y = _pad_or_crop(ctx, y, before, after, n)
    go, gi, kernel = w.shape[1], x.info.shape[1] // groups, w.shape[2:]
    # weights [Cin, Cout/g, kh, kw] -> [Cout, Cin/g, kh, kw], flipped spatially
    wk = w.reshape(groups, gi, go, kernel[0], kernel[1]).transpose(0, 2, 1, 3, 4)
    wk = wk.reshape(groups * go, gi, kernel[0], kernel[1])[:, :, ::-1, ::-1]
    y = ctx.b.conv2d(y, np.ascontiguousarray(wk), bias, n, dilations=dil, groups=groups)
    return _back(ctx, y, nd, node)


def _zero_insert(ctx, x, strides, name):
    """Insert s-1 zeros between neighbours along H and W (Pad on a reshaped view)."""
    n, c, h, w = x.info.shape
    sy, sx = strides
    if sx > 1:
        y = ctx.b.reshape(x, (n * c * h, w, 1), f"{name}_zw")
        y = ctx.b.pad(y, [(0, 0), (0, 0), (0, sx - 1)], f"{name}_zwpad")
        y = ctx.b.reshape(y, (n, c, h, w * sx), f"{name}_zwshape")
        x = ctx.b.take(y, 3, 0, (w - 1) * sx + 1, f"{name}_zwcrop")
        w = (w - 1) * sx + 1
    if sy > 1:
        y = ctx.b.reshape(x, (n * c, h, 1, w), f"{name}_zh")
        y = ctx.b.pad(y, [(0, 0), (0, 0), (0, sy - 1), (0, 0)], f"{name}_zhpad")
        y = ctx.b.reshape(y, (n, c, h * sy, w), f"{name}_zhshape")
        x = ctx.b.take(y, 2, 0, (h - 1) * sy + 1, f"{name}_zhcrop")
    return x


def _pad_or_crop(ctx, x, before, after, name):
    """Zero padding for positive amounts, cropping (StridedSlice) for negative ones, on H and W."""
    shape = x.info.shape
    crop_b = [max(-v, 0) for v in before]
    crop_e = [max(-v, 0) for v in after]
    if any(crop_b) or any(crop_e):
        x = ctx.b.slice(x, [None, None, crop_b[0], crop_b[1]],
                        [None, None, shape[2] - crop_e[0], shape[3] - crop_e[1]], [1, 1, 1, 1], f"{name}_crop")
    pads = [(0, 0), (0, 0), (max(before[0], 0), max(after[0], 0)), (max(before[1], 0), max(after[1], 0))]
    return ctx.b.pad(x, pads, f"{name}_pad")


# The geometry helpers the quantized operators (qconv.py, qpool.py) share, under public names; the
# converters here call them by the short ones.
spatial_rank_check, to_4d, pair, pads, back = _spatial_rank_check, _to_4d, _pair, _pads, _back
conv_operands, pool_geometry, kernel, transpose_geometry = _conv_operands, _pool_geometry, _kernel, _transpose_geometry
