"""Scatters and per-element gathers with constant indices (ONNX ScatterND, ScatterElements,
Scatter, GatherElements), exactly, as selections. No Arm NN release has a scatter layer, but with
the indices known at conversion time every output row is a row of the data or of the updates:

    out = rows of concat([data rows, update rows]), picked by constant row numbers

(a Gather with constant indices from the 20.08 format on, StridedSlices of the index runs joined
by a Merger before: armnn_import.lowering.gather). A row is a slice data[i0, .., ik-1] for
ScatterND's k-tuples, one element for the per-element operators. A reduction (add, mul, max, min)
first combines each hit row of the data with its updates, in their order, as onnxruntime does: the
r-th update of every row in round r. Without one, the last update of a row wins (onnxruntime
writes them in order)."""
from __future__ import annotations

import math

import numpy as np

from ..ir.graph import Port
from ..ir.types import DataType
from ..ir.types import LayerType as L
from .builder import NetBuilder, Unsupported
from .gather import gather_const
from .masks import constant

REDUCE = {"add": L.Addition, "mul": L.Multiplication, "max": L.Maximum, "min": L.Minimum}


def flat_positions(shape, idx: np.ndarray) -> np.ndarray:
    """Row numbers of index tuples idx[..., k] into shape[:k] (negative ones from the end)."""
    k = idx.shape[-1]
    dims = np.asarray(shape[:k], np.int64)
    idx = idx.reshape(-1, k).astype(np.int64)
    if ((idx < -dims) | (idx >= dims)).any():
        raise Unsupported(f"an index is outside the data's dimensions {tuple(shape[:k])}", code="bad-model")
    return np.ravel_multi_index(tuple(np.where(idx < 0, idx + dims, idx).T), tuple(int(d) for d in dims))


def element_positions(shape, idx: np.ndarray, axis: int) -> np.ndarray:
    """Flat positions in `shape` of the per-element indices idx along `axis` (GatherElements,
    ScatterElements): idx's own coordinates, with idx along the axis."""
    if idx.ndim != len(shape) or any(i > d for a, (i, d) in enumerate(zip(idx.shape, shape)) if a != axis):
        raise Unsupported(f"indices of shape {idx.shape} for data of shape {tuple(shape)}", code="bad-model")
    coords = list(np.indices(idx.shape, dtype=np.int64))
    coords[axis] = idx.astype(np.int64)
    return flat_positions(shape, np.stack(coords, -1))


def _check(x: Port):
    if x.info.dtype != DataType.Float32:
        raise Unsupported(f"{x.info.dtype.name} data (only float32 rows are selected: CpuRef slices and joins "
                          "no int32 tensor)")


def take_rows(nb: NetBuilder, x: Port, rows, name: str) -> Port:
    """Rows `rows` (constant, in range) of a [N, R] tensor."""
    return gather_const(nb, x, 0, np.asarray(rows, np.int64), name)


def scatter_rows(nb: NetBuilder, data: Port, rows: np.ndarray, updates, reduction: str, name: str) -> Port:
    """data ([M, R]) with row rows[u] replaced by (or, with a reduction, combined with) row u of
    updates ([U, R], a Port or a float constant)."""
    _check(data)
    m, r = data.info.shape
    if not isinstance(updates, Port):
        updates = constant(nb, np.asarray(updates, np.float32).reshape(-1, r), data, f"{name}_updates")
    if updates.info.dtype != data.info.dtype:
        raise Unsupported("updates of another type than the data")
    nb.report.decomposition("scatter", "the result's rows picked from the data's and the updates' rows "
                                       "by constant indices")
    order = [np.flatnonzero(rows == v) for v in np.unique(rows)]  # each hit row's updates, in order
    if reduction == "none":
        return _pick(nb, data, np.unique(rows), [o[-1] for o in order], updates, name)
    rounds = max(len(o) for o in order)
    cur = data
    for k in range(rounds):
        us = np.array([o[k] for o in order if len(o) > k], np.int64)
        hit = rows[us]
        old = take_rows(nb, cur, hit, f"{name}_r{k}_rows")
        upd = take_rows(nb, updates, us, f"{name}_r{k}_upd")
        # std::max(update, data) as onnxruntime's reduction (a NaN in the data gives the update)
        new = nb.binary(REDUCE[reduction], upd, old, f"{name}_r{k}_op")
        cur = _pick(nb, cur, hit, np.arange(len(us)), new, name if k + 1 == rounds else f"{name}_r{k}")
    return cur


def _pick(nb: NetBuilder, data: Port, targets, sources, updates: Port, name: str) -> Port:
    """data with row targets[j] taken from row sources[j] of updates."""
    m = data.info.shape[0]
    sel = np.arange(m, dtype=np.int64)
    sel[np.asarray(targets, np.int64)] = m + np.asarray(sources, np.int64)
    return take_rows(nb, nb.concat([data, updates], 0, f"{name}_rows"), sel, name)


def as_rows(nb: NetBuilder, x: Port, k: int, name: str) -> Port:
    """x as [prod(shape[:k]), prod(shape[k:])]."""
    shape = x.info.shape
    return nb.reshape(x, (math.prod(shape[:k]), math.prod(shape[k:])), name)


def gather_elements_runtime(nb, x, idx, axis: int, name: str):
    """ONNX GatherElements of Signed32 indices computed at run time (in [-n, n), n = x's size on
    axis), from the 20.08 format: one Gather of the flattened data by the flat positions
        T[idx + n] + base,  T = [0, .., n-1, 0, .., n-1] * stride(axis)
    (the first Gather wraps a negative index; base, a constant, is the other coordinates' part).
    The flat positions are int32 arithmetic (CpuRef adds Signed32 exactly) and the Gather moves
    them through float32, exact below 2^24 elements."""
    shape, ishape = tuple(x.info.shape), tuple(idx.info.shape)
    r, total = len(shape), int(np.prod(shape, dtype=np.int64))
    if len(ishape) != r or any(ishape[d] > shape[d] for d in range(r) if d != axis):
        raise Unsupported(f"indices of shape {list(ishape)} for data of shape {list(shape)}", code="bad-model")
    if total >= 1 << 24:
        raise Unsupported(f"{total} data elements: the flat positions pass through float32 in Arm NN's "
                          "Gather, exact below 2^24")
    if x.info.dtype == DataType.Boolean:
        raise Unsupported("gathering a boolean tensor (CpuRef's Gather moves no Boolean data)")
    strides = np.cumprod((shape[1:] + (1,))[::-1])[::-1].astype(np.int64)
    n = shape[axis]
    table = (np.concatenate([np.arange(n), np.arange(n)]) * strides[axis]).astype(np.int32)
    grid = np.indices(ishape, dtype=np.int64)
    base = sum(grid[d] * strides[d] for d in range(r) if d != axis)
    base = np.broadcast_to(np.asarray(base, np.int64), ishape).astype(np.int32)
    nb.report.decomposition("GatherElements", "a Gather of the flattened data by T[idx + n] + base (int32)")
    shifted = nb.binary(L.Addition, idx, nb.constant_layer(np.full((1,) * r, n, np.int32), f"{name}_n"),
                        f"{name}_shift")
    along = nb.gather(nb.constant_layer(table, f"{name}_table"), shifted, 0, f"{name}_along")
    flat = nb.binary(L.Addition, along, nb.constant_layer(base, f"{name}_base"), f"{name}_flat")
    return nb.gather(nb.reshape(x, (total,), f"{name}_data"), flat, 0, name)
