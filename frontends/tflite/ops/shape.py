"""Shape and data movement: reshapes, transposes, SHAPE and CAST, concatenation and splitting,
slicing. Operators whose inputs are all constants are evaluated at conversion time (they return
the constant). Padding and tiling are pad.py, gathering gather.py, depth/space/batch space.py."""
from __future__ import annotations

import math

import numpy as np

from armnn_import.ir.types import DataType, LayerType
from armnn_import.lowering import Unsupported

from .. import types as T
from . import REGISTRY
from .common import all_const as _all_const
from .common import axis_index as _axis
from .common import fold_size as _fold_size
from .common import quant_constant
from .common import raw_value as _value
from .common import scalar_shape as _scalar_shape


def _empty(ctx, i) -> bool:
    return 0 in tuple(np.shape(ctx.folded[i])) if i in ctx.folded else 0 in tuple(ctx.t(i).shape)



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
        return v.reshape(shape_fn(v.shape, v.size))
    p = ctx.port(x)
    return ctx.b.reshape(p, _scalar_shape(shape_fn(p.info.shape, p.info.num_elements)), ctx.name(op))


@REGISTRY.register("RESHAPE", since=1, until=1, foldable=True, layers=("Reshape",))
def reshape(ctx, op):
    return _reshape_to(ctx, op, lambda shape, total: _reshape_target(ctx, op, total))


@REGISTRY.register("SQUEEZE", since=1, until=2, foldable=True, layers=("Reshape",))
def squeeze(ctx, op):
    dims = [int(d) for d in op.options.get("squeeze_dims", ())]

    def target(shape, total):
        axes = {_axis(d, len(shape)) for d in dims} if dims else {i for i, n in enumerate(shape) if n == 1}
        return tuple(n for i, n in enumerate(shape) if i not in axes)
    return _reshape_to(ctx, op, target)


@REGISTRY.register("EXPAND_DIMS", since=1, until=1, inputs=2, foldable=True, layers=("Reshape",))
def expand_dims(ctx, op):
    a = int(ctx.ints(op.inputs[1]).reshape(-1)[0])

    def target(shape, total):
        axis = _axis(a, len(shape) + 1)
        return tuple(shape[:axis]) + (1,) + tuple(shape[axis:])
    return _reshape_to(ctx, op, target)


@REGISTRY.register("TRANSPOSE", since=1, until=6, inputs=2, foldable=True, layers=("Permute", "Transpose"),
                   notes="Transpose from the 20.08 format on")
def transpose(ctx, op):
    perm = [int(v) for v in ctx.ints(op.inputs[1]).reshape(-1)]
    if ctx.is_const(op.inputs[0]):
        return np.transpose(_value(ctx, op.inputs[0]), perm)
    x = ctx.port(op.inputs[0])
    if sorted(perm) != list(range(x.info.rank)):
        raise Unsupported(f"perm {perm} is not a permutation of rank {x.info.rank}")
    return ctx.b.permute(x, perm, ctx.name(op))


@REGISTRY.register("SHAPE", since=1, until=1, types="free", layers=(), notes="evaluated at conversion time")
def shape_op(ctx, op):
    dtype = np.int64 if op.options.get("out_type") == 4 else np.int32
    return np.array(ctx.shape(op.inputs[0]), dtype)


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
        return ctx.b.cast(ctx.port(op.inputs[0]), ctx.dtype_of(op.outputs[0]), ctx.name(op))
    return np.asarray(_value(ctx, op.inputs[0])).astype(NP_TYPES[ctx.t(op.outputs[0]).type])


# -- concatenation and splitting --------------------------------------------------------------
def _concat(ctx, op, ports_or_consts, axis, name, q):
    ref = next(p for p in ports_or_consts if not isinstance(p, int))
    ports = [materialize(ctx, p, ref) if isinstance(p, int) else p for p in ports_or_consts]
    return ctx.b.concat(ports, axis, name, quant=q)


@REGISTRY.register("CONCATENATION", since=1, until=4, foldable=True, types="all",
                   layers=("Merger", "Concat", "Constant", "FullyConnected", "Reshape", "StridedSlice"),
                   notes="Concat from the 20.08 format on")
def concatenation(ctx, op):
    ins = list(op.inputs)
    if _all_const(ctx, op):
        values = [np.asarray(_value(ctx, i)) for i in ins]
        return np.concatenate(values, axis=_axis(op.options["axis"], values[0].ndim))
    # an empty constant (e.g. a pooling with no output element) adds nothing
    items = [i if ctx.is_const(i) else ctx.port(i) for i in ins if not (ctx.is_const(i) and _empty(ctx, i))]
    rank = len(ctx.shape(ins[0]))
    q = ctx.out_quant(op)
    y = _concat(ctx, op, items, _axis(op.options["axis"], rank), ctx.name(op), q)
    return ctx.fused(y, op.options.get("fused_activation_function", 0), ctx.name(op), q)


@REGISTRY.register("PACK", since=1, until=4, foldable=True, types="all", layers=("Reshape", "Merger", "Stack"),
                   notes="one Stack from the 20.08 format on")
def pack(ctx, op):
    axis = op.options.get("axis", 0)
    if _all_const(ctx, op):
        values = [np.asarray(_value(ctx, i)) for i in op.inputs]
        return np.stack(values, axis=_axis(axis, values[0].ndim + 1))
    rank = len(ctx.shape(op.inputs[0])) + 1
    axis = _axis(axis, rank)
    if ctx.b.target.has(LayerType.Stack) and not any(ctx.is_const(i) for i in op.inputs) and len(op.inputs) > 1:
        ports = [ctx.port(i) for i in op.inputs]
        dt, rich = ports[0].info.dtype, ctx.b.target.at_least("23.08")
        # CpuRef's Stack types; 20.08's RefStackWorkload copies an axis-0 stack as float32 words
        if rank <= 5 and len({p.info.shape for p in ports}) == 1 and dt != DataType.Boolean \
                and (rich or (dt != DataType.Signed32 and (axis or dt == DataType.Float32))):
            return ctx.b.stack(ports, axis, ctx.name(op), quant=ctx.out_quant(op))
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
    return ctx.b.concat(items, axis, ctx.name(op), quant=ctx.out_quant(op))


@REGISTRY.register("UNPACK", since=1, until=4, multi_output=True, layers=("StridedSlice", "Reshape", "Splitter"))
def unpack(ctx, op):
    x = ctx.port(op.inputs[0])
    axis = _axis(op.options.get("axis", 0), x.info.rank)
    if x.info.shape[axis] != len(op.outputs):
        raise Unsupported(f"unpacking {x.info.shape[axis]} slices into {len(op.outputs)} outputs")
    shape = x.info.shape[:axis] + x.info.shape[axis + 1:]
    parts = ctx.b.split_views(x, axis, [1] * x.info.shape[axis], ctx.name(op))
    return [ctx.b.reshape(p, _scalar_shape(shape), ctx.name(op, k)) for k, p in enumerate(parts)]


def _split(ctx, op, x, axis, sizes):
    return ctx.b.split_views(x, axis, sizes, ctx.name(op))  # (one Splitter layer from 20.08 on)


@REGISTRY.register("SPLIT", since=1, until=4, inputs=2, multi_output=True, data_input=1,
                   layers=("StridedSlice", "Splitter"))
def split(ctx, op):
    x = ctx.port(op.inputs[1])
    axis = _axis(int(ctx.ints(op.inputs[0]).reshape(-1)[0]), x.info.rank)
    n = int(op.options["num_splits"])
    if n != len(op.outputs) or x.info.shape[axis] % n:
        raise Unsupported(f"{x.info.shape[axis]} does not split into {n} equal parts")
    return _split(ctx, op, x, axis, [x.info.shape[axis] // n] * n)


@REGISTRY.register("SPLIT_V", since=1, until=2, inputs=3, multi_output=True, layers=("StridedSlice", "Splitter"))
def split_v(ctx, op):
    x = ctx.port(op.inputs[0])
    axis = _axis(int(ctx.ints(op.inputs[2]).reshape(-1)[0]), x.info.rank)
    sizes = [int(v) for v in ctx.ints(op.inputs[1]).reshape(-1)]
    dim = x.info.shape[axis]
    if sizes.count(-1) == 1:
        sizes[sizes.index(-1)] = dim - sum(s for s in sizes if s != -1)
    if sum(sizes) != dim or any(s < 0 for s in sizes) or len(sizes) != len(op.outputs):
        raise Unsupported(f"split sizes {sizes} do not add up to {dim}")
    return _split(ctx, op, x, axis, sizes)


# -- slicing ----------------------------------------------------------------------------------
def _index_shape(shape, index) -> tuple[int, ...]:
    """numpy's result shape of x[index] without touching data."""
    dummy = np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), shape=shape, strides=[0] * len(shape))
    return dummy[index].shape


def _apply_index(ctx, op, index):
    """x[index] for a numpy basic index (ints, slices, None, Ellipsis)."""
    xi = op.inputs[0]
    if ctx.is_const(xi):
        return np.asarray(_value(ctx, xi))[index]
    x = ctx.port(xi)
    shape = x.info.shape
    out_shape = _index_shape(shape, index)  # raises IndexError on a bad index
    if 0 in out_shape:  # no element (an unrolled loop's last write): a constant that holds nothing
        return np.zeros(out_shape, np.float32)
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
    return ctx.b.reshape(y, _scalar_shape(out_shape), f"{ctx.name(op)}_shape")


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
        return _apply_index(ctx, op, tuple(index))
    except IndexError as err:
        raise Unsupported(f"strided slice out of range: {err}") from None


@REGISTRY.register("SLICE", since=1, until=6, inputs=3, foldable=True, layers=("StridedSlice",))
def slice_op(ctx, op):
    begin = [int(v) for v in ctx.ints(op.inputs[1]).reshape(-1)]
    size = [int(v) for v in ctx.ints(op.inputs[2]).reshape(-1)]
    index = tuple(slice(b, None if n == -1 else b + n) for b, n in zip(begin, size))
    return _apply_index(ctx, op, index)


@REGISTRY.register("RANGE", since=1, until=2, inputs=3, foldable=True, types="free", layers=(),
                   notes="constant start, limit and delta: evaluated at conversion time")
def range_(ctx, op):
    if not _all_const(ctx, op):
        raise Unsupported("start, limit or delta is computed at run time (the length would be data-dependent)",
                          code="dynamic-shape")
    start, limit, delta = (np.asarray(_value(ctx, i)).reshape(-1)[0] for i in op.inputs[:3])
    if delta == 0:
        raise Unsupported("delta is 0", code="bad-model")
    n = int(max(np.ceil((limit - start) / delta), 0))
    _fold_size((n,), "RANGE")
    dtype = np.result_type(np.asarray(start), np.asarray(limit), np.asarray(delta))
    return (start + np.arange(n) * delta).astype(dtype)
