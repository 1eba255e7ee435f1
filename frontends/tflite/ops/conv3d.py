"""CONV_3D (float32) as one Convolution3d layer of the 23.08 format: TFLite's NDHWC input and
[kD, kH, kW, I, O] filter are Arm NN's own layout (weights and bias become input tensors made
by FullyConnected layers, lowering/builder.py conv3d); the fused activation follows."""
from __future__ import annotations

from armnn_import.ir.types import DataLayout
from armnn_import.lowering import Unsupported

from . import REGISTRY
from .conv import pads_1d
from .weights import const_weights as _const_weights

FLOAT32 = 0


def _check_conv3d(op, ctx):
    r = _const_weights(op, ctx)
    if r:
        return r
    if len(ctx.shape(op.inputs[0])) != 5:
        return "input is not 5-D"
    types = [ctx.t(i).type for i in op.inputs if i >= 0] + [ctx.t(op.outputs[0]).type]
    if any(t != FLOAT32 for t in types):
        return "only float32 CONV_3D is converted"
    return None


@REGISTRY.register("CONV_3D", since=1, until=1, check=_check_conv3d, needs="23.08",
                   layers=("Convolution3d", "FullyConnected", "StridedSlice", "Reshape", "Activation"),
                   notes="float32; SAME/VALID, strides, dilations; dense (no groups)")
def conv_3d(ctx, op):
    o, name = op.options, ctx.name(op)
    x = ctx.port(op.inputs[0])
    w = ctx.const(op.inputs[1])                      # [kD, kH, kW, I, O]
    if w.ndim != 5 or w.shape[3] != x.info.shape[4]:
        raise Unsupported(f"filter {list(w.shape)} does not fit an input of {x.info.shape[4]} channels "
                          "(grouped 3-D convolution: Arm NN's Convolution3d is dense)")
    bias = ctx.const(op.inputs[2]).reshape(-1) if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
    strides = (o["stride_d"], o["stride_h"], o["stride_w"])
    dil = (o["dilation_d_factor"], o["dilation_h_factor"], o["dilation_w_factor"])
    pads = [pads_1d(o["padding"], size, k, s, d) for size, k, s, d in zip(x.info.shape[1:4], w.shape[:3], strides, dil)]
    y = ctx.b.conv3d(x, w.transpose(4, 3, 0, 1, 2), bias, name, strides=strides, dilations=dil,
                      pads=tuple(p[0] for p in pads) + tuple(p[1] for p in pads), layout=DataLayout.NDHWC)
    return ctx.fused(y, o["fused_activation_function"], name, ctx.out_quant(op))
