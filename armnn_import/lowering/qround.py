"""Quantized results rounded as the source runtimes round them. Arm NN's reference
workloads decode 8-bit values to float, compute, and round half away from the zero
point; LiteRT and onnxruntime round some results in integers their own way. Reading a
tensor's bytes with another quantization (relabel) moves where Arm NN rounds, exactly."""
from __future__ import annotations

import numpy as np

from ..ir.types import DataLayout, LayerType, TensorInfo
from .pooling import mean_as_pool


def relabel(nb, x, quant: tuple[float, int], name: str, perm=None):
    """The same bytes read with another quantization: an identity Permute (Arm NN copies its
    bytes, keeps the output TensorInfo of the file and checks only the data type; a Reshape
    takes its input's TensorInfo when deserialized, a StridedSlice must keep the quantization).
    Arm NN's optimizer squashes sibling Permutes of one descriptor, whatever their outputs: two
    relabelings of one tensor need different `perm`s (dim_mappings)."""
    from ..ir import descriptors as D
    info = x.info
    if (info.scale, info.offset) == (float(np.float32(quant[0])), quant[1]) and perm is None:
        return x
    perm = tuple(range(info.rank)) if perm is None else tuple(perm)
    return nb.add(LayerType.Permute, name, [x], D.PermuteDescriptor(perm),
                  outputs=[TensorInfo(tuple(info.shape[perm.index(i)] for i in range(info.rank)), info.dtype,
                                      *quant)])


def _mean(nb, x, axes, name: str, quant):
    """A kept mean: from 23.08 an Average Pooling2d (the same float sum, quotient and encoding as
    the Mean on its CpuRef: lowering/pooling.py), else a Mean."""
    y = mean_as_pool(nb, x, axes, True, name, layout=DataLayout.NCHW, quant=quant, requant=True)
    return y if y is not None else nb.mean(x, axes, True, name, quant=quant)


def mean_half_even(nb, x, axes, name: str):
    """The mean over `axes` (kept) of a QuantisedAsymm8 tensor into its own quantization,
    rounded half to even from the zero point as onnxruntime rounds (Arm NN's Mean rounds half
    away from it). On the raw levels q, all exact with scale 1: u and d, the mean rounded half
    up and half down (Means of the bytes read with zero point 0 and 255), differ by one at a
    tie, where the result is d + (u - d) * [d - zero point is odd]; the parity of d is
    ceil(d/2) - floor(d/2), with ceil(d/2) a Linear(0.5) (half away from 0) and floor(d/2) =
    d - ceil(d/2). From 23.08 the two means are Average Pooling2ds (_mean)."""
    zp, one = x.info.offset, (1.0, 0)
    swap = list(range(x.info.rank))  # the second relabeling swaps the last two (averaged) axes
    swap[-2:] = swap[-1], swap[-2]
    u = _mean(nb, relabel(nb, x, one, f"{name}_raw"), axes, f"{name}_up", one)
    d = relabel(nb, _mean(nb, relabel(nb, x, (1.0, 255), f"{name}_raw255", swap), axes, f"{name}_down",
                          (1.0, 255)), one, f"{name}_down_raw")
    c = nb.linear(d, 0.5, 0.0, f"{name}_ceil_half", quant=one)
    f = nb.binary(LayerType.Subtraction, d, c, f"{name}_floor_half", quant=one)
    odd = nb.binary(LayerType.Subtraction, c, f, f"{name}_odd", quant=one)
    tie = nb.binary(LayerType.Subtraction, u, d, f"{name}_tie", quant=one)
    up = nb.binary(LayerType.Multiplication, tie, odd, f"{name}_tie_odd", quant=one)
    if zp % 2:  # the parity that counts is that of d - zp
        up = nb.binary(LayerType.Subtraction, tie, up, f"{name}_tie_even", quant=one)
    r = nb.binary(LayerType.Addition, d, up, f"{name}_even", quant=one)
    nb.report.decomposition("quantized mean rounded half to even", "Means of the raw levels rounded half up "
                            "and half down (identity Permutes relabel the bytes), and the even one chosen "
                            "at ties by Subtraction, Linear, Multiplication and Addition of 0/1 levels")
    return relabel(nb, r, (x.info.scale, zp), name)
