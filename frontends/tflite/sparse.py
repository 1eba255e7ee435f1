"""Sparse constant tensors (TFLite's SparsityParameters, the TACO format).

A sparse tensor stores its values in traversal order over n + k levels: the n
original dimensions in `traversal_order[:n]` (each blocked by its block size when
`block_map` names it), then the k block dimensions. A DENSE level iterates its
dense_size positions; a SPARSE_CSR level, for position p of the level above, the
children array_segments[p] .. array_segments[p + 1], whose coordinates are
array_indices[child] (int32, uint16 or uint8 vectors). Values are consumed one per
leaf, in that order. This follows LiteRT's FormatConverter::SparseToDense (block
sizes are dim_metadata[traversal_order[n + b]].dense_size, as there), refusing the
malformed layouts it would silently skip or read past.

Densifying at conversion makes DENSIFY (and the DEQUANTIZE of float16 that follows it)
a fold of constants: tensors are densified level by level with numpy (no per-element
Python loop), in time and memory linear in the dense size.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from armnn_import.errors import LoadError

DENSE, SPARSE_CSR = 0, 1


@dataclass
class DimMeta:
    format: int
    dense_size: int = 0
    segments: np.ndarray | None = None  # SPARSE_CSR only
    indices: np.ndarray | None = None


@dataclass
class Sparsity:
    traversal_order: tuple[int, ...]
    block_map: tuple[int, ...]
    dims: list[DimMeta]


class SparsityError(ValueError):
    pass


def _levels(shape, sp: Sparsity) -> tuple[list[int], list[int]]:
    """(size of each traversal level, block size of each block dimension)."""
    n, k = len(shape), len(sp.block_map)
    order = list(sp.traversal_order)
    if len(order) != n + k or sorted(order[:n]) != list(range(n)) or sorted(order[n:]) != list(range(n, n + k)):
        raise SparsityError(f"traversal order {order} is not the {n} dimensions then the {k} block dimensions")
    if len(sp.dims) != n + k:
        raise SparsityError(f"{len(sp.dims)} dimension metadata for {n + k} levels")
    if list(sp.block_map) != sorted(set(sp.block_map)) or any(not 0 <= d < n for d in sp.block_map):
        raise SparsityError(f"block map {list(sp.block_map)} does not name distinct dimensions in order")
    blocks = [int(sp.dims[order[n + b]].dense_size) for b in range(k)]
    blocked = list(shape)
    for b, d in enumerate(sp.block_map):
        if blocks[b] <= 0 or shape[d] % blocks[b]:
            raise SparsityError(f"block size {blocks[b]} does not divide dimension {d} of size {shape[d]}")
        blocked[d] = shape[d] // blocks[b]
    return [blocked[e] if e < n else blocks[e - n] for e in order], blocks


def _expand_csr(pos, dm: DimMeta, size: int, level: int):
    """Children of the positions `pos` at a SPARSE_CSR level: (parent of each, position, coordinate)."""
    seg, ind = dm.segments, dm.indices
    if seg is None or ind is None:
        raise SparsityError(f"level {level} is SPARSE_CSR without segments and indices")
    seg, ind = seg.astype(np.int64), ind.astype(np.int64)
    if pos.size and int(pos.max()) + 1 >= seg.size:
        raise SparsityError(f"level {level} has {seg.size} segment bounds for {int(pos.max()) + 1} positions")
    start, stop = seg[pos], seg[pos + 1]
    if np.any(stop < start) or (start.size and (int(start.min()) < 0 or int(stop.max()) > ind.size)):
        raise SparsityError(f"level {level} segments are not increasing within its {ind.size} indices")
    counts = stop - start
    parent = np.repeat(np.arange(pos.size), counts)
    child = np.repeat(start, counts) + (np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts))
    coord = ind[child]
    if coord.size and (int(coord.min()) < 0 or int(coord.max()) >= size):
        raise SparsityError(f"level {level} has an index outside [0, {size})")
    return parent, child, coord


def densify(shape, sp: Sparsity, values: np.ndarray) -> np.ndarray:
    """The dense array of `shape` that the sparse `values` stand for (SparsityError if malformed)."""
    shape = tuple(int(d) for d in shape)
    total = math.prod(shape)
    sizes, blocks = _levels(shape, sp)
    pos = np.zeros(1, np.int64)  # position at the current level of each partial coordinate
    cols: list[np.ndarray] = []  # coordinate of each level, per partial coordinate
    for level, (dm, size) in enumerate(zip(sp.dims, sizes)):
        if dm.format == DENSE:
            if int(dm.dense_size) != size:
                raise SparsityError(f"level {level} is DENSE of size {dm.dense_size}, the shape says {size}")
            if pos.size * size > total:
                raise SparsityError(f"level {level} has more positions than the tensor has elements")
            cols = [np.repeat(c, size) for c in cols] + [np.tile(np.arange(size, dtype=np.int64), pos.size)]
            pos = (pos[:, None] * size + np.arange(size)).reshape(-1)
        elif dm.format == SPARSE_CSR:
            parent, pos, coord = _expand_csr(pos, dm, size, level)
            if pos.size > total:
                raise SparsityError(f"level {level} has more positions than the tensor has elements")
            cols = [c[parent] for c in cols] + [coord]
        else:
            raise SparsityError(f"level {level} has the unknown format {dm.format}")
    if pos.size != values.size:
        raise SparsityError(f"{values.size} stored values for {pos.size} positions")
    n = len(shape)
    orig = [None] * n
    for level in range(n):
        orig[sp.traversal_order[level]] = cols[level]
    for level in range(n, len(sizes)):
        b = sp.traversal_order[level] - n
        d = sp.block_map[b]
        orig[d] = orig[d] * blocks[b] + cols[level]
    flat = np.ravel_multi_index(orig, shape) if n else np.zeros(values.size, np.int64)
    if flat.size and int(np.bincount(flat, minlength=total).max()) > 1:
        raise SparsityError("two stored values fall on the same element")
    dense = np.zeros(total, values.dtype)
    dense[flat] = values.reshape(-1)
    return dense.reshape(shape)


def bypass_densify(tensors, ops, outputs):
    """DENSIFY of a (densified) constant is an identity: its users read the constant
    itself (keeping its type and quantization), and the operator is dropped."""
    alias = {}
    for op in ops:
        if op.op == "DENSIFY" and len(op.inputs) == 1 and len(op.outputs) == 1 and op.inputs[0] >= 0:
            src, dst = tensors[op.inputs[0]], tensors[op.outputs[0]]
            if src.data is not None and dst.data is None and dst.shape in (src.shape, ()) \
                    and dst.type == src.type:
                alias[op.outputs[0]] = alias.get(op.inputs[0], op.inputs[0])
    if not alias:
        return ops, outputs, 0
    kept = [dataclasses.replace(op, index=k, inputs=tuple(alias.get(i, i) for i in op.inputs))
            for k, op in enumerate(o for o in ops if not (o.op == "DENSIFY" and o.outputs[0] in alias))]
    return kept, tuple(alias.get(i, i) for i in outputs), len(alias)


# -- reading the FlatBuffer table -----------------------------------------------------------------
_VECTORS = {1: ("Int32Vector", np.int32), 2: ("Uint16Vector", np.uint16), 3: ("Uint8Vector", np.uint8)}


def _index_vector(kind: int, table, what: str, budget) -> np.ndarray:
    import importlib

    if kind not in _VECTORS or table is None:
        raise SparsityError(f"{what} is missing or of unknown type {kind}")
    cls = getattr(importlib.import_module(f"tflite.{_VECTORS[kind][0]}"), _VECTORS[kind][0])
    v = cls()
    v.Init(table.Bytes, table.Pos)
    n = budget.count(v.ValuesLength(), np.dtype(_VECTORS[kind][1]).itemsize, what)
    return v.ValuesAsNumpy().astype(np.int64) if n else np.zeros(0, np.int64)


def read_sparsity(sp, budget, name: str) -> Sparsity:
    """The SparsityParameters table of tensor `name` (LoadError if malformed)."""
    def ints(length, getter, what):
        n = budget.count(length, 4, f"tensor {name!r} {what}")
        return tuple(int(v) for v in getter()) if n else ()
    try:
        order = ints(sp.TraversalOrderLength(), sp.TraversalOrderAsNumpy, "traversal order")
        bmap = ints(sp.BlockMapLength(), sp.BlockMapAsNumpy, "block map")
        dims = []
        for i in range(budget.count(sp.DimMetadataLength(), 4, f"tensor {name!r} dimension metadata")):
            d = sp.DimMetadata(i)
            if d is None:
                raise SparsityError(f"dimension metadata {i} is missing")
            if d.Format() == SPARSE_CSR:
                dims.append(DimMeta(SPARSE_CSR, 0,
                                    _index_vector(d.ArraySegmentsType(), d.ArraySegments(), f"level {i} segments",
                                                  budget),
                                    _index_vector(d.ArrayIndicesType(), d.ArrayIndices(), f"level {i} indices",
                                                  budget)))
            else:
                dims.append(DimMeta(int(d.Format()), int(d.DenseSize())))
    except SparsityError as e:
        raise LoadError(f"malformed TFLite file: tensor {name!r} sparsity: {e}") from None
    return Sparsity(order, bmap, dims)
