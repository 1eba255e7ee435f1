"""Boolean operators and REVERSE_V2: layers of the 23.08 format (LogicalBinary, ElementwiseUnary
LogicalNot, ReverseV2), so the Boolean ones need --target 23.08; REVERSE_V2 is a constant-index
selection before it."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.types import LayerType, LogicalBinaryOperation, UnaryOperation
from armnn_import.lowering import Unsupported
from armnn_import.lowering.builder import through_float_exactly
from armnn_import.lowering.qround import relabel

from . import REGISTRY
from .gather import gather_const


def _bool_value(ctx, i):
    return np.asarray(ctx.folded[i] if i in ctx.folded else ctx.m.tensors[i].data).astype(bool)


def _logical(fn, op_kind):
    def convert(ctx, op):
        ins = list(op.inputs[:2])
        if all(ctx.is_const(i) for i in ins):
            a, b = (_bool_value(ctx, i) for i in ins)
            return fn(a, b)
        if any(ctx.is_const(i) for i in ins):
            raise Unsupported("a constant Boolean operand (Arm NN's CpuRef has no Boolean Constant layer)",
                              "fold the constant into the model")
        y = ctx.b.logical(op_kind, ctx.port(ins[0]), ctx.port(ins[1]), ctx.name(op))
        return y
    convert.__name__ = op_kind.name.lower()
    return convert


REGISTRY.register("LOGICAL_AND", since=1, until=1, layers=("LogicalBinary",), needs="23.08")(
    _logical(np.logical_and, LogicalBinaryOperation.LogicalAnd))
REGISTRY.register("LOGICAL_OR", since=1, until=1, layers=("LogicalBinary",), needs="23.08")(
    _logical(np.logical_or, LogicalBinaryOperation.LogicalOr))


@REGISTRY.register("LOGICAL_NOT", since=1, until=1, layers=("ElementwiseUnary",), needs="23.08")
def logical_not(ctx, op):
    if ctx.is_const(op.inputs[0]):
        return np.logical_not(_bool_value(ctx, op.inputs[0]))
    return ctx.b.unary(ctx.port(op.inputs[0]), UnaryOperation.LogicalNot, ctx.name(op))


def _check_reverse(op, ctx):
    return None if ctx.is_const(op.inputs[1]) else "the axes must be a constant"


@REGISTRY.register("REVERSE_V2", since=1, until=3, check=_check_reverse,
                   layers=("ReverseV2", "Constant", "StridedSlice", "Merger", "FullyConnected", "Gather",
                           "Permute", "Reshape"),
                   notes="one ReverseV2 from the 23.08 format on (the axes a Signed32 Constant layer); "
                         "before, a constant-index selection per axis (StridedSlices joined by a Merger)")
def reverse_v2(ctx, op):
    x = ctx.port(op.inputs[0])
    rank, name = x.info.rank, ctx.name(op)
    axes = [int(a) for a in ctx.ints(op.inputs[1]).reshape(-1)]
    if any(not -rank <= a < rank for a in axes):
        raise Unsupported(f"axes {axes} out of range for rank {rank}")
    if ctx.b.g.target.has(LayerType.ReverseV2):
        if rank > 4:
            raise Unsupported(f"a {rank}-D input (Arm NN's ReverseV2 takes at most 4 dimensions)")
        if not through_float_exactly(x.info):
            raise Unsupported(f"a {x.info.dtype.name} input (Arm NN 23.08's ReverseV2 goes through float: "
                              "only float and quantized values are copied exactly)")
        y = ctx.b.reverse(x, axes, name)
    else:  # (Keras 3's Bidirectional layers reverse the backward sequence)
        y = x
        for a in sorted({a % rank for a in axes}):
            y = gather_const(ctx, y, a, np.arange(x.info.shape[a])[::-1], f"{name}_axis{a}")
        ctx.report.decomposition("REVERSE_V2", "the reversed indices selected per axis (StridedSlices, a Merger)")
    q = ctx.out_quant(op)
    # LiteRT's REVERSE_V2 copies the bytes whatever the output's quantization (Keras 3's
    # Bidirectional int8 gives it another one): the reversed bytes read with the output's, not
    # a requantization
    return y if q is None else relabel(ctx.b, y, q, f"{name}_bytes")
