"""ConvTranspose as one TransposeConvolution2d layer (the 20.08 format on), where the layer computes
it exactly: float32, one group, no dilation, every pad cut from the full result (conv.py's
conv_transpose falls back to its decomposition otherwise)."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.types import DataLayout, DataType
from armnn_import.lowering import perchannel


def direct(ctx, x, w, bias, name, *, strides, dilations, out_pad, pads, groups, quant=None, weight_info=None,
           scales=None):
    """x: 4-D NCHW port; w: ONNX weights [Cin, Cout, kH, kW]; pads (top, left, bottom, right) of the
    full (in - 1) * stride + k + output_padding result. Quantized x (QDQ): w uint8 with weight_info,
    or w int8 with per-output-channel `scales` (QSymmS8 per axis, a per-axis Signed32 bias); quant
    the output's. Returns the port, or None."""
    # Arm NN's output is (in - 1) * stride + k - pads: output_padding's extra rows at the end (only
    # the bias there) are what remains when it cuts pad_end - output_padding instead of pad_end.
    cut = (pads[0], pads[1], pads[2] - out_pad[0], pads[3] - out_pad[1])
    quantized = weight_info is not None or scales is not None
    dtype_ok = x.info.dtype.is_quantized if quantized else x.info.dtype == DataType.Float32
    if groups != 1 or tuple(dilations) != (1, 1) or not dtype_ok or min(cut) < 0 \
            or not ctx.b.transpose_conv2d_fits(x, w.shape[1]):
        return None
    wk = np.ascontiguousarray(w.transpose(1, 0, 2, 3))  # [Cin, Cout, kH, kW] -> [O, I, kH, kW], unflipped
    if scales is not None:  # (CpuRef's per-axis decoder takes scale (index / (I kH kW)) % O: dimension 0)
        wk = perchannel.weights(wk, scales)
        bias = None if bias is None else perchannel.bias(bias, x.info.scale, scales)
    return ctx.b.transpose_conv2d(x, wk, bias, name, strides=strides, pads=cut, layout=DataLayout.NCHW,
                                  quant=quant, weight_info=weight_info)
