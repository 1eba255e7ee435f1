"""Reductions: from the 23.08 target a Reduce layer (one float accumulation per output
element, exact as one layer), and a ReduceMean over H and/or W of a 4-D tensor an Average
Pooling2d (the same sums, far cheaper: lowering/pooling.py); before it, Mean layers (times N for sums), Max pooling
over a reshaped view for max/min, a Multiplication tree for small products."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.types import ActivationFunction as AF
from armnn_import.ir.types import LayerType as L
from armnn_import.ir.types import (ArgMinMaxFunction, DataLayout, DataType, PoolingAlgorithm, ReduceOperation,
                                   UnaryOperation)
from armnn_import.lowering import Unsupported, topk
from armnn_import.lowering.gather import gather_const
from armnn_import.lowering.pooling import mean_as_pool

from ..registry import needs_const, register
from .common import binary, mean, norm_axes

MAX_PROD = 32  # ReduceProd over more elements than this is refused (one Multiplication each)
# opset from which `axes` is an input instead of an attribute
AXES_INPUT_SINCE = {"ReduceSum": 13}


def _axes(ctx, node, rank):
    """(axes, keepdims) or (None, keepdims) for an identity (noop_with_empty_axes)."""
    since = AXES_INPUT_SINCE.get(node.op, 18)
    if ctx.opset < since:
        axes = ctx.attr(node, "axes")
    else:
        axes = ctx.const(node, 1, "axes").reshape(-1).tolist() if ctx.has(node, 1) else None
    keep = bool(ctx.attr(node, "keepdims", 1))
    if not axes:
        if ctx.attr(node, "noop_with_empty_axes", 0):
            return None, keep
        axes = range(rank)
    return sorted(norm_axes(axes, rank)), keep


def reduce_axes(ctx, node, rank):
    """(axes, keepdims) of a reduction node, for the quantized ReduceMean (qpool.py)."""
    return _axes(ctx, node, rank)


def _out_shape(shape, axes, keep):
    return tuple(1 if i in axes else d for i, d in enumerate(shape)) if keep else \
        tuple(d for i, d in enumerate(shape) if i not in axes)


def _direct(ctx, x) -> bool:
    """Whether the Reduce layer (23.08 on) takes x: 1-D to 4-D float (its CpuRef decodes to float,
    so a Signed32 sum or product is exact only within 2^24; quantized tensors keep the old path,
    whose output quantization the QDQ pass sets)."""
    return ctx.b.target.has(L.Reduce) and 1 <= x.info.rank <= 4 and x.info.dtype in (
        DataType.Float32, DataType.Float16)


def _reduce_layer(ctx, x, axes, keep, op, shape, n):
    y = ctx.b.reduce(x, axes, keep, op, n if not keep else f"{n}_reduce")
    return ctx.to_shape(y, _out_shape(shape, axes, keep), n)


def _mean_based(pre, scale_by_count, post):
    def convert(ctx, node):
        x, n = ctx.port(node, 0), ctx.name(node)
        shape = ctx.lshape(x)
        axes, keep = _axes(ctx, node, len(shape))
        if axes is None:
            return ctx.b.linear(x, 1.0, 0.0, n)
        if pre is None and post is None and not scale_by_count:
            # a mean over H and/or W, or trailing spatial axes of 3-D/5-D (23.08 on): an Average
            # Pooling2d, exact and far cheaper
            y = mean_as_pool(ctx.b, x, axes, keep, n, layout=DataLayout.NCHW)
            if y is not None:
                return y
        if shape and _direct(ctx, x):  # a sum as a sum, not a mean times N
            y = ctx.b.activation(x, pre, f"{n}_pre") if pre is not None else x
            op = ReduceOperation.Sum if scale_by_count else ReduceOperation.Mean
            y = ctx.b.reduce(y, axes, True, op, f"{n}_reduce" if post is not None else f"{n}_{op.name.lower()}")
            if post is not None:
                y = ctx.b.activation(y, post, f"{n}_post")
            return ctx.to_shape(y, _out_shape(shape, axes, keep), n)
        if not shape:
            axes = []
        count = int(np.prod([shape[a] for a in axes], dtype=np.int64))
        y = ctx.b.activation(x, pre, f"{n}_pre") if pre is not None else x
        y = mean(ctx, y, axes or [0], f"{n}_mean")
        if scale_by_count and count != 1:
            y = ctx.b.linear(y, float(count), 0.0, f"{n}_sum")
        if post is not None:
            y = ctx.b.activation(y, post, f"{n}_post")
        return ctx.to_shape(y, _out_shape(shape, axes, keep), n)
    return convert


_AXES = needs_const(1, what="axes")
_R = "Reduce"  # (from --target 23.08)
register("ReduceMean", since=1, layers=("Mean", _R, "Pooling2d", "Reshape"), check=_AXES,
         notes="from --target 23.08, over H and/or W of a 4-D tensor or trailing spatial axes: an Average Pooling2d")(_mean_based(None, False, None))
register("ReduceSum", since=1, layers=("Mean", "Activation", _R, "Reshape"), check=_AXES)(_mean_based(None, True, None))
register("ReduceSumSquare", since=1, layers=("Activation", "Mean", _R, "Reshape"), check=_AXES)(
    _mean_based(AF.Square, True, None))
register("ReduceL1", since=1, layers=("Activation", "Mean", _R, "Reshape"), check=_AXES)(_mean_based(AF.Abs, True, None))
register("ReduceL2", since=1, layers=("Activation", "Mean", _R, "Reshape"), check=_AXES)(_mean_based(AF.Square, True, AF.Sqrt))


def _grouped(ctx, x, axes, name):
    """x with the reduced axes moved last and flattened: ([outer, R] port, R)."""
    shape = x.info.shape
    kept = [i for i in range(len(shape)) if i not in axes]
    y = ctx.b.permute(x, kept + list(axes), f"{name}_last")
    r = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    outer = int(np.prod([shape[a] for a in kept], dtype=np.int64))
    return y, outer, r


def _max(ctx, x, axes, name):
    y, outer, r = _grouped(ctx, x, axes, name)
    y = ctx.b.reshape(y, (1, outer, 1, r), f"{name}_4d")
    return ctx.b.pool2d(y, PoolingAlgorithm.Max, (1, r), name)


def _extreme(ctx, x, axes, keep, negate, n, op):
    """The max (min when negate) of x over axes: a Reduce layer (23.08), else Max pooling."""
    shape = ctx.lshape(x)
    if _direct(ctx, x):
        return _reduce_layer(ctx, x, axes, keep, ReduceOperation.Min if negate else ReduceOperation.Max, shape, n)
    ctx.report.decomposition(op, "Permute the axes last, Reshape, Max Pooling2d over them"
                             + (" on -x, negated" if negate else ""))
    y = ctx.b.linear(x, -1.0, 0.0, f"{n}_neg") if negate else x
    y = _max(ctx, y, axes, f"{n}_max" if negate else n)
    if negate:
        y = ctx.b.linear(y, -1.0, 0.0, n)
    return ctx.to_shape(y, _out_shape(shape, axes, keep), f"{n}_shape")


def _max_min(negate):
    def convert(ctx, node):
        x, n = ctx.port(node, 0), ctx.name(node)
        shape = ctx.lshape(x)
        axes, keep = _axes(ctx, node, len(shape))
        if axes is None or not shape:
            return ctx.b.linear(x, 1.0, 0.0, n)
        return _extreme(ctx, x, axes, keep, negate, n, node.op)
    return convert


register("ReduceMax", since=1, layers=("Permute", "Reshape", "Pooling2d", _R), check=_AXES)(_max_min(False))
register("ReduceMin", since=1, layers=("Permute", "Reshape", "Pooling2d", "Activation", _R),
         check=_AXES)(_max_min(True))


@register("ReduceProd", since=1, layers=("StridedSlice", "Multiplication", _R, "Reshape", "Permute"), check=_AXES,
          notes=f"before --target 23.08: at most {MAX_PROD} elements per product")
def reduce_prod(ctx, node):
    x, n = ctx.port(node, 0), ctx.name(node)
    shape = ctx.lshape(x)
    axes, keep = _axes(ctx, node, len(shape))
    if axes is None or not shape:
        return ctx.b.linear(x, 1.0, 0.0, n)
    if _direct(ctx, x):
        return _reduce_layer(ctx, x, axes, keep, ReduceOperation.Prod, shape, n)
    y, outer, r = _grouped(ctx, x, axes, n)
    if r > MAX_PROD:
        raise Unsupported(f"a product of {r} elements (no logarithm/exponential pair to turn it into a sum; "
                          f"at most {MAX_PROD} become Multiplications)",
                          "--target 23.08 has a Reduce layer that takes any number")
    ctx.report.decomposition("ReduceProd", "StridedSlice per element, Multiplication tree")
    y = ctx.b.reshape(y, (outer, r), f"{n}_2d")
    parts = ctx.b.split(y, 1, [1] * r, f"{n}_el")
    k = 0
    while len(parts) > 1:
        nxt = []
        for i in range(0, len(parts) - 1, 2):
            nxt.append(ctx.b.binary(L.Multiplication, parts[i], parts[i + 1], f"{n}_mul{k}"))
            k += 1
        if len(parts) % 2:
            nxt.append(parts[-1])
        parts = nxt
    return ctx.to_shape(parts[0], _out_shape(shape, axes, keep), f"{n}_shape")


# (select_last_index=1: StridedSlice reverses x, Subtraction from a Constant turns the index around)
_ARG_LAYERS = ("ArgMinMax", "Reshape", "StridedSlice", "Subtraction", "Constant")


def _arg(function):
    def convert(ctx, node):
        x, n = ctx.port(node, 0), ctx.name(node)
        shape = ctx.lshape(x)
        if not shape:
            raise Unsupported("ArgMax/ArgMin of a scalar")
        axis = norm_axes([ctx.attr(node, "axis", 0)], len(shape))[0]
        last = ctx.attr(node, "select_last_index", 0)
        if last:
            # Arm NN's ArgMinMax returns the first index of a tie: on x reversed along the axis
            # the first is the last one of x, at axis_len - 1 - i (int32 arithmetic, exact)
            ctx.report.decomposition(node.op, "select_last_index: reversed, ArgMinMax, axis_len - 1 - index")
            x = gather_const(ctx.b, x, axis, np.arange(shape[axis] - 1, -1, -1), f"{n}_rev")
        y = ctx.b.arg_min_max(x, axis, function, f"{n}_arg" if ctx.attr(node, "keepdims", 1) or last else n)
        keep = tuple(1 if i == axis else d for i, d in enumerate(shape))
        out = keep if ctx.attr(node, "keepdims", 1) else keep[:axis] + keep[axis + 1:]
        if last:
            y = binary(ctx, L.Subtraction, np.full((1,) * len(out), shape[axis] - 1, np.int32),
                       ctx.to_shape(y, out, f"{n}_idx"), n)
        return ctx.to_shape(y, out, n)
    convert.__name__ = f"arg_{function.name.lower()}"
    return convert


register("ArgMax", since=1, layers=_ARG_LAYERS, needs="20.08",
         notes="int64 indices as Signed32; select_last_index=1 on x reversed along the axis")(_arg(ArgMinMaxFunction.Max))
register("ArgMin", since=1, layers=_ARG_LAYERS, needs="20.08",
         notes="int64 indices as Signed32; select_last_index=1 on x reversed along the axis")(_arg(ArgMinMaxFunction.Min))


def _log_reduction(ctx, node):
    """(x, name, shape, axes, keepdims) of a ReduceLogSum(Exp): a Reduce layer's float input."""
    x, n = ctx.port(node, 0), ctx.name(node)
    shape = ctx.lshape(x)
    axes, keep = _axes(ctx, node, len(shape))
    if not shape or not _direct(ctx, x):
        raise Unsupported(f"a {len(shape)}-D {x.info.dtype.name} input (the Reduce layer takes 1-D to 4-D float)")
    return x, n, shape, axes, keep


@register("ReduceLogSum", since=1, layers=("Reduce", "ElementwiseUnary", "Reshape"), check=_AXES, needs="23.08",
          notes="log(sum): a Reduce Sum, then Log")
def reduce_log_sum(ctx, node):
    x, n, shape, axes, keep = _log_reduction(ctx, node)
    y = ctx.b.reduce(x, axes if axes is not None else [], True, ReduceOperation.Sum, f"{n}_sum") \
        if axes is not None else x
    y = ctx.b.unary(y, UnaryOperation.Log, f"{n}_log")
    return ctx.to_shape(y, _out_shape(shape, axes, keep) if axes is not None else shape, n)


_FLT_MAX = float(np.finfo(np.float32).max)


@register("ReduceLogSumExp", since=1, layers=("Reduce", "Activation", "Minimum", "Subtraction", "ElementwiseUnary", "Addition",
                                              "Reshape", "Constant"), check=_AXES, needs="23.08",
          notes="m + log(sum(exp(x - m))), m the largest finite value, as onnxruntime and onnx.reference compute it")
def reduce_log_sum_exp(ctx, node):
    x, n, shape, axes, keep = _log_reduction(ctx, node)
    if axes is None:  # (noop_with_empty_axes: log(exp(x)) = x)
        return x
    # The max keeps exp from overflowing. Arm NN's Reduce Max starts at -FLT_MAX (all -inf: -FLT_MAX);
    # +inf is clamped to FLT_MAX (a BoundedReLu) so that inf - m stays inf, not NaN (the references skip
    # infinities); m is never NaN (the Reduce takes no NaN)
    m = ctx.b.reduce(x, axes, True, ReduceOperation.Max, f"{n}_max")
    m = binary(ctx, L.Minimum, m, np.full((1,) * len(shape), _FLT_MAX, np.float32), f"{n}_finite")
    e = ctx.b.unary(ctx.b.binary(L.Subtraction, x, m, f"{n}_shift"), UnaryOperation.Exp, f"{n}_exp")
    s = ctx.b.unary(ctx.b.reduce(e, axes, True, ReduceOperation.Sum, f"{n}_sum"), UnaryOperation.Log, f"{n}_log")
    y = ctx.b.binary(L.Addition, s, m, f"{n}_add")
    return ctx.to_shape(y, _out_shape(shape, axes, keep), n)


def _top_k_check(node, ctx):
    k = ctx.value(node, 1) if ctx.has(node, 1) else ctx.attr(node, "k")
    if ctx.has(node, 1) and k is None:
        return needs_const(1, what="K")(node, ctx)
    shape = ctx.shape(node, 0)
    if k is None or not shape or any(d is None for d in shape):
        return None  # (the converter checks again on the known shape)
    shape = list(shape)
    axis = norm_axes([ctx.attr(node, "axis", -1)], len(shape))[0]
    k = int(np.asarray(k).reshape(-1)[0])
    why = None if k == 1 else topk.fits(shape[:axis] + shape[axis + 1:] + [shape[axis]], k)
    return (why, "") if why else None


@register("TopK", since=1, layers=("ArgMinMax", "Reduce", "Pooling2d", "Permute", "Reshape", "Activation", "Subtraction",
                                   "Floor", "Multiplication", "Addition", "Constant", "FullyConnected", "Gather",
                                   "Cast", "Maximum", "Minimum", "ElementwiseUnary"),
          needs="20.08", check=_top_k_check,
          notes="k = 1: the max (min for largest=0) and its first index (ArgMinMax); k > 1: ranks counted "
                "pairwise (lowering/topk.py), ties by the lower index, sorted; int32 values from 23.08")
def top_k(ctx, node):
    x, n = ctx.port(node, 0, (DataType.Float32, DataType.Signed32)), ctx.name(node)
    shape = ctx.lshape(x)
    if not shape:
        raise Unsupported("TopK of a scalar", code="bad-model")
    axis = norm_axes([ctx.attr(node, "axis", -1)], len(shape))[0]
    smallest = not ctx.attr(node, "largest", 1)
    k = int(np.asarray(ctx.value(node, 1) if ctx.has(node, 1) else ctx.attr(node, "k")).reshape(-1)[0])
    if k > 1 or x.info.dtype == DataType.Signed32:  # (int32: topk.py's int32 masks)
        return list(topk.top_k(ctx.b, x, axis, k, not smallest, n))
    keep = tuple(1 if i == axis else d for i, d in enumerate(shape))
    idx = ctx.b.arg_min_max(x, axis, ArgMinMaxFunction.Min if smallest else ArgMinMaxFunction.Max, f"{n}_arg")
    return [_extreme(ctx, x, [axis], True, smallest, f"{n}_values", "TopK"), ctx.to_shape(idx, keep, f"{n}_indices")]


@register("CumSum", since=11, layers=("StridedSlice", "Addition", "Merger", "Concat", "Activation", "Gather",
                                      "Constant", "Reshape", "Multiplication"),
          check=needs_const(1, what="axis"),
          notes="float32: one Addition per step, in onnxruntime's order (axes up to 1,024); int32 from 23.08")
def cumsum_(ctx, node):
    from armnn_import.lowering.cumsum import cumsum
    x = ctx.port(node, 0, dtypes=(DataType.Float32, DataType.Signed32))
    axis = norm_axes(ctx.const(node, 1, "axis"), max(len(ctx.lshape(x)), 1))[0]
    y = cumsum(ctx.b, x, axis, bool(ctx.attr(node, "exclusive", 0)), bool(ctx.attr(node, "reverse", 0)),
               ctx.name(node))
    return ctx.to_shape(y, ctx.lshape(x), f"{ctx.name(node)}_shape")
