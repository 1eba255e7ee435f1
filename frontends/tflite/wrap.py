"""Keras 3's Embedding takes negative ids from the end (numpy's `take`): its TFLite graph is
SELECT_V2(LESS(ids, 0), ADD(ids, n), ids) before the GATHER of the n-row table. ops/select.py
selects float and 8-bit values, not int32 ones, but the three ops are the GATHER's own
negative-index rule on [-n, n), which the Gather layer can give exactly (gather.gather_runtime):
Arm NN 23.08's CpuRef wraps a negative index itself (reference/workloads/Gather.cpp), and on 20.08
the table is gathered twice over at ids + n. Only that shape of the idiom is taken; any other
SELECT is ops/select.py's."""
from __future__ import annotations

import numpy as np

from .types import INT32


def find_wraps(ctx) -> None:
    """Record in ctx.wraps each SELECT_V2 of the idiom (its output -> (ids, n)), its three ops
    skipped: they become part of the GATHERs that read it."""
    ops = ctx.m.operators
    for sel in ops:
        if sel.op not in ("SELECT", "SELECT_V2") or len(sel.inputs) != 3:
            continue
        c, a, ids = sel.inputs
        less, add = _only_producer(ctx, c, sel), _only_producer(ctx, a, sel)
        if (less is None or add is None or less.op != "LESS" or add.op != "ADD" or ctx.is_const(ids)
                or ctx.t(ids).type != INT32 or ctx.t(ids).quant is not None):
            continue
        n = _added(ctx, add, ids)
        zero = less.inputs[1] if less.inputs[0] == ids else None
        if n is None or zero is None or not ctx.is_const(zero) or np.any(ctx.ints(zero) != 0):
            continue
        out = sel.outputs[0]
        readers = [ops[k] for k in ctx.consumers.get(out, [])]
        if out in ctx.m.outputs or not readers or not all(_gathers_rows(ctx, g, out, n) for g in readers):
            continue
        ctx.wraps[out] = (ids, n)
        ctx.skip.update((less.index, add.index, sel.index))


def _only_producer(ctx, i: int, reader):
    """The op computing tensor i when `reader` is its only reader, else None."""
    k = ctx.producer.get(i)
    if k is None or ctx.consumers.get(i) != [reader.index] or i in ctx.m.outputs:
        return None
    return ctx.m.operators[k]


def _added(ctx, add, ids: int):
    """n of ADD(ids, n) (either order, a positive int32 scalar constant, no fused activation)."""
    if add.options.get("fused_activation_function", 0) or ids not in add.inputs[:2]:
        return None
    k = add.inputs[1] if add.inputs[0] == ids else add.inputs[0]
    if not ctx.is_const(k):
        return None
    v = ctx.ints(k).reshape(-1)
    return int(v[0]) if v.size == 1 and v[0] > 0 else None


def _gathers_rows(ctx, g, idx: int, n: int) -> bool:
    """Whether g is a GATHER by `idx` along an axis of n entries."""
    if g.op != "GATHER" or g.inputs[1] != idx or g.inputs[0] == idx or g.options.get("batch_dims", 0):
        return False
    shape = ctx.shape(g.inputs[0])
    axis = g.options.get("axis", 0)
    return -len(shape) <= axis < len(shape) and shape[axis] == n
