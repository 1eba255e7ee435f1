"""GATHER: by constant indices (StridedSlices, a Gather layer or a selection matrix:
armnn_import.lowering.gather), by indices computed at run time (an embedding lookup: one Gather
layer, the 20.08 format on), or of constants (evaluated at conversion time)."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.types import ConstTensor, DataType, LayerType, TensorInfo
from armnn_import.lowering import Unsupported
from armnn_import.lowering.gather import gather_const as lowering_gather_const
from armnn_import.lowering.gather_nd import gather_nd_const, gather_nd_runtime
from armnn_import.lowering.qround import relabel

from . import REGISTRY
from .common import all_const as _all_const
from .common import axis_index as _axis
from .common import fold_size as _fold_size
from .common import raw_value as _value
from .common import scalar_shape as _scalar_shape

MAX_SLICES = 32  # above this many pieces a constant gather becomes a FullyConnected selection


def gather_const(ctx, x, axis: int, idx: np.ndarray, name: str):
    """x.take(idx, axis) for constant 1-D indices, exactly (armnn_import.lowering.gather): at
    most MAX_SLICES StridedSlices, else a Gather layer (20.08 on) or a selection matrix."""
    return lowering_gather_const(ctx.b, x, axis, idx, name, max_slices=MAX_SLICES)


def _check_gather(op, ctx):
    if op.options.get("batch_dims", 0):
        return "batch_dims is not supported"
    if not ctx.is_const(op.inputs[1]) and not ctx.b.g.target.at_least("20.08"):
        # Arm NN 20.08's deserializer reads a Gather descriptor this schema's GatherLayer lacks
        # (null pointer): a Gather layer crashes it.
        return ("indices computed at run time need a Gather layer, which Arm NN 20.08 cannot "
                "read from this format", "convert with --target 20.08 (read by Arm NN 20.08 and later)")
    if not ctx.is_const(op.inputs[1]) and ctx.dtype_of(op.inputs[1]) != DataType.Signed32:
        return "run-time indices must be int32 (Arm NN's Gather takes Signed32 indices)"
    return None


@REGISTRY.register("GATHER", since=1, until=7, inputs=2, foldable=True, check=_check_gather,
                   layers=("StridedSlice", "Merger", "FullyConnected", "Permute", "Gather", "Reshape", "Constant",
                           "Addition", "Concat"),
                   notes="run-time indices (embedding lookups) from --target 20.08 on, in [0, dim)")
def gather(ctx, op):
    nb, name = ctx.b, ctx.name(op)
    xi, ii = op.inputs[:2]
    axis = op.options.get("axis", 0)
    if _all_const(ctx, op):
        v, idx = np.asarray(_value(ctx, xi)), ctx.ints(ii)
        axis = _axis(axis, v.ndim)
        _fold_size(v.shape[:axis] + idx.shape + v.shape[axis + 1:], "GATHER")
        if ((idx < -v.shape[axis]) | (idx >= v.shape[axis])).any():
            raise Unsupported(f"gather index out of range for dimension {v.shape[axis]}")
        return np.take(v, idx, axis=axis)
    if not ctx.is_const(ii):  # an embedding lookup: a Gather layer (the 20.08 format on)
        return gather_runtime(ctx, op, axis)
    x = ctx.port(xi)
    axis = _axis(axis, x.info.rank)
    shape = x.info.shape
    idx = ctx.ints(ii)
    y = gather_const(ctx, x, axis, idx.reshape(-1), name)
    return nb.reshape(y, _scalar_shape(shape[:axis] + idx.shape + shape[axis + 1:]), f"{name}_shape")


def gather_runtime(ctx, op, axis: int, inputs=None):
    """GATHER whose indices are computed at run time (Keras Embedding: a constant table and
    the model's int32 input): one Gather layer. The indices must lie in [0, dim), as TFLite
    requires: Arm NN 20.08 fails on a negative one and reads out of bounds past the end, 23.08
    fails past the end."""
    nb, name = ctx.b, ctx.name(op)
    xi, ii = inputs or op.inputs[:2]
    ids, wrap = ctx.wraps.get(ii, (ii, 0))  # (ids >= -wrap: a Keras 3 Embedding, wrap.py)
    indices = ctx.port(ids)
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
        params = nb.constant_layer(_twice(table, axis) if wrap and not nb.g.target.at_least("23.08") else table,
                                   f"{name}_table")
    else:
        params = ctx.port(xi)
        if wrap and not nb.g.target.at_least("23.08"):
            params = nb.concat([params, params], axis % params.info.rank, f"{name}_twice")
    axis %= params.info.rank
    if wrap and not nb.g.target.at_least("23.08"):
        # 20.08's CpuRef fails on a negative index: ids + n into the table twice over
        shift = nb.constant_layer(np.full((1,) * indices.info.rank, wrap, np.int32), f"{name}_n")
        indices = nb.binary(LayerType.Addition, indices, shift, f"{name}_wrap")
        ctx.report.decomposition("GATHER", "negative ids (Keras 3 Embedding) on Arm NN 20.08: ids + n gathered "
                                 "from the table concatenated twice (twice its bytes)")
    lo = -wrap if wrap else 0
    ctx.report.warn(f"{name}: run-time GATHER indices must lie in [{lo}, {wrap or params.info.shape[axis]}) "
                    "(Arm NN 20.08 reads out of bounds past the end, 23.08 fails)")
    return nb.gather(params, indices, axis, name)


def _check_lookup(op, ctx):
    if not ctx.is_const(op.inputs[0]) and not ctx.b.g.target.at_least("20.08"):
        return ("ids computed at run time need a Gather layer, which Arm NN 20.08 cannot read from this format",
                "convert with --target 20.08 (read by Arm NN 20.08 and later)")
    if not ctx.is_const(op.inputs[0]) and ctx.dtype_of(op.inputs[0]) != DataType.Signed32:
        return "run-time ids must be int32 (Arm NN's Gather takes Signed32 indices)"
    return None


@REGISTRY.register("EMBEDDING_LOOKUP", since=1, until=3, inputs=2, foldable=True, check=_check_lookup, data_input=1,
                   layers=("Gather", "Constant", "Reshape", "StridedSlice", "Merger", "FullyConnected"),
                   notes="rows of the table (input 1) by the ids (input 0): GATHER on axis 0")
def embedding_lookup(ctx, op):
    ii, xi = op.inputs[:2]
    if _all_const(ctx, op):
        v, idx = np.asarray(_value(ctx, xi)), ctx.ints(ii)
        if ((idx < 0) | (idx >= v.shape[0])).any():
            raise Unsupported(f"an id out of range for a table of {v.shape[0]} rows")
        return np.take(v, idx, axis=0)
    if not ctx.is_const(ii):
        return gather_runtime(ctx, op, 0, (xi, ii))
    idx = ctx.ints(ii)
    x = ctx.port(xi)
    y = gather_const(ctx, x, 0, idx.reshape(-1), ctx.name(op))
    return ctx.b.reshape(y, _scalar_shape(idx.shape + x.info.shape[1:]), f"{ctx.name(op)}_shape")


def _check_gather_nd(op, ctx):
    if not ctx.is_const(op.inputs[1]):
        if not ctx.b.g.target.at_least("23.08"):
            return ("indices computed at run time need Arm NN's GatherNd layer (the 23.08 format)",
                    "convert with --target 23.08, or make the indices constant")
        if ctx.dtype_of(op.inputs[1]) != DataType.Signed32:
            return "run-time indices must be int32 (Arm NN's GatherNd takes Signed32 indices)"
    return None


@REGISTRY.register("GATHER_ND", since=1, until=5, inputs=2, foldable=True, check=_check_gather_nd,
                   layers=("Reshape", "StridedSlice", "Merger", "FullyConnected", "Gather", "Constant", "GatherNd",
                           "Permute"),
                   notes="constant indices on every target; run-time int32 ones (in [0, dim)) from --target 23.08")
def gather_nd(ctx, op):
    name, (xi, ii) = ctx.name(op), op.inputs[:2]
    if _all_const(ctx, op):
        v, idx = np.asarray(_value(ctx, xi)), ctx.ints(ii)
        nd = idx.shape[-1] if idx.ndim else 0
        if not 1 <= nd <= v.ndim or ((idx < 0) | (idx >= np.asarray(v.shape[:nd]))).any():
            raise Unsupported(f"indices {idx.shape} out of range for a constant of shape {v.shape}")
        _fold_size(idx.shape[:-1] + v.shape[nd:], "GATHER_ND")
        return v[tuple(np.moveaxis(idx, -1, 0))]
    x = ctx.port(xi)
    if ctx.is_const(ii):
        idx = ctx.ints(ii)
        if idx.ndim == 0 or (idx < 0).any():  # (TFLite fails on a negative index)
            raise Unsupported(f"GATHER_ND indices {idx.tolist()} must be non-negative tuples")
        y = gather_nd_const(ctx.b, x, idx, name, max_slices=MAX_SLICES)
        nd = idx.shape[-1]
        y = ctx.b.reshape(y, _scalar_shape(idx.shape[:-1] + x.info.shape[nd:]), f"{name}_shape")
    else:
        y = gather_nd_runtime(ctx.b, x, ctx.port(ii), name)
    q = ctx.out_quant(op)  # (LiteRT copies the bytes: read them with the output's quantization)
    return y if q is None else relabel(ctx.b, y, q, f"{name}_bytes")


def _twice(table, axis: int):
    """A constant table (array or ConstTensor) concatenated with itself along axis."""
    if isinstance(table, ConstTensor):
        d = np.concatenate([table.data, table.data], axis)
        i = table.info
        return ConstTensor(d, TensorInfo(d.shape, i.dtype, i.scale, i.offset))
    return np.concatenate([table, table], axis)
