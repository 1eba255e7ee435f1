"""Quantized elementwise operators: QLinearAdd/Mul, QLinearLeakyRelu/Sigmoid and the QDQ
Add, Mul, Relu, Sigmoid, LeakyRelu and Clip (see qlinear.py)."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.graph import Port
from armnn_import.ir.types import ActivationFunction as AF
from armnn_import.ir.types import LayerType as L
from armnn_import.lowering import Unsupported

from ..quant import DEQUANTIZE_HINT, qdq
from ..registry import needs_const, register
from .common import binary, broadcast, varying_axis
from .qlinear import params as _params, qoperand as _qoperand, qport as _qport, saturate as _saturate


def _binary(ctx, node, ltype, a, b, yq) -> Port:
    """a (op) b for Add and Mul; one operand may be a constant (real values)."""
    name = ctx.name(node)
    if yq is None:
        return binary(ctx, ltype, a, b, name)
    out_shape = broadcast(ctx.lshape(a), ctx.lshape(b))
    if isinstance(a, Port) and isinstance(b, Port):
        return ctx.to_shape(ctx.b.binary(ltype, a, b, name, quant=yq), out_shape, f"{name}_shape")
    x, c = (a, b) if isinstance(a, Port) else (b, a)  # Add and Mul commute
    c = np.asarray(c, np.float32)
    if tuple(out_shape) != ctx.lshape(x):
        raise Unsupported("a constant operand that broadcasts the quantized input to a larger shape")
    flat = c.reshape(-1)
    if np.all(flat == flat[0]):
        v = float(flat[0])
        y = ctx.b.linear(x, 1.0, v, name, quant=yq) if ltype == L.Addition else ctx.b.linear(x, v, 0.0, name, quant=yq)
        return y
    axis = varying_axis(c, x.info.rank)
    if axis is None:
        raise Unsupported("a constant operand varying along more than one axis of a quantized tensor",
                          DEQUANTIZE_HINT)
    per = np.moveaxis(np.broadcast_to(c, x.info.shape), axis, 0).reshape(x.info.shape[axis], -1)[:, 0]
    if ltype == L.Addition:
        return ctx.b.batchnorm(x, np.ones_like(per), per, axis, name, quant=yq)
    return ctx.b.batchnorm(x, per, np.zeros_like(per), axis, name, quant=yq)


def _qlinear_binary(ltype):
    def convert(ctx, node):
        a, b = _qoperand(ctx, node, 0, 1, 2), _qoperand(ctx, node, 3, 4, 5)
        if ctx.quant.dequantize:
            return _saturate(ctx, node, _binary(ctx, node, ltype, a, b, None), 6, 7)
        return _binary(ctx, node, ltype, a, b, _params(ctx, node, 6, 7))
    return convert


def _qdq_binary(ltype):
    def convert(ctx, node):
        return _binary(ctx, node, ltype, ctx.val(node, 0), ctx.val(node, 1), ctx.quant.out_quant(node))
    return convert


for _op, _lt in (("Add", L.Addition), ("Mul", L.Multiplication)):
    register(f"QLinear{_op}", since=1, layers=(_lt.name, "Activation", "BatchNormalization"),
             check=needs_const(1, 2, 4, 5, 6, 7), notes="com.microsoft")(_qlinear_binary(_lt))
    qdq(_op, layers=(_lt.name,))(_qdq_binary(_lt))


def _alpha(ctx, node, fn) -> float:
    return float(ctx.attr(node, "alpha", 0.01)) if fn == AF.LeakyReLu else 0.0


def _activation(fn, keeps_range=False):
    """A one-layer activation computing into the output's quantization."""
    def convert(ctx, node):
        x = ctx.port(node, 0, dtypes=None)
        yq = ctx.quant.out_quant(node, keep=x if keeps_range else None)
        return ctx.b.activation(x, fn, ctx.name(node), a=_alpha(ctx, node, fn), quant=yq)
    return convert


qdq("Relu", layers=("Activation",))(_activation(AF.ReLu, keeps_range=True))
qdq("Sigmoid", layers=("Activation",))(_activation(AF.Sigmoid))
qdq("LeakyRelu", layers=("Activation",))(_activation(AF.LeakyReLu, keeps_range=True))


@qdq("Clip", layers=("Activation",))
def qdq_clip(ctx, node):
    x = ctx.port(node, 0, dtypes=None)
    if ctx.opset < 11:
        lo, hi = ctx.attr(node, "min", -np.inf), ctx.attr(node, "max", np.inf)
    else:
        lo = float(ctx.const(node, 1, "min").reshape(-1)[0]) if ctx.has(node, 1) else -np.inf
        hi = float(ctx.const(node, 2, "max").reshape(-1)[0]) if ctx.has(node, 2) else np.inf
    return ctx.b.clamp(x, lo, hi, ctx.name(node), quant=ctx.quant.out_quant(node, keep=x))


def _qlinear_activation(fn):
    def convert(ctx, node):
        x = _qport(ctx, node, 0, 1, 2)
        if ctx.quant.dequantize:
            return _saturate(ctx, node, ctx.b.activation(x, fn, ctx.name(node), a=_alpha(ctx, node, fn)), 3, 4)
        return ctx.b.activation(x, fn, ctx.name(node), a=_alpha(ctx, node, fn), quant=_params(ctx, node, 3, 4))
    return convert


register("QLinearLeakyRelu", since=1, layers=("Activation",), check=needs_const(1, 2, 3, 4),
         notes="com.microsoft")(_qlinear_activation(AF.LeakyReLu))
register("QLinearSigmoid", since=1, layers=("Activation",), check=needs_const(1, 2, 3, 4),
         notes="com.microsoft")(_qlinear_activation(AF.Sigmoid))
