"""Cast and BatchMatMul, layers of the 23.08 format, following Arm NN 23.08's CpuRef
(src/backends/reference/workloads/RefCastWorkload.cpp, BatchMatMulImpl.cpp)."""
from __future__ import annotations

import numpy as np

from ..ir.types import LayerType
from .common import layer_fn
from .numeric import F32, decode, encode, round_half_away


@layer_fn(LayerType.Cast)
def cast(layer, ins, infos):
    # RefCastWorkload: a float decoder and a float encoder with quantization reset to (1, 0):
    # int32 -> float32 rounds as static_cast<float>, float -> int32 truncates (Int32Encoder)
    info = infos[0]
    x = ins[0].astype(F32) if info.dtype.is_quantized else decode(ins[0], info)
    out = layer.outputs[0]
    if out.dtype.is_quantized:
        lo, hi = np.iinfo(out.dtype.np_dtype).min, np.iinfo(out.dtype.np_dtype).max
        return [np.clip(round_half_away(x), lo, hi).astype(out.dtype.np_dtype)]
    return [encode(x, out)]


@layer_fn(LayerType.BatchMatMul)
def batch_matmul(layer, ins, infos):
    # BatchMatMulImpl: both inputs decoded to float32 (transposed on the last two axes when
    # asked), each output element a float32 sum over the inner axis in index order
    d = layer.desc
    x, y = (decode(a, i).astype(F32) for a, i in zip(ins, infos))
    if d.transpose_x:
        x = np.swapaxes(x, -1, -2)
    if d.transpose_y:
        y = np.swapaxes(y, -1, -2)
    batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    x = np.broadcast_to(x, batch + x.shape[-2:])
    y = np.broadcast_to(y, batch + y.shape[-2:])
    total = np.zeros(batch + (x.shape[-2], y.shape[-1]), F32)
    with np.errstate(all="ignore"):
        for k in range(x.shape[-1]):  # sum += x * y, in float32, k = 0, 1, ...
            total = (total + (x[..., :, k:k + 1] * y[..., k:k + 1, :]).astype(F32)).astype(F32)
    return [encode(total, layer.outputs[0])]
