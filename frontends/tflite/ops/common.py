"""Helpers that several TFLite operator families share (kept here, not in one family's module,
so that the families import no private names of each other and no module imports in a circle)."""
from __future__ import annotations

import math

import numpy as np

from armnn_import.ir.types import ConstTensor, DataType, TensorInfo
from armnn_import.lowering import Unsupported

from .. import quant as Q

MAX_FOLDED = 1 << 26  # elements of a constant computed at conversion time


def fold_size(shape, what):
    """Refuse a constant result too large to compute at conversion time (before allocating it)."""
    n = math.prod(int(d) for d in shape)
    if n > MAX_FOLDED:
        raise Unsupported(f"{what} would make a constant of {n:,} elements (at most {MAX_FOLDED:,})")


def scalar_shape(shape):
    return tuple(shape) or (1,)


def float_only(op, ctx):
    if ctx.is_quant(op.inputs[0]) or ctx.is_quant(op.outputs[0]):
        return "quantized form has no exact lowering (it needs float intermediates)"
    return None


def quant_constant(ctx, like, values, quant, name):
    """A quantized constant tensor without a Constant layer: one element of `like`
    through a FullyConnected whose weights are zero and whose Signed32 bias holds
    the values at 1/1024 of the output step, so they encode exactly."""
    nb = ctx.b
    values = Q.finite(np.asarray(values, np.float64), f"constant {name!r}")
    scale, offset = quant if quant is not None else Q.covering_quant(float(values.min()), float(values.max()))
    one = nb.reshape(nb.slice(like, [0] * like.info.rank, [1] * like.info.rank, [1] * like.info.rank,
                              f"{name}_pick"), (1, 1), f"{name}_flat")
    w_scale = float(np.float32(scale / 1024.0 / like.info.scale))
    w = ConstTensor(np.zeros((values.size, 1), np.uint8),
                    TensorInfo((values.size, 1), DataType.QuantisedAsymm8, w_scale, 0))
    bias = Q.bias_int32(values.reshape(-1), float(np.float32(like.info.scale * w_scale)))
    y = nb.fully_connected(one, w, bias, name, quant=(scale, offset))
    ctx.report.decomposition("quantized constant", "FullyConnected with zero weights and the values as bias")
    return nb.reshape(y, values.shape or (1,), f"{name}_shape")


def all_const(ctx, op, inputs=None) -> bool:
    """Whether every present input of `op` (or `inputs`) is a constant."""
    ins = [i for i in (op.inputs if inputs is None else inputs) if i >= 0]
    return all(ctx.is_const(i) for i in ins)


def raw_value(ctx, i):
    """A constant's values, folded or from the file: ints stay ints, quantized data is dequantized."""
    if i in ctx.folded:
        return ctx.folded[i]
    t = ctx.t(i)
    return ctx.const(i) if t.quant is not None or t.data.dtype.kind == "f" else t.data


def axis_index(a: int, rank: int) -> int:
    """Axis `a` (negative from the end) of a rank-`rank` tensor, in [0, rank)."""
    if not -rank <= a < rank:
        raise Unsupported(f"axis {a} out of range for rank {rank}")
    return a % rank
