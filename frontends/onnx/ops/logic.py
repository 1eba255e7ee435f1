"""Comparisons and booleans.

Arm NN's Equal and Greater layers give Boolean tensors, which no other
CpuRef layer accepts. So every other use of an ONNX boolean (Where, Not,
And, Or, Cast, a Reshape of a mask, ...) works on a float 0/1 mask built
from the comparison's operands with

    step(t) = clamp(-floor(-t), 0, 1)   # 1 if t > 0, else 0: exact for finite t

(a - b is non-zero whenever a != b, subnormals included). Float masks that
stand for ONNX booleans are kept in ctx.bool_float and become Boolean again
(Greater(mask, 0.5)) only where a graph output needs it.

The Boolean results themselves are exact for NaN, infinities and signed zeros:
GreaterOrEqual, LessOrEqual and Not(Equal) use the recipes of
armnn_import/lowering/compare.py, and so are the float masks (armnn_import/lowering/masks.py).
"""
from __future__ import annotations

import numpy as np

from armnn_import.ir.graph import Port
from armnn_import.ir.types import ActivationFunction as AF
from armnn_import.ir.types import DataType
from armnn_import.ir.types import LayerType as L
from armnn_import.lowering import Unsupported
from armnn_import.lowering.compare import COMPARE, exact_max_rows, infinity_mask, int_mask, safe_constant
from armnn_import.lowering.masks import float_mask, select

from ..registry import register
from .common import binary, broadcast


def step(ctx, t: Port, name: str, negate: bool = False) -> Port:
    """1 where t > 0 else 0 (negate: 1 where t <= 0 else 0), as float."""
    from armnn_import.lowering.round import step as step01
    ctx.report.decomposition("boolean mask", "step(t) = clamp(-floor(-t), 0, 1) on the comparison's operands")
    return step01(ctx.b, t, name, negate)


def _diff(ctx, a, b, name):
    return binary(ctx, L.Subtraction, a, b, name)


def _eq_infinity(ctx, a, b, n):
    x, c = (a, b) if isinstance(a, Port) else (b, a)
    m = infinity_mask(ctx.b, x, c, n) if isinstance(x, Port) and not isinstance(c, Port) else None
    return None if m is None else ctx.to_shape(m, broadcast(ctx.lshape(x), np.shape(c)), f"{n}_inf_shape")


def _exact(kind):
    """The shared exact mask (lowering.masks: NaN and two equal infinities included)."""
    return lambda ctx, a, b, n: float_mask(ctx.b, kind, a, b, n)


# kind -> (mask of a (op) b from the operands)
_MASKS = {
    "gt": lambda ctx, a, b, n: step(ctx, _diff(ctx, a, b, f"{n}_d"), n),
    "ge": _exact("ge"),
    "le": _exact("le"),
    "eq": lambda ctx, a, b, n: _eq_infinity(ctx, a, b, n) or _exact("eq")(ctx, a, b, n),
    "ne": lambda ctx, a, b, n: ctx.b.linear(_MASKS["eq"](ctx, a, b, f"{n}_eq"), -1.0, 1.0, n),
}


def _int_constant(ctx, v, other, name):
    """An integer constant beside a Signed32 tensor (an int64 id compared with a constant), as a
    Signed32 Port (an int32 Constant layer: CpuRef 20.08 and 23.08 compare Signed32, in the Greater /
    Equal layers of the 19.02 format too); else v as it is. Exact: a value beyond int32 is refused by
    materialize()."""
    if (isinstance(v, Port) or not isinstance(other, Port) or other.info.dtype != DataType.Signed32
            or np.asarray(v).dtype.kind not in "iu"):
        return v
    return ctx.materialize(np.asarray(v).astype(np.int64), f"{name}_int")


def _operand(ctx, v, other, name):
    """A constant operand as a float Port that a NaN or inf in `other` cannot reach."""
    v = _int_constant(ctx, v, other, name)
    if isinstance(v, Port):
        return v
    if not isinstance(other, Port) or other.info.dtype != DataType.Float32:
        raise Unsupported("a comparison of a constant with a non-float tensor")
    return safe_constant(ctx.b, other, np.asarray(v, np.float32), name)


def compare(ctx, kind: str, a, b, name: str) -> Port:
    """A Boolean a (op) b, with its float mask available through float01()."""
    a, b = _int_constant(ctx, a, b, f"{name}_a"), _int_constant(ctx, b, a, f"{name}_b")
    if kind == "eq" and isinstance(a, Port) != isinstance(b, Port):  # (a max compared with -inf)
        c = np.asarray(b if isinstance(a, Port) else a)
        if c.size and np.all(c == -np.inf):
            half = bool(ctx.float32_casts) or getattr(ctx.report, "float16_network", False)
            a, b = ((exact_max_rows(ctx.b, a, f"{name}_a", half), b) if isinstance(a, Port)
                    else (a, exact_max_rows(ctx.b, b, f"{name}_b", half)))
    if kind == "gt":
        y = binary(ctx, L.Greater, a, b, name)
    elif kind == "eq":
        y = binary(ctx, L.Equal, a, b, name)
    else:  # ge, le, ne: NaN-exact recipes on Ports
        out_shape = broadcast(ctx.lshape(a), ctx.lshape(b))
        pa, pb = _operand(ctx, a, b, f"{name}_a"), _operand(ctx, b, a, f"{name}_b")
        y = ctx.to_shape(COMPARE[kind](ctx.b, pa, pb, f"{name}_{kind}"), out_shape, name)
    ctx.bool_src[y] = (kind, a, b, name)
    return y


def float01(ctx, v, name: str):
    """An ONNX boolean as a float 0/1 Port (or numpy array for a constant)."""
    if isinstance(v, np.ndarray):
        return v.astype(np.float32)
    if v in ctx.bool_float:
        return v
    if v in ctx.bool_cache:
        return ctx.bool_cache[v]
    src = ctx.bool_src.get(v)
    if src is None:
        # (23.08's Cast takes no Boolean: RefLayerSupport IsCastSupported)
        why = "Arm NN's Cast layer takes no Boolean tensor" if ctx.g.target.has(L.Cast) else "Arm NN has no Cast layer"
        hint = ("make the boolean a constant, or convert with --target 20.08 or later (a bool model input used as numbers is a uint8 input there)"
                if v.layer.type == L.Input and not ctx.g.target.has(L.Dequantize)
                else "make the boolean a constant, or compute it from float comparisons")
        raise Unsupported(f"a run-time boolean that does not come from a float comparison cannot be used "
                          f"as a number ({why})", hint)
    kind, a, b, n = src
    # a Boolean of a 23.08 logical layer: the mask from its operands' masks; of int32 operands
    # (23.08): made in int32 arithmetic, then a Cast
    ints = all(isinstance(o, Port) and o.info.dtype == DataType.Signed32 for o in (a, b)) and kind not in _LOGIC_MASKS
    for operand in (a, b) if kind not in _LOGIC_MASKS else ():
        if isinstance(operand, Port) and operand.info.dtype != DataType.Float32 and not (ints and ctx.g.target.has(L.Cast)):
            raise Unsupported(f"a comparison of {operand.info.dtype.name} tensors used as a mask (its 0/1 form needs "
                              "float operands)", "--target 23.08 makes the mask of int32 operands, or make the operands constant" * ints)
    if ints:
        ctx.report.warn(f"{n}: the mask of an int32 comparison is exact while the operands' difference fits "
                        "int32 (operands within +-2^30)")
    recipe = (lambda c, x, y, m: int_mask(c.b, kind, x, y, m)) if ints else (_LOGIC_MASKS.get(kind) or _MASKS[kind])
    mask = ctx.to_shape(recipe(ctx, a, b, f"{n}_mask"), ctx.lshape(v), f"{n}_mask_shape")
    ctx.bool_cache[v] = mask
    ctx.bool_float.add(mask)
    return mask


def _boolean_result(ctx, port):
    ctx.bool_float.add(port)
    return port


@register("Equal", since=7, layers=("Equal", "Constant", "Activation", "Reshape", "FullyConnected", "StridedSlice",
                                    "Subtraction", "Pooling2d", "Reduce"))
def equal(ctx, node):
    return compare(ctx, "eq", ctx.val(node, 0), ctx.val(node, 1), ctx.name(node))


@register("Greater", since=7, layers=("Greater", "Constant", "Reshape", "FullyConnected", "StridedSlice"))
def greater(ctx, node):
    return compare(ctx, "gt", ctx.val(node, 0), ctx.val(node, 1), ctx.name(node))


@register("Less", since=7, layers=("Greater", "Constant", "Activation", "Reshape", "FullyConnected", "StridedSlice"))
def less(ctx, node):
    return compare(ctx, "gt", ctx.val(node, 1), ctx.val(node, 0), ctx.name(node))


@register("GreaterOrEqual", since=12, layers=("Maximum", "Constant", "Equal", "Comparison", "Reshape", "Activation",
                  "FullyConnected", "StridedSlice"))
def greater_or_equal(ctx, node):
    return compare(ctx, "ge", ctx.val(node, 0), ctx.val(node, 1), ctx.name(node))


@register("LessOrEqual", since=12, layers=("Minimum", "Constant", "Equal", "Comparison", "Reshape", "Activation",
                  "FullyConnected", "StridedSlice"))
def less_or_equal(ctx, node):
    return compare(ctx, "le", ctx.val(node, 0), ctx.val(node, 1), ctx.name(node))


def _masks(ctx, node):
    return [float01(ctx, ctx.val(node, i), ctx.name(node, f"in{i}")) for i in range(len(node.inputs))]


# -- From the 23.08 target, And/Or/Xor/Not of run-time Boolean tensors are Boolean layers
# (LogicalBinary, Comparison NotEqual, ElementwiseUnary LogicalNot): exact, and they take
# Boolean graph inputs, which have no float mask. Their result keeps a recipe for its mask
# (_LOGIC_MASKS, from the operands' masks), so a Where or Cast after them converts as before.
def _mask_and(ctx, a, b, n):
    return binary(ctx, L.Multiplication, float01(ctx, a, f"{n}_a"), float01(ctx, b, f"{n}_b"), n)


def _mask_or(ctx, a, b, n):
    return binary(ctx, L.Maximum, float01(ctx, a, f"{n}_a"), float01(ctx, b, f"{n}_b"), n)


def _mask_xor(ctx, a, b, n):
    d = binary(ctx, L.Subtraction, float01(ctx, a, f"{n}_a"), float01(ctx, b, f"{n}_b"), f"{n}_diff")
    return ctx.b.activation(d, AF.Abs, n)


_LOGIC_MASKS = {"and": _mask_and, "or": _mask_or, "xor": _mask_xor,
                "not": lambda ctx, a, b, n: ctx.b.linear(float01(ctx, a, f"{n}_a"), -1.0, 1.0, n)}


def _booleans(ctx, vals) -> bool:
    """Whether the operands are run-time Boolean tensors that a Boolean layer can take (Comparison,
    from the 20.08 format on; LogicalBinary and LogicalNot from 23.08)."""
    if not (ctx.b.target.has(L.Comparison) and all(
            isinstance(v, Port) and v.info.dtype == DataType.Boolean and v not in ctx.bool_float for v in vals)):
        return False
    if not ctx.b.target.has(L.LogicalBinary) and all(_has_mask(ctx, v) for v in vals):
        return False  # 20.08: operands of float comparisons keep their masks (fewer layers than Comparisons)
    if not ctx.b.target.has(L.LogicalBinary) and len({v.info.rank for v in vals}) > 1:
        raise Unsupported("Boolean operands of different ranks: CpuRef 20.08 reshapes no Boolean tensor, and "
                          "its Comparison broadcasts only operands of one rank",
                          "convert with --target 23.08 (LogicalBinary)", code="needs-target")
    return True


def _has_mask(ctx, v) -> bool:
    """Whether float01() can make v's 0/1 mask: a constant, or a Boolean of float comparisons."""
    if not isinstance(v, Port) or v in ctx.bool_float or v in ctx.bool_cache:
        return True
    src = ctx.bool_src.get(v)
    if src is None:
        return False
    kind, a, b, _ = src
    if kind in _LOGIC_MASKS:
        return all(_has_mask(ctx, o) for o in (a, b) if o is not None)
    return all(not isinstance(o, Port) or o.info.dtype == DataType.Float32 for o in (a, b))


def _not_compared(ctx, v: Port, n: str) -> Port:
    """!v for a Boolean v in the 20.08 format, which has no LogicalNot: v == (v != v), the second
    all false (CpuRef 20.08 compares Boolean tensors; it has no Boolean Constant)."""
    from armnn_import.ir.types import ComparisonOperation
    false = ctx.b.compare(ComparisonOperation.NotEqual, v, v, f"{n}_false")
    return ctx.b.compare(ComparisonOperation.Equal, v, false, n)


def _logical(ctx, node, kind):
    return _logical_of(ctx, kind, [ctx.val(node, i) for i in range(len(node.inputs))], ctx.name(node))


def _logical_of(ctx, kind, vals, n):
    from armnn_import.ir.types import ComparisonOperation, LogicalBinaryOperation, UnaryOperation
    logical = ctx.b.target.has(L.LogicalBinary)
    if kind == "not":
        y = ctx.b.unary(vals[0], UnaryOperation.LogicalNot, n) if logical else _not_compared(ctx, vals[0], n)
        ctx.bool_src[y] = ("not", vals[0], None, n)
        return y
    a, b = vals
    if kind == "xor":
        y = ctx.b.compare(ComparisonOperation.NotEqual, a, b, n)
    elif logical:
        op = LogicalBinaryOperation.LogicalAnd if kind == "and" else LogicalBinaryOperation.LogicalOr
        y = ctx.b.logical(op, a, b, n)
    else:  # on 0/1 Booleans a > !b is a and b, a >= !b is a or b
        op = ComparisonOperation.Greater if kind == "and" else ComparisonOperation.GreaterOrEqual
        y = ctx.b.compare(op, a, _not_compared(ctx, b, f"{n}_not_b"), n)
    y = ctx.to_shape(y, broadcast(ctx.lshape(a), ctx.lshape(b)), f"{n}_shape")
    ctx.bool_src[y] = (kind, a, b, n)
    return y




@register("Not", since=1, layers=("Activation", "ElementwiseUnary", "Comparison"))
def not_(ctx, node):
    """Not(Equal(a, b)) is the Boolean a != b (true for NaN, false for equal infinities);
    any other Not works on float masks."""
    v = ctx.val(node, 0)
    src = ctx.bool_src.get(v) if isinstance(v, Port) else None
    if src is not None and src[0] == "eq":
        return compare(ctx, "ne", src[1], src[2], ctx.name(node))
    if _booleans(ctx, [v]):
        return _logical(ctx, node, "not")
    (m,) = _masks(ctx, node)
    return _boolean_result(ctx, ctx.b.linear(m, -1.0, 1.0, ctx.name(node)))


@register("And", since=7, layers=("Multiplication", "LogicalBinary", "Comparison", "Reshape"))
def and_(ctx, node):
    if _booleans(ctx, [ctx.val(node, 0), ctx.val(node, 1)]):
        return _logical(ctx, node, "and")
    a, b = _masks(ctx, node)
    return _boolean_result(ctx, binary(ctx, L.Multiplication, a, b, ctx.name(node)))


@register("Or", since=7, layers=("Maximum", "LogicalBinary", "Comparison", "Activation", "Floor", "Reshape", "Subtraction", "BatchNormalization", "FullyConnected", "StridedSlice", "Multiplication"))
def or_(ctx, node):
    if _booleans(ctx, [ctx.val(node, 0), ctx.val(node, 1)]):
        return _logical(ctx, node, "or")
    a, b = _masks(ctx, node)
    return _boolean_result(ctx, binary(ctx, L.Maximum, a, b, ctx.name(node)))


@register("Xor", since=7, layers=("Subtraction", "Activation", "Comparison", "Reshape"))
def xor(ctx, node):
    if _booleans(ctx, [ctx.val(node, 0), ctx.val(node, 1)]):
        return _logical(ctx, node, "xor")
    a, b = _masks(ctx, node)
    d = binary(ctx, L.Subtraction, a, b, ctx.name(node, "diff"))
    return _boolean_result(ctx, ctx.b.activation(d, AF.Abs, ctx.name(node)))


@register("Where", since=9, layers=("Minimum", "Maximum", "Activation", "Floor", "FullyConnected", "Reshape", "ElementwiseUnary",
                  "StridedSlice", "Subtraction", "Constant", "Multiplication", "Addition", "Cast", "Division"))
def where(ctx, node):
    """max(min(P, x), min(-P, y)) with P = +-inf from the condition (lowering.masks.select)."""
    c, x, y = (ctx.val(node, i) for i in range(3))
    n = ctx.name(node)
    out_shape = broadcast(broadcast(ctx.lshape(c), ctx.lshape(x)), ctx.lshape(y))
    if any(isinstance(v, Port) and v.info.dtype == DataType.Signed32 for v in (x, y)):
        from .elementwise import where_int
        return where_int(ctx, c, x, y, n, out_shape, float01)
    for v in (x, y):
        if isinstance(v, Port) and v.info.dtype != DataType.Float32:
            raise Unsupported(f"Where on {v.info.dtype.name} tensors (only float32 and int32 values can be selected)")
    y_ = select(ctx.b, c.astype(bool) if isinstance(c, np.ndarray) else float01(ctx, c, f"{n}_cond"), x, y, n)
    return ctx.to_shape(y_, out_shape, f"{n}_shape")


@register("ThresholdedRelu", since=10, layers=("Activation", "Floor", "Multiplication"))
def thresholded_relu(ctx, node):
    x, n = ctx.port(node, 0), ctx.name(node)
    alpha = float(ctx.attr(node, "alpha", 1.0))
    ctx.report.decomposition("ThresholdedRelu", "x * step(x - alpha)")
    return ctx.b.binary(L.Multiplication, x, step(ctx, ctx.b.linear(x, 1.0, -alpha, f"{n}_shift"), f"{n}_mask"), n)


@register("Sign", since=9, layers=("Activation", "Floor", "Subtraction"))
def sign(ctx, node):
    x, n = ctx.port(node, 0), ctx.name(node)
    ctx.report.decomposition("Sign", "step(x) - step(-x)")
    pos = step(ctx, x, f"{n}_pos")
    neg = step(ctx, ctx.b.linear(x, -1.0, 0.0, f"{n}_negx"), f"{n}_neg")
    return ctx.b.binary(L.Subtraction, pos, neg, n)


@register("Shrink", since=9, layers=("Activation", "Floor", "Multiplication", "Addition"))
def shrink(ctx, node):
    x, n, b = ctx.port(node, 0), ctx.name(node), ctx.b
    lam, bias = float(ctx.attr(node, "lambd", 0.5)), float(ctx.attr(node, "bias", 0.0))
    ctx.report.decomposition("Shrink", "(x + bias) * step(-lambd - x) + (x - bias) * step(x - lambd)")
    lo = b.binary(L.Multiplication, b.linear(x, 1.0, bias, f"{n}_xpb"),
                  step(ctx, b.linear(x, -1.0, -lam, f"{n}_lot"), f"{n}_lo"), f"{n}_lov")
    hi = b.binary(L.Multiplication, b.linear(x, 1.0, -bias, f"{n}_xmb"),
                  step(ctx, b.linear(x, 1.0, -lam, f"{n}_hit"), f"{n}_hi"), f"{n}_hiv")
    return b.binary(L.Addition, lo, hi, n)


_FLT_MAX = float(np.finfo(np.float32).max)


@register("IsInf", since=10, layers=("Activation", "Greater", "Comparison", "LogicalBinary", "Maximum", "Floor",
                                         "Subtraction"))
def is_inf(ctx, node):
    """|x| > FLT_MAX (x > FLT_MAX, -x > FLT_MAX for one sign), exact for NaN too (no comparison
    with NaN holds). The FLT_MAX tensor is BoundedReLu(x, a=b=FLT_MAX) = min(a, max(b, x)), which is
    FLT_MAX for every x, NaN and infinities included (std::max(b, NaN) is b)."""
    x, n = ctx.port(node, 0), ctx.name(node)
    pos, neg = ctx.attr(node, "detect_positive", 1), ctx.attr(node, "detect_negative", 1)
    half = getattr(ctx.report, "float16_network", False)
    big = 65504.0 if half else _FLT_MAX  # the largest finite value
    top = ctx.b.activation(x, AF.BoundedReLu, f"{n}_max", a=big, b=big)
    ctx.report.decomposition("IsInf", "Greater(|x|, FLT_MAX), FLT_MAX from BoundedReLu")
    if pos and neg and not half:
        return compare(ctx, "gt", ctx.b.activation(x, AF.Abs, f"{n}_abs"), top, n)
    if not (pos or neg):  # detects nothing: all false (nothing exceeds FLT_MAX's own tensor)
        return compare(ctx, "gt", top, top, n)
    # one comparison per sign with x itself: CpuRef 23.08 writes a Float16 inf as 65504 (an Abs or
    # a negation of a Float16 inf gives 65504), so a Float16 x is compared before any layer
    bottom = ctx.b.activation(x, AF.BoundedReLu, f"{n}_min", a=-big, b=-big) if neg else None
    p = compare(ctx, "gt", x, top, n if not neg else f"{n}_pos") if pos else None
    q = compare(ctx, "gt", bottom, x, n if not pos else f"{n}_neg") if neg else None
    if p is None or q is None:
        return p if q is None else q
    if _booleans(ctx, [p, q]):
        return _logical_of(ctx, "or", [p, q], n)
    return _boolean_result(ctx, binary(ctx, L.Maximum, float01(ctx, p, f"{n}_pm"), float01(ctx, q, f"{n}_qm"), n))


@register("IsNaN", since=9, layers=("Comparison",), needs="20.08")
def is_nan(ctx, node):
    """x != x (a Comparison NotEqual). It keeps no float mask: the finite-exact masks of
    comparisons are wrong for exactly the NaNs this finds, so a Where on it is refused."""
    from armnn_import.ir.types import ComparisonOperation
    x = ctx.port(node, 0)
    return ctx.b.compare(ComparisonOperation.NotEqual, x, x, ctx.name(node))
