"""Padding, tiling and broadcasting: PAD, PADV2, MIRROR_PAD, TILE, BROADCAST_TO (TILE and
BROADCAST_TO of a constant are evaluated at conversion time)."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.types import DataType, LayerType
from armnn_import.lowering import Unsupported
from armnn_import.lowering.builder import through_float_exactly
from armnn_import.lowering.padding import border_pad

from . import REGISTRY
from .common import fold_size as _fold_size
from .common import raw_value as _value
from .space import s2b as _s2b

MAX_COPIES = 4096  # Merger inputs made by TILE


def _pads(ctx, op, rank):
    p = ctx.ints(op.inputs[1]).reshape(-1, 2)
    if p.shape[0] != rank or (p < 0).any():
        raise Unsupported(f"paddings {p.tolist()} for a rank-{rank} input")
    return [(int(a), int(b)) for a, b in p]


@REGISTRY.register("PAD", since=1, until=4, inputs=2, layers=("Pad", "SpaceToBatchNd"))
@REGISTRY.register("PADV2", since=1, until=4, inputs=2, layers=("Pad", "Activation", "Subtraction"),
                   notes="a non-zero value as Linear(-v), Pad, Linear(+v) in float; the value in the "
                         "Pad layer from the 20.08 format on")
def pad(ctx, op):
    nb, name = ctx.b, ctx.name(op)
    x = ctx.port(op.inputs[0])
    pads = _pads(ctx, op, x.info.rank)
    if x.info.rank > 4:
        raise Unsupported("Arm NN's Pad takes at most 4-D input")
    value = 0.0
    if len(op.inputs) > 2 and op.inputs[2] >= 0:
        value = float(ctx.const(op.inputs[2]).reshape(-1)[0])
    if nb.target.at_least("20.08") and (value != 0.0 or x.info.dtype.is_quantized and x.info.offset):
        return nb.pad(x, pads, name, value=value)  # PadDescriptor.padValue (a level if quantized)
    if value == 0.0:
        return quant_pad(ctx, x, pads, name) if x.info.dtype.is_quantized and x.info.offset \
            else nb.pad(x, pads, name)
    ctx.report.decomposition("PADV2", "Linear(x - v), Pad with zeros, Linear(+ v)")
    if x.info.dtype != DataType.Float32:
        # the same bytes read with the pad value's level as offset hold x - v: pad those with 0
        scale, offset = x.info.scale, x.info.offset
        level = value / scale + offset
        if abs(level - round(level)) > 1e-3 or not 0 <= round(level) <= 255:
            raise Unsupported("a pad value that the quantized tensor cannot hold")
        y = nb.linear(x, 1.0, -value, f"{name}_shift", quant=(scale, int(round(level))))
        y = quant_pad(ctx, y, pads, f"{name}_pad") if round(level) else nb.pad(y, pads, f"{name}_pad")
        return nb.linear(y, 1.0, value, name, quant=(scale, offset))
    y = nb.pad(nb.linear(x, 1.0, -value, f"{name}_shift"), pads, f"{name}_pad")
    return nb.linear(y, 1.0, value, name)


def quant_pad(ctx, x, pads, name):
    """Zero padding of a quantized tensor whose offset is not 0: Arm NN 20.08's
    Pad writes the raw byte 0, which is not the value 0 there. SpaceToBatchNd
    with block 1 pads H and W with a true 0; other axes pad the positive and
    negative parts separately (each quantized with offset 0, exactly) and
    subtract them."""
    nb = ctx.b
    q = (x.info.scale, x.info.offset)
    if x.info.rank == 4 and pads[0] == (0, 0) and pads[3] == (0, 0):
        ctx.report.decomposition("PAD (quantized)", "SpaceToBatchNd with block 1x1: pads with the zero point")
        return _s2b(nb, x, (1, 1), (*pads[1], *pads[2]), name)
    ctx.report.decomposition("PAD (quantized, non-spatial)", "max(x, 0) and max(-x, 0) quantized with offset 0, "
                             "each zero-padded, then subtracted")
    pos = nb.clamp(x, 0.0, np.inf, f"{name}_pos", quant=(q[0], 0)) if q[1] < 255 else None
    neg = nb.clamp(nb.linear(x, -1.0, 0.0, f"{name}_negate", quant=(q[0], 255 - q[1])), 0.0, np.inf,
                   f"{name}_neg", quant=(q[0], 0))
    negp = nb.pad(neg, pads, f"{name}_neg_pad")
    if pos is None:
        return nb.linear(negp, -1.0, 0.0, name, quant=q)
    return nb.binary(LayerType.Subtraction, nb.pad(pos, pads, f"{name}_pos_pad"), negp, name, quant=q)


@REGISTRY.register("MIRROR_PAD", since=1, until=3, inputs=2, layers=("StridedSlice", "Merger", "Pad"),
                   notes="reversed StridedSlices concatenated per axis; one Pad from the 23.08 format on")
def mirror_pad(ctx, op):
    x = ctx.port(op.inputs[0])
    mode = "symmetric" if op.options.get("mode", 0) == 1 else "reflect"
    return border_pad(ctx.b, x, _pads(ctx, op, x.info.rank), mode, ctx.name(op))


@REGISTRY.register("TILE", since=1, until=3, inputs=2, foldable=True, layers=("Merger", "Tile"))
def tile(ctx, op):
    mult = [int(v) for v in ctx.ints(op.inputs[1]).reshape(-1)]
    if any(m < 0 for m in mult):
        raise Unsupported(f"negative multiples {mult}")
    if ctx.is_const(op.inputs[0]):
        v = np.asarray(_value(ctx, op.inputs[0]))
        if len(mult) != v.ndim:
            raise Unsupported(f"multiples {mult} for a rank-{v.ndim} constant")
        _fold_size(np.multiply(v.shape, mult, dtype=object), "TILE")
        return np.tile(v, mult)
    y = ctx.port(op.inputs[0])
    if ctx.b.g.target.has(LayerType.Tile) and len(mult) == y.info.rank and all(m >= 1 for m in mult) \
            and through_float_exactly(y.info):
        return ctx.b.tile(y, mult, ctx.name(op))
    if len(mult) != y.info.rank or any(m < 1 for m in mult) or sum(mult) > MAX_COPIES:
        raise Unsupported(f"multiples {mult} for a rank-{y.info.rank} input")
    for axis, m in enumerate(mult):
        if m > 1:
            y = ctx.b.concat([y] * m, axis, f"{ctx.name(op)}_{axis}")
    return y


@REGISTRY.register("BROADCAST_TO", since=1, until=3, inputs=2, foldable=True, layers=("Reshape", "Merger"),
                   notes="copies concatenated along the broadcast axes")
def broadcast_to(ctx, op):
    target = [int(v) for v in ctx.ints(op.inputs[1]).reshape(-1)]
    if any(n < 0 for n in target):
        raise Unsupported(f"cannot broadcast to {target}")
    if ctx.is_const(op.inputs[0]):
        _fold_size(target, "BROADCAST_TO")
        return np.broadcast_to(_value(ctx, op.inputs[0]), target).copy()
    y = ctx.port(op.inputs[0])
    shape = y.info.shape
    if len(shape) > len(target) or np.broadcast_shapes(shape, tuple(target)) != tuple(target):
        raise Unsupported(f"cannot broadcast {list(shape)} to {target}")
    if sum(target) > MAX_COPIES:
        raise Unsupported(f"broadcast to {target} needs too many copies")
    y = ctx.b.reshape(y, (1,) * (len(target) - len(shape)) + tuple(shape), f"{ctx.name(op)}_rank")
    for axis, n in enumerate(target):
        if y.info.shape[axis] != n:
            y = ctx.b.concat([y] * n, axis, f"{ctx.name(op)}_{axis}", quant=ctx.out_quant(op))
    return y


@REGISTRY.register("FILL", since=1, until=4, inputs=2, foldable=True, types="same", data_input=1,
                   layers=("Reshape", "Merger"),
                   notes="constant dims; a run-time scalar value is broadcast by copies (as BROADCAST_TO)")
def fill(ctx, op):
    dims_i, vi = op.inputs[:2]
    if not ctx.is_const(dims_i):
        raise Unsupported("the output shape (dims) is computed at run time", code="dynamic-shape")
    dims = [int(v) for v in ctx.ints(dims_i).reshape(-1)]
    if any(n <= 0 for n in dims):
        raise Unsupported(f"cannot fill a tensor of shape {dims}")
    if ctx.is_const(vi):
        _fold_size(dims, "FILL")
        return np.full(dims, np.asarray(_value(ctx, vi)).reshape(-1)[0])
    y = ctx.port(vi)
    if y.info.num_elements != 1 or sum(dims) > MAX_COPIES:
        raise Unsupported(f"filling {dims} from a {list(y.info.shape)} value")
    y = ctx.b.reshape(y, (1,) * len(dims), f"{ctx.name(op)}_rank")
    for axis, n in enumerate(dims):
        if n != 1:
            y = ctx.b.concat([y] * n, axis, f"{ctx.name(op)}_{axis}", quant=ctx.out_quant(op))
    return y
