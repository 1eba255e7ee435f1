"""The weights and biases of TFLite's convolutions and FULLY_CONNECTED: float (dequantized where
8-bit), per-tensor uint8 (exact, or requantized and reported), per-channel int8 kept exact where
the lowering can, and the pre-scan's check that they are constants."""
from __future__ import annotations

import numpy as np

from armnn_import.lowering import perchannel
from armnn_import.lowering.quant import requantize_weights

from .. import grid16 as G
from .. import quant as Q
from ..types import INT32, INT64


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
        why = " (--dequantize)" if ctx.dequantize else " (16x8 mode)" if ctx.mode16 else " (dynamic-range model)"
        ctx.report.quantization.append({
            "layer": layer, "tensor": t.name, "decision": "8-bit weights dequantized to float32" + why})
        if not (ctx.dequantize or ctx.mode16):  # (once: report.warn drops repeats)
            ctx.report.warn(DYNAMIC_RANGE_WARNING)
    return ctx.const(i)


def bias_values(ctx, op, wi: int, bi: int):
    """The bias (input bi) as TFLite's quantized kernels add it, or None: their accumulator's
    scale is s_in * s_w[c], and they add the raw int32/int64 values to it whatever scale the
    bias tensor records. The two differ where one bias serves layers of other input scales (an
    unrolled 16x8 GRU's recurrent FULLY_CONNECTEDs share theirs: 9,406 output steps apart)."""
    if bi < 0:
        return None
    b, w = ctx.t(bi), ctx.t(wi)
    x = ctx.t(op.inputs[2] if op.op == "TRANSPOSE_CONV" else op.inputs[0])
    if (bi in ctx.folded or b.data is None or b.quant is None or b.type not in (INT32, INT64)
            or x.quant is None or not x.quant.per_tensor or w.quant is None or wi in ctx.folded):
        return ctx.const(bi)
    n = b.data.size
    s = np.float64(x.quant.scale[0]) * np.broadcast_to(np.asarray(w.quant.scale, np.float64).reshape(-1), (n,))
    recorded = np.broadcast_to(np.asarray(b.quant.scale, np.float32).reshape(-1), (n,))
    if np.allclose(recorded, s, rtol=1e-6, atol=0):  # (the usual case, to float32 rounding: as recorded)
        return ctx.const(bi)
    return (b.data.astype(np.float64).reshape(-1) * s).astype(np.float32).reshape(b.data.shape)


def float_kernel(ctx, op, wi: int, bi: int, layer: str, axis: int):
    """(float weights, float bias or None) of a float convolution or FULLY_CONNECTED (output
    channels on `axis` of the weights); for an int16 input (16x8 mode), with TFLite's 16-bit
    output multipliers folded in per output channel (grid16.kernel_factors)."""
    w = float_weights(ctx, wi, layer)
    bias = bias_values(ctx, op, wi, bi)
    bias = None if bias is None else bias.reshape(-1)
    f = G.kernel_factors(ctx, op, wi, axis) if ctx.mode16 else None
    if f is not None:
        shape = [1] * w.ndim
        shape[axis] = f.size
        w = (w * f.reshape(shape)).astype(np.float32)
        bias = None if bias is None else (bias * f).astype(np.float32)
    return w, bias


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
        # (raw int32 values as they are, in the accumulator's scale: bias_values)
        b = perchannel.bias(Q.finite(ctx.const(bi), f"bias {bt.name!r}"), x_scale, t.quant.scale, raw,
                            None if raw is None else np.float32(x_scale) * np.asarray(t.quant.scale, np.float32))
    return t.data, t.quant.scale, b
