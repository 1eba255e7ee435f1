"""Custom operators whose semantics are public and exactly those of builtins: mediapipe's
Convolution2DTransposeBias (mediapipe/util/tflite/operations/transpose_conv_bias.cc, run by
LiteRT's XNNPACK delegate), a TRANSPOSE_CONV with a bias input, its output shape that of its
output tensor. The loader (model.py, options.CUSTOM_STRUCTS) names such an operator by its custom
code and reads its options from its custom_options bytes. Every other custom operator is refused
(prescan.py)."""
from __future__ import annotations

from . import REGISTRY
from .conv import SAME, VALID, transpose_conv_nhwc

#: TfLitePadding -> the schema's Padding (conv.py's SAME/VALID)
_PADDING = {1: SAME, 2: VALID}


def _check_transpose_conv_bias(op, ctx):
    o = op.options
    if "_error" in o:
        return o["_error"]
    if o["tflite_padding"] not in _PADDING:
        return f"padding {o['tflite_padding']} is neither SAME (1) nor VALID (2)"
    if not ctx.is_const(op.inputs[1]) or not ctx.is_const(op.inputs[2]):
        return "weights or bias computed at run time (Arm NN's format keeps weights constant)"
    if ctx.is_quant(op.inputs[0]) or ctx.is_quant(op.outputs[0]):
        return "a quantized tensor: mediapipe's kernel is float only"
    shape, wshape = list(ctx.shape(op.outputs[0])), list(ctx.shape(op.inputs[1]))
    if len(ctx.shape(op.inputs[0])) != 4 or len(shape) != 4 or len(wshape) != 4 or min(shape) < 1:
        return f"input, output {shape} and weights {wshape} must be 4-D with a known output shape"
    # the kernel's own output size: TRANSPOSE_CONV's output_shape, which the file's tensor must match
    _, h, w, _ = ctx.shape(op.inputs[0])
    want = [(i - 1) * s + (s if o["tflite_padding"] == 1 else max(k, s))
            for i, s, k in ((h, o["stride_h"], wshape[1]), (w, o["stride_w"], wshape[2]))]
    if shape[1:3] != want:
        return f"output shape {shape} does not fit the input, kernel and strides (spatial {want})"
    return None


@REGISTRY.register("Convolution2DTransposeBias", since=1, until=1, inputs=3, check=_check_transpose_conv_bias,
                   layers=("Activation", "Merger", "BatchToSpaceNd", "Convolution2d", "SpaceToBatchNd", "FullyConnected",
                           "BatchNormalization", "Addition", "Pad", "Permute", "Reshape", "StridedSlice",
                           "TransposeConvolution2d"),
                   notes="mediapipe's custom TRANSPOSE_CONV with a bias: from --target 20.08 one "
                         "TransposeConvolution2d layer (at 20.08 batch 1, or a batch N that is a multiple of "
                         "the output channels O < N), else zeros inserted by BatchToSpaceNd over [x, zeros...], "
                         "then a convolution with the flipped kernel")
def transpose_conv_bias(ctx, op):
    o = op.options
    opts = {"padding": _PADDING[o["tflite_padding"]], "stride_h": o["stride_h"], "stride_w": o["stride_w"]}
    return transpose_conv_nhwc(ctx, op, op.inputs[0], op.inputs[1], op.inputs[2],
                               list(ctx.shape(op.outputs[0])), opts)
