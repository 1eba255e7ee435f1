"""Shape and data movement: reshapes, transposes, concatenation, slicing,
padding, tiling, gathering, depth/space/batch rearrangements. Operators whose
inputs are all constants are evaluated at conversion time."""
from __future__ import annotations

import math

import numpy as np

from armnn_import.ir import descriptors as D
from armnn_import.ir.types import DataLayout, DataType, LayerType
from armnn_import.lowering import Unsupported
from armnn_import.lowering.builder import through_float_exactly
from armnn_import.lowering.gather import gather_const as lowering_gather_const
from armnn_import.lowering.padding import border_pad

from .. import types as T
from . import REGISTRY
from .common import fold_size as _fold_size
from .common import quant_constant
from .common import scalar_shape as _scalar_shape

NHWC = DataLayout.NHWC
MAX_SLICES = 32  # above this many pieces a constant gather becomes a FullyConnected selection
MAX_COPIES = 4096  # Merger inputs made by TILE


def _all_const(ctx, op, inputs=None) -> bool:
    ins = [i for i in (op.inputs if inputs is None else inputs) if i >= 0]
    return all(ctx.is_const(i) for i in ins)


def _empty(ctx, i) -> bool:
    return 0 in tuple(np.shape(ctx.folded[i])) if i in ctx.folded else 0 in tuple(ctx.t(i).shape)


def _value(ctx, i):
    """A folded constant's raw values (ints stay ints)."""
    if i in ctx.folded:
        return ctx.folded[i]
    t = ctx.t(i)
    return ctx.const(i) if t.quant is not None or t.data.dtype.kind == "f" else t.data


def _axis(a: int, rank: int) -> int:
    if not -rank <= a < rank:
        raise Unsupported(f"axis {a} out of range for rank {rank}")
    return a % rank


def materialize(ctx, i, like):
    """A constant operand as a runtime tensor of like's type, without a Constant layer."""
    t = ctx.t(i)
    if like.info.dtype.is_quantized:
        q = ctx.qparams(i) if t.quant is not None and t.quant.per_tensor and t.type in (T.UINT8, T.INT8) else None
        return quant_constant(ctx, like, ctx.const(i), q, f"{t.name}_const")
    if like.info.dtype != DataType.Float32 or (t.type not in (T.FLOAT32, T.FLOAT16) and t.quant is None):
        raise Unsupported(f"constant tensor {t.name!r} would need a Constant layer here")
    return ctx.b.constant(like, ctx.const(i), f"{t.name}_const")


# -- reshapes ---------------------------------------------------------------------------------
def _reshape_target(ctx, op, total):
    if len(op.inputs) > 1 and op.inputs[1] >= 0 and ctx.is_const(op.inputs[1]):
        shape = [int(v) for v in ctx.ints(op.inputs[1]).reshape(-1)]
    elif len(op.options.get("new_shape", ())):
        shape = [int(v) for v in op.options["new_shape"]]
    else:
        shape = list(ctx.t(op.outputs[0]).shape)
    if shape.count(-1) > 1 or any(d < -1 for d in shape):
        raise Unsupported(f"reshape target {shape}")
    if -1 in shape:  # Python integers: numpy's products of file values can overflow
        rest = math.prod(d for d in shape if d != -1)
        if rest == 0 or total % rest:
            raise Unsupported(f"cannot reshape {total} elements to {shape}")
        shape[shape.index(-1)] = total // rest
    if math.prod(shape) != total:
        raise Unsupported(f"cannot reshape {total} elements to {shape}")
    return tuple(shape)


def _reshape_to(ctx, op, shape_fn):
    x = op.inputs[0]
    if ctx.is_const(x):
        v = np.asarray(_value(ctx, x))
        ctx.fold(op, 0, v.reshape(shape_fn(v.shape, v.size)))
        return
    p = ctx.port(x)
    ctx.set(op, 0, ctx.b.reshape(p, _scalar_shape(shape_fn(p.info.shape, p.info.num_elements)), ctx.name(op)))


@REGISTRY.register("RESHAPE", since=1, until=1, foldable=True, layers=("Reshape",))
def reshape(ctx, op):
    _reshape_to(ctx, op, lambda shape, total: _reshape_target(ctx, op, total))


@REGISTRY.register("SQUEEZE", since=1, until=2, foldable=True, layers=("Reshape",))
def squeeze(ctx, op):
    dims = [int(d) for d in op.options.get("squeeze_dims", ())]

    def target(shape, total):
        axes = {_axis(d, len(shape)) for d in dims} if dims else {i for i, n in enumerate(shape) if n == 1}
        return tuple(n for i, n in enumerate(shape) if i not in axes)
    _reshape_to(ctx, op, target)


@REGISTRY.register("EXPAND_DIMS", since=1, until=1, inputs=2, foldable=True, layers=("Reshape",))
def expand_dims(ctx, op):
    a = int(ctx.ints(op.inputs[1]).reshape(-1)[0])

    def target(shape, total):
        axis = _axis(a, len(shape) + 1)
        return tuple(shape[:axis]) + (1,) + tuple(shape[axis:])
    _reshape_to(ctx, op, target)


@REGISTRY.register("TRANSPOSE", since=1, until=6, inputs=2, foldable=True, layers=("Permute", "Transpose"),
                   notes="Transpose from the 20.08 format on")
def transpose(ctx, op):
    perm = [int(v) for v in ctx.ints(op.inputs[1]).reshape(-1)]
    if ctx.is_const(op.inputs[0]):
        ctx.fold(op, 0, np.transpose(_value(ctx, op.inputs[0]), perm))
        return
    x = ctx.port(op.inputs[0])
    if sorted(perm) != list(range(x.info.rank)):
        raise Unsupported(f"perm {perm} is not a permutation of rank {x.info.rank}")
    ctx.set(op, 0, ctx.b.permute(x, perm, ctx.name(op)))


@REGISTRY.register("SHAPE", since=1, until=1, types="free", layers=(), notes="evaluated at conversion time")
def shape_op(ctx, op):
    dtype = np.int64 if op.options.get("out_type") == 4 else np.int32
    ctx.fold(op, 0, np.array(ctx.shape(op.inputs[0]), dtype))


_CASTS = (DataType.Float32, DataType.Signed32)  # run-time casts of the 23.08 Cast layer


def _check_cast(op, ctx):
    if _all_const(ctx, op):
        return None
    if not ctx.b.g.target.has(LayerType.Cast):
        return ("a runtime type conversion; Arm NN's format has no Cast layer",
                "convert with --target 23.08 (float32 <-> int32)")
    if ctx.dtype_of(op.inputs[0]) not in _CASTS or ctx.dtype_of(op.outputs[0]) not in _CASTS:
        return "a runtime cast other than float32 <-> int32"
    return None


@REGISTRY.register("CAST", since=1, until=6, foldable=True, types="free", check=_check_cast, layers=("Cast",),
                   notes="constants; float32 <-> int32 at run time from --target 23.08 on")
def cast(ctx, op):
    from ..model import NP_TYPES
    if not _all_const(ctx, op):  # a Cast layer: float -> int truncates, as TFLite's static_cast
        ctx.set(op, 0, ctx.b.cast(ctx.port(op.inputs[0]), ctx.dtype_of(op.outputs[0]), ctx.name(op)))
        return
    ctx.fold(op, 0, np.asarray(_value(ctx, op.inputs[0])).astype(NP_TYPES[ctx.t(op.outputs[0]).type]))


# -- concatenation and splitting --------------------------------------------------------------
def _concat(ctx, op, ports_or_consts, axis, name, q):
    ref = next(p for p in ports_or_consts if not isinstance(p, int))
    ports = [materialize(ctx, p, ref) if isinstance(p, int) else p for p in ports_or_consts]
    return ctx.b.concat(ports, axis, name, quant=q)


@REGISTRY.register("CONCATENATION", since=1, until=4, foldable=True, types="all", layers=("Merger", "Concat"),
                   notes="Concat from the 20.08 format on")
def concatenation(ctx, op):
    ins = list(op.inputs)
    if _all_const(ctx, op):
        values = [np.asarray(_value(ctx, i)) for i in ins]
        ctx.fold(op, 0, np.concatenate(values, axis=_axis(op.options["axis"], values[0].ndim)))
        return
    # an empty constant (e.g. a pooling with no output element) adds nothing
    items = [i if ctx.is_const(i) else ctx.port(i) for i in ins if not (ctx.is_const(i) and _empty(ctx, i))]
    rank = len(ctx.shape(ins[0]))
    q = ctx.out_quant(op)
    y = _concat(ctx, op, items, _axis(op.options["axis"], rank), ctx.name(op), q)
    ctx.set(op, 0, ctx.fused(y, op.options.get("fused_activation_function", 0), ctx.name(op), q))


@REGISTRY.register("PACK", since=1, until=4, foldable=True, types="all", layers=("Reshape", "Merger", "Stack"),
                   notes="one Stack from the 20.08 format on")
def pack(ctx, op):
    axis = op.options.get("axis", 0)
    if _all_const(ctx, op):
        values = [np.asarray(_value(ctx, i)) for i in op.inputs]
        ctx.fold(op, 0, np.stack(values, axis=_axis(axis, values[0].ndim + 1)))
        return
    rank = len(ctx.shape(op.inputs[0])) + 1
    axis = _axis(axis, rank)
    if ctx.b.target.has(LayerType.Stack) and not any(ctx.is_const(i) for i in op.inputs) and len(op.inputs) > 1:
        ports = [ctx.port(i) for i in op.inputs]
        dt, rich = ports[0].info.dtype, ctx.b.target.at_least("23.08")
        # CpuRef's Stack types; 20.08's RefStackWorkload copies an axis-0 stack as float32 words
        if rank <= 5 and len({p.info.shape for p in ports}) == 1 and dt != DataType.Boolean \
                and (rich or (dt != DataType.Signed32 and (axis or dt == DataType.Float32))):
            ctx.set(op, 0, ctx.b.stack(ports, axis, ctx.name(op), quant=ctx.out_quant(op)))
            return
    items = []
    for k, i in enumerate(op.inputs):
        if ctx.is_const(i):
            items.append(i)
            continue
        p = ctx.port(i)
        shape = ctx.t(i).shape if not ctx.overridden else p.info.shape
        items.append(ctx.b.reshape(p, tuple(shape[:axis]) + (1,) + tuple(shape[axis:]), f"{ctx.name(op)}_in{k}"))
    if any(isinstance(it, int) for it in items):
        raise Unsupported("packing constants with computed tensors")
    ctx.set(op, 0, ctx.b.concat(items, axis, ctx.name(op), quant=ctx.out_quant(op)))


@REGISTRY.register("UNPACK", since=1, until=4, multi_output=True, layers=("StridedSlice", "Reshape"))
def unpack(ctx, op):
    x = ctx.port(op.inputs[0])
    axis = _axis(op.options.get("axis", 0), x.info.rank)
    if x.info.shape[axis] != len(op.outputs):
        raise Unsupported(f"unpacking {x.info.shape[axis]} slices into {len(op.outputs)} outputs")
    shape = x.info.shape[:axis] + x.info.shape[axis + 1:]
    parts = ctx.b.split(x, axis, [1] * x.info.shape[axis], ctx.name(op))
    for k, p in enumerate(parts):
        ctx.set(op, k, ctx.b.reshape(p, _scalar_shape(shape), ctx.name(op, k)))


def _split(ctx, op, x, axis, sizes):
    parts = ctx.b.split(x, axis, sizes, ctx.name(op))
    for k, p in enumerate(parts):
        ctx.set(op, k, p)


@REGISTRY.register("SPLIT", since=1, until=4, inputs=2, multi_output=True, data_input=1, layers=("StridedSlice",))
def split(ctx, op):
    x = ctx.port(op.inputs[1])
    axis = _axis(int(ctx.ints(op.inputs[0]).reshape(-1)[0]), x.info.rank)
    n = int(op.options["num_splits"])
    if n != len(op.outputs) or x.info.shape[axis] % n:
        raise Unsupported(f"{x.info.shape[axis]} does not split into {n} equal parts")
    _split(ctx, op, x, axis, [x.info.shape[axis] // n] * n)


@REGISTRY.register("SPLIT_V", since=1, until=2, inputs=3, multi_output=True, layers=("StridedSlice",))
def split_v(ctx, op):
    x = ctx.port(op.inputs[0])
    axis = _axis(int(ctx.ints(op.inputs[2]).reshape(-1)[0]), x.info.rank)
    sizes = [int(v) for v in ctx.ints(op.inputs[1]).reshape(-1)]
    dim = x.info.shape[axis]
    if sizes.count(-1) == 1:
        sizes[sizes.index(-1)] = dim - sum(s for s in sizes if s != -1)
    if sum(sizes) != dim or any(s < 0 for s in sizes) or len(sizes) != len(op.outputs):
        raise Unsupported(f"split sizes {sizes} do not add up to {dim}")
    _split(ctx, op, x, axis, sizes)


# -- slicing ----------------------------------------------------------------------------------
def _index_shape(shape, index) -> tuple[int, ...]:
    """numpy's result shape of x[index] without touching data."""
    dummy = np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), shape=shape, strides=[0] * len(shape))
    return dummy[index].shape


def _apply_index(ctx, op, index):
    """x[index] for a numpy basic index (ints, slices, None, Ellipsis)."""
    xi = op.inputs[0]
    if ctx.is_const(xi):
        ctx.fold(op, 0, np.asarray(_value(ctx, xi))[index])
        return
    x = ctx.port(xi)
    shape = x.info.shape
    out_shape = _index_shape(shape, index)  # raises IndexError on a bad index
    # expand the Ellipsis, drop new axes: one int or slice per input dimension
    items = [it for it in index if it is not None]
    if any(it is Ellipsis for it in items):
        k = items.index(Ellipsis)
        items = items[:k] + [slice(None)] * (len(shape) - len(items) + 1) + items[k + 1:]
    items += [slice(None)] * (len(shape) - len(items))
    begin, end, stride = [], [], []
    for it, dim in zip(items, shape):
        if isinstance(it, slice):
            begin.append(it.start)
            end.append(it.stop)
            stride.append(it.step if it.step is not None else 1)
        else:
            i = int(it) % dim
            begin.append(i)
            end.append(i + 1)
            stride.append(1)
    y = ctx.b.slice(x, begin, end, stride, ctx.name(op))
    ctx.set(op, 0, ctx.b.reshape(y, _scalar_shape(out_shape), f"{ctx.name(op)}_shape"))


def _check_strided_slice(op, ctx):
    for i in op.inputs[1:4]:
        if i >= 0 and not ctx.is_const(i):
            return "begin, end and strides must be constants"
    if any(v == 0 for v in ctx.ints(op.inputs[3]).reshape(-1)):
        return "a stride of 0"
    return None


@REGISTRY.register("STRIDED_SLICE", since=1, until=8, inputs=4, foldable=True, check=_check_strided_slice,
                   layers=("StridedSlice", "Reshape"), notes="all masks, including ellipsis and new axis")
def strided_slice(ctx, op):
    o = op.options
    b, e, s = (ctx.ints(i).reshape(-1) for i in op.inputs[1:4])
    index = []
    for k in range(len(b)):
        if o["ellipsis_mask"] >> k & 1:
            index.append(Ellipsis)
        elif o["new_axis_mask"] >> k & 1:
            index.append(None)
        elif o["shrink_axis_mask"] >> k & 1:
            index.append(int(b[k]))
        else:
            stop = int(b[k] + e[k]) if o.get("offset") else int(e[k])
            index.append(slice(None if o["begin_mask"] >> k & 1 else int(b[k]),
                               None if o["end_mask"] >> k & 1 else stop, int(s[k])))
    try:
        _apply_index(ctx, op, tuple(index))
    except IndexError as err:
        raise Unsupported(f"strided slice out of range: {err}") from None


@REGISTRY.register("SLICE", since=1, until=6, inputs=3, foldable=True, layers=("StridedSlice",))
def slice_op(ctx, op):
    begin = [int(v) for v in ctx.ints(op.inputs[1]).reshape(-1)]
    size = [int(v) for v in ctx.ints(op.inputs[2]).reshape(-1)]
    index = tuple(slice(b, None if n == -1 else b + n) for b, n in zip(begin, size))
    _apply_index(ctx, op, index)


# -- padding and tiling -----------------------------------------------------------------------
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
        ctx.set(op, 0, nb.pad(x, pads, name, value=value))  # PadDescriptor.padValue (a level if quantized)
        return
    if value == 0.0:
        ctx.set(op, 0, quant_pad(ctx, x, pads, name) if x.info.dtype.is_quantized and x.info.offset
                else nb.pad(x, pads, name))
        return
    ctx.report.decomposition("PADV2", "Linear(x - v), Pad with zeros, Linear(+ v)")
    if x.info.dtype != DataType.Float32:
        # the same bytes read with the pad value's level as offset hold x - v: pad those with 0
        scale, offset = x.info.scale, x.info.offset
        level = value / scale + offset
        if abs(level - round(level)) > 1e-3 or not 0 <= round(level) <= 255:
            raise Unsupported("a pad value that the quantized tensor cannot hold")
        y = nb.linear(x, 1.0, -value, f"{name}_shift", quant=(scale, int(round(level))))
        y = quant_pad(ctx, y, pads, f"{name}_pad") if round(level) else nb.pad(y, pads, f"{name}_pad")
        ctx.set(op, 0, nb.linear(y, 1.0, value, name, quant=(scale, offset)))
        return
    y = nb.pad(nb.linear(x, 1.0, -value, f"{name}_shift"), pads, f"{name}_pad")
    ctx.set(op, 0, nb.linear(y, 1.0, value, name))


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
    ctx.set(op, 0, border_pad(ctx.b, x, _pads(ctx, op, x.info.rank), mode, ctx.name(op)))


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
        ctx.fold(op, 0, np.tile(v, mult))
        return
    y = ctx.port(op.inputs[0])
    if ctx.b.g.target.has(LayerType.Tile) and len(mult) == y.info.rank and all(m >= 1 for m in mult) \
            and through_float_exactly(y.info):
        ctx.set(op, 0, ctx.b.tile(y, mult, ctx.name(op)))
        return
    if len(mult) != y.info.rank or any(m < 1 for m in mult) or sum(mult) > MAX_COPIES:
        raise Unsupported(f"multiples {mult} for a rank-{y.info.rank} input")
    for axis, m in enumerate(mult):
        if m > 1:
            y = ctx.b.concat([y] * m, axis, f"{ctx.name(op)}_{axis}")
    ctx.set(op, 0, y)


@REGISTRY.register("BROADCAST_TO", since=1, until=3, inputs=2, foldable=True, layers=("Reshape", "Merger"),
                   notes="copies concatenated along the broadcast axes")
def broadcast_to(ctx, op):
    target = [int(v) for v in ctx.ints(op.inputs[1]).reshape(-1)]
    if any(n < 0 for n in target):
        raise Unsupported(f"cannot broadcast to {target}")
    if ctx.is_const(op.inputs[0]):
        _fold_size(target, "BROADCAST_TO")
        ctx.fold(op, 0, np.broadcast_to(_value(ctx, op.inputs[0]), target).copy())
        return
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
    ctx.set(op, 0, y)


# -- gathering --------------------------------------------------------------------------------
def gather_const(ctx, x, axis: int, idx: np.ndarray, name: str):
    """x.take(idx, axis) for constant 1-D indices, exactly (armnn_import.lowering.gather): at
    most MAX_SLICES StridedSlices, else a Gather layer (20.08 on) or a selection matrix."""
    return lowering_gather_const(ctx.b, x, axis, idx, name, max_slices=MAX_SLICES)


def _check_gather(op, ctx):
    if op.options.get("batch_dims", 0):
        return "batch_dims is not supported"
    if not ctx.is_const(op.inputs[1]) and not ctx.b.g.target.at_least("20.08"):
        # Arm NN 20.08's deserializer reads a Gather descriptor this schema's GatherLayer lacks
        # (null pointer): a Gather layer crashes it.
        return ("indices computed at run time need a Gather layer, which Arm NN 20.08 cannot "
                "read from this format", "convert with --target 20.08 (read by Arm NN 20.08 and later)")
    if not ctx.is_const(op.inputs[1]) and ctx.dtype_of(op.inputs[1]) != DataType.Signed32:
        return "run-time indices must be int32 (Arm NN's Gather takes Signed32 indices)"
    return None


@REGISTRY.register("GATHER", since=1, until=7, inputs=2, foldable=True, check=_check_gather,
                   layers=("StridedSlice", "Merger", "FullyConnected", "Permute", "Gather", "Reshape", "Constant"),
                   notes="run-time indices (embedding lookups) from --target 20.08 on, in [0, dim)")
def gather(ctx, op):
    nb, name = ctx.b, ctx.name(op)
    xi, ii = op.inputs[:2]
    axis = op.options.get("axis", 0)
    if _all_const(ctx, op):
        v, idx = np.asarray(_value(ctx, xi)), ctx.ints(ii)
        axis = _axis(axis, v.ndim)
        _fold_size(v.shape[:axis] + idx.shape + v.shape[axis + 1:], "GATHER")
        if ((idx < -v.shape[axis]) | (idx >= v.shape[axis])).any():
            raise Unsupported(f"gather index out of range for dimension {v.shape[axis]}")
        ctx.fold(op, 0, np.take(v, idx, axis=axis))
        return
    if not ctx.is_const(ii):  # an embedding lookup: a Gather layer (the 20.08 format on)
        from .attention import gather_runtime
        gather_runtime(ctx, op, axis)
        return
    x = ctx.port(xi)
    axis = _axis(axis, x.info.rank)
    shape = x.info.shape
    if ctx.is_const(ii):
        idx = ctx.ints(ii)
        y = gather_const(ctx, x, axis, idx.reshape(-1), name)
        out = shape[:axis] + idx.shape + shape[axis + 1:]
        ctx.set(op, 0, nb.reshape(y, _scalar_shape(out), f"{name}_shape"))


# -- depth, space and batch -------------------------------------------------------------------
def _b2s(nb, x, block, crops, name):
    return nb.add(LayerType.BatchToSpaceNd, name, [x], D.BatchToSpaceNdDescriptor(tuple(block), tuple(crops), NHWC))


def _s2b(nb, x, block, pads, name):
    return nb.add(LayerType.SpaceToBatchNd, name, [x], D.SpaceToBatchNdDescriptor(tuple(block), tuple(pads), NHWC))


def _check_4d(op, ctx):
    return None if len(ctx.shape(op.inputs[0])) == 4 else "input is not 4-D"


@REGISTRY.register("DEPTH_TO_SPACE", since=1, until=2, check=_check_4d,
                   layers=("Reshape", "Permute", "BatchToSpaceNd", "DepthToSpace"),
                   notes="one DepthToSpace from the 20.08 format on")
def depth_to_space(ctx, op):
    nb, name, b = ctx.b, ctx.name(op), int(op.options["block_size"])
    x = ctx.port(op.inputs[0])
    n, h, w, c = x.info.shape
    if b < 1 or c % (b * b):
        raise Unsupported(f"{c} channels do not divide by block {b}x{b}")
    c2 = c // (b * b)
    if nb.target.has(LayerType.DepthToSpace) and x.info.dtype != DataType.Signed32:  # DepthToSpace.cpp (NHWC): channel (i*b + j)*c2 + c, LiteRT's
        ctx.set(op, 0, nb.depth_to_space(x, b, name, DataLayout.NHWC))
        return
    y = nb.reshape(x, (n, h * w, b * b, c2), f"{name}_blocks")
    y = nb.permute(y, (2, 0, 1, 3), f"{name}_to_batch")
    y = nb.reshape(y, (b * b * n, h, w, c2), f"{name}_batch")
    ctx.set(op, 0, _b2s(nb, y, (b, b), (0, 0, 0, 0), name))


@REGISTRY.register("SPACE_TO_DEPTH", since=1, until=2, check=_check_4d,
                   layers=("SpaceToBatchNd", "Reshape", "Permute", "SpaceToDepth"),
                   notes="one SpaceToDepth from the 20.08 format on")
def space_to_depth(ctx, op):
    nb, name, b = ctx.b, ctx.name(op), int(op.options["block_size"])
    x = ctx.port(op.inputs[0])
    n, h, w, c = x.info.shape
    if b < 1 or h % b or w % b:
        raise Unsupported(f"spatial size {h}x{w} does not divide by block {b}")
    if nb.target.has(LayerType.SpaceToDepth) and x.info.dtype != DataType.Signed32:  # SpaceToDepth.cpp: channel (i*b + j)*c + k, LiteRT's
        ctx.set(op, 0, nb.space_to_depth(x, b, name, DataLayout.NHWC))
        return
    y = _s2b(nb, x, (b, b), (0, 0, 0, 0), f"{name}_s2b")
    y = nb.reshape(y, (b * b, n, (h // b) * (w // b), c), f"{name}_blocks")
    y = nb.permute(y, (1, 2, 0, 3), f"{name}_to_depth")
    ctx.set(op, 0, nb.reshape(y, (n, h // b, w // b, b * b * c), name))


def _check_batch_space(op, ctx):
    rank = len(ctx.shape(op.inputs[0]))
    if not all(ctx.is_const(i) for i in op.inputs[1:3]):
        return "block shape and paddings must be constants"
    nblock = ctx.ints(op.inputs[1]).size
    if (rank, nblock) not in ((4, 2), (3, 1)):
        return f"a rank-{rank} input with {nblock} block dimensions (Arm NN takes 4-D NHWC)"
    return None


def _batch_space(ctx, op, to_batch: bool):
    nb, name = ctx.b, ctx.name(op)
    x = ctx.port(op.inputs[0])
    block = [int(v) for v in ctx.ints(op.inputs[1]).reshape(-1)]
    pairs = [int(v) for v in ctx.ints(op.inputs[2]).reshape(-1)]
    if any(v < 0 for v in pairs) or any(v < 1 for v in block):
        raise Unsupported(f"block {block} with paddings/crops {pairs}")
    three = x.info.rank == 3
    if three:  # [N, W, C] -> [N, W, 1, C]
        n, w, c = x.info.shape
        x = nb.reshape(x, (n, w, 1, c), f"{name}_4d")
        block, pairs = block + [1], pairs + [0, 0]
    y = (_s2b if to_batch else _b2s)(nb, x, block, pairs, name)
    if three:
        y = nb.reshape(y, (y.info.shape[0], y.info.shape[1], y.info.shape[3]), f"{name}_3d")
    ctx.set(op, 0, y)


@REGISTRY.register("SPACE_TO_BATCH_ND", since=1, until=4, inputs=3,
                   check=_check_batch_space, layers=("SpaceToBatchNd",))
def space_to_batch_nd(ctx, op):
    _batch_space(ctx, op, True)


@REGISTRY.register("BATCH_TO_SPACE_ND", since=1, until=4, inputs=3,
                   check=_check_batch_space, layers=("BatchToSpaceNd",))
def batch_to_space_nd(ctx, op):
    _batch_space(ctx, op, False)
