"""Elementwise arithmetic, comparisons, activations and softmax."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.types import ActivationFunction as AF
from armnn_import.ir.types import ConstTensor, DataType, TensorInfo
from armnn_import.ir.types import LayerType as L
from armnn_import.ir.types import UnaryOperation
from armnn_import.lowering import Unsupported
from armnn_import.lowering.compare import COMPARE, safe_constant

from .. import grid16 as G
from .. import quant as Q
from .. import types as T
from . import REGISTRY
from .common import float_only as _float_only
from .common import fold_size as _fold_size
from .common import quant_constant

NUMPY = {L.Addition: np.add, L.Subtraction: np.subtract, L.Multiplication: np.multiply,
         L.Division: np.divide, L.Maximum: np.maximum, L.Minimum: np.minimum,
         L.Equal: np.equal, L.Greater: np.greater}


def _per_channel(c: np.ndarray, shape) -> np.ndarray | None:
    """c's values per channel (last axis) if it varies only along it and does not broadcast x."""
    if c.ndim > len(shape) or np.broadcast_shapes(c.shape, shape) != tuple(shape):
        return None
    if any(n != 1 for n in c.shape[:-1]):
        return None
    return np.broadcast_to(c.reshape(-1), (shape[-1],)).astype(np.float32)


def _shared_constant(ctx, ci, rank):
    """The quantized constant tensor ci as one Constant layer (of rank `rank`) that all its
    readers share: its own bytes and quantization, so the runtime's dequantized values are the
    ones a BatchNormalization would hold as float32 ((q - zero point) * scale, each exact)."""
    t = ctx.t(ci)
    shape = (1,) * (rank - len(t.shape)) + tuple(t.shape)
    key = (ci, shape)
    if key not in ctx.shared:
        scale, offset = ctx.qparams(ci)
        data = t.data.astype(np.int16) + (128 if t.type == T.INT8 else 0)  # (uint8 levels, as qparams)
        ct = ConstTensor(data.astype(np.uint8).reshape(shape), TensorInfo(shape, DataType.QuantisedAsymm8, scale, offset))
        ctx.shared[key] = ctx.b.constant_layer(ct, f"{t.name}_shared")
    return ctx.shared[key]


def _quant_const(ctx, ltype, x, c, name, const_first, q, cquant=None, ci=None):
    """x (op) c for a quantized x: scalars become Linear/BoundedReLu, per-channel
    constants a BatchNormalization, computing straight into the output quantization; a
    per-channel constant that 2+ ADDs read is one shared Constant from the 20.08 format on
    (a BatchNormalization each is one layer a reader, Addition + Constant one and the Constant)."""
    nb = ctx.b
    if ltype == L.Addition and cquant is not None and ctx.target.at_least("20.08") and len(ctx.consumers[ci]) >= 2 \
            and _per_channel(c, x.info.shape) is not None and not np.all(c == c.reshape(-1)[0]):
        return nb.binary(ltype, x, _shared_constant(ctx, ci, x.info.rank), name, quant=q)
    if np.broadcast_shapes(c.shape, x.info.shape) != x.info.shape:
        raise Unsupported("a constant operand that broadcasts the input to a larger shape")
    flat = c.reshape(-1)
    if flat.size and np.all(flat == flat[0]):
        v = float(flat[0])
        if ltype == L.Addition:
            return nb.linear(x, 1.0, v, name, quant=q)
        if ltype == L.Subtraction:
            return nb.linear(x, -1.0, v, name, quant=q) if const_first else nb.linear(x, 1.0, -v, name, quant=q)
        if ltype == L.Multiplication:
            return nb.linear(x, v, 0.0, name, quant=q)
        if ltype == L.Division and not const_first and v != 0:
            return nb.linear(x, 1.0 / v, 0.0, name, quant=q)
        if ltype == L.Maximum:
            return nb.clamp(x, v, np.inf, name, quant=q)
        if ltype == L.Minimum:
            return nb.clamp(x, -np.inf, v, name, quant=q)
        if ltype in (L.Equal, L.Greater):
            level = v / x.info.scale + x.info.offset
            if level == round(level) and 0 <= level <= 255:  # the constant is exactly representable
                k = nb.fill_like(x, v, f"{name}_const")
                return nb.binary(ltype, k, x, name) if const_first else nb.binary(ltype, x, k, name)
    per = _per_channel(c, x.info.shape)
    if per is not None and ltype in (L.Addition, L.Subtraction, L.Multiplication):
        one, zero = np.ones_like(per), np.zeros_like(per)
        axis = x.info.rank - 1
        if ltype == L.Multiplication:
            return nb.batchnorm(x, per, zero, axis, name, quant=q)
        if ltype == L.Addition:
            return nb.batchnorm(x, one, per, axis, name, quant=q)
        return nb.batchnorm(x, -one if const_first else one, per if const_first else -per, axis, name, quant=q)
    k = quant_constant(ctx, x, c, cquant, f"{name}_const")
    return nb.binary(ltype, k, x, name, quant=q) if const_first else nb.binary(ltype, x, k, name, quant=q)


def fold_binary(ctx, op, fn, a, b):
    """Output 0 of op as fn of two constants (returned: it is folded), refused before a
    broadcast gets too large."""
    x, y = ctx.const(a), ctx.const(b)
    _fold_size(np.broadcast_shapes(x.shape, y.shape), op.op)
    return fn(x, y)


def binary_op(ctx, op, ltype, swap=False):
    a, b = op.inputs[:2]
    if swap:
        a, b = b, a
    name, q, nb = ctx.name(op), ctx.out_quant(op), ctx.b
    ca, cb = ctx.is_const(a), ctx.is_const(b)
    if ca and cb:
        return fold_binary(ctx, op, NUMPY[ltype], a, b)
    if not (ca or cb):
        y = nb.binary(ltype, ctx.port(a), ctx.port(b), name, quant=q)
    else:
        x, c = (ctx.port(b), ctx.const(a)) if ca else (ctx.port(a), ctx.const(b))
        if x.info.dtype.is_quantized:
            ci = a if ca else b
            cq = ctx.qparams(ci) if ctx.t(ci).quant is not None and ctx.t(ci).quant.per_tensor \
                and ctx.t(ci).type in (T.UINT8, T.INT8) and ci not in ctx.folded else None
            y = _quant_const(ctx, ltype, x, c, name, ca, q, cq, ci)
        elif G.varying_constant(ctx, ltype, a if ca else b, c):
            cp = G.levels_constant(ctx, a if ca else b, x.info.rank)
            y = nb.binary(ltype, cp, x, name) if ca else nb.binary(ltype, x, cp, name)
        else:
            y = nb.binary_const(ltype, x, c, name, const_first=ca, channel_axis=x.info.rank - 1)
    return ctx.fused(y, op.options.get("fused_activation_function", 0), name, q)


def _check_binary(op, ctx):
    if op.op == "DIV" and any(ctx.t(i).type == T.INT32 and not ctx.is_const(i) for i in op.inputs[:2]):
        return "integer division (Arm NN divides in float and truncates differently)"
    return None


# constants folded into Linear/BoundedReLu Activations or a BatchNormalization; a quantized one made by
# a FullyConnected (StridedSlice, Reshape); a quantized per-channel one that 2+ ADDs share, a Constant;
# a varying int16 one (16x8 mode), Dequantize(Constant): grid16.levels_constant
_BROADCAST = ("Activation", "BatchNormalization", "FullyConnected", "Reshape", "StridedSlice")
for _op, (_lt, _until) in {"ADD": (L.Addition, 5), "SUB": (L.Subtraction, 5), "MUL": (L.Multiplication, 7),
                           "DIV": (L.Division, 2), "MAXIMUM": (L.Maximum, 4),
                           "MINIMUM": (L.Minimum, 4)}.items():
    REGISTRY.register(_op, since=1, until=_until, inputs=2, foldable=True, types="all", check=_check_binary,
                      layers=(_lt.name,) + _BROADCAST + (("Constant", "Dequantize") if _op in ("ADD", "SUB", "MUL") else ()),
                      notes="broadcasting; constants folded into Linear/BoundedReLu/BatchNormalization")(
        lambda ctx, op, _lt=_lt: binary_op(ctx, op, _lt))

for _op, (_lt, _swap, _until) in {"EQUAL": (L.Equal, False, 4), "GREATER": (L.Greater, False, 2),
                                  "LESS": (L.Greater, True, 2)}.items():
    REGISTRY.register(_op, since=1, until=_until, inputs=2, foldable=True, types="compare",
                      layers=(_lt.name, "Activation"),  # (a scalar constant: NetBuilder.fill_like)
                      notes="LESS(a, b) is Greater(b, a)" if _swap else "")(
        lambda ctx, op, _lt=_lt, _swap=_swap: binary_op(ctx, op, _lt, _swap))


def _compare_const(ctx, x, c, name):
    """The constant operand of a comparison as a Port like x (exact: see lowering.compare)."""
    c = c.reshape((1,) * (x.info.rank - c.ndim) + c.shape) if c.ndim < x.info.rank else c
    if x.info.dtype == DataType.Float32:
        return safe_constant(ctx.b, x, c, name)
    if not x.info.dtype.is_quantized:
        raise Unsupported(f"a {x.info.dtype.name} comparison with a constant operand "
                          "(this format has integer constants only as Constant layers)")
    levels = c.astype(np.float64) / x.info.scale + x.info.offset  # c is float32 (level - zp) * scale
    near = np.round(levels)
    if not (np.all(np.abs(levels - near) < 1e-3) and near.min() >= 0 and near.max() <= 255):
        raise Unsupported("a quantized comparison with a constant that is not on the input's quantization grid")
    return quant_constant(ctx, x, (near - x.info.offset) * x.info.scale, (x.info.scale, x.info.offset), name)


def compare_op(ctx, op, kind):
    """GREATER_EQUAL, LESS_EQUAL, NOT_EQUAL: the NaN-exact recipes of lowering.compare."""
    a, b = op.inputs[:2]
    name = ctx.name(op)
    if ctx.is_const(a) and ctx.is_const(b):
        return fold_binary(ctx, op, {"ge": np.greater_equal, "le": np.less_equal, "ne": np.not_equal}[kind], a, b)
    pa = None if ctx.is_const(a) else ctx.port(a)
    pb = None if ctx.is_const(b) else ctx.port(b)
    pa = pa if pa is not None else _compare_const(ctx, pb, ctx.const(a), f"{name}_a")
    pb = pb if pb is not None else _compare_const(ctx, pa, ctx.const(b), f"{name}_b")
    return COMPARE[kind](ctx.b, pa, pb, name)


# versions past 1 add int8 and int16 operands, whose tensors the type checks accept or refuse
for _op, (_kind, _until, _layers) in {"GREATER_EQUAL": ("ge", 3, ("Maximum", "Equal")),
                                      "LESS_EQUAL": ("le", 3, ("Minimum", "Equal")),
                                      "NOT_EQUAL": ("ne", 3, ("Maximum", "Minimum", "Activation", "Addition",
                                                              "Greater"))}.items():
    # the richer formats' Comparison; NOT_EQUAL's NaN constants are quantized by a FullyConnected
    REGISTRY.register(_op, since=1, until=_until, inputs=2, foldable=True, types="compare",
                      layers=_layers + ("Comparison",) + (
                          ("FullyConnected", "Reshape", "StridedSlice") if _kind == "ne" else ()),
                      notes={"ge": "Equal(Maximum(b, a), a)", "le": "Equal(Minimum(b, a), a)",
                             "ne": "Greater(max, min) with NaN sent to +-inf (NaN-exact)"}[_kind])(
        lambda ctx, op, _kind=_kind: compare_op(ctx, op, _kind))


@REGISTRY.register("SQUARED_DIFFERENCE", since=1, until=2, inputs=2, types="all",
                   check=lambda op, ctx: _float_only(op, ctx),
                   layers=("Subtraction", "Activation"))
def squared_difference(ctx, op):
    a, b = op.inputs[:2]
    name, nb = ctx.name(op), ctx.b
    if ctx.is_const(a) and ctx.is_const(b):
        return fold_binary(ctx, op, lambda x, y: np.square(x - y), a, b)
    if ctx.is_const(a) or ctx.is_const(b):
        x, c = (ctx.port(b), ctx.const(a)) if ctx.is_const(a) else (ctx.port(a), ctx.const(b))
        d = nb.binary_const(L.Subtraction, x, c, f"{name}_diff", const_first=ctx.is_const(a),
                            channel_axis=x.info.rank - 1)
    else:
        d = nb.binary(L.Subtraction, ctx.port(a), ctx.port(b), f"{name}_diff")
    return nb.activation(d, AF.Square, name)


@REGISTRY.register("FLOOR_DIV", since=1, until=3, inputs=2, types="all",
                   check=lambda op, ctx: _float_only(op, ctx) or (
    "integer floor division (Arm NN divides in float)" if ctx.t(op.outputs[0]).type != T.FLOAT32 else None),
    layers=("Division", "Floor"))
def floor_div(ctx, op):
    a, b = op.inputs[:2]
    if ctx.is_const(a) and ctx.is_const(b):
        return fold_binary(ctx, op, lambda x, y: np.floor(x / y), a, b)
    name = ctx.name(op)
    if ctx.is_const(b):
        q = ctx.b.binary_const(L.Division, ctx.port(a), ctx.const(b), f"{name}_div")
    elif ctx.is_const(a):
        q = ctx.b.binary_const(L.Division, ctx.port(b), ctx.const(a), f"{name}_div", const_first=True)
    else:
        q = ctx.b.binary(L.Division, ctx.port(a), ctx.port(b), f"{name}_div")
    return ctx.b.add(L.Floor, name, [q])


@REGISTRY.register("ADD_N", since=1, until=1, types="all", layers=("Addition",))
def add_n(ctx, op):
    y = ctx.port(op.inputs[0])
    for k, i in enumerate(op.inputs[1:], 1):
        name = ctx.name(op) if k == len(op.inputs) - 1 else f"{ctx.name(op)}_{k}"
        y = ctx.b.binary_const(L.Addition, y, ctx.const(i), name) if ctx.is_const(i) else \
            ctx.b.binary(L.Addition, y, ctx.port(i), name)
    return y


# -- unary -------------------------------------------------------------------------------------
def _activation(fn, a=0.0, b=0.0):
    def convert(ctx, op):
        x = ctx.port(op.inputs[0])
        return ctx.b.activation(x, fn, ctx.name(op), a, b, quant=ctx.out_quant(op))
    return convert


def _clamp(lo, hi):
    def convert(ctx, op):
        x = ctx.port(op.inputs[0])
        return ctx.b.clamp(x, lo, hi, ctx.name(op), quant=ctx.out_quant(op))
    return convert


for _op, _fn, _until in (("ABS", AF.Abs, 5), ("SQRT", AF.Sqrt, 2), ("SQUARE", AF.Square, 1),
                         ("LOGISTIC", AF.Sigmoid, 3)):
    REGISTRY.register(_op, since=1, until=_until, layers=("Activation",))(_activation(_fn))
REGISTRY.register("TANH", since=1, until=3, layers=("Activation",))(_activation(AF.TanH, 1.0, 1.0))
for _op, _lo, _hi, _until in (("RELU", 0.0, np.inf, 3), ("RELU6", 0.0, 6.0, 3), ("RELU_N1_TO_1", -1.0, 1.0, 1),
                              ("RELU_0_TO_1", 0.0, 1.0, 1)):
    REGISTRY.register(_op, since=1, until=_until, layers=("Activation",))(_clamp(_lo, _hi))


@REGISTRY.register("NEG", since=1, until=2, layers=("Activation",), notes="Linear(a=-1)")
def neg(ctx, op):
    x = ctx.port(op.inputs[0])
    return ctx.b.linear(x, -1.0, 0.0, ctx.name(op), quant=ctx.out_quant(op))


@REGISTRY.register("FLOOR", since=1, until=1, check=_float_only, layers=("Floor",))
def floor(ctx, op):
    return ctx.b.add(L.Floor, ctx.name(op), [ctx.port(op.inputs[0])])


@REGISTRY.register("ROUND", since=1, until=1, check=_float_only,
                   layers=("Floor", "Subtraction", "Activation", "Addition", "Multiplication"),
                   notes="half to even, from Floor (lowering/round.py)")
def round_(ctx, op):
    from armnn_import.lowering.round import round_half_even
    return round_half_even(ctx.b, ctx.port(op.inputs[0]), ctx.name(op))


@REGISTRY.register("CEIL", since=1, until=1, check=_float_only,
                   layers=("Activation", "Floor", "ElementwiseUnary"),
                   notes="before --target 23.08: -floor(-x)")
def ceil(ctx, op):
    nb, name = ctx.b, ctx.name(op)
    if nb.g.target.has(UnaryOperation.Ceil):  # one exact layer
        return nb.unary(ctx.port(op.inputs[0]), UnaryOperation.Ceil, name)
    y = nb.add(L.Floor, f"{name}_floor", [nb.linear(ctx.port(op.inputs[0]), -1.0, 0.0, f"{name}_negate")])
    return nb.linear(y, -1.0, 0.0, name)


@REGISTRY.register("ZEROS_LIKE", since=1, until=1, layers=("Activation",), notes="Linear(a=0, b=0)")
def zeros_like(ctx, op):
    if ctx.t(op.outputs[0]).type not in (T.FLOAT32, T.UINT8, T.INT8):
        raise Unsupported("integer zeros (Arm NN computes activations in float)")
    return ctx.b.linear(ctx.port(op.inputs[0]), 0.0, 0.0, ctx.name(op), quant=ctx.out_quant(op))


@REGISTRY.register("RSQRT", since=1, until=3, layers=("Rsqrt",))
def rsqrt(ctx, op):
    return ctx.b.add(L.Rsqrt, ctx.name(op), [ctx.port(op.inputs[0])], quant=ctx.out_quant(op))


@REGISTRY.register("LEAKY_RELU", since=1, until=2, layers=("Activation",))
def leaky_relu(ctx, op):
    x = ctx.port(op.inputs[0])
    return ctx.b.activation(x, AF.LeakyReLu, ctx.name(op), float(op.options["alpha"]), quant=ctx.out_quant(op))


@REGISTRY.register("HARD_SWISH", since=1, until=1, layers=("Activation", "Multiplication"),
                   notes="x * clamp(x/6 + 1/2, 0, 1)")
def hard_swish(ctx, op):
    nb, name, q = ctx.b, ctx.name(op), ctx.out_quant(op)
    x = ctx.port(op.inputs[0])
    if nb.g.target.has(AF.HardSwish):  # TFLite's own formula, one layer and (quantized) one rounding
        return nb.activation(x, AF.HardSwish, name, quant=q)
    if q is None:
        h = nb.clamp(nb.linear(x, 1.0 / 6.0, 0.5, f"{name}_scale"), 0.0, 1.0, f"{name}_gate")
    else:  # a [0, 1] output quantization saturates exactly where the clamp would
        h = nb.linear(x, 1.0 / 6.0, 0.5, f"{name}_gate", quant=(1.0 / 255.0, 0))
    return nb.binary(L.Multiplication, x, h, name, quant=q)


@REGISTRY.register("PRELU", since=1, until=1, inputs=2, types="all",
                   layers=("Activation", "BatchNormalization", "Addition", "Prelu", "Constant", "Reshape"),
                   notes="LeakyReLu for a scalar alpha; else from --target 20.08 one Prelu layer (8-bit: the model's alpha), "
                         "before it ReLu(x) + alpha * min(x, 0)")
def prelu(ctx, op):
    nb, name, q = ctx.b, ctx.name(op), ctx.out_quant(op)
    x = ctx.port(op.inputs[0])
    ai = op.inputs[1]
    if ctx.is_const(ai):
        alpha = ctx.const(ai)
        flat = alpha.reshape(-1)
        if flat.size and np.all(flat == flat[0]) and \
                np.broadcast_shapes(alpha.shape, x.info.shape) == x.info.shape:
            return nb.activation(x, AF.LeakyReLu, name, float(flat[0]), quant=q)
    if nb.target.has(L.Prelu) and not x.info.dtype.is_quantized and (
            ctx.is_const(ai) or ctx.port(ai).info.dtype == x.info.dtype):
        # x < 0 ? alpha * x : x, TFLite's own formula (x >= 0 ? x : alpha * x)
        return nb.prelu(x, ctx.const(ai) if ctx.is_const(ai) else ctx.port(ai), name)
    if nb.target.has(L.Prelu) and x.info.dtype.is_quantized and ctx.is_quant(ai) and ctx.is_const(ai) \
            and ctx.m.tensors[ai].type == ctx.m.tensors[op.inputs[0]].type:
        # the 8-bit alpha as it is (uint8, or int8 + 128 as every 8-bit tensor here: lowering/int8.py)
        t, (scale, zp) = ctx.m.tensors[ai], ctx.qparams(ai)
        raw = t.data.astype(np.int16) + (128 if zp != int(t.quant.zero_point[0]) else 0)
        return nb.prelu(x, ConstTensor.quantized(raw.reshape(t.shape), scale, zp), name, quant=q)
    pos = nb.clamp(x, 0.0, np.inf, f"{name}_pos")
    negp = nb.clamp(x, -np.inf, 0.0, f"{name}_neg")
    if not ctx.is_const(ai):
        if x.info.dtype.is_quantized:
            raise Unsupported("quantized PRELU with a computed alpha")
        scaled = nb.binary(L.Multiplication, negp, ctx.port(ai), f"{name}_scaled")
    elif x.info.dtype.is_quantized:
        per = _per_channel(Q.finite(alpha, f"alpha {ctx.t(ai).name!r}"), x.info.shape)
        if per is None:
            raise Unsupported("quantized PRELU whose alpha varies along more than the channel axis")
        lo = Q.real_range(x.info.scale, x.info.offset)[0]
        ends = (float(per.min()) * lo, float(per.max()) * lo)  # alpha * (most negative x)
        mid = Q.covering_quant(min(ends), max(ends))
        scaled = nb.batchnorm(negp, per, np.zeros_like(per), x.info.rank - 1, f"{name}_scaled", quant=mid)
    else:
        scaled = nb.binary_const(L.Multiplication, negp, alpha, f"{name}_scaled", channel_axis=x.info.rank - 1)
    return nb.binary(L.Addition, pos, scaled, name, quant=q)


@REGISTRY.register("EXP", since=1, until=2, check=_float_only, layers=("Activation", "Division", "ElementwiseUnary"),
                   notes="from --target 23.08 one ElementwiseUnary Exp, before sigmoid(x) / sigmoid(-x)")
def exp(ctx, op):
    return ctx.b.exp(ctx.port(op.inputs[0]), ctx.name(op))


@REGISTRY.register("ELU", since=1, until=1, check=_float_only,
                   layers=("Activation", "Division", "Addition"),
                   notes="relu(x) + tanh(m/2) / sigmoid(-m), m = min(x, 0)")
def elu(ctx, op):
    # e^m - 1 = tanh(m/2) * (1 + e^m) = tanh(m/2) / sigmoid(-m): no cancellation near 0
    nb, name = ctx.b, ctx.name(op)
    x = ctx.port(op.inputs[0])
    m = nb.clamp(x, -np.inf, 0.0, f"{name}_neg")
    t = nb.activation(m, AF.TanH, f"{name}_tanh", 1.0, 0.5)
    s = nb.activation(nb.linear(m, -1.0, 0.0, f"{name}_negate"), AF.Sigmoid, f"{name}_sig")
    em1 = nb.binary(L.Division, t, s, f"{name}_expm1")
    ctx.report.decomposition("ELU", "ReLu(x) + tanh(m/2) / sigmoid(-m) with m = min(x, 0)")
    return nb.binary(L.Addition, nb.clamp(x, 0.0, np.inf, f"{name}_pos"), em1, name)


@REGISTRY.register("SOFTMAX", since=1, until=3, layers=("Softmax",), notes="last axis, beta")
def softmax(ctx, op):
    x = ctx.port(op.inputs[0])
    return ctx.b.softmax(x, -1, float(op.options.get("beta", 1.0)), ctx.name(op), quant=ctx.out_quant(op))
