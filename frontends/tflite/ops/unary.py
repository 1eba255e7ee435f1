"""Unary operators that are one layer of a richer format: LOG and SIN (ElementwiseUnary of the
23.08 format), LOG_SOFTMAX (the 20.08 format's LogSoftmax layer). Float only: CpuRef runs them
in float, and LiteRT's quantized kernels use lookup tables of their own."""
from __future__ import annotations

from armnn_import.ir.types import UnaryOperation

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
