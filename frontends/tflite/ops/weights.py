"""The weights and biases of TFLite's convolutions and FULLY_CONNECTED: float (dequantized where
8-bit), per-tensor uint8 (exact, or requantized and reported), per-channel int8 kept exact where
the lowering can, and the pre-scan's check that they are constants."""
from __future__ import annotations

import numpy as np

from armnn_import.lowering import perchannel
from armnn_import.lowering.quant import requantize_weights

from .. import quant as Q


# A dynamic-range model's outputs on LiteRT are not its float computation: the hybrid kernels
# quantize each activation to int8 on the fly (measured: 0.005-0.02 absolute on Keras Dense and
# Conv2D layers, docs/keras-sweep.md), which no Arm NN layer does.
DYNAMIC_RANGE_WARNING = (
    "dynamic-range model: its 8-bit weights are dequantized and the network computes in float32 "
    "(Arm NN has no hybrid kernels); LiteRT's hybrid kernels quantize activations to int8 on the fly, "
    "so LiteRT's outputs differ from this network's by that rounding (verify needs e.g. --atol 0.05)")


def const_weights(op, ctx, k=1):
    """Why the weights (input k) or the bias (input k + 1) are not constants, or None."""
    if not ctx.is_const(op.inputs[k]):
        return "weights that are computed at run time (Arm NN's format keeps weights constant)"
    for b in op.inputs[k + 1:k + 2]:
        if b >= 0 and not ctx.is_const(b):
            return "a bias that is computed at run time"
    return None


def float_weights(ctx, i: int, layer: str) -> np.ndarray:
    t = ctx.t(i)
    if t.data is not None and t.quant is not None and t.type in (Q.INT8, Q.UINT8):
        ctx.report.quantization.append({
            "layer": layer, "tensor": t.name,
            "decision": "8-bit weights dequantized to float32" +
                        (" (--dequantize)" if ctx.dequantize else " (dynamic-range model)")})
        if not ctx.dequantize:  # (once: report.warn drops repeats)
            ctx.report.warn(DYNAMIC_RANGE_WARNING)
    return ctx.const(i)


def quant_weights(ctx, i: int, axis: int, layer: str) -> tuple[np.ndarray, float, int]:
    """uint8 weights in TFLite's layout with one (scale, offset): exact for
    per-tensor 8-bit weights, requantized (and reported) otherwise."""
    t = ctx.t(i)
    if (i not in ctx.folded and t.data is not None and t.quant is not None and t.quant.per_tensor
            and t.type in (Q.INT8, Q.UINT8)):
        q, offset = Q.to_uint8(t.data, t.quant.zero_point[0], t.type)
        return q, float(np.float32(t.quant.scale[0])), offset
    per_channel = t.quant is not None and not t.quant.per_tensor
    return requantize_weights(ctx.report, layer, t.name, Q.finite(ctx.const(i), f"weights {t.name!r}"), axis,
                              "per-channel int8 weights requantized to per-tensor uint8" if per_channel
                              else "float weights quantized to per-tensor uint8")


def per_channel_weights(ctx, i: int, axis: int):
    """(uint8 weights in TFLite's layout, per-channel scales, offset) of int8 weights quantized
    along their output-channel `axis` with one zero point, kept exact (quant_conv2d_nchw splits
    the layer by scale), or None."""
    t = ctx.t(i)
    if (i in ctx.folded or t.data is None or t.quant is None or t.quant.per_tensor or t.type != Q.INT8
            or len(set(t.quant.zero_point.tolist())) != 1 or t.quant.axis != axis
            or t.quant.scale.size != t.data.shape[axis]):
        return None
    q, offset = Q.to_uint8(t.data, t.quant.zero_point[0], t.type)
    return q, np.asarray(t.quant.scale, np.float32).reshape(-1), offset


def per_axis_weights(ctx, wi: int, bi: int, axis: int, x_scale: float):
    """(int8 weights as stored, their scales, the per-axis Signed32 bias or None) of per-channel
    symmetric int8 weights quantized along `axis` (the output channels), else None."""
    t = ctx.t(wi)
    if (wi in ctx.folded or t.data is None or t.quant is None or t.quant.per_tensor or t.quant.axis != axis
            or not perchannel.symmetric_int8(t.data, t.quant.zero_point)):
        return None
    b = None
    if bi >= 0:
        bt = ctx.t(bi)
        raw = bt.data if bi not in ctx.folded and bt.type == Q.INT32 and bt.quant is not None else None
        b = perchannel.bias(Q.finite(ctx.const(bi), f"bias {bt.name!r}"), x_scale, t.quant.scale, raw,
                            None if raw is None else bt.quant.scale)
    return t.data, t.quant.scale, b
