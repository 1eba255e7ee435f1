"""Pooling: AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D (NHWC; TFLite never counts padding),
a VALID window larger than the input giving an empty constant (empty.py)."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.types import ActivationFunction as AF
from armnn_import.ir.types import DataLayout, PoolingAlgorithm
from armnn_import.lowering.qround import relabel

from .. import quant as Q
from . import REGISTRY
from .conv import pads_2d
from .empty import empty_pool_or

NHWC = DataLayout.NHWC


def _check_pool(op, ctx):
    shape = ctx.shape(op.inputs[0])
    if len(shape) != 4:
        return "input is not 4-D"
    return None  # a VALID filter larger than the input gives an empty output (ops/empty.py)


def _check_l2(op, ctx):
    if ctx.is_quant(op.inputs[0]):
        return "quantized L2 pooling needs float intermediates (Arm NN 20.08 cannot read L2 Pooling2d)"
    return _check_pool(op, ctx)


def _quant_average(ctx, op, x, k, strides, pads, q, name):
    """A quantized AVERAGE_POOL_2D, rounded as LiteRT rounds: the sum of the window's levels
    divided by its count of valid elements, half away from zero, on the raw int8 values (uint8:
    half up, on the raw values, all >= 0). Arm NN averages the decoded real values in float and
    rounds half away from zero relative to the zero point; so the pool runs on the bytes read as
    scale 1 and zero point 0 (uint8) or 128 (int8, whose raw 0 is uint8 128), where every sum
    is an exact integer and every tie exact, and the result is read back with the model's."""
    nb = ctx.b
    raw0 = 128 if ctx.t(op.inputs[0]).type == Q.INT8 else 0
    if (x.info.scale, x.info.offset) != (float(np.float32(q[0])), q[1]):  # LiteRT requires them equal
        return nb.pool2d(x, PoolingAlgorithm.Average, k, name, strides=strides, pads=pads, layout=NHWC,
                         exclude_pad=True, quant=q)
    y = nb.pool2d(relabel(nb, x, (1.0, raw0), f"{name}_raw"), PoolingAlgorithm.Average, k, f"{name}_pool",
                  strides=strides, pads=pads, layout=NHWC, exclude_pad=True, quant=(1.0, raw0))
    ctx.report.decomposition("quantized AVERAGE_POOL_2D", "pooled on the bytes read as scale 1 and zero "
                             "point 0 (uint8) or 128 (int8), so that Arm NN rounds the average as LiteRT "
                             "does, between identity Permutes that change only the quantization")
    return relabel(nb, y, q, name)


def _pool(algo):
    def convert(ctx, op):
        o, nb, name = op.options, ctx.b, ctx.name(op)
        x = ctx.port(op.inputs[0])
        k = (o["filter_height"], o["filter_width"])
        strides = (o["stride_h"], o["stride_w"])
        pads = pads_2d(o, x.info.shape[1:3], k, strides)
        q = ctx.out_quant(op)
        if algo == PoolingAlgorithm.L2:
            # Arm NN 20.08's deserializer rejects L2 pooling: sqrt(average(x^2)) instead
            sq = nb.activation(x, AF.Square, f"{name}_square")
            y = nb.pool2d(sq, PoolingAlgorithm.Average, k, f"{name}_mean", strides=strides, pads=pads,
                          layout=NHWC, exclude_pad=True)
            y = nb.activation(y, AF.Sqrt, name)
            ctx.report.decomposition("L2_POOL_2D", "Square, average Pooling2d (padding excluded), Sqrt")
        elif algo == PoolingAlgorithm.Average and q is not None:
            y = _quant_average(ctx, op, x, k, strides, pads, q, name)
        else:  # TFLite never counts padding: averages divide by the valid elements
            y = nb.pool2d(x, algo, k, name, strides=strides, pads=pads, layout=NHWC, exclude_pad=True, quant=q)
        return ctx.fused(y, o["fused_activation_function"], name, q)
    return convert


for _op, _algo, _until, _layers in (
        ("AVERAGE_POOL_2D", PoolingAlgorithm.Average, 3, ("Pooling2d", "Permute")),
        ("MAX_POOL_2D", PoolingAlgorithm.Max, 3, ("Pooling2d",)),
        ("L2_POOL_2D", PoolingAlgorithm.L2, 1, ("Activation", "Pooling2d"))):
    REGISTRY.register(_op, since=1, until=_until, check=_check_pool if _op != "L2_POOL_2D" else _check_l2,
                      layers=_layers)(empty_pool_or(_pool(_algo)))
