"""Attention on the richer formats: BATCH_MATMUL (BatchMatMul, 23.08), ARG_MAX/ARG_MIN
(ArgMinMax, 20.08), TOPK_V2 (ranks counted pairwise, 20.08: lowering/topk.py). GATHER with run-time indices (embedding lookups: a Gather layer, the 20.08
format on) is gather.py; CAST of run-time tensors (Cast, 23.08) lives with the constant CAST in
shape.py."""
from __future__ import annotations

from armnn_import.ir.types import ArgMinMaxFunction, DataType
from armnn_import.lowering import Unsupported, topk

from . import REGISTRY


def _check_batch_matmul(op, ctx):
    if any(ctx.is_const(i) for i in op.inputs[:2]):
        return "a constant operand (the converter writes FULLY_CONNECTED for constant weights)"
    if any(ctx.dtype_of(i) != DataType.Float32 for i in op.inputs[:2]):
        return "quantized BATCH_MATMUL: CpuRef rounds its result differently from TFLite's kernel"
    if len(ctx.shape(op.inputs[0])) < 2 or len(ctx.shape(op.inputs[1])) < 2:
        return "operands of rank < 2"
    return None


@REGISTRY.register("BATCH_MATMUL", since=1, until=4, check=_check_batch_matmul, layers=("BatchMatMul",),
                   needs="23.08", notes="float32, two run-time operands")
def batch_matmul(ctx, op):
    a, b = (ctx.port(i) for i in op.inputs[:2])
    y = ctx.b.batch_matmul(a, b, ctx.name(op), transpose_a=bool(op.options.get("adj_x", False)),
                            transpose_b=bool(op.options.get("adj_y", False)))
    return y


def _check_arg(op, ctx):
    if not ctx.is_const(op.inputs[1]) or ctx.ints(op.inputs[1]).size != 1:
        return "the axis must be one constant"
    if ctx.dtype_of(op.outputs[0]) != DataType.Signed32:
        return "an output that is neither int32 nor int64"
    return None


def _arg(function):
    def convert(ctx, op):
        x = ctx.port(op.inputs[0])
        axis = int(ctx.ints(op.inputs[1]).reshape(-1)[0])
        if not -x.info.rank <= axis < x.info.rank:
            raise Unsupported(f"axis {axis} out of range for rank {x.info.rank}")
        return ctx.b.arg_min_max(x, axis, function, ctx.name(op))
    convert.__name__ = f"arg_{function.name.lower()}"
    return convert


for _op, _fn in (("ARG_MAX", ArgMinMaxFunction.Max), ("ARG_MIN", ArgMinMaxFunction.Min)):
    REGISTRY.register(_op, since=1, until=3, types="free", check=_check_arg, layers=("ArgMinMax",), needs="20.08",
                      notes="int32 output (int64 indices as Signed32); ties give the first index")(_arg(_fn))


def _check_top_k(op, ctx):
    if not ctx.is_const(op.inputs[1]) or ctx.ints(op.inputs[1]).size != 1:
        return "k must be one constant"
    if ctx.dtype_of(op.outputs[1]) != DataType.Signed32:
        return "int64 indices (TOPK_V2 here writes int32 ones)"
    if ctx.dtype_of(op.outputs[0]) != ctx.dtype_of(op.inputs[0]):
        return "values of another type than the input"
    shape = ctx.shape(op.inputs[0])
    return topk.fits(tuple(shape), int(ctx.ints(op.inputs[1]).reshape(-1)[0])) if shape else "a scalar input"


@REGISTRY.register("TOPK_V2", since=1, until=3, inputs=2, multi_output=True, types="free", check=_check_top_k,
                   layers=("Subtraction", "Floor", "Activation", "Multiplication", "Addition", "Constant",
                           "FullyConnected", "ArgMinMax", "Gather", "Reshape", "Dequantize", "Cast", "Maximum",
                           "Minimum", "ElementwiseUnary"), needs="20.08",
                   notes="the k largest along the last axis, sorted, ties by the lower index: ranks counted "
                         "pairwise (float, quantized; int32 from 23.08)")
def top_k_v2(ctx, op):
    x = ctx.port(op.inputs[0])
    return list(topk.top_k(ctx.b, x, -1, int(ctx.ints(op.inputs[1]).reshape(-1)[0]), True, ctx.name(op)))
