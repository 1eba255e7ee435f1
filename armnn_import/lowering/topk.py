"""The k largest (or smallest) values along the last axis and their indices, from the 20.08 format
on, exact, sorted, ties by the lower index first (ONNX TopK, TFLite TOPK_V2). Arm NN has no sort,
so each element's place in the sorted row is counted instead:

    rank[i] = #{j > i : x[j] > x[i]} + #{j < i : x[j] >= x[i]}     (largest; < and <= for smallest)

which is a permutation of 0..N-1 for a row of numbers. The counts are float 0/1 steps of
d = x[j] - x[i], whose sign is exact in IEEE arithmetic (it is 0 only for equal numbers);
x[j] >= x[i] is 1 - [x[i] > x[j]], so that two equal infinities (d = NaN, every step 0) tie.
A FullyConnected of ones sums them; output p's index is the ArgMax over i of [rank[i] == p] (the
one i with that rank), and its value a Gather of x at that index, so values keep x's data type.
A row of N costs N x N floats, refused past MAX_PAIRS; NaN has no place (the order is undefined).
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Port
from ..ir.types import ActivationFunction as AF
from ..ir.types import ArgMinMaxFunction, DataType, LayerType
from .builder import NetBuilder, Unsupported, inverse_perm
from .compare import int_mask
from .matrix import fc_last

MAX_PAIRS = 1 << 22  # rows x N x N float32 elements: 16 MiB per intermediate tensor


def fits(shape, k: int) -> str | None:
    """Why top_k cannot take a tensor of `shape` (axis last) and k, or None."""
    n = int(shape[-1]) if shape else 0
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    if not 1 <= k <= n:
        return f"k = {k} for an axis of {n} elements"
    if rows * n * n > MAX_PAIRS:
        return (f"TopK over {rows} row(s) of {n} compares every pair of a row ({rows * n * n:,} "
                f"elements; at most {MAX_PAIRS:,})")
    return None


def _step(nb: NetBuilder, f: Port, name: str) -> Port:
    """[t > 0] as float 0/1 from f = Floor(-t): clamp(-f, 0, 1) (0 for NaN; lowering/round.step)."""
    return nb.clamp(nb.linear(f, -1.0, 0.0, f"{name}_neg"), 0.0, 1.0, name)


def _order(nb: NetBuilder, x: Port, rows: int, n: int, largest: bool, name: str) -> tuple[Port, Port]:
    """Float 0/1 masks [r, i, j] of x[j] > x[i] and x[i] > x[j] (< for the smallest): steps of the
    float difference, or for int32 (the 23.08 format) compare.int_mask's, exact within +-2^30
    (the values' Gather within +-2^24: measured on 23.08's CpuRef)."""
    if x.info.dtype == DataType.Signed32 and nb.target.has(LayerType.Cast):
        col, row = nb.reshape(x, (rows, n, 1), f"{name}_col"), nb.reshape(x, (rows, 1, n), f"{name}_row")
        first, second = (row, col) if largest else (col, row)
        nb.report.warn(f"{name}: TopK of int32 values is exact for values within +-2^24 (Arm NN's Gather "
                       "moves int32 data through float32; the ranks hold within +-2^30)")
        return int_mask(nb, "gt", first, second, f"{name}_before"), int_mask(nb, "gt", second, first, f"{name}_behind")
    xf = x if x.info.dtype == DataType.Float32 else nb.add(LayerType.Dequantize, f"{name}_float", [x]) \
        if x.info.dtype.is_quantized else None
    if xf is None:
        raise Unsupported(f"TopK of a {x.info.dtype.name} tensor (its ranks are counted in float)",
                          "--target 23.08 takes int32 values" * (x.info.dtype == DataType.Signed32))
    col = nb.reshape(xf, (rows, n, 1), f"{name}_col")  # x[i]
    row = nb.reshape(xf, (rows, 1, n), f"{name}_row")  # x[j]
    d = nb.binary(LayerType.Subtraction, row, col, f"{name}_diff") if largest else \
        nb.binary(LayerType.Subtraction, col, row, f"{name}_diff")  # > 0 where j goes first
    after = _step(nb, nb.add(LayerType.Floor, f"{name}_floor_neg", [nb.linear(d, -1.0, 0.0, f"{name}_flip")]),
                  f"{name}_before")  # [d > 0]
    return after, _step(nb, nb.add(LayerType.Floor, f"{name}_floor", [d]), f"{name}_behind")  # [d < 0]


def top_k(nb: NetBuilder, x: Port, axis: int, k: int, largest: bool, name: str) -> tuple[Port, Port]:
    """(values, Signed32 indices) of the top k along `axis`: x's shape with k there."""
    rank = x.info.rank
    axis %= rank
    perm = [a for a in range(rank) if a != axis] + [axis]
    shape = tuple(x.info.shape[a] for a in perm)
    why = fits(shape, k)
    if why:
        raise Unsupported(why)
    x = nb.permute(x, perm, f"{name}_last")
    n, rows = shape[-1], int(np.prod(shape[:-1], dtype=np.int64))
    after, behind = _order(nb, x, rows, n, largest, name)  # [r, i, j]: j goes before i / i before j
    lower = np.tril(np.ones((n, n), np.float32), -1)[None]  # j < i
    m = nb.binary(LayerType.Addition,
                  nb.binary(LayerType.Multiplication, after, nb.constant_layer(1.0 - lower, f"{name}_upper"),
                            f"{name}_gt"),
                  nb.binary(LayerType.Multiplication, nb.linear(behind, -1.0, 1.0, f"{name}_not_behind"),
                            nb.constant_layer(lower, f"{name}_lower"), f"{name}_ge"), f"{name}_ahead")
    ranks = fc_last(nb, m, np.ones((1, n), np.float32), None, f"{name}_rank")  # [r, i, 1]
    e = nb.binary(LayerType.Subtraction, ranks, nb.constant_layer(
        np.arange(k, dtype=np.float32).reshape(1, 1, k), f"{name}_places"), f"{name}_offset")
    hit = nb.activation(nb.linear(nb.activation(e, AF.Abs, f"{name}_abs"), -1.0, 1.0, f"{name}_near"),
                        AF.ReLu, f"{name}_hit")     # [rank[i] == p], [r, i, p]
    idx = nb.arg_min_max(hit, 1, ArgMinMaxFunction.Max, f"{name}_index")  # [r, p]
    flat = idx
    if rows > 1:
        flat = nb.binary(LayerType.Addition, idx, nb.constant_layer(
            (np.arange(rows, dtype=np.int32) * n).reshape(rows, 1), f"{name}_row_start"), f"{name}_flat_index")
    values = nb.gather(nb.reshape(x, (rows * n,), f"{name}_flat"), flat, 0, f"{name}_gather")
    nb.report.decomposition("TopK", "each element's rank counted by pairwise steps and a FullyConnected; "
                            "ArgMax of [rank == p] gives index p, a Gather its value")
    out = tuple(shape[:-1]) + (k,)
    values = nb.permute(nb.reshape(values, out, f"{name}_values_last"), list(inverse_perm(perm)), f"{name}_values")
    if axis == rank - 1:
        return values, nb.reshape(idx, out, f"{name}_indices")
    # Arm NN 20.08 permutes no Signed32 tensor: the float hits are put in place, k at the axis and
    # the row's elements last, and a second ArgMax reads the indices there
    outer = shape[:-1]
    hit = nb.reshape(hit, outer + (n, k), f"{name}_hit_nd")  # axes: outer..., i, p
    place = list(range(axis)) + [rank] + list(range(axis, rank - 1)) + [rank - 1]
    return values, nb.arg_min_max(nb.permute(hit, place, f"{name}_hit_placed"), rank, ArgMinMaxFunction.Max,
                                  f"{name}_indices")
