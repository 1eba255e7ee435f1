"""Activations and other elementwise unary operators."""
from __future__ import annotations

import math

import numpy as np

from armnn_import.ir.graph import Port
from armnn_import.ir.types import ActivationFunction as AF
from armnn_import.ir.types import DataType
from armnn_import.ir.types import LayerType as L
from armnn_import.ir.types import UnaryOperation
from armnn_import.lowering import Unsupported

from ..registry import Refusal, register
from .common import binary

DIRECT = {"Relu": AF.ReLu, "Sigmoid": AF.Sigmoid, "Abs": AF.Abs, "Sqrt": AF.Sqrt}


def _direct(fn):
    def convert(ctx, node):
        return ctx.b.activation(ctx.port(node, 0), fn, ctx.name(node))
    return convert


for _op, _fn in DIRECT.items():
    register(_op, since=6, layers=("Activation",))(_direct(_fn))


@register("Tanh", since=6, layers=("Activation", "Multiplication", "Division"))
def tanh(ctx, node):
    x = ctx.port(node, 0)
    if x in ctx.softplus_exp:  # tanh(softplus(x)) below 23.08: Softplus gave u = e^min(x, 20)
        return _tanh_softplus(ctx, x, ctx.name(node), ctx.name(node))
    return ctx.b.activation(x, AF.TanH, ctx.name(node), a=1.0, b=1.0)


def _tanh_softplus(ctx, u: Port, n: str, out: str) -> Port:
    """tanh(log(1 + u)) = (u^2 + 2u) / (u^2 + 2u + 2) for u = e^x: no logarithm."""
    b = ctx.b
    num = b.binary(L.Multiplication, u, b.linear(u, 1.0, 2.0, f"{n}_up2"), f"{n}_num")
    return b.binary(L.Division, num, b.linear(num, 1.0, 2.0, f"{n}_den"), out)


@register("LeakyRelu", since=6, layers=("Activation",))
def leaky_relu(ctx, node):
    return ctx.b.activation(ctx.port(node, 0), AF.LeakyReLu, ctx.name(node), a=ctx.attr(node, "alpha", 0.01))


@register("Floor", since=6, layers=("Floor",))
def floor(ctx, node):
    return ctx.b.add(L.Floor, ctx.name(node), [ctx.port(node, 0)])


@register("Round", since=11, layers=("Floor", "Subtraction", "Activation", "Addition", "Multiplication"),
          notes="half to even, from Floor (lowering/round.py)")
def round_(ctx, node):
    from armnn_import.lowering.round import round_half_even
    return round_half_even(ctx.b, ctx.port(node, 0), ctx.name(node))


@register("Neg", since=6, layers=("Activation",))
def neg(ctx, node):
    return ctx.b.linear(ctx.port(node, 0), -1.0, 0.0, ctx.name(node))


@register("Ceil", since=6, layers=("Activation", "Floor", "ElementwiseUnary"))
def ceil(ctx, node):
    n = ctx.name(node)
    if ctx.b.target.has(UnaryOperation.Ceil):  # one exact layer (and ceil(-0.5) keeps its sign: -0)
        return ctx.b.unary(ctx.port(node, 0), UnaryOperation.Ceil, n)
    ctx.report.decomposition("Ceil", "-Floor(-x)")
    y = ctx.b.linear(ctx.port(node, 0), -1.0, 0.0, f"{n}_neg")
    y = ctx.b.add(L.Floor, f"{n}_floor", [y])
    return ctx.b.linear(y, -1.0, 0.0, n)


@register("Reciprocal", since=6, layers=("Activation", "Division"))
def reciprocal(ctx, node):
    x, n = ctx.port(node, 0), ctx.name(node)
    ctx.report.decomposition("Reciprocal", "Division(Linear(x, a=0, b=1), x)")
    return ctx.b.binary(L.Division, ctx.b.fill_like(x, 1.0, f"{n}_one"), x, n)


def exp(ctx, x: Port, name: str) -> Port:
    return ctx.b.exp(x, name)  # (CpuRef's std::exp is onnxruntime's)


@register("Exp", since=6, layers=("Activation", "Division", "ElementwiseUnary"),
          notes="from --target 23.08 one ElementwiseUnary Exp, before sigmoid(x) / sigmoid(-x)")
def exp_(ctx, node):
    return exp(ctx, ctx.port(node, 0), ctx.name(node))


@register("Softsign", since=1, layers=("Activation", "Division"))
def softsign(ctx, node):
    x, n = ctx.port(node, 0), ctx.name(node)
    ctx.report.decomposition("Softsign", "x / Linear(|x|, a=1, b=1)")
    den = ctx.b.linear(ctx.b.activation(x, AF.Abs, f"{n}_abs"), 1.0, 1.0, f"{n}_den")
    return ctx.b.binary(L.Division, x, den, n)


@register("Mish", since=18, layers=("Activation", "Multiplication", "Division", "ElementwiseUnary"))
def mish(ctx, node):
    """x * tanh(log(1 + u)) with u = e^x is x * (u^2 + 2u) / (u^2 + 2u + 2): no logarithm
    needed (SoftReLu cannot be used: Arm NN 20.08 reads it as Sigmoid). x is capped at 20
    inside, where the fraction is already 1 in float32."""
    x, n, b = ctx.port(node, 0), ctx.name(node), ctx.b
    ctx.report.decomposition("Mish", "x * n / (n + 2) with n = u(u + 2), u = exp(min(x, 20))")
    u = exp(ctx, b.clamp(x, -np.inf, 20.0, f"{n}_cap"), f"{n}_exp")
    return b.binary(L.Multiplication, x, _tanh_softplus(ctx, u, n, f"{n}_tanh"), n)


def _elu_like(ctx, x: Port, alpha: float, inner: float, gamma: float, name: str) -> Port:
    """gamma * (relu(x) + alpha * (exp(min(x, 0) * inner) - 1))."""
    neg = ctx.b.clamp(x, -np.inf, 0.0, f"{name}_min0")
    if inner != 1.0:
        neg = ctx.b.linear(neg, inner, 0.0, f"{name}_scale")
    e = ctx.b.linear(exp(ctx, neg, f"{name}_exp"), alpha, -alpha, f"{name}_em1")
    pos = ctx.b.activation(x, AF.ReLu, f"{name}_relu")
    y = ctx.b.binary(L.Addition, pos, e, name if gamma == 1.0 else f"{name}_sum")
    return y if gamma == 1.0 else ctx.b.linear(y, gamma, 0.0, name)


@register("Elu", since=6, layers=("Activation", "Division", "Addition", "ElementwiseUnary"))
def elu(ctx, node):
    ctx.report.decomposition("Elu", "ReLu(x) + alpha * (exp(min(x, 0)) - 1), exp as Sigmoid(x)/Sigmoid(-x)")
    return _elu_like(ctx, ctx.port(node, 0), ctx.attr(node, "alpha", 1.0), 1.0, 1.0, ctx.name(node))


@register("Selu", since=6, layers=("Activation", "Division", "Addition", "ElementwiseUnary"))
def selu(ctx, node):
    alpha = ctx.attr(node, "alpha", 1.67326319217681884765625)
    gamma = ctx.attr(node, "gamma", 1.05070102214813232421875)
    return _elu_like(ctx, ctx.port(node, 0), alpha, 1.0, gamma, ctx.name(node))


@register("Celu", since=12, layers=("Activation", "Division", "Addition", "ElementwiseUnary"))
def celu(ctx, node):
    alpha = ctx.attr(node, "alpha", 1.0)
    if alpha == 0:
        raise Unsupported("alpha 0")
    return _elu_like(ctx, ctx.port(node, 0), alpha, 1.0 / alpha, 1.0, ctx.name(node))


@register("Swish", since=24, layers=("Activation", "Multiplication"))
def swish(ctx, node):
    x, n = ctx.port(node, 0), ctx.name(node)
    alpha = float(ctx.attr(node, "alpha", 1.0))
    s = ctx.b.linear(x, alpha, 0.0, f"{n}_scale") if alpha != 1.0 else x
    return ctx.b.binary(L.Multiplication, x, ctx.b.activation(s, AF.Sigmoid, f"{n}_sigmoid"), n)


@register("HardSigmoid", since=6, layers=("Activation",))
def hard_sigmoid(ctx, node):
    n = ctx.name(node)
    y = ctx.b.linear(ctx.port(node, 0), ctx.attr(node, "alpha", 0.2), ctx.attr(node, "beta", 0.5), f"{n}_lin")
    return ctx.b.clamp(y, 0.0, 1.0, n)


@register("HardSwish", since=14, layers=("Activation", "Multiplication"))
def hard_swish(ctx, node):
    x, n = ctx.port(node, 0), ctx.name(node)
    if ctx.b.g.target.has(AF.HardSwish):  # x * min(max(x + 3, 0), 6) / 6: one layer
        return ctx.b.activation(x, AF.HardSwish, n)
    ctx.report.decomposition("HardSwish", "x * BoundedReLu(Linear(x, 1/6, 1/2), 0, 1)")
    h = ctx.b.clamp(ctx.b.linear(x, 1.0 / 6.0, 0.5, f"{n}_lin"), 0.0, 1.0, f"{n}_hsig")
    return ctx.b.binary(L.Multiplication, x, h, n)


@register("Gelu", since=20, layers=("Activation", "Multiplication", "Addition"),
          check=lambda node, ctx: None if ctx.attr(node, "approximate", "none") == "tanh" else
          ("approximate='none' needs the error function, which no Arm NN release written (19.02, 20.08, "
           "23.08) has", ""))
def gelu(ctx, node):
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    x, n, b = ctx.port(node, 0), ctx.name(node), ctx.b
    ctx.report.decomposition("Gelu", "tanh approximation: Square, Multiplication, Linear, TanH")
    cube = b.binary(L.Multiplication, b.activation(x, AF.Square, f"{n}_sq"), x, f"{n}_cube")
    inner = b.binary(L.Addition, x, b.linear(cube, 0.044715, 0.0, f"{n}_c3"), f"{n}_inner")
    t = b.activation(inner, AF.TanH, f"{n}_tanh", a=1.0, b=math.sqrt(2.0 / math.pi))
    half = b.linear(t, 0.5, 0.5, f"{n}_half")
    return b.binary(L.Multiplication, x, half, n)


@register("PRelu", since=7, layers=("Activation", "BatchNormalization", "Multiplication", "Addition",
                  "Reshape", "FullyConnected", "StridedSlice", "Prelu", "Constant"))
def prelu(ctx, node):
    x, n = ctx.port(node, 0), ctx.name(node)
    slope = ctx.val(node, 1)
    if not isinstance(slope, Port) and np.asarray(slope).size == 1:
        return ctx.b.activation(x, AF.LeakyReLu, n, a=float(np.asarray(slope).reshape(-1)[0]))
    if ctx.b.target.has(L.Prelu) and x.info.dtype in (DataType.Float32, DataType.Float16) and (
            not isinstance(slope, Port) or slope.info.dtype == x.info.dtype):
        return ctx.b.prelu(x, slope, n)  # x < 0 ? slope * x : x, ONNX's own formula
    ctx.report.decomposition("PRelu", "ReLu(x) + slope * min(x, 0) (per-channel slope as BatchNormalization)")
    neg = ctx.b.clamp(x, -np.inf, 0.0, f"{n}_min0")
    scaled = binary(ctx, L.Multiplication, neg, slope, f"{n}_scaled")
    return binary(ctx, L.Addition, ctx.b.activation(x, AF.ReLu, f"{n}_relu"), scaled, n)


def _clip_value(ctx, node, i, default):
    if not ctx.has(node, i):
        return default
    v = ctx.val(node, i)
    if isinstance(v, Port):
        return v
    v = np.asarray(v)
    if v.size != 1:
        raise Unsupported("min/max must be scalars")
    return float(v.reshape(-1)[0])


@register("Clip", since=6, until=10, layers=("Activation",))
def clip_attr(ctx, node):
    return ctx.b.clamp(ctx.port(node, 0), ctx.attr(node, "min", -np.inf), ctx.attr(node, "max", np.inf),
                       ctx.name(node))


@register("Clip", since=11, layers=("Activation", "Maximum", "Minimum", "Reshape"))
def clip(ctx, node):
    x, n = ctx.port(node, 0), ctx.name(node)
    lo, hi = _clip_value(ctx, node, 1, -np.inf), _clip_value(ctx, node, 2, np.inf)
    if not isinstance(lo, Port) and not isinstance(hi, Port):
        if lo > hi:  # ONNX: every output is max (numpy.clip semantics)
            return ctx.b.fill_like(x, hi, n)
        return ctx.b.clamp(x, lo, hi, n)
    y = x
    if isinstance(lo, Port) or lo != -np.inf:
        y = binary(ctx, L.Maximum, y, lo, f"{n}_lo")
    if isinstance(hi, Port) or hi != np.inf:
        y = binary(ctx, L.Minimum, y, hi, n)
    return y


# ONNX Cast `to` -> Arm NN type, for the 23.08 Cast layer (int64 tensors are Signed32 here)
_CAST_TYPES = {1: DataType.Float32, 6: DataType.Signed32, 7: DataType.Signed32}


@register("Cast", "CastLike", since=6, layers=("Activation", "Floor", "Cast"),
          notes="float32 <-> int32/int64 at run time: Cast from --target 23.08 on")
def cast(ctx, node):
    """float32 -> float32 is nothing; a boolean becomes its 0/1 mask; float -> bool is x != 0."""
    from .logic import float01, step

    v, n = ctx.val(node, 0), ctx.name(node)
    if node.op == "CastLike":
        target = ctx.val(node, 1)
        to = {"Float32": 1, "Boolean": 9, "Signed32": 6}.get(target.info.dtype.name) if isinstance(target, Port) \
            else {np.dtype(np.float32): 1, np.dtype(np.bool_): 9, np.dtype(np.int32): 6,
                  np.dtype(np.int64): 7}.get(np.asarray(target).dtype)
    else:
        to = ctx.attr(node, "to")
    is_bool = isinstance(v, Port) and (v.info.dtype.name == "Boolean" or v in ctx.bool_float)
    if to == 1 and is_bool:  # a fresh port: the mask itself stays marked as a boolean
        return ctx.b.linear(float01(ctx, v, f"{n}_mask"), 1.0, 0.0, n)
    if to == 1 and v.info.dtype.name == "Float32":
        from ..float16 import CAST_HINT, CAST_REFUSAL, island_mark
        if node.outputs[0] in ctx.float32_casts:
            if ctx.island_casts is None:
                raise Unsupported(CAST_REFUSAL, CAST_HINT)
            return island_mark(ctx, v, n, end=False)
        if ctx.island_casts and node.outputs[0] in ctx.island_casts:
            return island_mark(ctx, v, n, end=True)
        return v
    if to == 9 and is_bool:
        return v
    if to == 9 and v.info.dtype.name == "Float32":
        ctx.bool_float.add(y := step(ctx, ctx.b.activation(v, AF.Abs, f"{n}_abs"), n))
        return y
    want = _CAST_TYPES.get(to)
    if isinstance(v, Port) and want is not None and v.info.dtype == want:
        return v  # int64 <-> int32: both are Signed32 in the network
    if isinstance(v, Port) and want is not None and v.info.dtype in _CAST_TYPES.values() and \
            ctx.g.target.has(L.Cast) and v not in ctx.bool_float and not is_bool:
        # the 23.08 format: a Cast layer (float -> int truncates, as onnxruntime's static_cast)
        return ctx.b.cast(v, want, n)
    if ctx.g.target.has(L.Cast):
        raise Unsupported("casts of run-time tensors other than between float32, int32/int64 and bool have no "
                          "Arm NN layer")
    raise Unsupported("casts of run-time tensors other than float32/bool -> float32/bool have no Arm NN layer "
                      "in this format (--target 23.08 has a Cast layer for float32 <-> int32/int64)")



def _unary(op):
    def convert(ctx, node):
        return ctx.b.unary(ctx.port(node, 0), op, ctx.name(node))
    convert.__name__ = op.name.lower()
    return convert


register("Log", since=6, layers=("ElementwiseUnary",), needs="23.08")(_unary(UnaryOperation.Log))
register("Sin", since=7, layers=("ElementwiseUnary",), needs="23.08")(_unary(UnaryOperation.Sin))


def _softplus_check(node, ctx):
    if ctx.target.has(UnaryOperation.Log):
        return None
    readers = ctx.readers(node.outputs[0])
    if readers and all(r is not None and r.op == "Tanh" for r in readers):
        return None  # tanh(softplus(x)), torch's Mish before opset 18: no logarithm needed
    return Refusal("needs a logarithm (ElementwiseUnary Log, the 23.08 format); only a Softplus read by Tanh "
                   "alone (torch's Mish before opset 18) has an exact form without one",
                   "convert with --target 23.08 (read by Arm NN 23.08 and later)", "needs-target")


@register("Softplus", since=1, layers=("Activation", "ElementwiseUnary", "Subtraction", "Division"),
          check=_softplus_check, notes="max(x, 0) - log(sigmoid(|x|)) (23.08: no overflow for large x, as "
          "onnxruntime); below 23.08 only when Tanh alone reads it (Mish: tanh(softplus(x)) without a log)")
def softplus(ctx, node):
    """log(1 + e^x) = max(x, 0) + log(1 + e^-|x|) = max(x, 0) - log(sigmoid(|x|)): the definition
    rearranged so that e^x never overflows (onnxruntime gives x, not inf, for x > 88), exact up to
    float rounding (within 1e-7 of onnxruntime's log1p). It needs the Log of the 23.08 format;
    the SoftReLu activation cannot serve: Arm NN 20.08 reads it as Sigmoid, and 23.08's computes
    log(1 + e^x), which is inf past x = 88."""
    x, n = ctx.port(node, 0), ctx.name(node)
    if not ctx.b.target.has(UnaryOperation.Log):  # the check saw that only Tanh reads it
        ctx.report.decomposition("Softplus + Tanh", "tanh(softplus(x)) = (u^2 + 2u) / (u^2 + 2u + 2), "
                                 "u = exp(min(x, 20)), as Mish")
        u = exp(ctx, ctx.b.clamp(x, -np.inf, 20.0, f"{n}_cap"), f"{n}_exp")
        ctx.softplus_exp.add(u)
        return u
    ctx.report.decomposition("Softplus", "max(x, 0) - log(sigmoid(|x|))")
    sig = ctx.b.activation(ctx.b.activation(x, AF.Abs, f"{n}_abs"), AF.Sigmoid, f"{n}_sig")
    log = ctx.b.unary(sig, UnaryOperation.Log, f"{n}_log")
    return ctx.b.binary(L.Subtraction, ctx.b.activation(x, AF.ReLu, f"{n}_relu"), log, n)
