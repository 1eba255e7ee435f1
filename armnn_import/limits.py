"""Bounds checked before anything is allocated.

A model file declares shapes, types and byte counts; a hostile or corrupt one
can declare a 2^40-element tensor in a few bytes. Frontends call these checks
on the declared values before they create arrays, so such a file is refused
with a LoadError instead of exhausting memory. Element counts are computed
with Python integers, which cannot overflow.

    from armnn_import.limits import check_shape, check_tensor_bytes
    n = check_shape(dims, f"tensor {name!r}")
    check_tensor_bytes(dims, 4, len(raw), f"tensor {name!r}")

The defaults can be replaced for a whole process with set_limits(), or per
call with the `limits` argument.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass

from .errors import LoadError

GiB = 1 << 30


@dataclass(frozen=True)
class Limits:
    max_rank: int = 8                      # Arm NN tensors have at most 5 dimensions
    max_elements: int = 1 << 31            # per tensor
    max_constant_bytes: int = 4 * GiB      # all constant data of one model together
    max_file_bytes: int = 16 * GiB         # a model file (TFLite and external data can exceed 2 GiB)


_current = Limits()


def get_limits() -> Limits:
    return _current


def set_limits(limits: Limits) -> Limits:
    """Replace the process-wide limits; returns the previous ones."""
    global _current
    if not isinstance(limits, Limits):
        raise TypeError(f"expected a Limits, got {type(limits).__name__}")
    previous, _current = _current, limits
    return previous


def check_shape(shape, what: str, limits: Limits | None = None) -> int:
    """The number of elements of `shape`; LoadError if a dimension is negative
    or not an integer, the rank is too high or the count exceeds the limit."""
    lim = limits or _current
    try:
        dims = [operator.index(d) for d in shape]
    except TypeError:
        raise LoadError(f"{what}: shape {_show(shape)} has a dimension that is not an integer") from None
    if len(dims) > lim.max_rank:
        raise LoadError(f"{what}: rank {len(dims)} exceeds the limit of {lim.max_rank} dimensions")
    if any(d < 0 for d in dims):
        raise LoadError(f"{what}: shape {_show(dims)} has a negative dimension")
    if 0 in dims:
        return 0
    count = 1
    for d in dims:
        count *= d
        if count > lim.max_elements:
            raise LoadError(f"{what}: shape {_show(dims)} has {math.prod(dims):,} elements, over the "
                            f"limit of {lim.max_elements:,} per tensor")
    return count


def check_tensor_bytes(shape, itemsize: float, nbytes: int | None, what: str,
                       limits: Limits | None = None) -> int:
    """The byte size a tensor of `shape` and `itemsize` bytes per element
    needs (a fraction for packed sub-byte types, e.g. 0.5 for int4); LoadError
    if the shape is out of bounds or `nbytes` (the data actually present, or
    None if not known yet) disagrees with it."""
    count = check_shape(shape, what, limits)
    need = math.ceil(count * itemsize)
    if nbytes is not None and nbytes != need:
        raise LoadError(f"{what}: {nbytes:,} bytes of data, but shape {_show(shape)} needs {need:,} bytes")
    return need


def check_file_size(size: int, what: str, limits: Limits | None = None) -> None:
    lim = limits or _current
    if size > lim.max_file_bytes:
        raise LoadError(f"{what}: {size:,} bytes, over the limit of {lim.max_file_bytes:,} bytes")


class ConstantBudget:
    """Running total of a model's constant bytes, against max_constant_bytes."""

    def __init__(self, limits: Limits | None = None):
        self.limits = limits or _current
        self.total = 0

    def add(self, nbytes: int, what: str) -> None:
        self.total += int(nbytes)
        if self.total > self.limits.max_constant_bytes:
            raise LoadError(f"{what}: the model's constants reach {self.total:,} bytes, over the limit of "
                            f"{self.limits.max_constant_bytes:,} bytes")


def check_network(graph, limits: Limits | None = None) -> None:
    """Every tensor of an IR graph within the limits: each layer's outputs
    (shapes computed by a frontend from constants, e.g. a Tile or Resize
    size, never went through check_shape) and the constants all together.
    Meant to run right after the frontend, before the passes (constant
    folding allocates the tensors it computes)."""
    budget = ConstantBudget(limits)
    lim = budget.limits
    max_rank, max_elements, max_bytes = lim.max_rank, lim.max_elements, lim.max_constant_bytes
    prod = math.prod
    for layer in graph.layers:
        for i, info in enumerate(layer.outputs):
            shape = info.shape
            n = prod(shape)  # (within the limits, as nearly every tensor is: no message is built)
            if type(n) is not int or n > max_elements or len(shape) > max_rank or (shape and min(shape) < 0):
                check_shape(shape, f"layer {layer.name!r} ({layer.type.name}) output {i}", limits)
        for key, t in layer.tensors.items():
            nbytes = t.stored.nbytes
            if budget.total + nbytes > max_bytes:
                budget.add(nbytes, f"layer {layer.name!r} {key}")  # (raises)
            budget.total += nbytes


def _show(shape) -> str:
    s = list(shape) if not isinstance(shape, (str, bytes)) else shape
    text = str(s)
    return text if len(text) <= 80 else text[:77] + "..."
