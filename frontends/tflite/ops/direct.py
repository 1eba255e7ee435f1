"""Operators that are one layer of a richer format: LOG and SIN (ElementwiseUnary of the 23.08
format), POW (its ElementwiseBinary Power), LOG_SOFTMAX (the 20.08 format's LogSoftmax layer).
Float only: CpuRef runs them in float, and LiteRT's quantized kernels use tables of their own."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.types import DataType, UnaryOperation

from . import REGISTRY
from .common import float_only


def _unary(op):
    def convert(ctx, o):
        return ctx.b.unary(ctx.port(o.inputs[0]), op, ctx.name(o))
    convert.__name__ = op.name.lower()
    return convert


REGISTRY.register("LOG", since=1, until=1, check=float_only, layers=("ElementwiseUnary",), needs="23.08",
                  notes="float only")(_unary(UnaryOperation.Log))
REGISTRY.register("SIN", since=1, until=1, check=float_only, layers=("ElementwiseUnary",), needs="23.08",
                  notes="float only")(_unary(UnaryOperation.Sin))


@REGISTRY.register("LOG_SOFTMAX", since=1, until=2, check=float_only, layers=("LogSoftmax",), needs="20.08",
                   notes="last axis; float only")
def log_softmax(ctx, op):
    return ctx.b.log_softmax(ctx.port(op.inputs[0]), -1, ctx.name(op))


def _pow_check(op, ctx):
    if any(ctx.dtype_of(i) not in (DataType.Float32, None) for i in op.inputs[:2]) or ctx.is_quant(op.outputs[0]):
        return "only a float32 power (LiteRT's int32 POW has no Arm NN layer that computes in integers)"
    return None


@REGISTRY.register("POW", since=1, until=1, inputs=2, check=_pow_check, layers=("ElementwiseBinary", "Constant", "Reshape"),
                   needs="23.08", notes="float32, broadcast: CpuRef's std::pow, as LiteRT's")
def pow_(ctx, op):
    name = ctx.name(op)
    x, e = (ctx.b.constant_layer(np.asarray(ctx.const(i), np.float32), f"{name}_in{k}") if ctx.is_const(i)
            else ctx.port(i) for k, i in enumerate(op.inputs[:2]))
    ctx.report.warn(f"{name}: a Power layer: a result past float32's range (inf) fails an assertion in Arm NN "
                    "23.08 builds with numeric-cast checks (release packages give inf)")
    return ctx.b.power(x, e, name)
