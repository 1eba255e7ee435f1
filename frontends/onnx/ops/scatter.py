"""ScatterND, ScatterElements (and the old Scatter) and GatherElements with constant indices, on
every target: selections of the data's and the updates' rows (armnn_import/lowering/scatter.py).
The updates may be computed at run time (a PyTorch in-place assignment, x[:, 0] = y, exports as
a ScatterND of constant indices)."""
from __future__ import annotations

import numpy as np

from armnn_import.lowering import Unsupported
from armnn_import.ir.types import DataType
from armnn_import.lowering.scatter import (as_rows, element_positions, flat_positions, gather_elements_runtime,
                                            scatter_rows, take_rows)

from ..registry import needs_const, register, runtime_input_from
from .common import norm_axes

_LAYERS = ("Reshape", "StridedSlice", "Merger", "Concat", "Gather", "Constant", "FullyConnected", "Activation",
           "Addition", "Multiplication", "Maximum", "Minimum", "Permute", "Transpose")


def _reduction(ctx, node):
    r = ctx.attr(node, "reduction", "none")
    r = r.decode() if isinstance(r, bytes) else r
    if r not in ("none", "add", "mul", "max", "min"):
        raise Unsupported(f"reduction {r!r}", code="bad-model")
    return r


def _updates(ctx, node):
    v = ctx.val(node, 2)
    return v if not isinstance(v, np.ndarray) else np.asarray(v, np.float32)


@register("ScatterND", since=11, layers=_LAYERS, check=needs_const(1, what="indices"),
          notes="constant indices; reductions none/add/mul/max/min in the updates' order")
def scatter_nd(ctx, node):
    data, n = ctx.port(node, 0), ctx.name(node)
    shape, idx = ctx.lshape(data), np.asarray(ctx.const(node, 1, "indices"))
    k = idx.shape[-1] if idx.ndim else 0
    if not 1 <= k <= len(shape):
        raise Unsupported(f"index tuples of {k} for {len(shape)}-D data", code="bad-model")
    rows = flat_positions(shape, idx)
    r = int(np.prod(shape[k:], dtype=np.int64))
    up = _updates(ctx, node)
    up = ctx.b.reshape(up, (len(rows), r), f"{n}_upd_rows") if not isinstance(up, np.ndarray) else up
    y = scatter_rows(ctx.b, as_rows(ctx.b, data, k, f"{n}_data_rows"), rows, up, _reduction(ctx, node), n)
    return ctx.to_shape(y, shape, f"{n}_shape")


@register("ScatterElements", since=11, layers=_LAYERS, check=needs_const(1, what="indices"),
          notes="constant indices; reductions none/add/mul/max/min in the updates' order")
@register("Scatter", since=9, until=10, layers=_LAYERS, check=needs_const(1, what="indices"))
def scatter_elements(ctx, node):
    data, n = ctx.port(node, 0), ctx.name(node)
    shape, idx = ctx.lshape(data), np.asarray(ctx.const(node, 1, "indices"))
    axis = norm_axes([ctx.attr(node, "axis", 0)], len(shape))[0]
    pos = element_positions(shape, idx, axis)
    up = _updates(ctx, node)
    up = ctx.b.reshape(up, (pos.size, 1), f"{n}_upd_rows") if not isinstance(up, np.ndarray) else up
    y = scatter_rows(ctx.b, as_rows(ctx.b, data, len(shape), f"{n}_data_rows"), pos, up,
                     _reduction(ctx, node), n)
    return ctx.to_shape(y, shape, f"{n}_shape")


_gather_elements_check = runtime_input_from(
    1, "20.08", "run-time indices need Arm NN's Gather of Signed32 positions (the 20.08 format on)",
    "convert with --target 20.08 or later, or make the indices constant")


@register("GatherElements", since=11, layers=_LAYERS, check=_gather_elements_check,
          notes="constant indices on every target; run-time ones (in [-n, n)) from --target 20.08")
def gather_elements(ctx, node):
    runtime = not ctx.is_const(node, 1)
    data, n = ctx.port(node, 0, dtypes=None) if runtime else ctx.port(node, 0), ctx.name(node)
    shape = ctx.lshape(data)
    axis = norm_axes([ctx.attr(node, "axis", 0)], len(shape))[0]
    if runtime:
        idx = ctx.port(node, 1, dtypes=None)
        if idx.info.dtype != DataType.Signed32:
            raise Unsupported(f"indices are {idx.info.dtype.name} at run time; Arm NN's Gather takes int32")
        if data.info.dtype == DataType.Signed32:
            ctx.report.warn(f"{n}: Arm NN's Gather moves int32 data through float32: exact for values within +-2^24")
        return gather_elements_runtime(ctx.b, data, idx, axis, n)
    idx = np.asarray(ctx.const(node, 1, "indices"))
    if idx.size == 0:
        raise Unsupported("empty indices")
    pos = element_positions(shape, idx, axis)
    y = take_rows(ctx.b, as_rows(ctx.b, data, len(shape), f"{n}_elements"), pos, n)
    return ctx.to_shape(y, idx.shape, f"{n}_shape")
