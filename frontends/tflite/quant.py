"""Quantization helpers. Arm NN's format has one 8-bit type, QuantisedAsymm8
(uint8, one scale and offset per tensor); TFLite also has int8 and per-channel
scales. int8 per tensor maps exactly (q + 128, offset + 128), and from the 20.08
format on the converter's _keep_int8 gives the int8 tensors back their type (QAsymmS8,
armnn_import/lowering/int8.py); per-channel weights are requantized per tensor (exact
per-axis QSymmS8 from 20.08 on: lowering/perchannel.py), with the error reported."""
from __future__ import annotations

import numpy as np

from armnn_import.lowering import Unsupported

# Shared with the ONNX frontend (re-exported: the TFLite converters use Q.requantize etc.)
from armnn_import.lowering.quant import (WEIGHT_WARN, bias_int32, covering_quant, real_range,  # noqa: F401
                                         requantize, worst_error)

from .types import INT8, INT32, UINT8  # noqa: F401  (Q.INT8 ... in the operator modules)


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
    # beyond float32's range a real value is inf, as LiteRT's float32 dequantization gives it (a
    # damaged file's scale): no numpy overflow warning; layers that cannot hold inf refuse (finite)
    with np.errstate(over="ignore"):
        return ((data.astype(np.float64) - zp) * scale).astype(np.float32)


def finite(values: np.ndarray, what: str) -> np.ndarray:
    """values, or Unsupported if a quantized layer would have to hold inf or NaN."""
    values = np.asarray(values)
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        raise Unsupported(f"{what} holds inf or NaN, which a quantized layer cannot represent")
    return values
