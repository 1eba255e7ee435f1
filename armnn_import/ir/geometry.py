"""Window and broadcast arithmetic shared by shape inference, the lowering and the executor."""
from __future__ import annotations

import math

from ..errors import GraphError
from .types import DataLayout, OutputShapeRounding


def hw_axes(layout: DataLayout) -> tuple[int, int, int]:
    """(channel, height, width) axes of a 4-D tensor in this layout."""
    return (1, 2, 3) if layout == DataLayout.NCHW else (3, 1, 2)


def conv_out_size(size: int, k: int, stride: int, lo: int, hi: int) -> int:
    return (size + lo + hi - k) // stride + 1


def pool_out_size(size: int, k: int, stride: int, lo: int, hi: int, rounding) -> int:
    div = (size + lo + hi - k) / stride
    out = 1 + (math.ceil(div) if rounding == OutputShapeRounding.Ceiling else math.floor(div))
    # Arm NN (like Caffe): the last window must start inside the input or its left padding.
    if (out - 1) * stride >= size + lo:
        out -= 1
    return out


def broadcast_shape(a: tuple, b: tuple, what: str) -> tuple:
    if len(a) != len(b):
        raise GraphError(f"{what}: inputs have ranks {len(a)} and {len(b)}; Arm NN needs equal ranks")
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise GraphError(f"{what}: shapes {a} and {b} do not broadcast")
        out.append(max(x, y))
    return tuple(out)


def strided_slice_range(desc, shape, axis):
    """(start, stop, size) for one axis: StridedSliceDescriptor::GetStartForAxis/GetStopForAxis."""
    big, low = 2 ** 31 - 1, -(2 ** 31)
    dim, stride = shape[axis], desc.stride[axis]
    start = desc.begin[axis]
    if desc.begin_mask & (1 << axis):
        start = low if stride > 0 else big
    if start < 0:
        start += dim
    start = max(0, min(start, dim - 1))
    if desc.shrink_axis_mask & (1 << axis):
        stop = start + 1
    else:
        stop = desc.end[axis]
        if desc.end_mask & (1 << axis):
            stop = big if stride > 0 else low
        if stop < 0:
            stop += dim
        stop = max(0, min(stop, dim)) if stride > 0 else max(-1, min(stop, dim - 1))
    size = ((stop - start) + stride - 1) // stride if stride > 0 else ((start - stop) - stride - 1) // -stride
    return start, stop, max(0, size)
