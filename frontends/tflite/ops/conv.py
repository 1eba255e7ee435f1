"""Convolutions, fully connected and pooling (NHWC throughout)."""
from __future__ import annotations

import numpy as np

from armnn_import.ir import descriptors as D
from armnn_import.ir.types import ActivationFunction as AF
from armnn_import.ir.types import (ConstTensor, DataLayout, DataType, LayerType, PoolingAlgorithm,
                                   TensorInfo)
from armnn_import.lowering import Unsupported
from armnn_import.lowering import perchannel
from armnn_import.lowering.padding import same_pads
from armnn_import.lowering.qround import relabel
from armnn_import.lowering.quant import (PER_CHANNEL_EXACT, channel_runs, quant_conv2d, quant_conv2d_nchw,
                                         requantize_weights)

from .. import quant as Q
from . import REGISTRY
from .empty import empty_pool_or

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


def float_weights(ctx, i: int, layer: str) -> np.ndarray:
    t = ctx.t(i)
    if t.data is not None and t.quant is not None and t.type in (Q.INT8, Q.UINT8):
        ctx.report.quantization.append({
            "layer": layer, "tensor": t.name,
            "decision": "8-bit weights dequantized to float32" +
                        (" (--dequantize)" if ctx.dequantize else " (dynamic-range model)")})
    return ctx.const(i)


def quant_weights(ctx, i: int, axis: int, layer: str) -> tuple[np.ndarray, float, int]:
    """uint8 weights in TFLite's layout with one (scale, offset): exact for
    per-tensor 8-bit weights, requantized (and reported) otherwise."""
    t = ctx.t(i)
    if (i not in ctx.folded and t.data is not None and t.quant is not None and t.quant.per_tensor
            and t.type in (Q.INT8, Q.UINT8)):
        q, offset = Q.to_uint8(t.data, t.quant.zero_point[0], t.type)
        return q, float(np.float32(t.quant.scale[0])), offset
    per_channel = t.quant is not None and not t.quant.per_tensor
    return requantize_weights(ctx.report, layer, t.name, Q.finite(ctx.const(i), f"weights {t.name!r}"), axis,
                              "per-channel int8 weights requantized to per-tensor uint8" if per_channel
                              else "float weights quantized to per-tensor uint8")


def per_channel_weights(ctx, i: int, axis: int):
    """(uint8 weights in TFLite's layout, per-channel scales, offset) of int8 weights quantized
    along their output-channel `axis` with one zero point, kept exact (quant_conv2d_nchw splits
    the layer by scale), or None."""
    t = ctx.t(i)
    if (i in ctx.folded or t.data is None or t.quant is None or t.quant.per_tensor or t.type != Q.INT8
            or len(set(t.quant.zero_point.tolist())) != 1 or t.quant.axis != axis
            or t.quant.scale.size != t.data.shape[axis]):
        return None
    q, offset = Q.to_uint8(t.data, t.quant.zero_point[0], t.type)
    return q, np.asarray(t.quant.scale, np.float32).reshape(-1), offset


def per_axis_weights(ctx, wi: int, bi: int, axis: int, x_scale: float):
    """(int8 weights as stored, their scales, the per-axis Signed32 bias or None) of per-channel
    symmetric int8 weights quantized along `axis` (the output channels), else None."""
    t = ctx.t(wi)
    if (wi in ctx.folded or t.data is None or t.quant is None or t.quant.per_tensor or t.quant.axis != axis
            or not perchannel.symmetric_int8(t.data, t.quant.zero_point)):
        return None
    b = None
    if bi >= 0:
        bt = ctx.t(bi)
        raw = bt.data if bi not in ctx.folded and bt.type == Q.INT32 and bt.quant is not None else None
        b = perchannel.bias(Q.finite(ctx.const(bi), f"bias {bt.name!r}"), x_scale, t.quant.scale, raw,
                            None if raw is None else bt.quant.scale)
    return t.data, t.quant.scale, b


def _per_axis_conv(ctx, op, x, wi, bi, to_oihw, w_axis, q, name, **geometry):
    """The rich targets' exact per-channel convolution (lowering/perchannel.py), or None."""
    found = per_axis_weights(ctx, wi, bi, w_axis, x.info.scale)
    if found is None:
        return None
    w, scales, b = found
    return perchannel.conv2d(ctx.b, x, to_oihw(w), scales, b, q, name, layout=NHWC, **geometry)


def _const_weights(op, ctx, k=1):
    if not ctx.is_const(op.inputs[k]):
        return "weights that are computed at run time (Arm NN's format keeps weights constant)"
    for b in op.inputs[k + 1:k + 2]:
        if b >= 0 and not ctx.is_const(b):
            return "a bias that is computed at run time"
    return None


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
    bias = ctx.const(bi) if bi >= 0 else None
    cout = ctx.shape(wi)[0] if op.op != "DEPTHWISE_CONV_2D" else ctx.shape(wi)[3]
    if bias is not None and bias.size != cout:
        raise Unsupported(f"bias of {bias.size} values for {cout} output channels")
    if q is None:
        w = to_oihw(float_weights(ctx, wi, name))
        return nb.conv2d(x, w, bias, name, strides=strides, pads=pads, dilations=dilations,
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
    ctx.set(op, 0, ctx.fused(y, o["fused_activation_function"], ctx.name(op), ctx.out_quant(op)))


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
    ctx.set(op, 0, ctx.fused(y, o["fused_activation_function"], ctx.name(op), ctx.out_quant(op)))


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
                           "StridedSlice"),
                   notes="zeros inserted by BatchToSpaceNd over [x, zeros...], then a convolution "
                         "with the flipped kernel")
def transpose_conv(ctx, op):
    o, nb, name = op.options, ctx.b, ctx.name(op)
    out_shape = [int(v) for v in ctx.ints(op.inputs[0]).reshape(-1)]
    wi = op.inputs[1]
    x = ctx.port(op.inputs[2])
    bi = op.inputs[3] if len(op.inputs) > 3 else -1
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
    begin, end = [], []
    for size, k, s, out in ((h, kh, sh, oh), (w, kw, sw, ow)):
        fwd = -(-out // s) if o["padding"] == SAME else (out + s - k) // s
        pb = max((fwd - 1) * s + k - out, 0) // 2
        p0 = k - 1 - pb                      # padding before the zero-inserted input
        p1 = out + pb - (size * s)           # padding after it (it holds s - 1 trailing zeros)
        begin.append(p0)
        end.append(p1)
    if (sh, sw) != (1, 1):
        zeros = nb.fill_like(x, 0.0, f"{name}_zeros")
        stack = nb.concat([x] + [zeros] * (sh * sw - 1), 0, f"{name}_stack")
        crops = (max(0, -begin[0]), max(0, -end[0]), max(0, -begin[1]), max(0, -end[1]))
        x = nb.add(LayerType.BatchToSpaceNd, f"{name}_upsample", [stack],
                   D.BatchToSpaceNdDescriptor((sh, sw), crops, NHWC))
        ctx.report.decomposition("TRANSPOSE_CONV", "zeros interleaved by BatchToSpaceNd over the input "
                                 "stacked with zero copies, then a stride-1 convolution with the flipped kernel")
    else:
        x = nb.slice(x, [0, max(0, -begin[0]), max(0, -begin[1]), 0],
                     [n, h - max(0, -end[0]), w - max(0, -end[1]), c], [1] * 4, f"{name}_crop")
    pads = (max(0, begin[0]), max(0, begin[1]), max(0, end[0]), max(0, end[1]))
    y = conv_common(ctx, op, x, wi, bi, lambda k: k[:, ::-1, ::-1, :].transpose(0, 3, 1, 2), 0,
                    strides=(1, 1), pads=pads)
    ctx.set(op, 0, ctx.fused(y, o.get("fused_activation_function", 0), name, ctx.out_quant(op)))


def _check_fc(op, ctx):
    if op.options.get("weights_format", 0) != 0:
        return "shuffled (packed) weights format"
    return _const_weights(op, ctx)


@REGISTRY.register("FULLY_CONNECTED", since=1, until=13, inputs=2, check=_check_fc,
                   layers=("FullyConnected", "Reshape", "Merger", "Activation", "Convolution2d"),
                   notes="keep_num_dims; optional bias; per-channel int8 weights exact as one FullyConnected "
                         "per run of channels sharing a scale (up to 64)")
def fully_connected(ctx, op):
    o, nb, name = op.options, ctx.b, ctx.name(op)
    x = ctx.port(op.inputs[0])
    wi = op.inputs[1]
    bi = op.inputs[2] if len(op.inputs) > 2 else -1
    if len(ctx.shape(wi)) != 2 or 0 in ctx.shape(wi):
        raise Unsupported(f"weights of shape {list(ctx.shape(wi))}")
    out_c, in_c = ctx.shape(wi)
    if bi >= 0 and int(np.prod(ctx.shape(bi))) != out_c:
        raise Unsupported(f"bias of shape {list(ctx.shape(bi))} for {out_c} outputs")
    if x.info.num_elements % in_c:
        raise Unsupported(f"input of {x.info.num_elements} elements is not a multiple of {in_c}")
    rows = x.info.num_elements // in_c
    x2 = nb.reshape(x, (rows, in_c), f"{name}_flatten")
    q = ctx.out_quant(op)
    if q is None:
        bias = ctx.const(bi) if bi >= 0 else None
        y = nb.fully_connected(x2, float_weights(ctx, wi, name), bias, name)
    elif nb.g.target.at_least("20.08") and (pa := per_axis_weights(ctx, wi, bi, 0, x.info.scale)) is not None \
            and (y := perchannel.fully_connected(nb, x2, pa[0], pa[1], pa[2], q, name)) is not None:
        pass  # per-channel int8 weights kept exact where the target's CpuRef runs them
    else:
        y = _quant_fc(ctx, x2, wi, bi, name, q)
    shape = x.info.shape[:-1] + (out_c,) if o.get("keep_num_dims") else (rows, out_c)
    y = nb.reshape(y, shape, f"{name}_shape")
    ctx.set(op, 0, ctx.fused(y, o["fused_activation_function"], name, q))


def _quant_fc(ctx, x2, wi, bi, name, q):
    """A quantized FULLY_CONNECTED: per-channel int8 weights exact as one FullyConnected per run
    of output channels sharing a scale (joined by a Merger), else per-tensor weights."""
    nb = ctx.b
    exact = per_channel_weights(ctx, wi, 0)
    runs = None if exact is None else channel_runs(exact[1], exact[2], exact[0].shape[0])
    if runs is None:
        wq, ws, wz = quant_weights(ctx, wi, 0, name)
        runs = [(0, wq.shape[0], ws)]
    else:
        wq, _, wz = exact
        ctx.report.quantization.append({"layer": name, "tensor": ctx.t(wi).name, "decision": PER_CHANNEL_EXACT})
    bias = None if bi < 0 else Q.finite(ctx.const(bi), f"bias {ctx.t(bi).name!r}").reshape(-1)
    parts = []
    for a, b, s in runs:
        w = ConstTensor(wq[a:b], TensorInfo(wq[a:b].shape, DataType.QuantisedAsymm8, s, wz))
        bb = None if bias is None else Q.bias_int32(bias[a:b], float(np.float32(x2.info.scale * s)))
        parts.append(nb.fully_connected(x2, w, bb, name if len(runs) == 1 else f"{name}_c{a}", quant=q))
    return parts[0] if len(parts) == 1 else nb.concat(parts, 1, name, quant=q)


def _check_pool(op, ctx):
    shape = ctx.shape(op.inputs[0])
    if len(shape) != 4:
        return "input is not 4-D"
    return None  # a VALID filter larger than the input gives an empty output (ops/empty.py)


def _check_l2(op, ctx):
    if ctx.is_quant(op.inputs[0]):
        return "quantized L2 pooling needs float intermediates (Arm NN 20.08 cannot read L2 Pooling2d)"
    return _check_pool(op, ctx)


def _quant_average(ctx, op, x, k, strides, pads, q, name):
    """A quantized AVERAGE_POOL_2D, rounded as LiteRT rounds: the sum of the window's levels
    divided by its count of valid elements, half away from zero, on the raw int8 values (uint8:
    half up, on the raw values, all >= 0). Arm NN averages the decoded real values in float and
    rounds half away from zero relative to the zero point; so the pool runs on the bytes read as
    scale 1 and zero point 0 (uint8) or 128 (int8, whose raw 0 is uint8 128), where every sum
    is an exact integer and every tie exact, and the result is read back with the model's."""
    nb = ctx.b
    raw0 = 128 if ctx.t(op.inputs[0]).type == Q.INT8 else 0
    if (x.info.scale, x.info.offset) != (float(np.float32(q[0])), q[1]):  # LiteRT requires them equal
        return nb.pool2d(x, PoolingAlgorithm.Average, k, name, strides=strides, pads=pads, layout=NHWC,
                         exclude_pad=True, quant=q)
    y = nb.pool2d(relabel(nb, x, (1.0, raw0), f"{name}_raw"), PoolingAlgorithm.Average, k, f"{name}_pool",
                  strides=strides, pads=pads, layout=NHWC, exclude_pad=True, quant=(1.0, raw0))
    ctx.report.decomposition("quantized AVERAGE_POOL_2D", "pooled on the bytes read as scale 1 and zero "
                             "point 0 (uint8) or 128 (int8), so that Arm NN rounds the average as LiteRT "
                             "does, between identity Permutes that change only the quantization")
    return relabel(nb, y, q, name)


def _pool(algo):
    def convert(ctx, op):
        o, nb, name = op.options, ctx.b, ctx.name(op)
        x = ctx.port(op.inputs[0])
        k = (o["filter_height"], o["filter_width"])
        strides = (o["stride_h"], o["stride_w"])
        pads = pads_2d(o, x.info.shape[1:3], k, strides)
        q = ctx.out_quant(op)
        if algo == PoolingAlgorithm.L2:
            # Arm NN 20.08's deserializer rejects L2 pooling: sqrt(average(x^2)) instead
            sq = nb.activation(x, AF.Square, f"{name}_square")
            y = nb.pool2d(sq, PoolingAlgorithm.Average, k, f"{name}_mean", strides=strides, pads=pads,
                          layout=NHWC, exclude_pad=True)
            y = nb.activation(y, AF.Sqrt, name)
            ctx.report.decomposition("L2_POOL_2D", "Square, average Pooling2d (padding excluded), Sqrt")
        elif algo == PoolingAlgorithm.Average and q is not None:
            y = _quant_average(ctx, op, x, k, strides, pads, q, name)
        else:  # TFLite never counts padding: averages divide by the valid elements
            y = nb.pool2d(x, algo, k, name, strides=strides, pads=pads, layout=NHWC, exclude_pad=True, quant=q)
        ctx.set(op, 0, ctx.fused(y, o["fused_activation_function"], name, q))
    return convert


for _op, _algo, _until, _layers in (
        ("AVERAGE_POOL_2D", PoolingAlgorithm.Average, 3, ("Pooling2d", "Permute")),
        ("MAX_POOL_2D", PoolingAlgorithm.Max, 3, ("Pooling2d",)),
        ("L2_POOL_2D", PoolingAlgorithm.L2, 1, ("Activation", "Pooling2d"))):
    REGISTRY.register(_op, since=1, until=_until, check=_check_pool if _op != "L2_POOL_2D" else _check_l2,
                      layers=_layers)(empty_pool_or(_pool(_algo)))
const_weights = _const_weights  # (conv3d.py)
