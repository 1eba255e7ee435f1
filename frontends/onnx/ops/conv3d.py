"""3-D Conv and pooling (N, C, D, H, W) as 2-D layers, where that is exact.

Arm NN 19.02 has 2-D convolution and pooling only. One of the three spatial axes
is taken out of the operation, in this order of preference:
- an axis of size 1 with kernel 1 and no padding is dropped (a Reshape);
- (Conv) a depth axis the kernel covers whole, without padding or dilation, folds
  into the input channels (weights (O, C, kD, kH, kW) -> (O, C*kD, kH, kW));
- an axis with kernel 1 and no padding is independent slice by slice: (pooling, the
  depth axis) it folds into the channels by a Reshape, or it folds into the batch by
  a Permute and a Reshape; a stride along it first keeps every s-th slice.
The 2-D converter then runs on a node whose attributes lack that axis; its output
is reshaped (and permuted) back. Anything else is one Convolution3d or Pooling3d layer
where the target has them (the 23.08 format: dense convolutions, undilated pooling),
else refused."""
from __future__ import annotations

import copy
import math

import numpy as np

from armnn_import.lowering import Unsupported

REFUSAL = ("3-D {op}: no spatial axis is of size 1, covered whole by the kernel (depth) or of kernel 1 "
           "without padding, so it has no exact 2-D form (Arm NN 19.02 has 2-D layers only)")


def _axis_geometry(ctx, node, shape, kernel):
    """Per spatial axis: (size, kernel, stride, dilation, pad_begin, pad_end)."""
    strides = ctx.attr(node, "strides") or [1, 1, 1]
    dil = ctx.attr(node, "dilations") or [1, 1, 1]
    if len(strides) != 3 or len(dil) != 3 or len(kernel) != 3:
        return None
    auto = ctx.attr(node, "auto_pad", "NOTSET")
    pads = ctx.attr(node, "pads") or [0] * 6
    if len(pads) != 6:
        return None
    out = []
    for j in range(3):
        size, k, s, d = shape[2 + j], int(kernel[j]), int(strides[j]), int(dil[j])
        lo, hi = int(pads[j]), int(pads[3 + j])
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            total = max((math.ceil(size / max(s, 1)) - 1) * s + (k - 1) * d + 1 - size, 0)
            lo, hi = (total // 2, total - total // 2) if auto == "SAME_UPPER" else (total - total // 2, total // 2)
        elif auto == "VALID":
            lo = hi = 0
        out.append((size, k, s, d, lo, hi))
    return out


def plan(ctx, node, is_conv: bool):
    """(how, spatial axis) or None: how is 'drop', 'channels' or 'batch'."""
    shape = ctx.shape(node, 0)
    if shape is None or len(shape) != 5 or None in shape:
        return None
    if is_conv:
        w = ctx.value(node, 1)
        if w is None or w.ndim != 5:
            return None
        kernel = list(w.shape[2:])
    else:
        kernel = ctx.attr(node, "kernel_shape")
        if kernel is None:
            return None
    geo = _axis_geometry(ctx, node, shape, kernel)
    if geo is None:
        return None
    unpadded = [lo == 0 and hi == 0 for (_, _, _, _, lo, hi) in geo]
    for j, (size, k, *_rest) in enumerate(geo):
        if size == 1 and k == 1 and unpadded[j]:
            return "drop", j
    size, k, s, d, *_ = geo[0]
    if is_conv and unpadded[0] and k == size and d == 1:
        return "channels", 0
    if not is_conv and unpadded[0] and k == 1:
        return "channels", 0
    for j, (size, k, *_rest) in enumerate(geo):
        if k == 1 and unpadded[j]:
            return "batch", j
    return None


def check(node, ctx, is_conv: bool):
    """The pre-scan check of a 3-D node: None if a 2-D form exists, or the target has the 3-D layer
    and the node fits it (then the reason it does not)."""
    if plan(ctx, node, is_conv) is None:
        if _has_3d(ctx, node):
            return _direct_reason(ctx, node, is_conv)
        direct = node.op != "LpPool" and _direct_reason(ctx, node, is_conv) is None
        return (REFUSAL.format(op=node.op), "convert with --target 23.08 (one Convolution3d or Pooling3d layer)"
                if direct else "")
    return None


def _has_3d(ctx, node) -> bool:
    from armnn_import.ir.types import LayerType as L
    return node.op != "LpPool" and ctx.b.target.has(L.Convolution3d if node.op == "Conv" else L.Pooling3d)


def _direct_reason(ctx, node, is_conv):
    try:
        _direct_geometry(ctx, node, is_conv)
    except Unsupported as e:
        return (e.reason, e.hint)
    return None


def _direct_geometry(ctx, node, is_conv):
    """(kernel, strides, dilations, pads (front, top, left, back, bottom, right), ceil) of a 3-D node
    as Arm NN's Convolution3d / Pooling3d take them, or Unsupported."""
    shape = ctx.shape(node, 0)
    if shape is None or len(shape) != 5 or None in shape:
        raise Unsupported("the input's shape is not known")
    if is_conv:
        w = ctx.value(node, 1)
        if w is None or w.ndim != 5:
            raise Unsupported("the weights are not a constant 5-D tensor")
        if int(ctx.attr(node, "group", 1)) != 1 or w.shape[1] != shape[1]:
            raise Unsupported(f"group {ctx.attr(node, 'group', 1)}: Arm NN's Convolution3d is dense (group 1)")
        kernel = list(w.shape[2:])
    else:
        kernel = ctx.attr(node, "kernel_shape")
        if kernel is None or len(kernel) != 3:
            raise Unsupported("kernel_shape is not 3 values")
    geo = _axis_geometry(ctx, node, shape, kernel)
    if geo is None:
        raise Unsupported("strides, dilations or pads are not 3 (6) values")
    pads = tuple(g[4] for g in geo) + tuple(g[5] for g in geo)
    if min(pads) < 0 or any(g[1] < 1 or g[2] < 1 or g[3] < 1 for g in geo):
        raise Unsupported(f"kernel, strides, dilations or pads out of range ({geo})")
    ceil = False
    if not is_conv:
        if any(g[3] != 1 for g in geo):
            raise Unsupported("dilated 3-D pooling (Arm NN's Pooling3d has no dilation)")
        ceil = _rounding(ctx, node, geo)
    return tuple(g[1] for g in geo), tuple(g[2] for g in geo), tuple(g[3] for g in geo), pads, ceil


def _rounding(ctx, node, geo) -> bool:
    """Whether Arm NN's ceiling rounding gives ONNX's output size (one rounding for all axes)."""
    from armnn_import.ir.geometry import pool_out_size
    from armnn_import.ir.types import OutputShapeRounding as R
    ceil, auto = bool(ctx.attr(node, "ceil_mode", 0)), ctx.attr(node, "auto_pad", "NOTSET")
    want = []
    for size, k, s, _, lo, hi in geo:
        if k > size + lo + hi:
            raise Unsupported("kernel larger than the padded input")
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            want.append(math.ceil(size / s))
            continue
        out = (math.ceil if ceil else math.floor)((size + lo + hi - k) / s) + 1
        want.append(out - 1 if ceil and (out - 1) * s >= size + lo else out)
    for rounding in ((R.Ceiling, R.Floor) if ceil else (R.Floor, R.Ceiling)):
        if [pool_out_size(size, k, s, lo, hi, rounding) for size, k, s, _, lo, hi in geo] == want:
            return rounding == R.Ceiling
    raise Unsupported(f"output size {want} cannot be reproduced by Arm NN's Pooling3d")


def _direct(ctx, node, is_conv):
    """The node as one Convolution3d or Pooling3d layer (NCDHW, as ONNX's)."""
    from armnn_import.ir.types import PoolingAlgorithm
    kernel, strides, dil, pads, ceil = _direct_geometry(ctx, node, is_conv)
    x, b, name = ctx.port(node, 0), ctx.b, ctx.name(node)
    if is_conv:
        bias = ctx.const(node, 2, "bias").astype(np.float32).reshape(-1) if ctx.has(node, 2) else None
        w = ctx.const(node, 1, "weights").astype(np.float32, copy=False)
        return b.conv3d(x, w, bias, name, strides=strides, pads=pads, dilations=dil)
    algo = PoolingAlgorithm.Max if node.op == "MaxPool" else PoolingAlgorithm.Average
    return b.pool3d(x, algo, kernel, name, strides=strides, pads=pads, ceil=ceil,
                    exclude_pad=not ctx.attr(node, "count_include_pad", 0))


def _without(values, j, n=3):
    """An attribute of n spatial values (or 2n pads) without axis j."""
    if values is None:
        return None
    values = list(values)
    if len(values) == 2 * n:
        return [v for i, v in enumerate(values[:n]) if i != j] + [v for i, v in enumerate(values[n:]) if i != j]
    return [v for i, v in enumerate(values) if i != j]


def lower(ctx, node, convert_2d, is_conv: bool):
    """The 3-D node through `convert_2d` (the 2-D converter) on a 4-D view."""
    p = plan(ctx, node, is_conv)
    if p is None and _has_3d(ctx, node):
        return _direct(ctx, node, is_conv)
    if p is None:
        raise Unsupported(REFUSAL.format(op=node.op))
    how, j = p
    x = ctx.port(node, 0)
    n_, c = x.info.shape[:2]
    axis = 2 + j
    stride = int((ctx.attr(node, "strides") or [1, 1, 1])[j])
    b, name = ctx.b, ctx.name(node)
    ctx.report.decomposition(f"3-D {node.op}", "as the 2-D operation: a spatial axis of size 1 dropped, a depth "
                                               "covered whole folded into the channels, or an axis of kernel 1 "
                                               "folded into the channels or the batch")
    if stride > 1 and (how == "batch" or (how == "channels" and not is_conv)):  # kernel 1: every s-th slice
        x = b.take(x, axis, 0, x.info.shape[axis], f"{name}_3d_stride", step=stride)
    shape = x.info.shape
    rest = [a for a in (2, 3, 4) if a != axis]
    if how == "drop":
        x4 = b.reshape(x, shape[:axis] + shape[axis + 1:], f"{name}_3d_view")
    elif how == "channels":  # the depth axis, next to the channels
        x4 = b.reshape(x, (n_, c * shape[2]) + shape[3:], f"{name}_3d_view")
    else:
        perm = [0, axis, 1] + rest
        moved = b.permute(x, perm, f"{name}_3d_move")
        x4 = b.reshape(moved, (n_ * shape[axis], c) + tuple(shape[a] for a in rest), f"{name}_3d_view")
    node2 = copy.copy(node)
    node2.attrs = dict(node.attrs)
    for key in ("kernel_shape", "strides", "dilations", "pads"):
        if key in node2.attrs:
            node2.attrs[key] = _without(node2.attrs[key], j)
    node2.inputs = list(node.inputs)
    node2.inputs[0] = _stash(ctx, f"{name}__3d_x", x4)
    if is_conv:
        w = ctx.const(node, 1, "weights").astype(np.float32, copy=False)
        o, cg = w.shape[:2]
        w4 = (w.reshape(o, cg * w.shape[2], *w.shape[3:]) if how == "channels"
              else w.reshape(w.shape[:2 + j] + w.shape[3 + j:]))
        node2.inputs[1] = _stash(ctx, f"{name}__3d_w", np.ascontiguousarray(w4))
    y = convert_2d(ctx, node2)
    ys = y.info.shape
    if how == "drop":
        return b.reshape(y, ys[:axis] + (1,) + ys[axis:], f"{name}_3d_back")
    if how == "channels":
        if is_conv:  # the kernel covered the depth: one output slice
            return b.reshape(y, (n_, ys[1], 1) + ys[2:], f"{name}_3d_back")
        return b.reshape(y, (n_, c, shape[2]) + ys[2:], f"{name}_3d_back")
    back = b.reshape(y, (n_, shape[axis], ys[1]) + ys[2:], f"{name}_3d_unview")
    # back is (N, D_axis, O, A', B'): put the axis back at its place among the spatial axes
    dims = ["n", "ax", "o", rest[0], rest[1]]
    want = ["n", "o"] + [("ax" if a == axis else a) for a in (2, 3, 4)]
    return b.permute(back, [dims.index(t) for t in want], f"{name}_3d_back")


def _stash(ctx, key: str, value) -> str:
    """Make `value` readable as a node input named `key` (a name no ONNX tensor has)."""
    key = f"{key}\x00"  # NUL: never in a model's names (protobuf strings from the model are checked)
    ctx.values[key] = value
    return key
