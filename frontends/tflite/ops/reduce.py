"""Reductions and normalizations. From the 23.08 target SUM, MEAN, REDUCE_MAX/MIN/PROD are one
Reduce layer (float or quantized, 1-D to 4-D: one float accumulation, one rounding into the
output's quantization); before it, the exact decompositions below."""
from __future__ import annotations

import numpy as np

from armnn_import.ir import descriptors as D
from armnn_import.ir.types import (DataLayout, DataType, LayerType, NormalizationAlgorithmChannel,
                                   NormalizationAlgorithmMethod, PoolingAlgorithm, ReduceOperation)
from armnn_import.lowering import Unsupported
from armnn_import.lowering.pooling import mean_as_pool

from .common import float_only as _float_only
from .common import raw_value
from .common import scalar_shape as _scalar_shape
from . import REGISTRY

NHWC = DataLayout.NHWC


def _axes(ctx, op, rank):
    axes = sorted({int(a) % rank for a in ctx.ints(op.inputs[1]).reshape(-1)}) if rank else []
    if any(not -rank <= int(a) < rank for a in ctx.ints(op.inputs[1]).reshape(-1)):
        raise Unsupported(f"reduction axes out of range for rank {rank}")
    return axes


def _out_shape(shape, axes, keep):
    if keep:
        return tuple(1 if a in axes else n for a, n in enumerate(shape))
    return _scalar_shape(tuple(n for a, n in enumerate(shape) if a not in axes))


def _check_reduce(op, ctx):
    return None if ctx.is_const(op.inputs[1]) else "reduction axes must be a constant"


def _direct(ctx, x) -> bool:
    """Whether the Reduce layer (23.08 on) takes x: 1-D to 4-D, float or quantized (its CpuRef
    decodes to float, so a Signed32 sum or product is exact only within 2^24: the old path)."""
    return ctx.b.g.target.has(LayerType.Reduce) and 1 <= x.info.rank <= 4 and \
        (x.info.dtype in (DataType.Float32, DataType.Float16) or x.info.dtype.is_quantized)


_FOLD = {"MEAN": np.mean, "SUM": np.sum, "REDUCE_MAX": np.max, "REDUCE_MIN": np.min, "REDUCE_PROD": np.prod}


def _fold(ctx, op) -> np.ndarray:
    """A reduction of a constant, computed at conversion time: Keras 3 models with a dynamic
    batch take the product of a SHAPE's slice to size their Flatten, Reshape and LayerNormalization."""
    v = np.asarray(raw_value(ctx, op.inputs[0]))
    axes = tuple(_axes(ctx, op, v.ndim))
    if v.dtype.kind != "f" and op.op == "MEAN":
        raise Unsupported("the mean of an integer constant (TFLite's integer rounding is not reproduced)")
    keep = bool(op.options.get("keep_dims", False))
    y = _FOLD[op.op](v.astype(np.float64) if v.dtype.kind == "f" else v, axis=axes, keepdims=keep)
    return np.asarray(y).astype(np.float32 if v.dtype.kind == "f" else v.dtype)


def _reduce(fn, op_kind=None, first=None):
    """fn: the decomposition; op_kind: the Reduce layer's operation where the target has it;
    first(ctx, x, axes, keep, name, q): a cheaper exact form tried before both (None: not here)."""
    def convert(ctx, op):
        if ctx.is_const(op.inputs[0]):
            return _fold(ctx, op)
        x = ctx.port(op.inputs[0])
        axes = _axes(ctx, op, x.info.rank)
        keep = bool(op.options.get("keep_dims", False))
        if not axes:
            return x
        name, q = ctx.name(op), ctx.out_quant(op)
        y = first(ctx, x, axes, keep, name, q) if first is not None else None
        if y is not None:
            return y
        if op_kind is not None and _direct(ctx, x):
            y = ctx.b.reduce(x, axes, keep, op_kind, name, quant=q)
            return ctx.b.reshape(y, _out_shape(x.info.shape, axes, keep), f"{name}_shape")
        return fn(ctx, op, x, axes, keep, name, q)
    return convert


_R = "Reduce"  # (from --target 23.08)


@REGISTRY.register("MEAN", since=1, until=3, inputs=2, foldable=True, check=_check_reduce, layers=("Mean", _R, "Pooling2d", "Reshape"),
                   notes="from --target 23.08, over H and/or W of a 4-D tensor: an Average Pooling2d (quantized: any output quantization)")
def mean(ctx, op):
    # over H and/or W (23.08 on): an Average Pooling2d, bit-identical and far cheaper (lowering/pooling.py);
    # quantized at any per-tensor output quantization (requant): 23.08's Reduce and Pooling2d both
    # decode to float, sum in raster order, divide once and encode with the output's TensorInfo
    def spatial(ctx, x, axes, keep, name, q):
        return mean_as_pool(ctx.b, x, axes, keep, name, layout=NHWC, quant=q, requant=True)
    return _reduce(lambda ctx, op, x, axes, keep, name, q: ctx.b.mean(x, axes, keep, name, quant=q),
                   ReduceOperation.Mean, spatial)(ctx, op)


@REGISTRY.register("SUM", since=1, until=2, inputs=2, foldable=True, check=_check_reduce, layers=("Mean", "Activation", _R),
                   notes="before --target 23.08: Mean times the element count")
def sum_(ctx, op):
    def lower(ctx, op, x, axes, keep, name, q):
        count = int(np.prod([x.info.shape[a] for a in axes]))
        # quantized: the mean in a scale count times finer holds exactly the sum's levels
        mq = None if q is None else (q[0] / count, q[1])
        if mq is not None and np.float32(mq[0]) < np.finfo(np.float32).tiny:
            raise Unsupported(f"output scale {q[0]:g} is too small to sum {count} elements")
        m = ctx.b.mean(x, axes, keep, f"{name}_mean", quant=mq)
        return ctx.b.linear(m, float(count), 0.0, name, quant=q)
    if not ctx.b.g.target.has(LayerType.Reduce):
        ctx.report.decomposition("SUM", "Mean, then Linear(a=element count)")
    return _reduce(lower, ReduceOperation.Sum)(ctx, op)


def pool_reduce(ctx, x, axes, keep, name, quant=None):
    """Max over `axes` as one Pooling2d whose window covers the reduced elements."""
    nb, shape = ctx.b, x.info.shape
    kept = [a for a in range(len(shape)) if a not in axes]
    r = int(np.prod([shape[a] for a in axes]))
    if axes == list(range(axes[0], axes[-1] + 1)):  # contiguous: no Permute needed
        before = int(np.prod(shape[:axes[0]]))
        after = int(np.prod(shape[axes[-1] + 1:]))
        y = nb.reshape(x, (before, r, 1, after), f"{name}_4d")
    else:
        y = nb.permute(x, kept + axes, f"{name}_order")
        y = nb.reshape(y, (int(np.prod([shape[a] for a in kept])), r, 1, 1), f"{name}_4d")
    y = nb.pool2d(y, PoolingAlgorithm.Max, (r, 1), name, layout=NHWC, quant=quant)
    return nb.reshape(y, _out_shape(shape, axes, keep), f"{name}_shape")


@REGISTRY.register("REDUCE_MAX", since=1, until=3, inputs=2, foldable=True,
                   check=_check_reduce, layers=("Pooling2d", "Reshape", _R),
                   notes="before --target 23.08: a Max Pooling2d over the reduced elements")
def reduce_max(ctx, op):
    return _reduce(lambda ctx, op, x, axes, keep, name, q: pool_reduce(ctx, x, axes, keep, name, q),
            ReduceOperation.Max)(ctx, op)


@REGISTRY.register("REDUCE_MIN", since=1, until=3, inputs=2, foldable=True, check=_check_reduce,
                   layers=("Activation", "Pooling2d", "Reshape", _R, "Permute"), notes="before --target 23.08: -max(-x)")
def reduce_min(ctx, op):
    def lower(ctx, op, x, axes, keep, name, q):
        nq = None if not x.info.dtype.is_quantized else (x.info.scale, 255 - x.info.offset)  # q -> 255 - q
        neg = ctx.b.linear(x, -1.0, 0.0, f"{name}_negate", quant=nq)
        m = pool_reduce(ctx, neg, axes, keep, f"{name}_max")
        return ctx.b.linear(m, -1.0, 0.0, name, quant=q)
    return _reduce(lower, ReduceOperation.Min)(ctx, op)


def _check_prod(op, ctx):
    if ctx.b.g.target.has(LayerType.Reduce):  # (float and quantized: one Reduce layer)
        return _check_reduce(op, ctx)
    return _check_reduce(op, ctx) or _float_only(op, ctx)


@REGISTRY.register("REDUCE_PROD", since=1, until=2, inputs=2, foldable=True, check=_check_prod,
                   layers=("StridedSlice", "Multiplication", "Merger", _R, "Reshape"),
                   notes="before --target 23.08: float only, pairwise products of halves, log2(n) levels per axis")
def reduce_prod(ctx, op):
    def lower(ctx, op, x, axes, keep, name, q):
        nb, y = ctx.b, x
        for a in axes:
            n, level = y.info.shape[a], 0
            while n > 1:
                h = n // 2
                tag = f"{name}_{a}_{level}"
                m = nb.binary(LayerType.Multiplication, nb.take(y, a, 0, h, f"{tag}_lo"),
                              nb.take(y, a, h, 2 * h, f"{tag}_hi"), tag)
                if n % 2:
                    m = nb.concat([m, nb.take(y, a, 2 * h, n, f"{tag}_odd")], a, f"{tag}_join")
                y, n, level = m, h + n % 2, level + 1
        return nb.reshape(y, _out_shape(x.info.shape, axes, keep), f"{name}_shape")
    if not ctx.b.g.target.has(LayerType.Reduce):
        ctx.report.decomposition("REDUCE_PROD", "products of halves (StridedSlice, Multiplication)")
    return _reduce(lower, ReduceOperation.Prod)(ctx, op)


@REGISTRY.register("L2_NORMALIZATION", since=1, until=2, layers=("L2Normalization", "Reshape"))
def l2_normalization(ctx, op):
    nb, name, q = ctx.b, ctx.name(op), ctx.out_quant(op)
    x = ctx.port(op.inputs[0])
    shape = x.info.shape
    y = x if len(shape) == 4 else nb.reshape(x, (int(np.prod(shape[:-1])), 1, 1, shape[-1]), f"{name}_4d")
    y = nb.add(LayerType.L2Normalization, name, [y], D.L2NormalizationDescriptor(NHWC), quant=q)
    y = nb.reshape(y, shape, f"{name}_shape")
    return ctx.fused(y, op.options.get("fused_activation_function", 0), name, q)


@REGISTRY.register("LOCAL_RESPONSE_NORMALIZATION", since=1, until=1,
                   check=lambda op, ctx: _float_only(op, ctx) or (
                       None if len(ctx.shape(op.inputs[0])) == 4 else "input is not 4-D"),
                   layers=("Normalization",), notes="Across, LocalBrightness, NHWC")
def lrn(ctx, op):
    o = op.options
    x = ctx.port(op.inputs[0])
    # a window past every channel sums them all, as one reaching the last does (both TFLite
    # and Arm NN clip it to the channels), and Arm NN loops over the whole window
    radius = min(int(o["radius"]), x.info.shape[3] - 1)
    desc = D.NormalizationDescriptor(NormalizationAlgorithmChannel.Across,
                                     NormalizationAlgorithmMethod.LocalBrightness,
                                     2 * radius + 1, float(o["alpha"]), float(o["beta"]),
                                     float(o["bias"]), NHWC)
    return ctx.b.add(LayerType.Normalization, ctx.name(op), [x], desc)
