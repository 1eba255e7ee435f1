"""Shape and data-movement operators."""
from __future__ import annotations

import numpy as np

from armnn_import.ir import descriptors as D
from armnn_import.ir.graph import Port
from armnn_import.ir.types import DataLayout, DataType
from armnn_import.ir.types import LayerType as L
from armnn_import.lowering import Unsupported
from armnn_import.lowering.builder import through_float_exactly
from armnn_import.lowering.gather import GatherNames, gather_const
from armnn_import.lowering.copies import broadcast_int32, repeat
from armnn_import.lowering.padding import PadNames, border_pad

from ..registry import needs_const, register
from ..context import MAX_RANK, check_size
from .common import axes_input, binary, int_list, norm_axes

# What CpuRef's Pad, Resize, SpaceToDepth and DepthToSpace take (RefLayerSupport: no Signed32 or Boolean)
_DEPTH_SPACE_TYPES = (DataType.Float32, DataType.Float16, DataType.QuantisedAsymm8, DataType.QAsymmS8)
MAX_SLICE_GATHER = 16  # constant-index gathers with more runs than this use a one-hot FullyConnected
_PAD_NAMES = PadNames("_ax{a}_lo", "_ax{a}_hi", "_ax{a}", "_ax{a}_first", "_ax{a}_last")  # (ONNX files' names)


def reshape_target(in_shape, shape, allowzero=False) -> tuple:
    shape = [int(d) for d in np.asarray(shape).reshape(-1)]
    out = [in_shape[i] if d == 0 and not allowzero and i < len(in_shape) else d for i, d in enumerate(shape)]
    total = int(np.prod(in_shape, dtype=np.int64))
    if out.count(-1) > 1 or any(d < -1 for d in out):
        raise Unsupported(f"invalid target shape {shape}")
    if -1 in out:
        rest = int(np.prod([d for d in out if d != -1], dtype=np.int64))
        if rest == 0 or total % rest:
            raise Unsupported(f"cannot reshape {tuple(in_shape)} to {shape}")
        out[out.index(-1)] = total // rest
    if int(np.prod(out, dtype=np.int64)) != total:
        raise Unsupported(f"cannot reshape {tuple(in_shape)} to {shape}")
    return tuple(out)


@register("Reshape", since=5, layers=("Reshape",), check=needs_const(1, what="shape"))
def reshape(ctx, node):
    x = ctx.port(node, 0, dtypes=None)
    target = reshape_target(ctx.lshape(x), ctx.const(node, 1, "shape"), bool(ctx.attr(node, "allowzero", 0)))
    return ctx.to_shape(x, target, ctx.name(node))


@register("Flatten", since=1, layers=("Reshape",))
def flatten(ctx, node):
    x = ctx.port(node, 0, dtypes=None)
    shape = ctx.lshape(x)
    axis = int(ctx.attr(node, "axis", 1))
    axis = axis + len(shape) if axis < 0 else axis
    if not 0 <= axis <= len(shape):
        raise Unsupported(f"axis {axis} out of range")
    return ctx.to_shape(x, (int(np.prod(shape[:axis], dtype=np.int64)), int(np.prod(shape[axis:], dtype=np.int64))),
                        ctx.name(node))


@register("Squeeze", since=1, layers=("Reshape",), check=needs_const(1, what="axes"))
def squeeze(ctx, node):
    x = ctx.port(node, 0, dtypes=None)
    shape = ctx.lshape(x)
    axes = axes_input(ctx, node, 13, 1)
    axes = [i for i, d in enumerate(shape) if d == 1] if axes is None else norm_axes(axes, len(shape))
    if any(shape[a] != 1 for a in axes):
        raise Unsupported(f"squeezing axes {axes} of shape {shape} that are not 1")
    return ctx.to_shape(x, tuple(d for i, d in enumerate(shape) if i not in axes), ctx.name(node))


@register("Unsqueeze", since=1, layers=("Reshape",), check=needs_const(1, what="axes"))
def unsqueeze(ctx, node):
    x = ctx.port(node, 0, dtypes=None)
    shape = list(ctx.lshape(x))
    axes = axes_input(ctx, node, 13, 1)
    if axes is None:
        raise Unsupported("axes are missing")
    rank = len(shape) + len(axes)
    for a in sorted(norm_axes(axes, rank)):
        shape.insert(a, 1)
    return ctx.to_shape(x, tuple(shape), ctx.name(node))


@register("Transpose", since=1, layers=("Permute", "Transpose"),
          notes="Transpose from the 20.08 format on")
def transpose(ctx, node):
    x = ctx.port(node, 0, dtypes=None)
    rank = len(ctx.lshape(x))
    perm = ctx.attr(node, "perm") or list(range(rank))[::-1]
    if sorted(perm) != list(range(rank)):
        raise Unsupported(f"perm {perm} is not a permutation of {rank} axes")
    if rank <= 1:
        return x
    return ctx.b.permute(x, perm, ctx.name(node))


@register("Concat", since=4, layers=("Merger", "Concat", "FullyConnected", "Reshape", "StridedSlice", "Constant"), notes="Concat from the 20.08 format on")
def concat(ctx, node):
    vals = [ctx.val(node, i) for i in range(len(node.inputs)) if ctx.has(node, i)]
    vals = [v for v in vals if int(np.prod(ctx.lshape(v), dtype=np.int64)) > 0]  # empty inputs add nothing
    if not vals:
        raise Unsupported("every input is empty")
    rank = len(ctx.lshape(vals[0]))
    axis = norm_axes([ctx.attr(node, "axis", 0)], rank)[0]
    shapes = [ctx.lshape(v) for v in vals]
    if any(len(s) != rank or s[:axis] + s[axis + 1:] != shapes[0][:axis] + shapes[0][axis + 1:] for s in shapes):
        raise Unsupported(f"inputs of shapes {shapes} cannot be concatenated on axis {axis} (the model is invalid)",
                          code="bad-model")
    boolean = any(isinstance(v, np.ndarray) and v.dtype == np.bool_ or isinstance(v, Port) and
                  (v.info.dtype == DataType.Boolean or v in ctx.bool_float) for v in vals)
    if boolean:  # CpuRef moves no Boolean tensors: concatenate the float 0/1 masks
        from .logic import float01
        vals = [float01(ctx, v, ctx.name(node, f"in{i}_mask")) for i, v in enumerate(vals)]
    ports = [v if isinstance(v, Port) else ctx.materialize(v, ctx.name(node, f"in{i}")) for i, v in enumerate(vals)]
    dtypes = {p.info.dtype for p in ports}
    if len(dtypes) != 1:
        raise Unsupported(f"inputs of different Arm NN types {sorted(d.name for d in dtypes)}")
    y = ports[0] if len(ports) == 1 else ctx.b.concat(ports, axis, ctx.name(node))
    if boolean:
        ctx.bool_float.add(y)
    return y


@register("Split", since=2, layers=("StridedSlice", "Splitter"), check=needs_const(1, what="split"))
def split(ctx, node):
    x = ctx.port(node, 0, dtypes=None)
    shape = ctx.lshape(x)
    axis = norm_axes([ctx.attr(node, "axis", 0)], len(shape))[0]
    n = len(node.outputs)
    if ctx.opset < 13:
        sizes = ctx.attr(node, "split")
    else:
        sizes = [int(v) for v in ctx.const(node, 1, "split").reshape(-1)] if ctx.has(node, 1) else None
    dim = shape[axis]
    if sizes is None:
        num = int(ctx.attr(node, "num_outputs", n))
        if num != n or num < 1:
            raise Unsupported(f"num_outputs {num} for {n} outputs")
        step = -(-dim // num)
        sizes = [min(step, dim - i * step) for i in range(num)]
    if sum(sizes) != dim or len(sizes) != n or any(s < 0 for s in sizes):
        raise Unsupported(f"split sizes {list(sizes)} for an axis of {dim} into {n} outputs")
    if all(sizes) and ctx.b.splitter_fits(x, n):  # one Splitter layer (the 20.08 format on)
        return ctx.b.split_views(x, axis, sizes, ctx.name(node))
    outs, at = [], 0
    for i, size in enumerate(sizes):  # (an empty part holds no data: it is a constant)
        outs.append(ctx.b.take(x, axis, at, at + size, ctx.name(node, str(i))) if size else
                    np.zeros(shape[:axis] + (0,) + shape[axis + 1:], x.info.dtype.np_dtype))
        at += size
    return outs


@register("Slice", since=1, layers=("StridedSlice", "Reshape"),
          check=needs_const(1, 2, 3, 4, what="starts/ends/axes/steps"))
def slice_(ctx, node):
    x = ctx.port(node, 0, dtypes=None)
    shape = ctx.lshape(x)
    rank = len(shape)
    if ctx.opset < 10:
        starts, ends, axes, steps = ctx.attr(node, "starts"), ctx.attr(node, "ends"), ctx.attr(node, "axes"), None
    else:
        starts, ends = int_list(ctx, node, 1), int_list(ctx, node, 2)
        axes = int_list(ctx, node, 3) if ctx.has(node, 3) else None
        steps = int_list(ctx, node, 4) if ctx.has(node, 4) else None
    axes = norm_axes(axes if axes is not None else range(len(starts)), rank)
    steps = steps or [1] * len(axes)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise Unsupported("starts, ends, axes and steps differ in length")
    begin, end, stride = [None] * rank, [None] * rank, [1] * rank
    out = list(shape)
    for a, s, e, st in zip(axes, starts, ends, steps):
        if st == 0:
            raise Unsupported("step 0")
        big = 2 ** 62  # ONNX uses +-INT64_MAX for "to the end"; Python slices clamp the same way
        s, e = max(min(int(s), big), -big), max(min(int(e), big), -big)
        begin[a], end[a], stride[a] = s, e, int(st)
        out[a] = len(range(*slice(s, e, int(st)).indices(shape[a])))
    if 0 in out:  # an empty tensor holds no data: it is a constant
        return np.zeros(tuple(out), x.info.dtype.np_dtype)
    return ctx.b.slice(x, begin, end, stride, ctx.name(node))


def _pad_check(node, ctx):
    mode = ctx.attr(node, "mode", "constant")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        return (f"mode {mode!r}", "")
    return needs_const(1, 2, 3, what="pads/value/axes")(node, ctx)


@register("Pad", since=2, layers=("Pad", "StridedSlice", "Merger", "Addition", "Concat", "FullyConnected", "Reshape"), check=_pad_check,
          notes="20.08 on: a constant value in the Pad layer; 23.08 on: reflect as one Pad (MirrorPad)")
def pad(ctx, node):
    x, n = ctx.port(node, 0), ctx.name(node)
    shape = ctx.lshape(x)
    rank = len(shape)
    mode = ctx.attr(node, "mode", "constant")
    if ctx.opset < 11:
        pads, value, axes = ctx.attr(node, "pads"), float(ctx.attr(node, "value", 0.0)), None
    else:
        pads = ctx.const(node, 1, "pads").reshape(-1).tolist()
        value = float(ctx.const(node, 2).reshape(-1)[0]) if ctx.has(node, 2) and ctx.const(node, 2).size else 0.0
        axes = ctx.const(node, 3).reshape(-1).tolist() if ctx.has(node, 3) else None
    axes = norm_axes(axes if axes is not None else range(rank), rank)
    if len(pads) != 2 * len(axes):
        raise Unsupported(f"{len(pads)} pads for {len(axes)} axes")
    before, after = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        before[a], after[a] = int(pads[i]), int(pads[i + len(axes)])
    # negative pads crop
    for a, (d, lo, hi) in enumerate(zip(shape, before, after)):
        if d + lo + hi < 0:
            raise Unsupported(f"pads {lo} and {hi} on axis {a} of size {d} leave {d + lo + hi} elements "
                              "(the model is invalid)", code="bad-model")
    if any(v < 0 for v in before + after):
        x = ctx.b.slice(x, [max(-v, 0) for v in before], [d - max(-v, 0) for d, v in zip(shape, after)],
                        [1] * rank, f"{n}_crop")
        before, after = [max(v, 0) for v in before], [max(v, 0) for v in after]
        shape = x.info.shape
    if mode == "constant" and value != 0 and ctx.b.target.at_least("20.08"):
        return ctx.b.pad(x, list(zip(before, after)), n, value=value)  # PadDescriptor.padValue
    if mode == "constant":
        y = ctx.b.pad(x, list(zip(before, after)), n if value == 0 else f"{n}_zero")
        if value != 0 and y is not x:
            ctx.report.decomposition("Pad", "non-zero constant: zero Pad, plus a constant that is the "
                                            "value on the border and 0 inside")
            check_size(y.info.shape, "the padded tensor")
            border = np.full(y.info.shape, value, np.float32)
            border[tuple(slice(b, b + d) for b, d in zip(before, shape))] = 0.0
            y = binary(ctx, L.Addition, y, border, n)
        return y
    return border_pad(ctx.b, x, list(zip(before, after)), mode, n, names=_PAD_NAMES)


@register("Tile", since=6, layers=("Merger", "Tile"), check=needs_const(1, what="repeats"),
          notes="a Tile layer from --target 23.08 (float and quantized), else copies joined by Mergers")
def tile(ctx, node):
    x, n = ctx.port(node, 0, dtypes=None), ctx.name(node)
    reps = [int(r) for r in ctx.const(node, 1, "repeats").reshape(-1)]
    if len(reps) != x.info.rank or any(r < 1 for r in reps):
        raise Unsupported(f"repeats {reps} for a {x.info.rank}-D input")
    if ctx.b.target.has(L.Tile) and through_float_exactly(x.info):  # (else copies joined by Mergers)
        return ctx.b.tile(x, reps, n)
    for a, r in enumerate(reps):
        x = repeat(ctx.b, x, a, r, f"{n}_ax{a}")
    return x


@register("Expand", since=8, layers=("Reshape", "Merger", "Concat", "Addition", "Constant"), check=needs_const(1, what="shape"))
def expand(ctx, node):
    x, n = ctx.port(node, 0, dtypes=None), ctx.name(node)
    shape = ctx.lshape(x)
    target = [int(v) for v in ctx.const(node, 1, "shape").reshape(-1)]
    if len(target) > MAX_RANK:  # (numpy's broadcast also fails past 32 dimensions)
        raise Unsupported(f"Expand target shape has {len(target)} dimensions; "
                          f"Arm NN tensors have at most {MAX_RANK}")
    try:
        out = tuple(np.broadcast_shapes(shape, tuple(target)))
    except ValueError:
        raise Unsupported(f"shape {shape} does not broadcast to {target}") from None
    if 0 in out:
        raise Unsupported("the result is empty")
    y = ctx.b.reshape(x, (1,) * (len(out) - len(shape)) + tuple(shape), f"{n}_rank") if out else x
    if y.info.dtype == DataType.Signed32 and out != y.info.shape and not ctx.b.target.at_least("23.08"):
        return ctx.to_shape(broadcast_int32(ctx.b, y, out, n), out, f"{n}_shape")
    for a, d in enumerate(out):
        if y.info.shape[a] != d:
            y = repeat(ctx.b, y, a, d, f"{n}_ax{a}")
    return ctx.to_shape(y, out, f"{n}_shape")


def _gather_check(node, ctx):
    target = ctx.target if hasattr(ctx, "target") else ctx.g.target  # (the pre-scan's view, or the converter)
    if ctx.has(node, 1) and not ctx.is_const(node, 1) and not target.at_least("20.08"):
        return ("run-time indices need Arm NN's Gather layer, which Arm NN 20.08 cannot load from this "
                "format (its deserializer reads a Gather descriptor the early schema does not have)",
                "convert with --target 20.08 (read by Arm NN 20.08 and later), or make the indices constant")
    return None


def _gather_runtime(ctx, data, indices, axis: int, n: str) -> Port:
    """A Gather layer (the 20.08 format on) for run-time indices: an embedding lookup when
    the data is constant (a [1, 1, rows, last] Constant layer, see NetBuilder.constant_layer)."""
    if indices.info.dtype != DataType.Signed32:
        raise Unsupported(f"indices are {indices.info.dtype.name} at run time; Arm NN's Gather takes int32")
    if isinstance(data, Port):
        if data.info.dtype == DataType.Boolean:
            raise Unsupported("gathering a boolean tensor (CpuRef's Gather moves no Boolean data)")
        if not ctx.g.target.at_least("23.08"):
            # ONNX indices may be negative (from the end); 20.08's CpuRef fails on them, 23.08's wraps
            # them. Exact for every index in [-dim, dim): gather index + dim from the data twice over
            dim = data.info.shape[axis]
            data = ctx.b.concat([data, data], axis, f"{n}_twice")
            shift = ctx.b.constant_layer(np.full((1,) * indices.info.rank, dim, np.int32), f"{n}_dim")
            indices = ctx.b.binary(L.Addition, indices, shift, f"{n}_wrap")
            ctx.report.decomposition("Gather", "run-time data and indices on Arm NN 20.08: negative indices "
                                     "wrap by gathering index + dim from the data concatenated twice")
        return ctx.b.gather(data, indices, axis, n)
    arr = np.asarray(data)
    if arr.dtype.kind not in "fiu" or arr.size == 0:
        raise Unsupported(f"gathering from a constant of type {arr.dtype}")
    if arr.dtype.kind in "iu" and arr.size and (arr.min() < -2 ** 31 or arr.max() >= 2 ** 31):
        raise Unsupported("an integer constant outside the int32 range")
    # (not doubled like run-time data: an embedding table's ids are never negative)
    table = ctx.b.constant_layer(arr.astype(np.float32 if arr.dtype.kind == "f" else np.int32), f"{n}_data")
    ctx.report.warn(f"{n}: run-time indices into a constant table must lie in [0, {arr.shape[axis]}): "
                    "Arm NN 20.08 fails on a negative one and reads out of bounds past the end, 23.08 wraps "
                    "negative ones and fails past the end; the executor (armnn-import verify) refuses them")
    return ctx.b.gather(table, indices, axis, n)


@register("Gather", since=1, layers=("StridedSlice", "Merger", "FullyConnected", "Gather", "Reshape", "Addition", "Constant", "Permute"), check=_gather_check,
          notes="run-time indices (embedding lookups) from --target 20.08 on, in [0, dim)")
def gather(ctx, node):
    data, indices, n = ctx.val(node, 0), ctx.val(node, 1), ctx.name(node)
    dshape, ishape = ctx.lshape(data), ctx.lshape(indices)
    axis = norm_axes([ctx.attr(node, "axis", 0)], len(dshape))[0]
    out = dshape[:axis] + ishape + dshape[axis + 1:]
    if isinstance(indices, Port):
        if not ctx.g.target.at_least("20.08"):
            raise Unsupported(_gather_check(node, ctx)[0])
        return ctx.to_shape(_gather_runtime(ctx, data, indices, axis, n), out, f"{n}_shape")
    # the layers' names are the ones ONNX files have always had
    y = gather_const(ctx.b, data, axis, np.asarray(indices).astype(np.int64), n, max_slices=MAX_SLICE_GATHER,
                     names=GatherNames("_run{k}", "_cat", "_fc", ("_2d", "_nd")))
    return ctx.to_shape(y, out, f"{n}_shape")


def _block_check(node, ctx):
    s = ctx.shape(node, 0)
    if s is not None and len(s) != 4:
        return (f"a {len(s)}-D input (needs 4-D NCHW)", "")
    bs = ctx.attr(node, "blocksize")
    if not isinstance(bs, int) or bs < 1:
        return f"blocksize {bs!r} must be a positive integer"
    if s is not None and None not in s:  # ONNX shape inference would make a huge or empty tensor
        if node.op == "DepthToSpace" and s[1] % (bs * bs):
            return f"{s[1]} channels are not divisible by blocksize^2 = {bs * bs}"
        if node.op == "SpaceToDepth" and (s[2] % bs or s[3] % bs):
            return f"spatial size {s[2]}x{s[3]} is not divisible by blocksize {bs}"
    return None




@register("DepthToSpace", since=1, layers=("Reshape", "Permute", "BatchToSpaceNd", "DepthToSpace"),
          check=_block_check, notes="DCR mode as one DepthToSpace from the 20.08 format on")
def depth_to_space(ctx, node):
    x, nm = ctx.port(node, 0, dtypes=None), ctx.name(node)
    if x.info.rank != 4:
        raise Unsupported("needs a 4-D NCHW input")
    bs = int(ctx.attr(node, "blocksize"))
    n, c, h, w = x.info.shape
    if bs < 1 or c % (bs * bs):
        raise Unsupported(f"{c} channels are not divisible by blocksize^2 = {bs * bs}")
    co = c // (bs * bs)
    if ctx.attr(node, "mode", "DCR") == "DCR" and ctx.b.target.has(L.DepthToSpace) \
            and x.info.dtype in _DEPTH_SPACE_TYPES:  # DepthToSpace.cpp: channel (i*bs + j)*co + c
        return ctx.b.depth_to_space(x, bs, nm)
    ctx.report.decomposition("DepthToSpace", "Reshape, Permute (blocks to the batch axis), BatchToSpaceNd")
    if ctx.attr(node, "mode", "DCR") == "DCR":  # channel = (i*bs + j)*co + c
        y = ctx.b.reshape(x, (n, bs * bs, co * h * w), f"{nm}_blocks")
        y = ctx.b.permute(y, (1, 0, 2), f"{nm}_tobatch")
    else:  # CRD: channel = c*bs*bs + i*bs + j
        y = ctx.b.reshape(x, (n, co, bs * bs, h * w), f"{nm}_blocks")
        y = ctx.b.permute(y, (2, 0, 1, 3), f"{nm}_tobatch")
    y = ctx.b.reshape(y, (bs * bs * n, co, h, w), f"{nm}_batched")
    return ctx.b.add(L.BatchToSpaceNd, nm, [y], D.BatchToSpaceNdDescriptor((bs, bs), (0, 0, 0, 0), DataLayout.NCHW))


@register("SpaceToDepth", since=1, layers=("SpaceToBatchNd", "Reshape", "Permute", "SpaceToDepth"),
          check=_block_check, notes="one SpaceToDepth from the 20.08 format on")
def space_to_depth(ctx, node):
    x, nm = ctx.port(node, 0, dtypes=None), ctx.name(node)
    if x.info.rank != 4:
        raise Unsupported("needs a 4-D NCHW input")
    bs = int(ctx.attr(node, "blocksize"))
    n, c, h, w = x.info.shape
    if bs < 1 or h % bs or w % bs:
        raise Unsupported(f"spatial size {h}x{w} is not divisible by blocksize {bs}")
    if ctx.b.target.has(L.SpaceToDepth) and x.info.dtype in _DEPTH_SPACE_TYPES \
            and ctx.attr(node, "mode", "DCR") == "DCR":
        return ctx.b.space_to_depth(x, bs, nm)  # SpaceToDepth.cpp: channel (i*bs + j)*c + k (ONNX's)
    ctx.report.decomposition("SpaceToDepth", "SpaceToBatchNd, Permute (blocks to the channel axis), Reshape")
    y = ctx.b.add(L.SpaceToBatchNd, f"{nm}_s2b", [x],
                  D.SpaceToBatchNdDescriptor((bs, bs), (0, 0, 0, 0), DataLayout.NCHW))
    # batch index (i*bs + j)*n + b; DCR wants channel (i*bs + j)*c + k, CRD k*bs*bs + i*bs + j
    if ctx.attr(node, "mode", "DCR") == "CRD":
        y = ctx.b.reshape(y, (bs * bs, n, c, (h // bs) * (w // bs)), f"{nm}_blocks")
        y = ctx.b.permute(y, (1, 2, 0, 3), f"{nm}_tochannels")
    else:
        y = ctx.b.reshape(y, (bs * bs, n, c * (h // bs) * (w // bs)), f"{nm}_blocks")
        y = ctx.b.permute(y, (1, 0, 2), f"{nm}_tochannels")
    return ctx.b.reshape(y, (n, bs * bs * c, h // bs, w // bs), nm)

