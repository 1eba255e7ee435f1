"""2-D convolutions: CONV_2D, DEPTHWISE_CONV_2D and TRANSPOSE_CONV (NHWC throughout), and
TFLite's SAME/VALID geometry (pool.py and conv3d.py use it too). The weights are weights.py."""
from __future__ import annotations

from armnn_import.ir import descriptors as D
import numpy as np

from armnn_import.ir.types import DataLayout, DataType, LayerType, TensorInfo
from armnn_import.lowering import Unsupported
from armnn_import.lowering import perchannel
from armnn_import.lowering.padding import same_pads
from armnn_import.lowering.quant import PER_CHANNEL_EXACT, quant_conv2d, quant_conv2d_nchw

from .. import quant as Q
from . import REGISTRY
from .weights import const_weights as _const_weights
from .weights import bias_values, float_kernel, per_axis_weights, per_channel_weights, quant_weights

NHWC = DataLayout.NHWC
SAME, VALID = 0, 1
MAX_GROUPS = 1024
MAX_COPIES = 4096  # Merger inputs of a strided TRANSPOSE_CONV


def pads_1d(padding: int, size: int, k: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """TFLite's SAME/VALID padding of one spatial axis as (before, after)."""
    if padding == VALID:
        return 0, 0
    return same_pads(size, k, stride, dilation)


def pads_2d(opts, hw, khw, strides, dil=(1, 1)) -> tuple[int, int, int, int]:
    """(top, left, bottom, right)."""
    pt, pb = pads_1d(opts["padding"], hw[0], khw[0], strides[0], dil[0])
    pl, pr = pads_1d(opts["padding"], hw[1], khw[1], strides[1], dil[1])
    return pt, pl, pb, pr


def dilations(o, hw, khw) -> tuple[int, int]:
    """The dilation factors, 1 where the kernel has one tap (the factor changes nothing);
    Unsupported past the input, where at most one tap of the kernel can reach it."""
    dil = []
    for d, size, k in zip((o["dilation_h_factor"], o["dilation_w_factor"]), hw, khw):
        if k > 1 and d > size:
            raise Unsupported(f"dilation {d} is larger than the input ({size})")
        dil.append(d if k > 1 else 1)
    return tuple(dil)


def _per_axis_conv(ctx, op, x, wi, bi, to_oihw, w_axis, q, name, **geometry):
    """The rich targets' exact per-channel convolution (lowering/perchannel.py), or None."""
    found = per_axis_weights(ctx, wi, bi, w_axis, x.info.scale)
    if found is None:
        return None
    w, scales, b = found
    return perchannel.conv2d(ctx.b, x, to_oihw(w), scales, b, q, name, layout=NHWC, **geometry)


def _check_conv(op, ctx):
    r = _const_weights(op, ctx)
    if r:
        return r
    if len(ctx.shape(op.inputs[0])) != 4:
        return "input is not 4-D"
    x_quant, y_quant = ctx.is_quant(op.inputs[0]), ctx.is_quant(op.outputs[0])
    if x_quant != y_quant:
        return "input and output differ in being quantized"
    return None


def conv_common(ctx, op, x, wi, bi, to_oihw, w_axis, *, strides, pads, dilations=(1, 1), groups=1,
                name=None):
    """Float or quantized 2-D convolution of NHWC x with TFLite weights
    (converted by `to_oihw`) and an optional bias tensor; returns the port
    before the fused activation."""
    name = name or ctx.name(op)
    nb, q = ctx.b, ctx.out_quant(op)
    bias = bias_values(ctx, op, wi, bi)
    cout = ctx.shape(wi)[0] if op.op != "DEPTHWISE_CONV_2D" else ctx.shape(wi)[3]
    if bias is not None and bias.size != cout:
        raise Unsupported(f"bias of {bias.size} values for {cout} output channels")
    if q is None:
        w, bias = float_kernel(ctx, op, wi, bi, name, w_axis)
        return nb.conv2d(x, to_oihw(w), bias, name, strides=strides, pads=pads, dilations=dilations,
                         groups=groups, layout=NHWC)
    if nb.g.target.at_least("20.08"):
        y = _per_axis_conv(ctx, op, x, wi, bi, to_oihw, w_axis, q, name, strides=strides, pads=pads,
                           dilations=dilations, groups=groups)
        if y is not None:
            return y
    exact = per_channel_weights(ctx, wi, w_axis)
    requantized = []

    def fallback():  # per-channel weights the lowering cannot keep exact: one scale per tensor
        requantized.append(True)
        r = quant_weights(ctx, wi, w_axis, name)
        return to_oihw(r[0]), (r[1], r[2])
    wq, ws, wz = exact if exact is not None else quant_weights(ctx, wi, w_axis, name)
    if bias is not None:
        Q.finite(bias, f"bias {ctx.t(bi).name!r}")
    if nb.g.target.at_least("20.08"):  # the layer takes NHWC and its int32 bias itself
        if exact is not None:  # (per-axis weights are not written yet: one scale per tensor)
            wq, ws, wz = quant_weights(ctx, wi, w_axis, name)
        return quant_conv2d(nb, x, to_oihw(wq), (ws, wz), bias, q, name, strides=strides, pads=pads,
                            dilations=dilations, groups=groups, layout=NHWC)
    # the shared lowering adds the bias inside the layer (one rounding, as LiteRT's int32 bias);
    # it takes NCHW, and the layout pass cancels these permutes between convolutions
    y = quant_conv2d_nchw(nb, nb.permute(x, (0, 3, 1, 2), f"{name}_to_nchw"), to_oihw(wq), (ws, wz), bias, q,
                          name, strides=strides, pads=pads, dilations=dilations, groups=groups,
                          requantized=fallback)
    if exact is not None and not requantized:
        ctx.report.quantization.append({"layer": name, "tensor": ctx.t(wi).name, "decision": PER_CHANNEL_EXACT})
    return nb.permute(y, (0, 2, 3, 1), f"{name}_to_nhwc")


@REGISTRY.register("CONV_2D", since=1, until=8, inputs=2, check=_check_conv,
                   layers=("Convolution2d", "Addition", "BatchNormalization", "SpaceToBatchNd", "BatchToSpaceNd",
                           "FullyConnected", "Permute", "Reshape", "Pad", "StridedSlice", "Merger", "Activation"),
                   notes="dilation via SpaceToBatchNd/BatchToSpaceNd; float bias as an Addition of a per-channel constant, "
                         "quantized bias inside the layer (FullyConnected for 1x1, constant input channels); "
                         "per-channel int8 weights exact as one convolution per run of channels sharing a scale "
                         "(up to 64, joined by Mergers), else requantized per tensor")
def conv_2d(ctx, op):
    o = op.options
    x = ctx.port(op.inputs[0])
    wi = op.inputs[1]
    bi = op.inputs[2] if len(op.inputs) > 2 else -1
    kshape = ctx.shape(wi)  # [O, kh, kw, I]
    cin = x.info.shape[3]
    if len(kshape) != 4 or kshape[3] <= 0 or cin % kshape[3] or kshape[0] % (cin // kshape[3]):
        raise Unsupported(f"filter {list(kshape)} does not fit an input of {cin} channels")
    groups = cin // kshape[3]
    if 1 < groups and not (kshape[3] == 1 and kshape[0] % cin == 0) and groups > MAX_GROUPS:
        raise Unsupported(f"{groups} groups (one Convolution2d per group; at most {MAX_GROUPS})")
    strides = (o["stride_h"], o["stride_w"])
    dil = dilations(o, x.info.shape[1:3], kshape[1:3])
    pads = pads_2d(o, x.info.shape[1:3], kshape[1:3], strides, dil)
    y = conv_common(ctx, op, x, wi, bi, lambda w: w.transpose(0, 3, 1, 2), 0,
                    strides=strides, pads=pads, dilations=dil, groups=groups)
    return ctx.fused(y, o["fused_activation_function"], ctx.name(op), ctx.out_quant(op))


@REGISTRY.register("DEPTHWISE_CONV_2D", since=1, until=7, inputs=2, check=_check_conv,
                   layers=("DepthwiseConvolution2d", "Addition", "BatchNormalization", "SpaceToBatchNd",
                           "BatchToSpaceNd", "Pad", "Reshape", "FullyConnected", "StridedSlice", "Activation",
                           "Merger", "Convolution2d", "Permute"),
                   notes="any depth multiplier; dilation via SpaceToBatchNd/BatchToSpaceNd; float bias as an "
                         "Addition of a per-channel constant; quantized bias inside the layer (rows of a "
                         "constant, from a Pad and an Addition, read by extra kernel rows); per-channel int8 "
                         "weights exact as one convolution per run of channels sharing a scale (up to 64)")
def depthwise_conv_2d(ctx, op):
    o = op.options
    x = ctx.port(op.inputs[0])
    wi = op.inputs[1]
    bi = op.inputs[2] if len(op.inputs) > 2 else -1
    if len(ctx.shape(wi)) != 4 or ctx.shape(wi)[0] != 1:
        raise Unsupported(f"depthwise filter of shape {list(ctx.shape(wi))}")
    _, kh, kw, cm = ctx.shape(wi)  # [1, kh, kw, C*M]
    cin = x.info.shape[3]
    if cm % cin:
        raise Unsupported(f"filter has {cm} channels, not a multiple of the input's {cin}")
    strides = (o["stride_h"], o["stride_w"])
    dil = dilations(o, x.info.shape[1:3], (kh, kw))
    pads = pads_2d(o, x.info.shape[1:3], (kh, kw), strides, dil)
    # [1, kh, kw, C*M] -> OIHW [C*M, 1, kh, kw]; output channel c*M + m as in TFLite
    y = conv_common(ctx, op, x, wi, bi, lambda w: w.reshape(kh, kw, cm).transpose(2, 0, 1)[:, None], 3,
                    strides=strides, pads=pads, dilations=dil, groups=cin)
    return ctx.fused(y, o["fused_activation_function"], ctx.name(op), ctx.out_quant(op))


def _check_transpose_conv(op, ctx):
    if not ctx.is_const(op.inputs[0]):
        return "output_shape is not a constant"
    if not ctx.is_const(op.inputs[1]):
        return "weights that are computed at run time (Arm NN's format keeps weights constant)"
    if len(op.inputs) > 3 and op.inputs[3] >= 0 and not ctx.is_const(op.inputs[3]):
        return "a bias that is computed at run time"
    if len(ctx.shape(op.inputs[2])) != 4:
        return "input is not 4-D"
    return None


@REGISTRY.register("TRANSPOSE_CONV", since=1, until=5, inputs=3, data_input=2, check=_check_transpose_conv,
                   layers=("Activation", "Merger", "BatchToSpaceNd", "Convolution2d", "SpaceToBatchNd",
                           "FullyConnected", "BatchNormalization", "Addition", "Pad", "Permute", "Reshape",
                           "StridedSlice", "TransposeConvolution2d"),
                   notes="from --target 20.08 one TransposeConvolution2d layer (float, per-tensor 8-bit or "
                         "per-channel int8 weights; at 20.08 batch 1, or a batch N that is a multiple of the "
                         "output channels O < N), "
                         "else zeros inserted by BatchToSpaceNd over [x, zeros...], then a convolution "
                         "with the flipped kernel")
def transpose_conv(ctx, op):
    out_shape = [int(v) for v in ctx.ints(op.inputs[0]).reshape(-1)]
    bi = op.inputs[3] if len(op.inputs) > 3 else -1
    return transpose_conv_nhwc(ctx, op, op.inputs[2], op.inputs[1], bi, out_shape, op.options)


def _transpose_conv_layer(ctx, op, x, wi, bi, strides, cut):
    """One TransposeConvolution2d layer (float, the 20.08 format on) where it computes the operator
    exactly: out = i * stride - pad + k as TFLite's kernel, OHWI weights as they are, the full result
    cut by `cut` ((top, bottom), (left, right)) >= 0; else None (the decomposition)."""
    nb, name, oc = ctx.b, ctx.name(op), ctx.shape(wi)[0]
    if min(min(cut)) < 0 or not nb.transpose_conv2d_fits(x, oc):
        return None
    pads = (cut[0][0], cut[1][0], cut[0][1], cut[1][1])
    q = ctx.out_quant(op)
    if q is not None:  # per-channel int8 weights (axis 0, OHWI) kept exact: QSymmS8 per axis
        found = x.info.dtype.is_quantized and per_axis_weights(ctx, wi, bi, 0, x.info.scale)
        if not found:
            return _per_tensor_layer(ctx, op, x, wi, bi, name, strides, pads, q)
        w, scales, b = found
        return nb.transpose_conv2d(x, perchannel.weights(w, scales), b, name, strides=strides, pads=pads,
                                   layout=NHWC, quant=q)
    if x.info.dtype != DataType.Float32:
        return None
    w, bias = float_kernel(ctx, op, wi, bi, name, 0)
    if bias is not None and bias.size != oc:
        raise Unsupported(f"bias of {bias.size} values for {oc} output channels")
    return nb.transpose_conv2d(x, w, None if bias is None else bias.astype(np.float32), name, strides=strides,
                               pads=pads, layout=NHWC)


def _per_tensor_layer(ctx, op, x, wi, bi, name, strides, pads, q):
    """The layer on per-tensor 8-bit weights as stored (uint8; symmetric int8 + 128), or None: CpuRef decodes
    input, weights and the Signed32 bias to float, sums in float and rounds once (within 1 level
    of LiteRT's integer kernel)."""
    t = ctx.t(wi)
    if not (x.info.dtype.is_quantized and wi not in ctx.folded and t.data is not None and t.quant is not None
            and t.quant.per_tensor and (t.type == Q.UINT8 or (t.type == Q.INT8 and not t.quant.zero_point[0]))):
        return None  # (int8 weights off zero: TFLite's int8 kernels take them as symmetric; kept decomposed)
    w, scale, offset = quant_weights(ctx, wi, 0, name)
    bias = Q.finite(bias_values(ctx, op, wi, bi), "bias").astype(np.float64).reshape(-1) if bi >= 0 else None
    if bias is not None and bias.size != w.shape[0]:
        raise Unsupported(f"bias of {bias.size} values for {w.shape[0]} output channels")
    return ctx.b.transpose_conv2d(x, w, bias, name, strides=strides, pads=pads, layout=NHWC, quant=q,
                                  weight_info=TensorInfo(w.shape, DataType.QuantisedAsymm8, scale, offset))


def transpose_conv_nhwc(ctx, op, xi, wi, bi, out_shape, o):
    """TRANSPOSE_CONV's computation (also mediapipe's Convolution2DTransposeBias, custom.py): input
    tensor xi, OHWI weights wi, bias bi (-1: none), the output's shape, options o (padding,
    stride_h, stride_w, fused_activation_function)."""
    nb, name = ctx.b, ctx.name(op)
    x = ctx.port(xi)
    n, h, w, c = x.info.shape
    if len(ctx.shape(wi)) != 4:
        raise Unsupported(f"filter of shape {list(ctx.shape(wi))}")
    oc, kh, kw, ic = ctx.shape(wi)
    if len(out_shape) != 4:
        raise Unsupported(f"output_shape has {len(out_shape)} values, not 4")
    if ic != c or out_shape[0] != n or out_shape[3] != oc:
        raise Unsupported(f"output_shape {out_shape} does not fit input {x.info.shape} and filter "
                          f"{[oc, kh, kw, ic]}")
    sh, sw = o["stride_h"], o["stride_w"]
    oh, ow = out_shape[1:3]
    if min(oh, ow) < 1 or sh > oh or sw > ow:
        raise Unsupported(f"strides {[sh, sw]} for an output of {oh}x{ow}")
    if sh * sw > MAX_COPIES:  # the input is stacked with sh * sw - 1 copies of zeros
        raise Unsupported(f"strides {[sh, sw]}: at most {MAX_COPIES} positions per input element")
    begin, end, cut = [], [], []
    for size, k, s, out in ((h, kh, sh, oh), (w, kw, sw, ow)):
        fwd = -(-out // s) if o["padding"] == SAME else (out + s - k) // s
        pb = max((fwd - 1) * s + k - out, 0) // 2
        p0 = k - 1 - pb                      # padding before the zero-inserted input
        p1 = out + pb - (size * s)           # padding after it (it holds s - 1 trailing zeros)
        begin.append(p0)
        end.append(p1)
        cut.append((pb, (size - 1) * s + k - pb - out))  # what the full result loses at each end
    y = _transpose_conv_layer(ctx, op, x, wi, bi, (sh, sw), cut)
    if y is not None:
        return ctx.fused(y, o.get("fused_activation_function", 0), name, ctx.out_quant(op))
    if (sh, sw) != (1, 1):
        zeros = nb.fill_like(x, 0.0, f"{name}_zeros")
        stack = nb.concat([x] + [zeros] * (sh * sw - 1), 0, f"{name}_stack")
        crops = (max(0, -begin[0]), max(0, -end[0]), max(0, -begin[1]), max(0, -end[1]))
        x = nb.add(LayerType.BatchToSpaceNd, f"{name}_upsample", [stack],
                   D.BatchToSpaceNdDescriptor((sh, sw), crops, NHWC))
        ctx.report.decomposition(op.op, "zeros interleaved by BatchToSpaceNd over the input "
                                 "stacked with zero copies, then a stride-1 convolution with the flipped kernel")
    else:
        x = nb.slice(x, [0, max(0, -begin[0]), max(0, -begin[1]), 0],
                     [n, h - max(0, -end[0]), w - max(0, -end[1]), c], [1] * 4, f"{name}_crop")
    pads = (max(0, begin[0]), max(0, begin[1]), max(0, end[0]), max(0, end[1]))
    y = conv_common(ctx, op, x, wi, bi, lambda k: k[:, ::-1, ::-1, :].transpose(0, 3, 1, 2), 0,
                    strides=(1, 1), pads=pads)
    return ctx.fused(y, o.get("fused_activation_function", 0), name, ctx.out_quant(op))
