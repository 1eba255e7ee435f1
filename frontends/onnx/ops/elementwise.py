"""Elementwise binary and variadic operators."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.graph import Port
from armnn_import.ir.types import ActivationFunction as AF
from armnn_import.ir.types import DataType
from armnn_import.ir.types import LayerType as L
from armnn_import.lowering import Unsupported

from ..registry import Refusal, needs_const, register
from .common import INT_LAYERS, binary, broadcast, power, varying_axis

BINARY = {"Add": L.Addition, "Sub": L.Subtraction, "Mul": L.Multiplication, "Div": L.Division}


def _binary_op(ltype):
    def convert(ctx, node):
        a, b = ctx.val(node, 0), ctx.val(node, 1)
        if ltype == L.Multiplication and (y := _hard_swish(ctx, a, b, ctx.name(node))) is not None:
            return y
        return binary(ctx, ltype, a, b, ctx.name(node))
    return convert


def _hard_sigmoid_of(p) -> Port | None:
    """x when p is HardSigmoid(x, alpha=1/6, beta=1/2) as hard_sigmoid (activation.py) lowers it:
    BoundedReLu(1, 0) of Linear(1/6, 1/2)."""
    if not isinstance(p, Port) or p.layer.type != L.Activation or p.layer.desc.function != AF.BoundedReLu or \
            (p.layer.desc.a, p.layer.desc.b) != (1.0, 0.0):
        return None
    lin = p.layer.inputs[0].layer
    if lin.type != L.Activation or lin.desc.function != AF.Linear or lin.desc.b != 0.5 or \
            np.float32(lin.desc.a) != np.float32(1.0 / 6.0):
        return None
    return lin.inputs[0]


def _hard_swish(ctx, a, b, name: str) -> Port | None:
    """x * HardSigmoid(x) (torch's hardswish exported before opset 14, where ONNX's HardSwish is
    defined as exactly this product) as one HardSwish Activation where the target has it, as the
    HardSwish operator is; the HardSigmoid's layers go if nothing else reads them."""
    if not ctx.b.g.target.has(AF.HardSwish) or not isinstance(a, Port) or not isinstance(b, Port) or \
            a.info.dtype.is_quantized or a.info != b.info:
        return None
    for x, h in ((a, b), (b, a)):
        if _hard_sigmoid_of(h) == x:
            ctx.report.decomposition("x * HardSigmoid(x)", "one HardSwish Activation (ONNX's HardSwish)")
            return ctx.b.activation(x, AF.HardSwish, name)
    return None


# a constant operand folds into a Linear/BoundedReLu Activation or a per-channel BatchNormalization,
# a quantized one is made by a FullyConnected (and StridedSlice); broadcasting reshapes
_BROADCAST = ("Activation", "BatchNormalization", "FullyConnected", "Reshape", "StridedSlice")
# (an int32 tensor with an integer constant: an int32 Constant layer, common.binary)
for _op, _lt in BINARY.items():
    register(_op, since=7, layers=(_lt.name,) + _BROADCAST + (("Constant",) if _lt in INT_LAYERS else ()))(
        _binary_op(_lt))


def _variadic(ltype):
    def convert(ctx, node):
        vals = [ctx.val(node, i) for i in range(len(node.inputs)) if ctx.has(node, i)]
        if not vals:
            raise Unsupported("no inputs")
        # constants first, so that they fold into one operand
        consts = [v for v in vals if not isinstance(v, Port)]
        ports = [v for v in vals if isinstance(v, Port)]
        acc = ports[0]
        if len(ports) == 1 and not consts:
            return acc
        for k, v in enumerate(ports[1:] + consts):
            acc = binary(ctx, ltype, acc, v, ctx.name(node, f"{k}") if k < len(ports) + len(consts) - 2
                         else ctx.name(node))
        return acc
    return convert


register("Sum", since=7, layers=("Addition",) + _BROADCAST + ("Constant",))(_variadic(L.Addition))
register("Max", since=7, layers=("Maximum",) + _BROADCAST + ("Constant",))(_variadic(L.Maximum))
register("Min", since=7, layers=("Minimum",) + _BROADCAST + ("Constant",))(_variadic(L.Minimum))


@register("Mean", since=7, layers=("Addition", "Division", "Activation", "BatchNormalization", "Reshape"))
def mean(ctx, node):
    n = sum(1 for i in range(len(node.inputs)) if ctx.has(node, i))
    total = _variadic(L.Addition)(ctx, node)
    if n == 1:
        return total
    ctx.report.decomposition("Mean", "Additions, then Division by N (Linear when N is a power of two)")
    return binary(ctx, L.Division, total, np.float32(n), ctx.name(node, "div"))


def _pow_check(node, ctx):
    target = ctx.target if hasattr(ctx, "target") else ctx.g.target  # (the pre-scan's view, or the converter)
    if target.has(L.ElementwiseBinary):
        return None  # (a Power layer takes any float exponent, run-time too; int32 bases: the converter)
    refusal = needs_const(1, what="exponent")(node, ctx)
    if refusal:
        return Refusal(refusal.reason, refusal.hint + "; or convert with --target 23.08 (a Power layer)", refusal.code)
    e = ctx.value(node, 1)
    if e is not None and (e.size == 0 or not all(_pow_ok(float(p)) for p in np.unique(e))):
        return (f"exponent {e.reshape(-1)[:4].tolist()} has no exact lowering (values >= 0, -0.5 or "
                "integers are needed)", "convert with --target 23.08: its Power layer takes any float exponent")
    return None


def _pow_ok(p: float) -> bool:
    return p >= 0 or p == -0.5 or float(p).is_integer()


MAX_POW_SLICES = 16  # a per-element exponent: at most this many runs of one value along its axis


@register("Pow", since=7, layers=("Activation", "Multiplication", "Division", "Rsqrt", "Normalization", "ElementwiseBinary", "Cast",
                                  "StridedSlice", "Merger", "Reshape", "Addition", "Subtraction", "Constant"),
          check=_pow_check, notes="before --target 23.08 a constant exponent (one varying along one axis: a "
          "slice per run of one value); from 23.08 a float base to any other power is one ElementwiseBinary Power")
def pow_(ctx, node):
    x, name = ctx.port(node, 0, dtypes=(DataType.Float32, DataType.Signed32)), ctx.name(node)
    if _power_layer(ctx, node, x):
        return _pow_layer(ctx, node, x, name)
    e = ctx.const(node, 1, "exponent")
    shape = ctx.lshape(x)
    if e.size == 1:
        return ctx.to_shape(_pow_scalar(ctx, x, float(e.reshape(-1)[0]), name), shape, f"{name}_shape")
    if x.info.dtype == DataType.Signed32:
        return ctx.to_shape(_int_pow_each(ctx, x, e, name), broadcast(shape, e.shape), f"{name}_shape")
    # an exponent along one axis: x sliced into runs of one exponent value, each raised to it and the
    # runs joined (a 0/1 mask per value would turn another value's inf into NaN)
    axis = varying_axis(e, len(shape))
    if broadcast(shape, e.shape) != shape or axis is None:
        raise Unsupported(f"a {list(e.shape)} exponent of a {list(shape)} tensor (it must vary along one axis "
                          "of x, and not widen it)")
    v = e.reshape(-1)
    starts = [0] + [k for k in range(1, len(v)) if v[k] != v[k - 1]]
    if len(starts) > MAX_POW_SLICES:
        raise Unsupported(f"{len(starts)} runs of exponent values (at most {MAX_POW_SLICES}, a slice each)")
    ctx.report.decomposition("Pow", "a StridedSlice per run of one exponent value, each raised to it, a Concat")
    x = ctx.b.reshape(x, shape, f"{name}_x")
    parts = [_pow_scalar(ctx, ctx.b.take(x, axis, a, b, f"{name}_p{k}"), float(v[a]), f"{name}_pow{k}")
             for k, (a, b) in enumerate(zip(starts, starts[1:] + [len(v)]))]
    return ctx.b.concat(parts, axis, name)


def _power_layer(ctx, node, x) -> bool:
    """Whether x ** e is one Power layer (23.08, float32 x): only where the exact forms below cannot
    go (a run-time exponent, one with values other than >= 0, -0.5 or integers, or a per-element one
    that does not vary along one axis in at most MAX_POW_SLICES runs), because Arm NN 23.08's
    Power.hpp numeric_casts its result: a result past float32's range (inf) fails an assertion in
    builds with numeric-cast checks (the harness's), where the exact forms give inf."""
    if not ctx.b.target.has(L.ElementwiseBinary) or x.info.dtype != DataType.Float32:
        return False
    e, shape = ctx.value(node, 1), ctx.lshape(x)
    if e is None or e.size == 0 or not all(_pow_ok(float(p)) for p in np.unique(e)):
        return True
    if e.size == 1:
        return False
    v = e.reshape(-1)
    runs = 1 + int(np.count_nonzero(v[1:] != v[:-1]))
    return broadcast(shape, e.shape) != shape or varying_axis(e, len(shape)) is None or runs > MAX_POW_SLICES


def _pow_layer(ctx, node, x, name):
    e = ctx.val(node, 1)
    if isinstance(e, Port):
        if e.info.dtype == DataType.Signed32:  # (int32/int64 exponents: exact as float32 within 2^24)
            e = ctx.b.cast(e, DataType.Float32, f"{name}_exponent")
        elif e.info.dtype != DataType.Float32:
            raise Unsupported(f"a {e.info.dtype.name} exponent at run time (the Power layer needs float32)")
    else:
        e = ctx.materialize(np.asarray(e, np.float32), f"{name}_exponent")
    out = broadcast(ctx.lshape(x), ctx.lshape(e))
    ctx.report.warn(f"{name}: a Power layer: a result past float32's range (inf) fails an assertion in Arm NN "
                    "23.08 builds with numeric-cast checks (release packages give inf)")
    return ctx.to_shape(ctx.b.power(x, e, name), out, f"{name}_shape")


def _pow_scalar(ctx, x, p, name):
    b = ctx.b
    if x.info.dtype == DataType.Signed32:
        return _int_pow(ctx, x, p, name)
    if p == 0.0:
        return b.fill_like(x, 1.0, name)
    if p == -0.5:
        return b.add(L.Rsqrt, name, [x])
    if p < 0:  # 1 / x^|p| (integer |p|): inf at 0, as in ONNX
        one = b.fill_like(x, 1.0, f"{name}_one")
        return b.binary(L.Division, one, _positive_pow(ctx, x, -p, f"{name}_pos"), name)
    return _positive_pow(ctx, x, p, name)


def _int_pow(ctx, x, p, name):
    """x ** p of an int32 tensor for an integer p >= 0 by squaring: int32 Multiplications (exact)."""
    if p < 0 or not float(p).is_integer():
        raise Unsupported(f"an int32 tensor to the power {p} (an integer >= 0 is needed)")
    one = np.ones((1,) * x.info.rank, np.int32)
    y, sq, k, p = None, x, 0, int(p)
    while p:
        if p & 1:
            y = sq if y is None else ctx.b.binary(L.Multiplication, y, sq, f"{name}_m{k}")
        p >>= 1
        if p:
            sq = ctx.b.binary(L.Multiplication, sq, sq, f"{name}_sq{k}")
        k += 1
    if y is None:  # x ** 0 = 1: x * 0 + 1
        y = binary(ctx, L.Addition, binary(ctx, L.Multiplication, x, one * 0, f"{name}_zero"), one, name)
    return binary(ctx, L.Multiplication, x, one, name) if y is x else y  # (a layer of its own)


def _int_pow_each(ctx, x, e, name):
    """x ** e of an int32 tensor for a constant tensor e of integers >= 0: the product over the bits b
    of e of 1 + bit_b(e) * (x^(2^b) - 1), in int32 arithmetic (exact; CpuRef slices no Signed32 tensor)."""
    if (e < 0).any() or not np.array_equal(e, np.round(e)):
        raise Unsupported(f"an int32 tensor to the powers {e.reshape(-1)[:4].tolist()} (integers >= 0 are needed)")
    e = e.astype(np.int64)
    ctx.report.decomposition("Pow", "int32: the product of 1 + bit_b(e) * (x^(2^b) - 1) over the bits of e")
    one = np.ones((1,) * max(x.info.rank, e.ndim), np.int32)
    y, sq = binary(ctx, L.Multiplication, x, one * 0, f"{name}_zero"), x
    y = binary(ctx, L.Addition, y, one, f"{name}_one")
    for b in range(int(e.max()).bit_length()):
        if b:
            sq = ctx.b.binary(L.Multiplication, sq, sq, f"{name}_sq{b}")
        bit = ((e >> b) & 1).astype(np.int32)
        f = binary(ctx, L.Multiplication, binary(ctx, L.Subtraction, sq, one, f"{name}_dec{b}"), bit, f"{name}_bit{b}")
        y = binary(ctx, L.Multiplication, y, binary(ctx, L.Addition, f, one, f"{name}_f{b}"), f"{name}_m{b}")
    return y


def _positive_pow(ctx, x, p, name):
    b = ctx.b
    if p == 1.0:
        return b.linear(x, 1.0, 0.0, name)
    if p in (2.0, 0.5):
        return power(ctx, x, p, name)  # Square, Sqrt (NaN below 0, as in ONNX)
    if p == 3.0:
        return b.binary(L.Multiplication, b.activation(x, AF.Square, f"{name}_sq"), x, name)
    ctx.report.decomposition("Pow", "|x|^p as Normalization (x * |x|^(p-1) for odd p; sqrt(x)^(2p) for "
                                    "fractional p, so that negative bases give NaN)")
    if float(p).is_integer():
        mag = b.activation(x, AF.Abs, f"{name}_abs")
        if int(p) % 2 == 0:
            return power(ctx, mag, p, name)
        return b.binary(L.Multiplication, x, power(ctx, mag, p - 1, f"{name}_even"), name)
    return power(ctx, b.activation(x, AF.Sqrt, f"{name}_sqrt"), 2 * p, name)


def where_int(ctx, c, x, y, name: str, out_shape, float01) -> Port:
    """Where of int32 values: m * x + (1 - m) * y with the condition as an int32 0/1 mask m, all in
    int32 arithmetic (exact, no overflow: each product is 0 or the value). A run-time condition's
    mask is its float 0/1 form (float01 of logic.py, passed in: logic imports this module) through a
    Cast layer (the 23.08 format)."""
    for v in (x, y):
        if not isinstance(v, Port) and np.asarray(v).dtype.kind not in "iub":
            raise Unsupported(f"Where of int32 and {np.asarray(v).dtype} values")
    if isinstance(c, Port):
        if not (c in ctx.bool_float or c in ctx.bool_cache or c in ctx.bool_src):
            float01(ctx, c, f"{name}_cond")  # (refuses a boolean with no 0/1 form, with its own reason)
        if not ctx.g.target.has(L.Cast):
            raise Unsupported("Where on Signed32 tensors with a run-time condition (its 0/1 mask as int32 is a "
                              "Cast)", "convert with --target 23.08 (Cast), or make the condition constant",
                              code="needs-target")
        m = ctx.b.cast(float01(ctx, c, f"{name}_cond"), DataType.Signed32, f"{name}_mask")
        keep_y = binary(ctx, L.Subtraction, np.ones((1,) * m.info.rank, np.int32), m, f"{name}_not")
    else:
        m, keep_y = np.asarray(c).astype(np.int32), 1 - np.asarray(c).astype(np.int32)

    def times(a, b, part):
        if not isinstance(a, Port) and not isinstance(b, Port):
            return ctx.materialize(np.asarray(a * np.asarray(b), np.int32), f"{name}_{part}")
        return binary(ctx, L.Multiplication, a, np.asarray(b, np.int32) if not isinstance(b, Port) else b,
                      f"{name}_{part}")

    ctx.report.decomposition("Where", "int32: m * x + (1 - m) * y with the condition's 0/1 mask m")
    y = binary(ctx, L.Addition, times(m, x, "x"), times(keep_y, y, "y"), name)
    return ctx.to_shape(y, out_shape, f"{name}_shape")
