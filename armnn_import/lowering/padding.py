"""Padding geometry shared by the frontends."""
from __future__ import annotations


def same_pads(size: int, kernel: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """SAME padding of one spatial axis as (before, after): the output has ceil(size / stride)
    elements and the odd element of padding goes after (TensorFlow's SAME, ONNX's SAME_UPPER;
    SAME_LOWER is the same pair the other way round)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2
