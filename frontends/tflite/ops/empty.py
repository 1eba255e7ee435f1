"""Operators whose TFLite output has no elements.

A VALID pooling window larger than its input gives TFLite a zero-size output
(LiteRT: a [1, 2] filter over a [1, 3, 1, 2] input gives [1, 3, 0, 2]), whatever the
input holds. That output is an empty constant: it is folded, so a CONCATENATION
that it feeds simply leaves it out, and anything else that would need it at run time
is refused (Arm NN tensors have no zero-size dimension)."""
from __future__ import annotations

import numpy as np


def pool_out_size(size: int, k: int, stride: int, padding: int) -> int:
    """TFLite's ComputeOutSize for pooling (dilation 1): SAME 0, VALID 1."""
    return -(-size // stride) if padding == 0 else max((size + stride - k) // stride, 0)


def empty_pool_or(convert):
    """Wrap a pooling converter: an empty output folds to an empty constant."""
    def wrapped(ctx, op):
        o = op.options
        n, h, w, c = ctx.shape(op.inputs[0])
        oh = pool_out_size(h, o["filter_height"], o["stride_h"], o["padding"])
        ow = pool_out_size(w, o["filter_width"], o["stride_w"], o["padding"])
        if oh and ow:
            return convert(ctx, op)
        ctx.report.decomposition(f"{op.op} with no output element",
                                 "a VALID window larger than the input: an empty constant, as in TFLite")
        return np.zeros((n, oh, ow, c), np.float32)
    return wrapped
