"""Quantization helpers. Arm NN's format has one 8-bit type, QuantisedAsymm8
(uint8, one scale and offset per tensor); TFLite also has int8 and per-channel
scales. int8 per tensor maps exactly (q + 128, offset + 128); per-channel
weights are requantized per tensor, with the error reported."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.types import ConstTensor, DataType, TensorInfo

INT8, UINT8, INT32 = 9, 3, 2
# Warn when a requantized weight is off by more than this fraction of its channel's range.
WEIGHT_WARN = 0.02


def to_uint8(q: np.ndarray, zero_point: int, tflite_type: int) -> tuple[np.ndarray, int]:
    """Exact int8 -> uint8: (q + 128, zero point + 128); uint8 unchanged."""
    if tflite_type == INT8:
        return (q.astype(np.int16) + 128).astype(np.uint8), int(zero_point) + 128
    return q.astype(np.uint8), int(zero_point)


def dequantize(data: np.ndarray, quant, shape) -> np.ndarray:
    """Real values of quantized constant data (per tensor or per channel)."""
    scale = quant.scale.astype(np.float64)
    zp = quant.zero_point.astype(np.float64)
    if scale.size > 1:
        bshape = [1] * len(shape)
        bshape[quant.axis] = scale.size
        scale, zp = scale.reshape(bshape), zp.reshape(bshape)
    return ((data.astype(np.float64) - zp) * scale).astype(np.float32)


def requantize(real: np.ndarray) -> tuple[np.ndarray, float, int]:
    """Per-tensor asymmetric uint8 quantization of float values covering
    [min(x, 0), max(x, 0)] so that 0 is exact. Returns (q, scale, offset)."""
    lo, hi = min(float(real.min(initial=0.0)), 0.0), max(float(real.max(initial=0.0)), 0.0)
    scale = float(np.float32((hi - lo) / 255.0)) if hi > lo else 1.0
    offset = int(np.clip(np.round(-lo / scale), 0, 255))
    q = np.clip(np.round(real.astype(np.float64) / scale) + offset, 0, 255).astype(np.uint8)
    return q, scale, offset


def worst_error(real: np.ndarray, q: np.ndarray, scale: float, offset: int, axis: int) -> float:
    """Largest |w - dequantized w| relative to the range (max |w|) of its output channel."""
    err = np.abs((q.astype(np.float64) - offset) * scale - real.astype(np.float64))
    moved = np.moveaxis(err, axis, 0).reshape(err.shape[axis], -1)
    rng = np.moveaxis(np.abs(real.astype(np.float64)), axis, 0).reshape(err.shape[axis], -1).max(axis=1)
    rel = moved.max(axis=1) / np.where(rng > 0, rng, 1.0)
    return float(rel.max(initial=0.0))


def bias_int32(real: np.ndarray, scale: float) -> ConstTensor:
    """A Signed32 bias with the given scale (input scale * weight scale), offset 0."""
    q = np.clip(np.round(real.astype(np.float64) / scale), -2 ** 31, 2 ** 31 - 1).astype(np.int32)
    return ConstTensor(q, TensorInfo(q.shape, DataType.Signed32, scale, 0))


def real_range(scale: float, offset: int) -> tuple[float, float]:
    """The real values a QuantisedAsymm8 tensor can hold."""
    return (0 - offset) * scale, (255 - offset) * scale


def covering_quant(lo: float, hi: float) -> tuple[float, int]:
    """(scale, offset) of a uint8 quantization covering [lo, hi] (widened to include 0)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi <= lo:
        return 1.0, 0
    scale = float(np.float32((hi - lo) / 255.0))
    return scale, int(np.clip(np.round(-lo / scale), 0, 255))
