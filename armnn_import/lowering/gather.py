"""Gather by constant indices (ONNX Gather, TFLite GATHER, TFLite's nearest Resize), exactly:
numpy.take(x, idx, axis) for a run-time x and 1-D indices known at conversion time."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..ir.graph import Port
from ..ir.types import ConstTensor, DataType, TensorInfo
from .builder import NetBuilder, Unsupported
from .matrix import fc_along_axis

GATHER_RUNS = 16     # from the 20.08 format on, more runs than this take one Gather layer
MAX_RUNS = 64        # StridedSlices at the most for a tensor no selection matrix can carry
MAX_COPIES = 4096    # Merger inputs at the most (repeats of one index, nearest upsampling)
MAX_MATRIX = 1 << 26  # elements of a 0/1 selection matrix at the most


class GatherNames(NamedTuple):
    """The suffixes of the layers gather_const adds, so that each frontend keeps the layer names
    its files have always had: StridedSlice k (`piece`, formatted with k), the Merger (`join`),
    the selection FullyConnected (`select`) and the two Reshapes around it (`rows`)."""
    piece: str = "_p{k}"
    join: str = ""
    select: str = "_select"
    rows: tuple[str, str] = ("_rows", "_unrows")


def index_runs(idx, limit: int | None = None, *, repeats: bool = True) -> list[tuple[int, int, int]] | None:
    """Split indices into maximal arithmetic runs [(start, step, count)], None past `limit` runs.
    With `repeats`, equal neighbours make one run of step 0 (one slice, used `count` times);
    without, each repeated index is a run of its own."""
    idx = [int(v) for v in idx]  # Python ints: far faster to walk than numpy scalars
    runs, k = [], 0
    while k < len(idx) and (limit is None or len(runs) <= limit):
        j = k
        if k + 1 < len(idx) and (repeats or idx[k + 1] != idx[k]):
            step, j = idx[k + 1] - idx[k], k + 1
            while j + 1 < len(idx) and idx[j + 1] - idx[j] == step:
                j += 1
            runs.append((idx[k], step, j - k + 1))
        else:
            runs.append((idx[k], 1, 1))
        k = j + 1
    return runs if limit is None or len(runs) <= limit else None


def normalized_indices(idx, dim: int) -> np.ndarray:
    """1-D int64 indices in [0, dim), negative ones counted from the end; out of range refused."""
    idx = np.asarray(idx, np.int64).reshape(-1)
    if idx.size == 0:
        raise Unsupported("empty indices")
    if ((idx < -dim) | (idx >= dim)).any():
        raise Unsupported(f"gather index out of range for dimension {dim}")
    return np.where(idx < 0, idx + dim, idx)


def gather_const(nb: NetBuilder, x: Port, axis: int, idx, name: str, *, max_slices: int = 32,
                 names: GatherNames = GatherNames()) -> Port:
    """numpy.take(x, idx, axis) for constant 1-D indices (negative from the end), exactly:
    nothing for the identity, a Merger of copies for nearest upsampling, StridedSlices of the
    index runs joined by a Merger, or (more than `max_slices` runs) one Gather layer from the
    20.08 format on, else a FullyConnected with a 0/1 selection matrix. The result's layer is
    `name` (or `name` + names.join)."""
    shape = x.info.shape
    n = shape[axis]
    idx = normalized_indices(idx, n)
    if np.array_equal(idx, np.arange(n)):
        return x
    f = len(idx) // n if len(idx) % n == 0 else 0
    if 1 < f <= MAX_COPIES and np.array_equal(idx, np.repeat(np.arange(n), f)):  # nearest upsampling
        y = nb.reshape(x, shape[:axis + 1] + (1,) + shape[axis + 1:], f"{name}_split")
        y = nb.concat([y] * f, axis + 1, f"{name}_repeat")
        return nb.reshape(y, shape[:axis] + (n * f,) + shape[axis + 1:], f"{name}_join")
    runs = index_runs(idx, MAX_RUNS)
    dtype = x.info.dtype
    if nb.target.at_least("20.08") and dtype != DataType.Boolean and (runs is None or len(runs) > GATHER_RUNS):
        # one Gather with constant indices: leaner than many StridedSlices or a selection
        # matrix, and exact for inf and NaN (a 0/1 matrix multiplies them by 0)
        return nb.gather(x, nb.constant_layer(idx.astype(np.int32), f"{name}_indices"), axis, name)
    selectable = dtype == DataType.Float32 or dtype.is_quantized
    copies = 0 if runs is None else sum(c for _, step, c in runs if step == 0)
    if runs is not None and (len(runs) <= max_slices or not selectable) and copies <= MAX_COPIES:
        return _slices(nb, x, axis, runs, name, names)
    if not selectable:
        raise Unsupported(f"gathering {len(idx)} scattered indices of a non-float tensor")
    return _selection(nb, x, axis, idx, name, names)


def _slices(nb: NetBuilder, x: Port, axis: int, runs, name: str, names: GatherNames) -> Port:
    parts = []
    for k, (start, step, count) in enumerate(runs):
        if step == 0:
            parts.extend([nb.take(x, axis, start, start + 1, f"{name}{names.piece.format(k=k)}")] * count)
        else:
            stop = start + step * count  # (-1 would be read as the last index: the run ends at 0)
            parts.append(nb.take(x, axis, start, stop if stop >= 0 else None,
                                 f"{name}{names.piece.format(k=k)}", step))
    return nb.concat(parts, axis, f"{name}{names.join}")


def _selection(nb: NetBuilder, x: Port, axis: int, idx: np.ndarray, name: str, names: GatherNames) -> Port:
    """A 0/1 selection matrix along the axis (float, or quantized weights of scale 1 that keep
    the input's quantization: each output is one input times 1)."""
    n = x.info.shape[axis]
    if len(idx) * n > MAX_MATRIX:
        raise Unsupported(f"a {len(idx)}x{n} selection matrix is too large")
    sel = np.zeros((len(idx), n), np.float32)
    sel[np.arange(len(idx)), idx] = 1.0
    quant = None
    if x.info.dtype.is_quantized:
        sel = ConstTensor(sel.astype(np.uint8), TensorInfo(sel.shape, DataType.QuantisedAsymm8, 1.0, 0))
        quant = (x.info.scale, x.info.offset)
    nb.report.decomposition("constant gather", "StridedSlices and Merger, or a FullyConnected "
                            "with a 0/1 selection matrix")
    return fc_along_axis(nb, x, axis, sel, None, name, back_name=f"{name}_back",
                         fc_name=f"{name}{names.select}", names=names.rows, quant=quant)
