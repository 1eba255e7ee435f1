"""Embedding lookups and attention on the richer formats: GATHER with run-time indices
(a Gather layer, the 20.08 format on), BATCH_MATMUL (BatchMatMul, 23.08), ARG_MAX/ARG_MIN
(ArgMinMax, 20.08). CAST of run-time tensors (Cast, 23.08) lives with the constant CAST in
shape.py."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.types import ArgMinMaxFunction, ConstTensor, DataType, LayerType, TensorInfo
from armnn_import.lowering import Unsupported

from . import REGISTRY


def gather_runtime(ctx, op, axis: int) -> None:
    """GATHER whose indices are computed at run time (Keras Embedding: a constant table and
    the model's int32 input): one Gather layer. The indices must lie in [0, dim), as TFLite
    requires: Arm NN 20.08 fails on a negative one and reads out of bounds past the end, 23.08
    fails past the end."""
    nb, name = ctx.b, ctx.name(op)
    xi, ii = op.inputs[:2]
    indices = ctx.port(ii)
    if ctx.is_const(xi):
        t = ctx.t(xi)
        if ctx.is_quant(op.outputs[0]):
            scale, offset = ctx.qparams(op.outputs[0])
            q = np.clip(np.round(ctx.const(xi).astype(np.float64) / scale) + offset, 0, 255).astype(np.uint8)
            table = ConstTensor(q, TensorInfo(q.shape, DataType.QuantisedAsymm8, scale, offset))
        elif ctx.dtype_of(op.outputs[0]) == DataType.Float32:
            table = np.asarray(ctx.const(xi), np.float32)
        elif ctx.dtype_of(op.outputs[0]) == DataType.Signed32 and t.data is not None:
            table = np.asarray(t.data, np.int32)
        else:
            raise Unsupported(f"gathering from the constant {t.name!r} of type {t.type_name}")
        params = nb.constant_layer(table, f"{name}_table")
    else:
        params = ctx.port(xi)
    axis %= params.info.rank
    ctx.report.warn(f"{name}: run-time GATHER indices must lie in [0, {params.info.shape[axis]}) "
                    "(Arm NN 20.08 reads out of bounds past the end, 23.08 fails)")
    ctx.set(op, 0, nb.gather(params, indices, axis, name))


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
    ctx.set(op, 0, y)


def _check_arg(op, ctx):
    if not ctx.is_const(op.inputs[1]) or ctx.ints(op.inputs[1]).size != 1:
        return "the axis must be one constant"
    if ctx.dtype_of(op.outputs[0]) != DataType.Signed32:
        return "int64 output: Arm NN's ArgMinMax gives int32 (convert with output_type=tf.int32)"
    return None


def _arg(function):
    def convert(ctx, op):
        x = ctx.port(op.inputs[0])
        axis = int(ctx.ints(op.inputs[1]).reshape(-1)[0])
        if not -x.info.rank <= axis < x.info.rank:
            raise Unsupported(f"axis {axis} out of range for rank {x.info.rank}")
        ctx.set(op, 0, ctx.b.arg_min_max(x, axis, function, ctx.name(op)))
    convert.__name__ = f"arg_{function.name.lower()}"
    return convert


for _op, _fn in (("ARG_MAX", ArgMinMaxFunction.Max), ("ARG_MIN", ArgMinMaxFunction.Min)):
    REGISTRY.register(_op, since=1, until=3, types="free", check=_check_arg, layers=("ArgMinMax",), needs="20.08",
                      notes="int32 output; ties give the first index")(_arg(_fn))
