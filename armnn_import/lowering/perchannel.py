"""Per-channel int8 weights kept exact (the 20.08 format on): QSymmS8 weights with one scale
per output channel (TensorInfo quantizationScales, quantizationDim 0) and a Signed32 bias
with per-axis scales input scale x weight scale, instead of requantizing the weights to
one uint8 scale (lowering/quant.py). The activations stay per-tensor uint8.

What each release's CpuRef runs (measured on the real runtimes, tests/test_perchannel.py):
- Convolution2d and DepthwiseConvolution2d: 20.08 and 23.08. ConvImpl.cpp picks the
  weight's scale by output channel (SetIndex(filterIndex, cOutput)), so depthwise weights
  [M, C, kH, kW] carry their C * M scales in output order c * M + m, on dimension 0 (the only
  dimension WorkloadData.cpp accepts); 23.08's deserializer permutes them to [1, H, W, C*M]
  and moves the dimension with them.
- FullyConnected: neither. 20.08 aborts while optimizing ("GetBiasTypeFromWeightsType():
  Unsupported data type", LayerSupportRules.hpp, for QSymmS8 weights), and even past that its
  PerAxisIterator::operator[] (the FullyConnected workload's access) takes the scale's index
  from the weight's value; 23.08 wants the weights of the input's type (QAsymmU8/QAsymmS8,
  which its decoders read per tensor only). So a per-channel FullyConnected is a 1x1
  Convolution2d over [rows, 1, 1, in] (NHWC), which computes the same sum in the same order.
"""
from __future__ import annotations

import numpy as np

from ..ir import descriptors as D
from ..ir.types import ConstTensor, DataLayout, DataType, LayerType, TensorInfo

# The first release whose CpuRef runs per-axis weights in each layer type (see above).
SINCE = {LayerType.Convolution2d: "20.08", LayerType.DepthwiseConvolution2d: "20.08"}


def available(nb, layer_type: LayerType) -> bool:
    return nb.g.target.at_least(SINCE[layer_type])


def symmetric_int8(data, zero_points) -> bool:
    """Whether quantized weights are int8 with every zero point 0 (QSymmS8 holds them as they are)."""
    return np.asarray(data).dtype == np.int8 and not np.any(np.asarray(zero_points))


def weights(q_int8: np.ndarray, scales) -> ConstTensor:
    """QSymmS8 weights, scales on dimension 0 (in output-channel order)."""
    q = np.ascontiguousarray(q_int8, np.int8)
    return ConstTensor(q, TensorInfo.per_axis(q.shape, DataType.QSymmS8, scales, 0))


def bias(real, x_scale: float, scales, raw_int32=None, raw_scales=None) -> ConstTensor:
    """Signed32 bias with per-axis scales x_scale * scales[c] (float32, as Arm NN multiplies).
    `raw_int32` (with its own scales) is taken as it is when its scales are these."""
    s = np.float32(x_scale) * np.asarray(scales, np.float32)
    if raw_int32 is not None and raw_scales is not None and np.array_equal(
            np.asarray(raw_scales, np.float32).reshape(-1), s):
        q = np.ascontiguousarray(raw_int32, np.int32).reshape(-1)
    else:
        q = np.clip(np.round(np.asarray(real, np.float64).reshape(-1) / s.astype(np.float64)),
                    -2 ** 31, 2 ** 31 - 1).astype(np.int32)
    return ConstTensor(q, TensorInfo.per_axis(q.shape, DataType.Signed32, s, 0))


def conv2d(nb, x, w_oihw_int8: np.ndarray, scales, b: ConstTensor | None, out_q, name: str, *,
           strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), groups: int = 1,
           layout: DataLayout = DataLayout.NCHW):
    """One Convolution2d or DepthwiseConvolution2d with per-axis weights (OIHW int8, one scale
    per output channel), or None for grouped convolutions (not depthwise), which keep the
    per-tensor lowering."""
    w = np.asarray(w_oihw_int8)
    cax = 3 if layout == DataLayout.NHWC else 1
    cin, cout = x.info.shape[cax], w.shape[0]
    depthwise = groups == cin and groups > 1 and w.shape[1] == 1
    if groups != 1 and not depthwise:
        return None
    ltype = LayerType.DepthwiseConvolution2d if depthwise else LayerType.Convolution2d
    if not available(nb, ltype):
        return None
    dil = tuple(1 if k == 1 else int(d) for k, d in zip(w.shape[2:], dilations))
    desc = dict(pad_left=pads[1], pad_right=pads[3], pad_top=pads[0], pad_bottom=pads[2],
                stride_x=strides[1], stride_y=strides[0], dilation_x=dil[1], dilation_y=dil[0],
                bias_enabled=b is not None, data_layout=layout)
    if depthwise:  # output channel c*M + m -> [M, C, kH, kW]; the scales stay in output order
        arr = w.reshape(cin, cout // cin, *w.shape[2:]).transpose(1, 0, 2, 3)
        d = D.DepthwiseConvolution2dDescriptor(**desc)
    else:
        arr = w if layout == DataLayout.NCHW else w.transpose(0, 2, 3, 1)
        d = D.Convolution2dDescriptor(**desc)
    tensors = {"weights": weights(arr, scales)}
    if b is not None:
        tensors["biases"] = b
    nb.report.decomposition("per-channel int8 convolution weights",
                            "QSymmS8 weights with per-axis scales and a per-axis Signed32 bias (exact)")
    return nb.add(ltype, name, [x], d, tensors=tensors, quant=out_q)


def fully_connected(nb, x2, w_int8: np.ndarray, scales, b: ConstTensor | None, out_q, name: str):
    """FullyConnected of 2-D x2 [rows, in] with per-axis weights [out, in], as a 1x1
    Convolution2d (see above); returns [rows, out]."""
    rows, n_in = x2.info.shape
    x4 = nb.reshape(x2, (rows, 1, 1, n_in), f"{name}_perchannel_rows")
    w = np.asarray(w_int8).reshape(w_int8.shape[0], n_in, 1, 1)  # OIHW
    y = conv2d(nb, x4, w, scales, b, out_q, name, layout=DataLayout.NHWC)
    if y is None:
        return None
    nb.report.decomposition("per-channel int8 fully connected weights", "a 1x1 Convolution2d with "
                            "per-axis QSymmS8 weights (CpuRef runs no per-axis FullyConnected)")
    return nb.reshape(y, (rows, w.shape[0]), f"{name}_perchannel_out")
