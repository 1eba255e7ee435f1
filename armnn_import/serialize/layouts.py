"""Depthwise weights in the layout each format means by them.

The IR keeps depthwise weights as [M, C, kH, kW] (output channel c * M + m), the
layout of the 19.02 and 20.08 formats. From the 23.08 target on the file says
featureVersions.weightsLayoutScheme 1, and with it Arm NN 23.08 reads depthwise
weights as they are, in its own layout [1, kH, kW, C * M] (Deserializer.cpp
ParseDepthwiseConvolution2d), and every Constant layer as it is (ParseConstant; with
scheme 0 it takes each one for old-layout depthwise weights and permutes it). So
the writer turns the weights into [1, kH, kW, C * M] there, and the reader back.
Per-axis scales stay in output-channel order, on dimension 3 (as 23.08's own
conversion of old-layout weights leaves them: armnnUtils::Permuted moves dim 0 to 3).
"""
from __future__ import annotations

import numpy as np

from ..ir.types import ConstTensor, TensorInfo

#: the featureVersions.weightsLayoutScheme the 23.08 target writes
WEIGHTS_LAYOUT_SCHEME = 1


def depthwise_to_file(t: ConstTensor) -> tuple[np.ndarray, TensorInfo]:
    """[M, C, kH, kW] -> (a strided [kH, kW, C, M] view, whose C-order bytes are the
    [1, kH, kW, C * M] tensor, and that tensor's TensorInfo). The writer copies the
    view once, straight into the file."""
    m, c, kh, kw = t.info.shape
    view = t.stored.transpose(2, 3, 1, 0)
    i = t.info
    info = TensorInfo((1, kh, kw, c * m), i.dtype, i.scale, i.offset, i.scales, 3 if i.scales is not None else 0)
    return view, info


def depthwise_from_file(t: ConstTensor, in_channels: int) -> ConstTensor:
    """[1, kH, kW, C * M] -> [M, C, kH, kW] (the inverse of depthwise_to_file)."""
    one, kh, kw, cm = t.info.shape
    if one != 1 or in_channels < 1 or cm % in_channels:
        raise ValueError(f"depthwise weights {t.info.shape} are not [1, kH, kW, C * M] for {in_channels} "
                         "input channels")
    c, m = in_channels, cm // in_channels
    data = np.ascontiguousarray(t.data.reshape(kh, kw, c, m).transpose(3, 2, 0, 1))
    i = t.info
    info = TensorInfo((m, c, kh, kw), i.dtype, i.scale, i.offset, i.scales, 0)
    return ConstTensor(data, info, t.storage)
