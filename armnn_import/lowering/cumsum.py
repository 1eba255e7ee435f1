"""Cumulative sums (ONNX CumSum) exactly. Arm NN has no scan layer.

float32: in onnxruntime's order, one Addition per step along the axis (out[i] = out[i-1] + x[i];
exclusive: out[0] = 0, out[i] = out[i-1] + x[i-1]; reverse: from the end), the slices
(StridedSlice) joined by one Merger/Concat. Any other grouping of the sums (a log-depth scan, a
FullyConnected of a triangular matrix: which also multiplies an inf by 0) rounds differently.
So a step costs two layers, and axes longer than MAX_STEPS are refused.

int32 (the 23.08 format: its Gather takes any axis, and CpuRef slices no Signed32 tensor): integer
sums do not depend on their order, so a log-depth scan: for s = 1, 2, 4, ..., y += y shifted by s
along the axis (a Gather of constant indices, times a constant 0/1 mask for the positions that
have no source), exact while the sums fit int32 (wrapping, as int32 onnxruntime does)."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Port
from ..ir.types import DataType
from ..ir.types import LayerType as L
from .builder import NetBuilder, Unsupported

MAX_STEPS = 1024


def cumsum(nb: NetBuilder, x: Port, axis: int, exclusive: bool, reverse: bool, name: str) -> Port:
    axis %= x.info.rank
    if x.info.dtype == DataType.Signed32:
        return _int_scan(nb, x, axis, exclusive, reverse, name)
    if x.info.dtype != DataType.Float32:
        raise Unsupported(f"a cumulative sum of {x.info.dtype.name} values (float32, and int32 from 23.08)")
    n = x.info.shape[axis]
    if n > MAX_STEPS:
        raise Unsupported(f"a cumulative sum over {n} elements (float sums are exact only in the reference "
                          f"runtime's order: one Addition per element, at most {MAX_STEPS})")
    nb.report.decomposition("CumSum", "float32: one Addition per step along the axis, in sequence order")
    order = list(range(n))[::-1] if reverse else list(range(n))
    xs = {j: nb.take(x, axis, j, j + 1, f"{name}_x{j}") for j in order}
    out, prev = {}, None
    for k, j in enumerate(order):
        if exclusive:
            out[j] = nb.fill_like(xs[j], 0.0, f"{name}_zero") if k == 0 else \
                nb.binary(L.Addition, prev, xs[order[k - 1]], f"{name}_s{j}")
        else:
            out[j] = xs[j] if k == 0 else nb.binary(L.Addition, prev, xs[j], f"{name}_s{j}")
        prev = out[j]
    return out[0] if n == 1 else nb.concat([out[j] for j in range(n)], axis, name)


def _int_scan(nb: NetBuilder, x: Port, axis: int, exclusive: bool, reverse: bool, name: str) -> Port:
    if not nb.target.at_least("23.08"):
        raise Unsupported("a cumulative sum of int32 values (a Gather along the axis and int32 arithmetic: "
                          "Arm NN 20.08 gathers Signed32 on axis 0 only and slices none)",
                          "convert with --target 23.08", code="needs-target")
    n, rank = x.info.shape[axis], x.info.rank
    nb.report.decomposition("CumSum", "int32: a log-depth scan of Gathers (constant indices) and Additions")
    pos = np.arange(n)
    shape = [1] * rank
    shape[axis] = n

    def shifted(y, s, tag):
        src = pos + s if reverse else pos - s
        ok = (src >= 0) & (src < n)
        idx = nb.constant_layer(np.clip(src, 0, n - 1).astype(np.int32), f"{name}_{tag}_idx")
        mask = nb.constant_layer(ok.astype(np.int32).reshape(shape), f"{name}_{tag}_mask")
        return nb.binary(L.Multiplication, nb.gather(y, idx, axis, f"{name}_{tag}_take"), mask, f"{name}_{tag}")

    y, s = x, 1
    while s < n:
        y = nb.binary(L.Addition, y, shifted(y, s, f"s{s}"), f"{name}_sum{s}")
        s *= 2
    return shifted(y, 1, "excl") if exclusive else y
