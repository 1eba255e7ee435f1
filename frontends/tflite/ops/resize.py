"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR, every align_corners /
half_pixel_centers combination. Arm NN's ResizeBilinear (in this format) only
maps out -> out * in/out; other mappings become constant interpolation
matrices (FullyConnected along W and H) or, for nearest, exact row/column
selections."""
from __future__ import annotations

import numpy as np

from armnn_import.ir import descriptors as D
from armnn_import.executor.structural import resize_matrix
from armnn_import.ir.types import ConstTensor, DataLayout, DataType, LayerType, ResizeMethod, TensorInfo
from armnn_import.lowering.matrix import fc_last

from . import REGISTRY
from .gather import gather_const

MAX_SIZE = 1 << 16     # output rows or columns
MAX_MATRIX = 1 << 24   # elements of an interpolation matrix


def _scale(n_in: int, n_out: int, align: bool) -> np.float32:
    if align and n_out > 1:
        return np.float32(n_in - 1) / np.float32(n_out - 1)
    return np.float32(n_in) / np.float32(n_out)


def bilinear_matrix(n_in: int, n_out: int, align: bool, half: bool) -> np.ndarray:
    """[n_out, n_in] weights of TFLite's bilinear interpolation along one axis
    (reference kernel arithmetic, in float32)."""
    s = _scale(n_in, n_out, align)
    o = np.arange(n_out, dtype=np.float32)
    v = ((o + np.float32(0.5)) * s - np.float32(0.5)) if half else o * s
    lo = np.maximum(np.floor(v), 0).astype(np.int64)
    hi = np.minimum(np.ceil(v), n_in - 1).astype(np.int64)
    frac = (v - lo).astype(np.float32)
    m = np.zeros((n_out, n_in), np.float32)
    np.add.at(m, (np.arange(n_out), lo), np.float32(1) - frac)
    np.add.at(m, (np.arange(n_out), hi), frac)
    return m


def nearest_index(n_in: int, n_out: int, align: bool, half: bool) -> np.ndarray:
    s = _scale(n_in, n_out, align)
    v = (np.arange(n_out, dtype=np.float32) + np.float32(0.5 if half else 0.0)) * s
    idx = np.floor(v + np.float32(0.5)) if align else np.floor(v)  # TfLiteRound: half away from zero
    idx = np.minimum(idx.astype(np.int64), n_in - 1)
    return np.maximum(idx, 0) if half else idx


def _direct(nb, method, size_in, size_out, align: bool, half: bool) -> bool:
    """Whether one Resize layer (the 20.08 format on) computes what LiteRT does: Arm NN's Resize.cpp
    interpolation along H and W (executor/structural.py) equals the reference kernel's, index for
    index (nearest) or weight for weight (bilinear)."""
    if not nb.target.has(LayerType.Resize) or (align and half):  # (Arm NN takes at most one flag)
        return False
    for n_in, n_out in zip(size_in, size_out):
        arm = resize_matrix(n_in, n_out, method, align, half)
        if method == ResizeMethod.NearestNeighbor:
            want = np.zeros((n_out, n_in))
            want[np.arange(n_out), nearest_index(n_in, n_out, align, half)] = 1.0
            if not np.array_equal(arm, want):
                return False
        elif not np.allclose(arm, bilinear_matrix(n_in, n_out, align, half), atol=1e-6):
            return False
    return True


def _weights(ctx, m: np.ndarray, quantized: bool, name: str):
    if not quantized:
        return m
    # exact when the weights are multiples of 1/L for some L <= 255
    for den in range(1, 256):
        if np.allclose(m * den, np.round(m * den), atol=1e-4):
            return ConstTensor(np.round(m * den).astype(np.uint8),
                               TensorInfo(m.shape, DataType.QuantisedAsymm8, 1.0 / den, 0))
    from .. import quant as Q
    q, scale, offset = Q.requantize(m)
    ctx.report.quantization.append({"layer": name, "decision": "interpolation weights quantized",
                                    "scale": scale, "offset": offset,
                                    "worst_error": Q.worst_error(m, q, scale, offset, 0)})
    return ConstTensor(q, TensorInfo(m.shape, DataType.QuantisedAsymm8, scale, offset))


def _along_last(ctx, x, m, name):
    """y[..., o] = sum_i m[o, i] x[..., i] with a FullyConnected."""
    q = (x.info.scale, x.info.offset) if x.info.dtype.is_quantized else None
    return fc_last(ctx.b, x, _weights(ctx, m, q is not None, name), None, name, names=("_rows", "_unrows"), quant=q)


def _size(ctx, op):
    return [int(v) for v in ctx.ints(op.inputs[1]).reshape(-1)]


def _check(op, ctx):
    if len(ctx.shape(op.inputs[0])) != 4:
        return "input is not 4-D"
    if not ctx.is_const(op.inputs[1]):
        return "the output size is not a constant"
    size = _size(ctx, op)
    if len(size) != 2 or min(size) < 1:
        return f"output size {size}"
    _, h, w, _ = ctx.shape(op.inputs[0])
    # the lowerings build [out, in] matrices and index lists along each axis
    if max(size) > MAX_SIZE or max(size[0] * h, size[1] * w) > MAX_MATRIX:
        return f"output size {size} is too large"
    return None


@REGISTRY.register("RESIZE_BILINEAR", since=1, until=4, inputs=2, check=_check,
                   layers=("ResizeBilinear", "FullyConnected", "Permute", "Reshape", "Resize"),
                   notes="ResizeBilinear when align_corners and half_pixel_centers are false, "
                         "else interpolation matrices along W and H; from the 20.08 format on one "
                         "Resize with align_corners / half_pixel_centers")
def resize_bilinear(ctx, op):
    nb, name, q = ctx.b, ctx.name(op), ctx.out_quant(op)
    x = ctx.port(op.inputs[0])
    n, h, w, c = x.info.shape
    oh, ow = _size(ctx, op)
    align, half = bool(op.options.get("align_corners")), bool(op.options.get("half_pixel_centers"))
    if (oh, ow) == (h, w):
        return x
    if not align and not half:
        y = nb.add(LayerType.ResizeBilinear, name, [x], D.ResizeBilinearDescriptor(ow, oh, DataLayout.NHWC),
                   quant=q)
        return y
    if _direct(nb, ResizeMethod.Bilinear, (h, w), (oh, ow), align, half):
        return nb.resize(x, (oh, ow), ResizeMethod.Bilinear, name, layout=DataLayout.NHWC,
                         align_corners=align, half_pixel_centers=half, quant=q)
    ctx.report.decomposition("RESIZE_BILINEAR", "FullyConnected with constant interpolation matrices "
                             "along W and H (align_corners / half_pixel_centers)")
    y = x
    if ow != w:
        y = nb.permute(y, (0, 1, 3, 2), f"{name}_w_last")           # N H C W
        y = _along_last(ctx, y, bilinear_matrix(w, ow, align, half), f"{name}_w")
        y = nb.permute(y, (0, 1, 3, 2), f"{name}_w_back")           # N H W' C
    if oh != h:
        y = nb.permute(y, (0, 2, 3, 1), f"{name}_h_last")           # N W C H
        y = _along_last(ctx, y, bilinear_matrix(h, oh, align, half), f"{name}_h")
        y = nb.permute(y, (0, 3, 1, 2), f"{name}_h_back")           # N H' W C
    return y


@REGISTRY.register("RESIZE_NEAREST_NEIGHBOR", since=1, until=4, inputs=2, check=_check,
                   layers=("StridedSlice", "Merger", "Reshape", "FullyConnected", "Resize"),
                   notes="exact row and column selection; from the 20.08 format on one Resize where "
                         "Arm NN's indices are LiteRT's")
def resize_nearest(ctx, op):
    name = ctx.name(op)
    x = ctx.port(op.inputs[0])
    _, h, w, _ = x.info.shape
    oh, ow = _size(ctx, op)
    align, half = bool(op.options.get("align_corners")), bool(op.options.get("half_pixel_centers"))
    q = ctx.out_quant(op)
    same_quant = q is None or q == (x.info.scale, x.info.offset)  # (LiteRT copies the bytes)
    same_quant = same_quant and x.info.dtype != DataType.Signed32  # (no Signed32 Resize in CpuRef)
    if same_quant and _direct(ctx.b, ResizeMethod.NearestNeighbor, (h, w), (oh, ow), align, half):
        return ctx.b.resize(x, (oh, ow), ResizeMethod.NearestNeighbor, name, layout=DataLayout.NHWC,
                            align_corners=align, half_pixel_centers=half, quant=q)
    y = gather_const(ctx, x, 1, nearest_index(h, oh, align, half), f"{name}_rows")
    y = gather_const(ctx, y, 2, nearest_index(w, ow, align, half), f"{name}_cols")
    ctx.report.decomposition("RESIZE_NEAREST_NEIGHBOR", "row and column selection (repeats by "
                             "concatenation, StridedSlices, or a 0/1 FullyConnected)")
    return y
