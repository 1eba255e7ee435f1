"""TFLite's 16x8 mode (int16 activations, int8 weights, int64 biases) from the 20.08 format on.

An int16 tensor of scale s holds the values s * q, q an integer in -32768..32767. Arm NN's
CpuRef computes every quantized layer in float (its decoders give float, its encoders round),
but cannot take this mode's tensors as they are: its Convolution2d wants QSymmS16 weights for a
QSymmS16 input, and its QSymmS16 decoder has one scale, where the weights have one per channel
(RefLayerSupport.cpp and Decoders.hpp of 20.08 and 23.08; Arm NN's own TfLite parser writes
QSymmS8 weights there, which 23.08's CpuRef refuses). So an int16 tensor here is a float32 tensor
that holds those same values: each operator runs in float32 on float weights (the int8 values
times their scales, the int64 biases likewise), and its int16 result is put back on its grid by
Quantize (QSymmS16, scale s: round half away from zero, clamp to the int16 range) then
Dequantize - the rounding TFLite's int16 kernels end in. Operators that only move or select
values of one grid (GRID_KEEPING) need no rounding. The model's QUANTIZE/DEQUANTIZE at its edges
are then the first rounding and an identity, and the network keeps float inputs and outputs.
"""
from __future__ import annotations

import math

import numpy as np

from armnn_import.ir.types import ConstTensor, DataType, LayerType, TensorInfo

from .types import INT16

# Operators whose int16 output is a selection of values of its int16 inputs: on their grid when
# every one of those is on the grid of the output's scale
GRID_KEEPING = frozenset({
    "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "TRANSPOSE", "MAX_POOL_2D", "STRIDED_SLICE", "SLICE", "GATHER",
    "SPLIT", "SPLIT_V", "PACK", "UNPACK", "CONCATENATION", "REDUCE_MAX", "REDUCE_MIN", "MAXIMUM", "MINIMUM",
    "RELU", "PAD", "SPACE_TO_DEPTH", "DEPTH_TO_SPACE", "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND", "TILE",
    "REVERSE_V2", "RESIZE_NEAREST_NEIGHBOR"})


# int16 kernels of LiteRT that are not the exactly rounded function (measured on its own inputs,
# scripts/gen_keras_layer_models.py's keras_gru_unroll_last.16x8 and the Keras sweep): this
# network computes the function and rounds once, so LiteRT differs by those steps, and by what
# they grow to downstream (a recurrence: 3 output steps)
APPROXIMATE_KERNELS = {
    "LOGISTIC": "a lookup table (1 step from the exact sigmoid)",
    "TANH": "a lookup table (2 steps from the exact tanh)",
    "SOFTMAX": "lookup tables of exp and 1/(1+x)",
    "RESIZE_BILINEAR": "10-bit interpolation weights (38 steps on a 5x4 to 9x7 resize)"}


def fits(t) -> bool:
    """Whether an int16 tensor is one this mode takes: one scale, zero point 0 (QSymmS16)."""
    q = t.quant
    return q is not None and q.per_tensor and int(q.zero_point[0]) == 0


def round_to_grid(ctx, op, k: int, port):
    """Output k of `op` (an int16 tensor, as float32) rounded to its grid, unless it is there."""
    i = op.outputs[k]
    scale = float(np.float32(ctx.t(i).quant.scale[0]))
    ins = [j for j in op.inputs if j >= 0 and j in ctx.ports]
    if op.op in GRID_KEEPING and ins and all(ctx.on_grid.get(j) == scale for j in ins):
        ctx.on_grid[i] = scale
        return port
    if op.op in APPROXIMATE_KERNELS:
        ctx.report.warn(f"16x8 mode: LiteRT's int16 {op.op} kernel uses {APPROXIMATE_KERNELS[op.op]}; this "
                        "network computes the function and rounds it once to the int16 grid, so LiteRT's "
                        "outputs differ from it by those steps and what they grow to (verify --lsb N)")
    name = ctx.name(op, k)
    q = ctx.b.add(LayerType.Quantize, f"{name}_int16", [port],
                  outputs=[TensorInfo(port.info.shape, DataType.QSymmS16, scale, 0)])
    ctx.on_grid[i] = scale
    ctx.report.decomposition("16x8 mode", "int16 tensors as float32, each result rounded to its int16 grid "
                             "by Quantize (QSymmS16) + Dequantize")
    return ctx.b.add(LayerType.Dequantize, f"{name}_grid", [q])


def varying_constant(ctx, ltype, ci, c) -> bool:
    """Whether an int16 constant operand (16x8 mode) that varies is read as its own QSymmS16
    levels: passes/int16.py then computes the layer on the int16 tensors (its Dequantize folds
    into a float32 Constant where the layer stays float)."""
    t = ctx.t(ci)
    varies = c.size > 1 and not np.all(c == c.reshape(-1)[0])  # (a uniform one is a Linear activation)
    return (ctx.grid16 and t.type == INT16 and fits(t) and ci not in ctx.folded and varies and
            ltype in (LayerType.Addition, LayerType.Subtraction, LayerType.Multiplication))


def levels_constant(ctx, ci, rank):
    """Dequantize(a QSymmS16 Constant of the tensor's int16 levels), shared by its readers:
    (float) q * scale, the float32 values ctx.const gives, bit for bit."""
    t = ctx.t(ci)
    shape = (1,) * (rank - len(t.shape)) + tuple(t.shape)
    key = (ci, shape, "int16")
    if key not in ctx.shared:
        ct = ConstTensor(t.data.astype(np.int16).reshape(shape),
                         TensorInfo(shape, DataType.QSymmS16, float(np.float32(t.quant.scale[0])), 0))
        levels = ctx.b.constant_layer(ct, f"{t.name}_int16")
        ctx.shared[key] = ctx.b.add(LayerType.Dequantize, f"{t.name}_levels", [levels])
    return ctx.shared[key]


def _reduced(m: float) -> float:
    """The multiplier TFLite's int16 kernels really apply for the real multiplier m: QuantizeMultiplier
    (a 31-bit fixed-point mantissa and a shift), cut to 16 bits by MultiplyByQuantizedMultiplier's
    int64 form (kernels/internal/common.h: (q + 2^15) >> 16, at most 0x7FFF)."""
    if m <= 0:
        return 0.0
    f, shift = math.frexp(m)
    q = round(f * (1 << 31))
    if q == 1 << 31:
        q, shift = q // 2, shift + 1
    if shift < -31:
        return 0.0
    r = (q + (1 << 15)) >> 16 if q < 0x7FFF0000 else 0x7FFF
    return math.ldexp(r, shift - 15)


def kernel_factors(ctx, op, wi: int, axis: int):
    """Per output channel, the factor that makes a float convolution (or FULLY_CONNECTED) of an
    int16 input give what TFLite's int16 kernel gives: it sums in int64 and scales by the 16-bit
    multiplier of _reduced(s_in * s_w / s_out), not by the real ratio (up to 2 output steps apart,
    measured on keras_conv_big.16x8). None unless the input is an int16 tensor and the weights int8."""
    xi, w, o = op.inputs[0], ctx.t(wi), ctx.t(op.outputs[0])
    if xi not in ctx.on_grid or w.quant is None or o.type != INT16 or not fits(o):
        return None
    s_in, s_out = float(ctx.t(xi).quant.scale[0]), float(o.quant.scale[0])
    scales = np.broadcast_to(np.asarray(w.quant.scale, np.float64).reshape(-1), (w.shape[axis],))
    real = [s_in * float(np.float32(s)) / s_out for s in scales]  # (in double, as TFLite)
    return np.array([_reduced(m) / m if m > 0 else 1.0 for m in real])
