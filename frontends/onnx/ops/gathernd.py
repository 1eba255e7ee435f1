"""GatherND: constant index tuples on every target, run-time ones as a GatherNd layer
(--target 23.08); batch_dims by prepending each batch position's coordinates
(armnn_import.lowering.gather_nd). Compress with a constant condition: a Gather of the
selected positions."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.graph import Port
from armnn_import.ir.types import DataType
from armnn_import.lowering import Unsupported
from armnn_import.lowering.gather import GatherNames, gather_const
from armnn_import.lowering.gather_nd import batch_grid, gather_nd_const, gather_nd_runtime

from ..registry import needs_const, register, runtime_input_from
from .shape import MAX_SLICE_GATHER


_gather_nd_check = runtime_input_from(
    1, "23.08", "run-time indices need Arm NN's GatherNd layer, which only the 23.08 format has",
    "convert with --target 23.08, or make the indices constant")


@register("GatherND", since=11, layers=("Reshape", "StridedSlice", "Merger", "Gather", "FullyConnected",
                                        "GatherNd", "Constant", "Concat"), check=_gather_nd_check,
          notes="constant indices on every target; run-time ones (in [0, dim)) from --target 23.08")
def gather_nd(ctx, node):
    data, indices, n = ctx.port(node, 0, dtypes=None), ctx.val(node, 1), ctx.name(node)
    b = int(ctx.attr(node, "batch_dims", 0))
    dshape, ishape = ctx.lshape(data), ctx.lshape(indices)
    nd = ishape[-1] if ishape else 0
    if not ishape or not 0 <= b < min(len(ishape), len(dshape)) or tuple(ishape[:b]) != tuple(dshape[:b]) \
            or not 1 <= nd <= len(dshape) - b:
        raise Unsupported(f"indices of shape {ishape} (batch_dims {b}) for data of shape {dshape}", code="bad-model")
    out = tuple(ishape[:-1]) + tuple(dshape[b + nd:])
    grid = batch_grid(tuple(dshape[:b]), tuple(ishape[b:-1]))
    if not isinstance(indices, Port):
        idx = np.concatenate([grid, np.asarray(indices, np.int64)], -1)
        y = gather_nd_const(ctx.b, data, idx, n, max_slices=MAX_SLICE_GATHER)
        return ctx.to_shape(y, out, f"{n}_shape")
    if indices.info.dtype != DataType.Signed32:
        raise Unsupported(f"indices are {indices.info.dtype.name} at run time; Arm NN's GatherNd takes int32")
    if b:
        coords = ctx.b.constant_layer(grid.astype(np.int32), f"{n}_batch")
        indices = ctx.b.concat([coords, indices], -1, f"{n}_tuples")
    return ctx.to_shape(gather_nd_runtime(ctx.b, data, indices, n), out, f"{n}_shape")


@register("Compress", since=9, check=needs_const(1, what="condition"),
          layers=("Reshape", "StridedSlice", "Merger", "Concat", "Gather", "FullyConnected", "Constant", "Permute"),
          notes="a constant condition: the selected positions gathered (along axis, or of the flattened input)")
def compress(ctx, node):
    x, n = ctx.port(node, 0, dtypes=None), ctx.name(node)
    cond = np.asarray(ctx.const(node, 1, "condition")).reshape(-1).astype(bool)
    axis = ctx.attr(node, "axis", None)
    if axis is None:
        x, axis = ctx.b.reshape(x, (x.info.num_elements,), f"{n}_flat"), 0
    axis %= x.info.rank
    idx = np.flatnonzero(cond[:x.info.shape[axis]])
    if idx.size == 0:
        raise Unsupported("the condition selects nothing (an empty tensor)", code="inexpressible")
    return gather_const(ctx.b, x, axis, idx, n, max_slices=MAX_SLICE_GATHER,
                        names=GatherNames("_run{k}", "_cat", "_fc", ("_2d", "_nd")))
