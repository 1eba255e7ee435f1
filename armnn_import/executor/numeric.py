"""Decoding and encoding of tensor data the way Arm NN 20.08 CpuRef does it
(src/backends/reference/workloads/BaseIterator.hpp, src/armnn/TypesUtils.cpp).

Most reference workloads decode every input element to float32, compute in
float32 and encode the result into the output's data type; these helpers do
that for whole arrays.
"""
from __future__ import annotations

import contextvars

import numpy as np

from ..errors import ExecutionError
from ..ir.types import DataType, TensorInfo

F32 = np.float32


def round_half_away(x: np.ndarray) -> np.ndarray:
    """C's round(): halves go away from zero (numpy's round goes to even)."""
    t = np.trunc(x)
    return np.where(np.abs(x - t) == 0.5, t + np.sign(x), np.round(x)).astype(x.dtype)


def decode(data: np.ndarray, info: TensorInfo) -> np.ndarray:
    """MakeDecoder<float>: raw tensor data -> float32."""
    dt = info.dtype
    if dt == DataType.Float32:
        return np.asarray(data, dtype=F32)
    if info.scales is not None:
        # QSymm8PerAxisDecoder / ScaledInt32PerAxisDecoder: value * scale of its index along
        # quant_dim (offset 0). (Depthwise weights are indexed by output channel: layers.py.)
        shape = [1] * data.ndim
        shape[info.quant_dim] = len(info.scales)
        return data.astype(F32) * np.asarray(info.scales, F32).reshape(shape)
    if dt in (DataType.QuantisedAsymm8, DataType.QAsymmS8, DataType.QSymmS8, DataType.QSymmS16):
        # Dequantize: float(value - offset) * scale, all in float32.
        return (data.astype(np.int64) - info.offset).astype(F32) * F32(info.scale)
    if dt == DataType.Signed32:
        # Int32Decoder when the scale is 0, ScaledInt32Decoder (value * scale) otherwise.
        f = data.astype(F32)
        return f if info.scale == 0.0 else f * F32(info.scale)
    # Float16 and Boolean: plain conversion.
    return data.astype(F32)


def encode(values: np.ndarray, info: TensorInfo) -> np.ndarray:
    """MakeEncoder<float>: float32 results -> raw data of the output's type."""
    values = np.asarray(values, dtype=F32)
    dt = info.dtype
    if dt == DataType.Float32:
        return values
    if dt == DataType.QuantisedAsymm8:
        return quantize(values, info.scale, info.offset)
    if dt in (DataType.QAsymmS8, DataType.QSymmS8):
        return quantize(values, info.scale, info.offset, -128, 127).astype(np.int8)
    if dt == DataType.QSymmS16:  # (QSymm16Encoder: armnn::Quantize<int16_t>)
        return quantize(values, info.scale, info.offset, -32768, 32767)
    if dt == DataType.Float16:
        return to_half(values)
    if dt == DataType.Signed32:
        # Int32Encoder: static_cast<int32_t>(float), i.e. truncation.
        with np.errstate(invalid="ignore"):
            return np.trunc(values).astype(np.int32)
    return values != 0  # Boolean


def quantize(values: np.ndarray, scale: float, offset: int, lo: int = 0, hi: int = 255) -> np.ndarray:
    """armnn::Quantize<uint8_t>: clamp(round(value / scale) + offset, 0, 255) (int8: -128..127,
    int16: -32768..32767)."""
    if np.isnan(values).any():
        # e.g. an average over an empty pooling window, or sqrt of a negative variance
        raise ExecutionError("a NaN result cannot be quantized (Arm NN 20.08 aborts on an assertion)")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = round_half_away(values.astype(F32) / F32(scale)) + F32(offset)
    if lo < 0:
        return np.clip(q, F32(lo), F32(hi)).astype(np.int16)
    return np.clip(q, F32(0), F32(255)).astype(np.uint8)


# Whether Float16 results round as Arm NN 23.08's CpuRef does: set by run_all from the graph's
# format (a 23.08 file is only read by 23.08 and later; older formats are run as 20.08 runs them)
HALF_23 = contextvars.ContextVar("half_23", default=False)
F16_MAX = np.float16(np.finfo(np.float16).max)


def to_half(values: np.ndarray) -> np.ndarray:
    """float32 -> float16 as the runtime's Float16Encoder does it. Arm NN 20.08: armnn::Half,
    round to nearest, ties away from zero (half.hpp with HALF_ROUND_STYLE 1,
    HALF_ROUND_TIES_TO_EVEN 0), overflow to inf. Arm NN 23.08 (HALF_23): ties to even, and an
    infinite result (an infinity included) saturated to +-65504
    (armnnUtils::FloatingPointConverter::ConvertFloat32To16). Measured on both runtimes:
    tests/test_fp16_rounding.py."""
    values = np.asarray(values, dtype=F32)
    if HALF_23.get():
        with np.errstate(over="ignore"):
            h = values.astype(np.float16)
        return np.where(np.isinf(h), np.copysign(F16_MAX, h), h).astype(np.float16)
    with np.errstate(over="ignore", invalid="ignore"):
        h = values.astype(np.float16)
        back = h.astype(F32)
        diff = values - back                      # exact: |diff| <= half an ulp of h
        away = np.nextafter(h, np.where(diff > 0, np.float16(np.inf), np.float16(-np.inf)))
        gap = away.astype(F32) - back
        tie = (diff != 0) & np.isfinite(h) & (2 * diff == gap) & (np.abs(away) > np.abs(h))
    return np.where(tie, away, h)
