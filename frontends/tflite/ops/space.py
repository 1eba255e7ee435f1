"""Depth, space and batch rearrangements: DEPTH_TO_SPACE, SPACE_TO_DEPTH, SPACE_TO_BATCH_ND,
BATCH_TO_SPACE_ND (NHWC)."""
from __future__ import annotations

from armnn_import.ir import descriptors as D
from armnn_import.ir.types import DataLayout, DataType, LayerType
from armnn_import.lowering import Unsupported

from . import REGISTRY

NHWC = DataLayout.NHWC


def b2s(nb, x, block, crops, name):
    """A BatchToSpaceNd layer (NHWC) with `block` and flattened (begin, end) `crops` per axis."""
    return nb.add(LayerType.BatchToSpaceNd, name, [x], D.BatchToSpaceNdDescriptor(tuple(block), tuple(crops), NHWC))


def s2b(nb, x, block, pads, name):
    """A SpaceToBatchNd layer (NHWC) with `block` and flattened (before, after) `pads` per axis."""
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
        return nb.depth_to_space(x, b, name, DataLayout.NHWC)
    y = nb.reshape(x, (n, h * w, b * b, c2), f"{name}_blocks")
    y = nb.permute(y, (2, 0, 1, 3), f"{name}_to_batch")
    y = nb.reshape(y, (b * b * n, h, w, c2), f"{name}_batch")
    return b2s(nb, y, (b, b), (0, 0, 0, 0), name)


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
        return nb.space_to_depth(x, b, name, DataLayout.NHWC)
    y = s2b(nb, x, (b, b), (0, 0, 0, 0), f"{name}_s2b")
    y = nb.reshape(y, (b * b, n, (h // b) * (w // b), c), f"{name}_blocks")
    y = nb.permute(y, (1, 2, 0, 3), f"{name}_to_depth")
    return nb.reshape(y, (n, h // b, w // b, b * b * c), name)


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
    y = (s2b if to_batch else b2s)(nb, x, block, pairs, name)
    if three:
        y = nb.reshape(y, (y.info.shape[0], y.info.shape[1], y.info.shape[3]), f"{name}_3d")
    return y


@REGISTRY.register("SPACE_TO_BATCH_ND", since=1, until=4, inputs=3,
                   check=_check_batch_space, layers=("SpaceToBatchNd",))
def space_to_batch_nd(ctx, op):
    return _batch_space(ctx, op, True)


@REGISTRY.register("BATCH_TO_SPACE_ND", since=1, until=4, inputs=3,
                   check=_check_batch_space, layers=("BatchToSpaceNd",))
def batch_to_space_nd(ctx, op):
    return _batch_space(ctx, op, False)
