"""The sampling grid of an affine transform (ONNX AffineGrid), on every target: elementwise
layers that broadcast run-time theta against constant base coordinates.

onnxruntime's kernel (affine_grid.cc) computes, per output point and component i,
    (theta[i, 0] * x + theta[i, 1] * y) + theta[i, 2]                                  (2-D)
    (theta[i, 0] * x + (theta[i, 1] * y + theta[i, 2] * z)) + theta[i, 3]              (3-D)
with Eigen's LinSpaced(L, -1, 1) coordinates, times (L - 1) / L without align_corners. Here the
same sums run in the same order, one Multiplication or Addition each, and the coordinates are
Eigen's float values: -1 + k * (2 / (L - 1)), the last one exactly 1 (1 alone when L = 1),
checked bit for bit against onnxruntime for L up to 300 (and so are the sums' orders).
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Port
from ..ir.types import LayerType as L
from .builder import NetBuilder

F32 = np.float32


def base_coordinates(size: int, align: bool) -> np.ndarray:
    """Eigen's LinSpaced(size, -1, 1) in float32, scaled to the pixel centres unless align."""
    if size == 1:
        v = np.ones(1, F32)
    else:
        v = F32(-1) + np.arange(size, dtype=F32) * (F32(2) / F32(size - 1))
        v[-1] = F32(1)
    return v if align else (v * F32(size - 1)) / F32(size)


def affine_grid(nb: NetBuilder, theta: Port, size, align: bool, name: str) -> Port:
    """theta [N, r, r + 1] -> grid [N, *spatial, r] for size (N, C, *spatial), component 0 = x."""
    n, spatial = size[0], tuple(size[2:])
    r = len(spatial)
    flat = nb.reshape(theta, (n, r * (r + 1)), f"{name}_theta")
    ones = (1,) * r
    entry = {}
    for j in range(r * (r + 1)):
        entry[j] = nb.reshape(nb.take(flat, 1, j, j + 1, f"{name}_t{j}"), (n,) + ones, f"{name}_t{j}_b")
    axes = []  # component k varies along spatial axis r - 1 - k
    for k in range(r):
        shape = [1] * (r + 1)
        shape[r - k] = spatial[r - 1 - k]
        axes.append(nb.constant_layer(base_coordinates(spatial[r - 1 - k], align).reshape(shape), f"{name}_base{k}"))
    parts = []
    for i in range(r):
        terms = [nb.binary(L.Multiplication, entry[i * (r + 1) + k], axes[k], f"{name}_c{i}_{k}") for k in range(r)]
        if r == 3:  # (Eigen's 3-term sum: a + (b + c))
            terms = [terms[0], nb.binary(L.Addition, terms[1], terms[2], f"{name}_c{i}_yz")]
        acc = nb.binary(L.Addition, terms[0], terms[1], f"{name}_c{i}_sum")
        acc = nb.binary(L.Addition, acc, entry[i * (r + 1) + r], f"{name}_c{i}")  # (each axis's term has its size)
        parts.append(nb.reshape(acc, (n,) + spatial + (1,), f"{name}_c{i}_last"))
    nb.report.decomposition("AffineGrid", "theta times the base coordinates, in the reference kernel's order, by "
                                          "broadcasting Multiplication and Addition")
    return nb.concat(parts, r + 1, name)
