"""A subgraph's tensor tables read at once, with numpy, for well-formed files.

The per-tensor reader (model._tensor) makes a round of Python calls per tensor (the vtable,
the shape, signature and name vectors, the type, the buffer index): ~4 us a tensor, the
loader's main cost on a model of 100,000 tensors. Here every tensor's vtable, fields and
vectors are gathered as arrays, and each of model._tensor's checks is made on the whole
array. Nothing here raises on a malformed file: where any check fails, or anything else is
out of the ordinary, read_tensors returns None and the per-tensor reader reads the tensors
again from the start, with its errors in its order. Tensors with quantization scales or sparsity
(read through the generated objects) are read by model._tensor, one at a time, as before;
so is the data that large files keep after the FlatBuffer.
"""
from __future__ import annotations

import numpy as np

from .buffers import constant, read_buffer


class Irregular(Exception):
    """Something the per-tensor reader must see (and report) itself."""


def _within(at: np.ndarray, width: int, size: int) -> None:
    if at.size and (at.min() < 0 or at.max() + width > size):
        raise Irregular


def _u(u8: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """The little-endian unsigned `width`-byte values at positions `at` (int64), bounds checked."""
    _within(at, width, u8.size)
    v = u8[at].astype(np.int64)
    for k in range(1, width):
        v |= u8[at + k].astype(np.int64) << (8 * k)
    return v


def _i32(v: np.ndarray) -> np.ndarray:
    return v - ((v >> 31) << 32)


def positions(u8: np.ndarray, at: int) -> np.ndarray:
    """The tables of the vector of offsets stored at `at` (fasttable.tables)."""
    start = at + int(_u(u8, np.array([at]), 4)[0])
    n = int(_u(u8, np.array([start]), 4)[0])
    if start + 4 + 4 * n > u8.size:  # (before anything of that length is made)
        raise Irregular
    slots = start + 4 + 4 * np.arange(n, dtype=np.int64)
    return slots + _u(u8, slots, 4)


def fields(u8: np.ndarray, pos: np.ndarray, n: int) -> np.ndarray:
    """[n, len(pos)] field offsets of the tables at `pos` (0: absent), as fasttable.fields."""
    vt = pos - _i32(_u(u8, pos, 4))
    k = np.clip((_u(u8, vt, 2) - 3) // 2, 0, n)
    out = np.zeros((n, pos.size), np.int64)
    for j in range(n):
        m = j < k
        if m.any():
            out[j, m] = _u(u8, vt[m] + 4 + 2 * j, 2)
    return out


def vectors(u8: np.ndarray, pos: np.ndarray, off: np.ndarray):
    """(data start, length) of the vector of field offset `off` of each table (length 0 where absent)."""
    has = off != 0
    at = pos[has] + off[has]
    start = np.zeros(pos.size, np.int64)
    start[has] = at + _u(u8, at, 4)
    n = np.zeros(pos.size, np.int64)
    n[has] = _u(u8, start[has], 4)
    return start + 4, n


def ragged_ints(u8: np.ndarray, start: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, list]:
    """(every int32 of the vectors, one after the other; where each vector's values begin and end)."""
    _within(start + 4 * n, 0, u8.size)  # every vector inside the file (before its length is used)
    first = np.zeros(n.size + 1, np.int64)
    np.cumsum(n, out=first[1:])
    if first[-1] > u8.size // 4:  # (vectors may overlap: their total is bounded too)
        raise Irregular
    idx = np.repeat(start - 4 * first[:-1], n) + 4 * np.arange(int(first[-1]), dtype=np.int64)
    return _i32(_u(u8, idx, 4)), first.tolist()


def _scalars(u8, pos, off, width, default=0) -> np.ndarray:
    """The unsigned `width`-byte field at offset `off` of each table (`default` where absent)."""
    out = np.full(pos.size, default, np.int64)
    has = off != 0
    out[has] = _u(u8, pos[has] + off[has], width)
    return out


def read_tensors(src, at: int, ntens: int, make, one) -> list | None:
    """The tensors of the vector of tables stored at `at`, made by make(index, name, shape,
    signature, type, is_variable=) and given their constant data as model._tensor does; those
    with quantization or sparsity read by one(src, pos, i). None where anything is irregular."""
    try:
        return _read(src, at, ntens, make, one)
    except Exception:  # noqa: BLE001 - whatever it is, the per-tensor reader meets it and says it
        return None


def _read(src, at: int, ntens: int, make, one) -> list:
    data, lim = src.data, src.limits
    try:
        u8 = np.frombuffer(data, np.uint8)
    except (TypeError, ValueError):
        raise Irregular from None
    pos = positions(u8, at)
    if pos.size != ntens:
        raise Irregular
    # shape, type, buffer, name, quantization, is_variable, sparsity, shape_signature
    f = fields(u8, pos, 8)
    slow = _quantized(u8, pos, f[4]) | (f[6] != 0)  # read by model._tensor
    fast = np.flatnonzero(~slow)
    p, f = pos[fast], f[:, fast]
    start, rank = vectors(u8, p, f[0])
    if rank.size and rank.max() > lim.max_rank:
        raise Irregular
    dims, first = ragged_ints(u8, start, rank)
    sstart, srank = vectors(u8, p, f[7])
    if ((srank != 0) & (srank != rank)).any():
        raise Irregular
    sigs, sfirst = ragged_ints(u8, sstart, srank)
    _shapes_fit(dims, np.asarray(first[:-1])[rank > 0], lim)
    nstart, nlen = vectors(u8, p, f[3])
    _within(nstart + nlen, 0, u8.size)  # (the per-tensor reader cuts a name past the end)
    types = _scalars(u8, p, f[1], 1)
    types = (types - ((types >> 7) << 8)).tolist()  # int8
    variable = (_scalars(u8, p, f[5], 1) != 0).tolist()
    bufs = _scalars(u8, p, f[2], 4)
    if bufs.size and bufs.max() >= max(src.nbuf, 1):
        raise Irregular
    budget = src.budget  # every shape and signature vector counted, as the per-tensor reader does
    budget.left -= int(rank.sum()) + int(srank.sum())
    if budget.left < 0:
        raise Irregular
    raws = _buffers(src, u8, bufs)
    dims, sigs, names = dims.tolist(), sigs.tolist(), zip(nstart.tolist(), (nstart + nlen).tolist())
    out = [None] * ntens
    for k, (i, (a, b), raw) in enumerate(zip(fast.tolist(), names, raws)):
        name = bytes(data[a:b]).decode("utf-8", "replace") or f"tensor_{i}"
        sig = tuple(sigs[sfirst[k]:sfirst[k + 1]]) if sfirst[k + 1] > sfirst[k] else None
        t = out[i] = make(i, name, tuple(dims[first[k]:first[k + 1]]), sig, types[k], is_variable=variable[k])
        if raw is not None and raw.size:
            src.constants.add(raw.size, f"tensor {name!r}")
            t.data = constant(t, raw, alias=src.alias)
    for i in np.flatnonzero(slow).tolist():
        out[i] = one(src, int(pos[i]), i)
    return out


def _buffers(src, u8: np.ndarray, bufs: np.ndarray) -> list:
    """buffers.read_buffer's answer for each buffer index (None for 0, or no buffer list):
    the bytes of the buffer's data vector as a view of the file (which the array made from it
    copies or, if large, keeps); data stored after the FlatBuffer read by read_buffer itself."""
    out = [None] * bufs.size
    use = np.flatnonzero(bufs != 0) if src.nbuf else np.zeros(0, np.int64)
    if not use.size:
        return out
    x = src.buffers + 4 * bufs[use]
    pos = x + _u(u8, x, 4)
    f = fields(u8, pos, 3)  # data, offset, size
    offset, size = _scalars(u8, pos, f[1], 8), _scalars(u8, pos, f[2], 8)
    if offset.min() < 0 or size.min() < 0:  # (past 2^63: wrapped in int64)
        raise Irregular
    start, n = vectors(u8, pos, f[0])
    _within(start + n, 0, u8.size)
    outside = offset > 1
    src.budget.left -= int(n[~outside].sum())  # as read_buffer counts each data vector
    if src.budget.left < 0:
        raise Irregular
    for k, b, s, m, o in zip(use.tolist(), bufs[use].tolist(), start.tolist(), n.tolist(), outside.tolist()):
        out[k] = read_buffer(src, b) if o else u8[s:s + m] if m else None
    return out


def _quantized(u8: np.ndarray, pos: np.ndarray, off: np.ndarray) -> np.ndarray:
    """Which tensors have quantization scales (a quantization table without any, as TensorFlow
    writes for float tensors, gives none: Tensor.Quantization().ScaleLength() is 0)."""
    has = np.flatnonzero(off != 0)
    q = pos[has] + off[has]
    q = q + _u(u8, q, 4)  # the QuantizationParameters tables
    _, n = vectors(u8, q, fields(u8, q, 3)[2])  # min, max, scale
    out = np.zeros(pos.size, bool)
    out[has] = n != 0
    return out


def _shapes_fit(dims: np.ndarray, starts: np.ndarray, lim) -> None:
    """Every dimension non-negative and every tensor within max_elements (else check_shape's
    error, from the per-tensor reader)."""
    if dims.size and (dims.min() < 0 or np.multiply.reduceat(dims.astype(np.float64), starts).max()
                      > lim.max_elements):
        raise Irregular


def read_operators(src, at: int, nops: int, codes: list, ntens: int, make, options) -> list | None:
    """The operators of the vector of tables stored at `at`, made by make(index, op, version,
    inputs, outputs, options, custom_code, intermediates) with their options read by
    options(data, pos, fields, budget, seen), as model._operators does. None where anything
    is irregular (then model._operators reads them, with its checks and errors)."""
    try:
        return _read_ops(src, at, nops, codes, ntens, make, options)
    except Exception:  # noqa: BLE001 - as read_tensors
        return None


def _refs(u8, pos, off, lo: int, ntens: int) -> tuple[list, list, int]:
    """(the tensor indices of each table's vector, where each begins, how many) checked in [lo, ntens)."""
    start, n = vectors(u8, pos, off)
    values, first = ragged_ints(u8, start, n)
    if values.size and (values.min() < lo or values.max() >= ntens):
        raise Irregular
    return values.tolist(), first, int(n.sum())


def _read_ops(src, at: int, nops: int, codes: list, ntens: int, make, options) -> list:
    data = src.data
    u8 = np.frombuffer(data, np.uint8)
    pos = positions(u8, at)
    if pos.size != nops:
        raise Irregular
    # opcode_index, inputs, outputs, builtin_options_type, builtin_options, custom_options,
    # custom_options_format, mutating_variable_inputs, intermediates
    f = fields(u8, pos, 9)
    idx = _scalars(u8, pos, f[0], 4)
    if idx.size and idx.max() >= len(codes):
        raise Irregular
    ins, ifirst, ni = _refs(u8, pos, f[1], -1, ntens)
    outs, ofirst, no = _refs(u8, pos, f[2], 0, ntens)
    mids, mfirst, nm = _refs(u8, pos, f[8], 0, ntens)
    budget, seen, ops = src.budget, {}, []
    budget.left -= ni + no + nm  # (the options' vectors are counted as they are read)
    if budget.left < 0:
        raise Irregular
    for i, (p, c, f3, f4) in enumerate(zip(pos.tolist(), idx.tolist(), f[3].tolist(), f[4].tolist())):
        name, ver, custom = codes[c]
        ops.append(make(i, name, ver, tuple(ins[ifirst[i]:ifirst[i + 1]]), tuple(outs[ofirst[i]:ofirst[i + 1]]),
                        options(data, p, (0, 0, 0, f3, f4), budget, seen), custom,
                        tuple(mids[mfirst[i]:mfirst[i + 1]])))
    return ops
