"""Grid sampling (linear, nearest or cubic; zeros, border or reflection padding; 2-D and 3-D,
cubic 2-D only) of a run-time grid, from the 23.08 format, whose Cast turns the computed positions
into int32 indices of a Gather.

The arithmetic is the reference kernel's (onnxruntime's grid_sample.cc, its generic path), one
operation a layer (Linear activations with a = 1 or b = 0, so that a fused multiply-add computes
the same):
    x = ((g + 1) * L - 1) / 2    (align_corners 0)      x = (g + 1) / 2 * (L - 1)    (1)
    linear:  x1 = floor(x),  d1 = x - x1,  d2 = (x1 + 1) - x,
             v = d2 * v[x1] + d1 * v[x1 + 1],  nested outermost axis first (z, y, then x)
    nearest: x rounded half to even (std::nearbyint), v = v[x]
    cubic:   x0 = floor(x) - 1, t = (x - x0) - 1, Keys' coefficients of |t| (alpha -0.75, in
             GsGetCubicCoeffs' order), each row of 4 pixels blended along x, then the rows along y
Zeros padding pads the image with one zero on each side of every spatial axis and clamps each
index to [-1, L] (then adds 1): a corner outside the image reads a zero, as the reference's
PixelAtGrid does, with no 0/1 mask (an infinite pixel beside the edge is not multiplied by 0).
Border padding clamps each index to [0, L - 1]. Reflection maps each integer index as GsReflect
does, which for integers is periodic: m = i mod P, then min(m, P - 1 - m) with P = 2L (align 0),
min(m, P - m) with P = 2(L - 1) (align 1). Indices are exact in float32 below 2^22.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..ir.graph import Port
from ..ir.types import ActivationFunction as AF
from ..ir.types import DataType
from ..ir.types import LayerType as L
from .builder import NetBuilder, Unsupported
from .round import round_half_even

MAX_ROWS = 1 << 24  # float32 holds every integer index below this


def grid_sample(nb: NetBuilder, x: Port, grid: Port, mode: str, padding: str, align: bool, name: str) -> Port:
    """x [N, C, *spatial] sampled at grid [N, *out, r] (r = len(spatial), component 0 = last axis)."""
    if not nb.target.has(L.Cast):
        raise Unsupported("sampling at run-time positions needs Arm NN's Cast layer (the 23.08 format)")
    r = x.info.rank - 2
    n, c, spatial, out = x.info.shape[0], x.info.shape[1], x.info.shape[2:], grid.info.shape[1:-1]
    if mode == "cubic" and r != 2:
        raise Unsupported("cubic sampling of a 3-D image (the reference kernel has it for 2-D only)")
    if padding == "reflection" and align and 1 in spatial:
        raise Unsupported("reflection padding of an axis of size 1 with align_corners (the reference divides "
                          "by zero)")
    pad = 1 if padding == "zeros" else 0
    padded = [d + 2 * pad for d in spatial]
    rows = n * math.prod(padded)
    if rows >= MAX_ROWS:
        raise Unsupported(f"an image of {rows} pixels (positions are computed in float32: below 2^24)")
    table = nb.transpose(x, (0,) + tuple(range(2, r + 2)) + (1,), f"{name}_channels_last")
    if pad:
        table = nb.pad(table, [(0, 0)] + [(1, 1)] * r + [(0, 0)], f"{name}_zeros")
    table = nb.reshape(table, (rows, c), f"{name}_table")
    m = n * math.prod(out)
    g = nb.reshape(grid, (m, r), f"{name}_grid")
    strides = [math.prod(padded[k + 1:]) for k in range(r)]
    batch = np.repeat(np.arange(n, dtype=np.float32) * math.prod(padded), m // n).reshape(m, 1)
    pos = [_position(nb, nb.take(g, 1, r - 1 - k, r - k, f"{name}_g{k}"), spatial[k], align, f"{name}_x{k}")
           for k in range(r)]  # per spatial axis, outermost first
    if mode == "nearest":
        pos = [round_half_even(nb, p, f"{name}_round{k}") for k, p in enumerate(pos)]
        corners = {(): [_index(nb, p, spatial[k], padding, align, f"{name}_i{k}") for k, p in enumerate(pos)]}
        return _finish(nb, _gather(nb, table, corners, strides, batch, n, name)[()], n, c, out, name)
    lo = [nb.add(L.Floor, f"{name}_floor{k}", [p]) for k, p in enumerate(pos)]
    if mode == "cubic":
        v = _cubic(nb, table, pos, lo, spatial, padding, align, strides, batch, n, name)
        return _finish(nb, v, n, c, out, name)
    hi = [nb.linear(f, 1.0, 1.0, f"{name}_next{k}") for k, f in enumerate(lo)]
    d1 = [nb.add(L.Subtraction, f"{name}_d1_{k}", [p, f]) for k, (p, f) in enumerate(zip(pos, lo))]
    d2 = [nb.add(L.Subtraction, f"{name}_d2_{k}", [h, p]) for k, (h, p) in enumerate(zip(hi, pos))]
    ends = [[_index(nb, e, spatial[k], padding, align, f"{name}_i{k}_{j}") for j, e in enumerate((lo[k], hi[k]))]
            for k in range(r)]
    corners = {bits: [ends[k][b] for k, b in enumerate(bits)] for bits in itertools.product((0, 1), repeat=r)}
    values = _gather(nb, table, corners, strides, batch, n, name)

    def blend(bits: tuple) -> Port:
        if len(bits) == r:
            return values[bits]
        k = len(bits)
        a = nb.binary(L.Multiplication, d2[k], blend(bits + (0,)), f"{name}_w{''.join(map(str, bits))}0")
        b = nb.binary(L.Multiplication, d1[k], blend(bits + (1,)), f"{name}_w{''.join(map(str, bits))}1")
        return nb.binary(L.Addition, a, b, f"{name}_v{''.join(map(str, bits))}")

    nb.report.decomposition("GridSample", "positions, Floor and weights in the reference kernel's order; "
                                          "one Gather of every corner by Cast int32 indices")
    return _finish(nb, blend(()), n, c, out, name)


def _position(nb: NetBuilder, g: Port, size: int, align: bool, name: str) -> Port:
    t = nb.linear(g, 1.0, 1.0, f"{name}_plus1")
    if align:
        return nb.linear(nb.linear(t, 0.5, 0.0, f"{name}_half"), float(size - 1), 0.0, name)
    return nb.linear(nb.linear(nb.linear(t, float(size), 0.0, f"{name}_scaled"), 1.0, -1.0, f"{name}_less1"),
                     0.5, 0.0, name)


def _index(nb: NetBuilder, p: Port, size: int, padding: str, align: bool, name: str) -> Port:
    """An integer-valued position mapped into the (padded) image, as a row offset along its axis."""
    if padding == "reflection":
        return _reflect(nb, p, size, align, name)
    pad = 1 if padding == "zeros" else 0
    clamped = nb.clamp(p, -pad, size - 1 + pad, f"{name}_clamp")
    return nb.linear(clamped, 1.0, float(pad), name) if pad else clamped


def _reflect(nb: NetBuilder, i: Port, size: int, align: bool, name: str) -> Port:
    """GsReflect of an integer index: m = i - P * floor((i + 1/2) / P) (the half keeps the quotient
    off every integer, so the rounded 1/P cannot move the floor), then the nearer of m and its
    mirror."""
    period = 2 * (size - 1) if align else 2 * size
    q = nb.add(L.Floor, f"{name}_turns", [nb.linear(nb.linear(i, 1.0, 0.5, f"{name}_half"), 1.0 / period, 0.0,
                                                        f"{name}_per")])
    m = nb.binary(L.Subtraction, i, nb.linear(q, float(period), 0.0, f"{name}_whole"), f"{name}_mod")
    mirror = nb.linear(m, -1.0, float(period - (0 if align else 1)), f"{name}_mirror")
    return nb.binary(L.Minimum, m, mirror, name)


def _keys(nb: NetBuilder, t: Port, name: str) -> list[Port]:
    """GsGetCubicCoeffs(t): Keys' cubic with alpha = -0.75, operation for operation."""
    a = -0.75
    x = nb.activation(t, AF.Abs, f"{name}_abs")

    def outer(u: Port, tag: str) -> Port:  # ((a * u - 5a) * u + 8a) * u - 4a
        v = nb.linear(nb.linear(u, a, 0.0, f"{name}_{tag}a"), 1.0, -5 * a, f"{name}_{tag}b")
        v = nb.linear(nb.binary(L.Multiplication, v, u, f"{name}_{tag}c"), 1.0, 8 * a, f"{name}_{tag}d")
        return nb.linear(nb.binary(L.Multiplication, v, u, f"{name}_{tag}e"), 1.0, -4 * a, f"{name}_{tag}")

    def inner(u: Port, tag: str) -> Port:  # ((a + 2) * u - (a + 3)) * u * u + 1
        v = nb.linear(nb.linear(u, a + 2, 0.0, f"{name}_{tag}a"), 1.0, -(a + 3), f"{name}_{tag}b")
        v = nb.binary(L.Multiplication, nb.binary(L.Multiplication, v, u, f"{name}_{tag}c"), u, f"{name}_{tag}d")
        return nb.linear(v, 1.0, 1.0, f"{name}_{tag}")

    return [outer(nb.linear(x, 1.0, 1.0, f"{name}_u0"), "c0"), inner(x, "c1"),
            inner(nb.linear(x, -1.0, 1.0, f"{name}_u2"), "c2"), outer(nb.linear(x, -1.0, 2.0, f"{name}_u3"), "c3")]


def _cubic(nb: NetBuilder, table: Port, pos, lo, spatial, padding, align, strides, batch, n, name) -> Port:
    """GsBicubicInterpolate over the 4 x 4 pixels from (floor(y) - 1, floor(x) - 1)."""
    first = [nb.linear(f, 1.0, -1.0, f"{name}_first{k}") for k, f in enumerate(lo)]
    coeffs = [_keys(nb, nb.linear(nb.binary(L.Subtraction, p, f, f"{name}_off{k}"), 1.0, -1.0, f"{name}_t{k}"),
                    f"{name}_k{k}") for k, (p, f) in enumerate(zip(pos, first))]
    ends = [[_index(nb, nb.linear(first[k], 1.0, float(j), f"{name}_at{k}_{j}") if j else first[k], spatial[k],
                    padding, align, f"{name}_i{k}_{j}") for j in range(4)] for k in range(2)]
    corners = {(h, w): [ends[0][h], ends[1][w]] for h in range(4) for w in range(4)}
    values = _gather(nb, table, corners, strides, batch, n, name)

    def blend(cs, parts, tag):  # c0 * p0 + c1 * p1 + c2 * p2 + c3 * p3, left to right
        acc = nb.binary(L.Multiplication, cs[0], parts[0], f"{name}_{tag}m0")
        for j in range(1, 4):
            acc = nb.binary(L.Addition, acc, nb.binary(L.Multiplication, cs[j], parts[j], f"{name}_{tag}m{j}"),
                            f"{name}_{tag}s{j}")
        return acc

    rows = [blend(coeffs[1], [values[(h, w)] for w in range(4)], f"row{h}") for h in range(4)]
    nb.report.decomposition("GridSample", "cubic: Keys' coefficients and the 16 pixels' sums in the reference "
                                          "kernel's order; one Gather of every pixel by Cast int32 indices")
    return blend(coeffs[0], rows, "col")


def _gather(nb: NetBuilder, table: Port, corners: dict, strides, batch, n: int, name: str) -> dict:
    """{corner: [m, C] pixels}: the corners' flat indices concatenated, one Cast and one Gather."""
    flats = []
    for bits, idx in corners.items():
        tag = "".join(map(str, bits))
        terms = [nb.linear(i, float(s), 0.0, f"{name}_row{tag}_{k}") if s != 1 else i
                 for k, (i, s) in enumerate(zip(idx, strides))]
        if n > 1:
            terms[0] = nb.binary_const(L.Addition, terms[0], batch, f"{name}_batch{tag}")
        flat = terms[0]
        for k, t in enumerate(terms[1:], 1):
            flat = nb.binary(L.Addition, flat, t, f"{name}_flat{tag}_{k}")
        flats.append(flat)
    m = flats[0].info.shape[0]
    allf = flats[0] if len(flats) == 1 else nb.concat(flats, 0, f"{name}_corners")
    idx = nb.cast(nb.reshape(allf, (m * len(flats),), f"{name}_rows"), DataType.Signed32, f"{name}_int")
    got = nb.gather(table, idx, 0, f"{name}_gather")
    parts = [got] if len(flats) == 1 else nb.split(got, 0, [m] * len(flats), f"{name}_corner")
    return dict(zip(corners, parts))


def _finish(nb: NetBuilder, v: Port, n: int, c: int, out, name: str) -> Port:
    y = nb.reshape(v, (n,) + tuple(out) + (c,), f"{name}_out")
    r = len(out)
    return nb.transpose(y, (0, r + 1) + tuple(range(1, r + 1)), f"{name}_channels_first")
