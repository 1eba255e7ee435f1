"""Helpers shared by the ONNX converters."""
from __future__ import annotations

import math

import numpy as np

from armnn_import.ir.graph import Port
from armnn_import.ir.types import DataType, LayerType
from armnn_import.lowering import Unsupported


def broadcast(sa, sb) -> tuple:
    sa, sb = tuple(sa), tuple(sb)
    if sa == sb and min(sa, default=0) >= 0:  # (the usual case; what broadcast_shapes gives for it)
        return tuple([int(d) for d in sa])
    try:
        return tuple(np.broadcast_shapes(tuple(sa), tuple(sb)))
    except ValueError:
        raise Unsupported(f"shapes {tuple(sa)} and {tuple(sb)} do not broadcast (the model is invalid)",
                          code="bad-model") from None


def varying_axis(c: np.ndarray, rank: int):
    """The one axis (of a rank-`rank` tensor) along which constant c varies, or None."""
    if c.ndim > rank:
        return None
    shape = (1,) * (rank - c.ndim) + c.shape
    axes = [i for i, n in enumerate(shape) if n != 1]
    return axes[0] if len(axes) == 1 else None


# the binary layers that CpuRef computes on Signed32 tensors in integers (exact; not Division)
INT_LAYERS = frozenset({LayerType.Addition, LayerType.Subtraction, LayerType.Multiplication, LayerType.Maximum,
                         LayerType.Minimum, LayerType.Greater, LayerType.Equal})


def binary(ctx, ltype: LayerType, a, b, name: str) -> Port:
    """a (op) b for Ports or constants, numpy broadcasting, logical shapes kept."""
    out_shape = broadcast(ctx.lshape(a), ctx.lshape(b))
    size = math.prod(out_shape)  # (exact; numpy's call costs more than the product of a few ints)
    if isinstance(a, Port) and isinstance(b, Port):
        y = ctx.b.binary(ltype, a, b, name)
    else:
        x, c, first = (a, b, False) if isinstance(a, Port) else (b, a, True)
        c = np.asarray(c)
        if x.info.dtype == DataType.Signed32 and c.dtype.kind in "iu" and ltype in INT_LAYERS:
            # int32 arithmetic and comparisons of CpuRef (20.08 and 23.08) with an int32 Constant layer
            k = ctx.materialize(c, f"{name}_const")
            y = ctx.b.binary(ltype, k, x, name) if first else ctx.b.binary(ltype, x, k, name)
            return ctx.to_shape(y, out_shape, f"{name}_shape")
        if c.dtype.kind not in "fiub" or x.info.dtype != DataType.Float32:
            raise Unsupported(f"{x.info.dtype.name} and {c.dtype} operands; this lowering needs float32")
        if size > x.info.num_elements:
            # the constant widens x: no scalar folding possible, use it as a tensor
            k = ctx.materialize(c.astype(np.float32), f"{name}_const")
            y = ctx.b.binary(ltype, k, x, name) if first else ctx.b.binary(ltype, x, k, name)
        else:
            rank = x.info.rank
            y = ctx.b.binary_const(ltype, x, c.astype(np.float32).reshape(c.shape), name, const_first=first,
                                   channel_axis=varying_axis(c, rank))
    return ctx.to_shape(y, out_shape, f"{name}_shape")


def norm_axes(axes, rank: int, what: str = "axis") -> list[int]:
    out = []
    for a in np.asarray(axes, dtype=np.int64).reshape(-1):
        a = int(a)
        if not -rank <= a < rank:
            raise Unsupported(f"{what} {a} is out of range for a {rank}-D tensor", code="bad-attribute")
        out.append(a % rank)
    if len(set(out)) != len(out):
        raise Unsupported(f"repeated {what}s {out}")
    return out


def axes_input(ctx, node, attr_until: int, index: int):
    """Axes from the attribute (opset < attr_until) or from input `index`; None if absent."""
    if ctx.opset < attr_until:
        return ctx.attr(node, "axes")
    if ctx.has(node, index):
        return [int(v) for v in ctx.const(node, index, "axes").reshape(-1)]
    return None


def mean(ctx, x: Port, axes, name: str) -> Port:
    """Mean over `axes`, keeping them as size 1. Arm NN's Mean takes at most
    4-D inputs, so runs of adjacent reduced / kept axes are merged first
    (after moving the reduced axes last when that is not enough)."""
    shape = x.info.shape
    rank = len(shape)
    axes = sorted({a % rank for a in axes})
    if rank <= 4:
        return ctx.b.mean(x, axes, True, name)
    kept_shape = tuple(1 if i in axes else d for i, d in enumerate(shape))
    y, groups = x, _groups(shape, axes)
    if len(groups) > 4:
        kept = [i for i in range(rank) if i not in axes]
        y = ctx.b.permute(x, kept + axes, f"{name}_last")
        groups = _groups(y.info.shape, list(range(len(kept), rank)))
    merged = tuple(int(np.prod([y.info.shape[i] for i in g], dtype=np.int64)) for g, _ in groups)
    y = ctx.b.reshape(y, merged, f"{name}_merged")
    y = ctx.b.mean(y, [k for k, (_, red) in enumerate(groups) if red], True, name)
    # the kept axes are in their original order, the reduced ones are 1: a reshape restores the rank
    return ctx.b.reshape(y, kept_shape, f"{name}_unmerged")


def _groups(shape, axes):
    """Runs of consecutive axes that are all reduced or all kept: [(axes, reduced)]."""
    out = []
    for i in range(len(shape)):
        red = i in axes
        if out and out[-1][1] == red:
            out[-1][0].append(i)
        else:
            out.append(([i], red))
    return out


def power(ctx, t: Port, p: float, name: str) -> Port:
    """t ** p for t >= 0 and p > 0. Arm NN's Normalization (LRN) with a window of one
    channel computes t * (k + alpha * t^2) ** -beta: with alpha 1 and beta (1 - p) / 2
    that is t ** p. k is FLT_MIN rather than 0 so that t = 0 gives 0, not 0 * inf."""
    from armnn_import.ir import descriptors as D
    from armnn_import.ir.types import ActivationFunction as AF
    from armnn_import.ir.types import DataLayout

    if p == 1.0:
        return t
    if p == 2.0:
        return ctx.b.activation(t, AF.Square, name)
    if p == 0.5:
        return ctx.b.activation(t, AF.Sqrt, name)
    ctx.report.decomposition("power", "Normalization over one channel: t * (FLT_MIN + t^2)^((p - 1) / 2)")
    shape = t.info.shape
    y = ctx.b.reshape(t, (1, 1, 1, int(np.prod(shape, dtype=np.int64))), f"{name}_4d")
    desc = D.NormalizationDescriptor(D.NormalizationAlgorithmChannel.Across,
                                     D.NormalizationAlgorithmMethod.LocalBrightness, 1, 1.0, (1.0 - p) / 2.0,
                                     float(np.finfo(np.float32).tiny), DataLayout.NCHW)
    y = ctx.b.add(LayerType.Normalization, name, [y], desc)
    return ctx.b.reshape(y, shape, f"{name}_shape")


def int_list(ctx, node, i) -> list[int]:
    """Constant input i of node as a list of ints (an integer tensor, else the model is invalid)."""
    v = ctx.const(node, i)
    if not np.issubdtype(v.dtype, np.integer):
        raise Unsupported(f"input {i} is {v.dtype}, not an integer tensor (the model is invalid)", code="bad-model")
    return v.reshape(-1).tolist()
