"""Copies of a tensor joined along an axis (Tile, Expand, edge padding, nearest upsampling)."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Port
from ..ir.types import LayerType
from .builder import NetBuilder


def repeat(nb: NetBuilder, x: Port, axis: int, n: int, name: str) -> Port:
    """numpy.concatenate([x] * n, axis): one Merger of the copies up to 8, else by doubling
    (Mergers of 2, named "{name}_x2", "{name}_x4", ...) so that no Merger has more than
    log2(n) + 1 inputs."""
    if n == 1:
        return x
    if n <= 8:
        return nb.concat([x] * n, axis, name)
    parts, p, k, i = [], x, n, 0
    while k:
        if k & 1:
            parts.append(p)
        k >>= 1
        if k:
            p = nb.concat([p, p], axis, f"{name}_x{2 ** (i + 1)}")
            i += 1
    return nb.concat(parts, axis, name)


def broadcast_int32(nb, x, shape, name: str):
    """A Signed32 x broadcast to shape (same rank) as x + 0: CpuRef 20.08 concatenates no
    Signed32 tensor, but adds them exactly, with broadcasting."""
    zeros = nb.constant_layer(np.zeros(shape, np.int32), f"{name}_zeros")
    return nb.binary(LayerType.Addition, x, zeros, f"{name}_broadcast")
