"""Quantized pooling and concatenation: QLinearGlobalAveragePool, QLinearAveragePool,
QLinearConcat and the QDQ GlobalAveragePool, MaxPool, AveragePool and Concat (see qlinear.py)."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.graph import Port
from armnn_import.ir.types import DataLayout, PoolingAlgorithm
from armnn_import.lowering import Unsupported
from armnn_import.lowering.pooling import mean_as_pool
from armnn_import.lowering.qround import mean_half_even

from ..quant import DEQUANTIZE_HINT, MOVES, qdq
from ..registry import all_checks, needs_const, register
from .common import mean, norm_axes
from .conv import back as _back
from .conv import kernel as _kernel
from .conv import pair as _pair
from .conv import pool_geometry as _pool_geometry
from .conv import spatial_rank_check as _spatial_rank_check
from .conv import to_4d as _to_4d
from .qlinear import params as _params, qoperand as _qoperand, qport as _qport, saturate as _saturate
from .reduce import reduce_axes as _reduce_axes


def _gap(ctx, node, x: Port, yq, channels_last=False) -> Port:
    rank = x.info.rank
    if rank < 3:
        raise Unsupported(f"a {rank}-D input (global pooling needs N, C and spatial axes)")
    axes = list(range(1, rank - 1)) if channels_last else list(range(2, rank))
    layout = DataLayout.NHWC if channels_last else DataLayout.NCHW
    if yq is None:
        y = mean_as_pool(ctx.b, x, axes, True, ctx.name(node), layout=layout)
        return y if y is not None else mean(ctx, x, axes, ctx.name(node))
    if rank > 4:
        raise Unsupported("global pooling of a quantized tensor of more than 4 dimensions")
    count = int(np.prod([x.info.shape[a] for a in axes]))
    if (x.info.scale, x.info.offset) == (float(np.float32(yq[0])), yq[1]) and count % 2 == 0 and \
            list(axes) == [rank - 2, rank - 1]:
        # an even count makes ties, which onnxruntime rounds to even, Arm NN away from the zero point
        return mean_half_even(ctx.b, x, axes, ctx.name(node))
    # from 23.08 an Average Pooling2d: the same float sum and quotient as the Mean, encoded alike
    y = mean_as_pool(ctx.b, x, axes, True, ctx.name(node), layout=layout, quant=yq, requant=True)
    return y if y is not None else ctx.b.mean(x, axes, True, ctx.name(node), quant=yq)


@register("QLinearGlobalAveragePool", since=1, layers=("Mean", "Activation", "Addition", "Multiplication",
                  "Permute", "Subtraction", "Pooling2d", "Reshape"), check=needs_const(1, 2, 3, 4),
          notes="com.microsoft; channels_last too")
def qlinear_global_average_pool(ctx, node):
    x = _qport(ctx, node, 0, 1, 2)
    last = bool(ctx.attr(node, "channels_last", 0))
    if ctx.quant.dequantize:
        return _saturate(ctx, node, _gap(ctx, node, x, None, last), 3, 4)
    return _gap(ctx, node, x, _params(ctx, node, 3, 4), last)


@qdq("GlobalAveragePool", layers=("Mean", "Activation", "Addition", "Multiplication", "Permute",
                                  "Subtraction", "Pooling2d", "Reshape"))
def qdq_global_average_pool(ctx, node):
    x = ctx.port(node, 0, dtypes=None)
    return _gap(ctx, node, x, ctx.quant.out_quant(node, keep=x))


@qdq("ReduceMean", layers=("Mean", "Activation", "Addition", "Multiplication", "Permute", "Subtraction",
                           "Pooling2d", "Reshape"), notes="quantized inputs (QDQ): over H and W of a 4-D tensor, a global average pool")
def qdq_reduce_mean(ctx, node):
    """x.mean((2, 3)) as torch exports it (shufflenet, mnasnet): the global average pool's lowering,
    then the kept dimensions dropped when keepdims=0."""
    x = ctx.port(node, 0, dtypes=None)
    axes, keep = _reduce_axes(ctx, node, x.info.rank)
    if axes is None:
        return x
    if x.info.rank != 4 or axes != [2, 3]:
        raise Unsupported(f"a quantized ReduceMean over axes {axes} of a {x.info.rank}-D tensor (only over H "
                          "and W of a 4-D tensor, as a global average pool)", DEQUANTIZE_HINT)
    y = _gap(ctx, node, x, _quant_after_moves(ctx, node) or ctx.quant.out_quant(node, keep=x))
    return y if keep else ctx.to_shape(y, tuple(x.info.shape[:2]), ctx.name(node))


def _quant_after_moves(ctx, node):
    """The QuantizeLinear's parameters after the mean, looking through a chain of single-use
    moves (QOperator models: DequantizeLinear -> ReduceMean -> Flatten -> QuantizeLinear -> QGemm):
    the mean rounds once, into them, as onnxruntime's float mean and QuantizeLinear do."""
    tensor = node.outputs[0]
    while (q := ctx.quant.after(tensor)) is None:
        users = ctx.quant.consumers.get(tensor, [])
        if len(users) != 1 or users[0].op_type not in MOVES or len(users[0].output) != 1:
            return None
        tensor = users[0].output[0]
    return q


def _pool(ctx, node, x: Port, algo, yq) -> Port:
    if len(node.outputs) > 1 and node.outputs[1]:
        raise Unsupported("the Indices output of MaxPool has no Arm NN equivalent")
    x, nd = _to_4d(ctx, x, node)
    kernel = _kernel(ctx, node, nd)
    if _pair(ctx.attr(node, "dilations"), nd, 1) != (1, 1):
        raise Unsupported("dilated pooling of a quantized tensor")
    strides, pads, ceil = _pool_geometry(ctx, node, x, nd, kernel)
    y = ctx.b.pool2d(x, algo, kernel, ctx.name(node), strides=strides, pads=pads, ceil=ceil,
                     exclude_pad=not ctx.attr(node, "count_include_pad", 0), quant=yq)
    return _back(ctx, y, nd, node)


def _qdq_pool(algo):
    def convert(ctx, node):
        x = ctx.port(node, 0, dtypes=None)
        return _pool(ctx, node, x, algo, ctx.quant.out_quant(node, keep=x))
    return convert


qdq("MaxPool", layers=("Pooling2d",))(_qdq_pool(PoolingAlgorithm.Max))
qdq("AveragePool", layers=("Pooling2d",))(_qdq_pool(PoolingAlgorithm.Average))


def _check_qpool(node, ctx):
    if ctx.attr(node, "channels_last", 0):
        return "channels_last average pooling"
    return _spatial_rank_check(node, ctx)


@register("QLinearAveragePool", since=1, layers=("Pooling2d",), check=all_checks(needs_const(1, 2, 3, 4), _check_qpool),
          notes="com.microsoft")
def qlinear_average_pool(ctx, node):
    x = _qport(ctx, node, 0, 1, 2)
    if ctx.quant.dequantize:
        return _saturate(ctx, node, _pool(ctx, node, x, PoolingAlgorithm.Average, None), 3, 4)
    return _pool(ctx, node, x, PoolingAlgorithm.Average, _params(ctx, node, 3, 4))


def _concat(ctx, node, ports, yq) -> Port:
    if any(not isinstance(p, Port) for p in ports):
        raise Unsupported("a constant input of a quantized Concat", DEQUANTIZE_HINT)
    axis = norm_axes([ctx.attr(node, "axis", 0)], ports[0].info.rank)[0]
    if len(ports) == 1:
        return ports[0] if yq is None else ctx.b.linear(ports[0], 1.0, 0.0, ctx.name(node), quant=yq)
    return ctx.b.concat(ports, axis, ctx.name(node), quant=yq)


@qdq("Concat", layers=("Merger",))
def qdq_concat(ctx, node):
    vals = [ctx.val(node, i) for i in range(len(node.inputs)) if ctx.has(node, i)]
    return _concat(ctx, node, vals, ctx.quant.out_quant(node))


def _check_qconcat(node, ctx):
    if (len(node.inputs) - 2) % 3 or len(node.inputs) < 5:
        return f"{len(node.inputs)} inputs (Y_scale, Y_zero_point, then (X, scale, zero point) per input)"
    return needs_const(0, 1, *[i for k in range(2, len(node.inputs), 3) for i in (k + 1, k + 2)])(node, ctx)


@register("QLinearConcat", since=1, layers=("Merger",), check=_check_qconcat, notes="com.microsoft")
def qlinear_concat(ctx, node):
    if ctx.quant.dequantize:
        ports = [ctx.port(node, k) if not ctx.is_const(node, k) else
                 ctx.materialize(_qoperand(ctx, node, k, k + 1, k + 2), ctx.name(node, f"in{k}"))
                 for k in range(2, len(node.inputs), 3)]
        return _saturate(ctx, node, _concat(ctx, node, ports, None), 0, 1)
    ports = []
    for k in range(2, len(node.inputs), 3):
        if ctx.is_const(node, k):
            raise Unsupported("a constant input of a quantized Concat", DEQUANTIZE_HINT)
        ports.append(_qport(ctx, node, k, k + 1, k + 2))
    return _concat(ctx, node, ports, _params(ctx, node, 0, 1))
