"""Quantized operators (see ../quant.py for the design): QuantizeLinear,
DequantizeLinear, QLinearConv, QLinearMatMul, the com.microsoft QLinear*
operators and QGemm, and the float operators of QDQ models lowered on their
quantized inputs. Every lowering computes straight into the output's
quantization; with --dequantize the QLinear operators are lowered in float
with dequantized weights, each result clamped to its quantization's range."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from armnn_import.ir.graph import Port
from armnn_import.ir.types import ActivationFunction as AF
from armnn_import.ir.types import ConstTensor, DataType, PoolingAlgorithm, TensorInfo
from armnn_import.ir.types import LayerType as L
from armnn_import.lowering import Unsupported, perchannel
from armnn_import.lowering.qround import mean_half_even
from armnn_import.lowering.quant import bias_int32, quant_conv2d_nchw

from ..quant import DEQUANTIZE_HINT, check_port, dequantized, qdq, qparams
from ..registry import all_checks, needs_const, register
from .common import binary, broadcast, mean, norm_axes, varying_axis
from .conv import back as _back
from .conv import conv_operands as _conv_operands
from .conv import kernel as _kernel
from .conv import pads as _pads
from .conv import pair as _pair
from .conv import pool_geometry as _pool_geometry
from .conv import spatial_rank_check as _spatial_rank_check
from .conv import to_4d as _to_4d
from .matrix import fc_nd as _fc


def _params(ctx, node, si: int, zi: int) -> tuple[float, int]:
    zp = ctx.const(node, zi, "zero point") if ctx.has(node, zi) else None
    if zp is None and ctx.attr(node, "output_dtype") == TensorProto.INT8:
        zp = np.zeros((), np.int8)
    return qparams(ctx.const(node, si, "scale"), zp)


def _scale(ctx, node, i) -> np.ndarray:
    return np.asarray(ctx.const(node, i, "scale"), np.float32).reshape(-1)


def _zp(ctx, node, i, like) -> np.ndarray:
    return ctx.const(node, i, "zero point") if ctx.has(node, i) else np.zeros(1, like.dtype)


def _qport(ctx, node, i: int, si: int, zi: int) -> Port:
    """Input i of a QLinear operator, read with the parameters at si, zi (float with --dequantize)."""
    if ctx.quant.dequantize:
        return ctx.port(node, i)
    x = ctx.port(node, i, dtypes=None)
    check_port(x, _params(ctx, node, si, zi), f"input {i}")
    return x


def _saturate(ctx, node, y: Port, si: int, zi: int) -> Port:
    """--dequantize: a float result clamped to the range its quantization can hold (quantizers
    fold Relu and Clip into that range, so an identity would drop them)."""
    scale, offset = _params(ctx, node, si, zi)
    return ctx.b.clamp(y, -offset * scale, (255 - offset) * scale, ctx.name(node, "range"))


def _no_block(node, ctx):
    if ctx.attr(node, "block_size", 0):
        return "blocked quantization (block_size) has no Arm NN equivalent"
    return None


# -- QuantizeLinear, DequantizeLinear --------------------------------------------------------------
@register("QuantizeLinear", since=10, layers=("Activation", "Quantize"), check=all_checks(needs_const(1, 2), _no_block),
          notes="absorbed into the tensor's quantization (a requantizing Linear when it changes); "
                "a clamp to the quantization's range with --dequantize")
def quantize_linear(ctx, node):
    x = ctx.port(node, 0, dtypes=None)
    if ctx.quant.dequantize:
        return _saturate(ctx, node, ctx.port(node, 0), 1, 2)
    q = _params(ctx, node, 1, 2)
    if not x.info.dtype.is_quantized and ctx.quant.float_edges and x.info.dtype == DataType.Float32:
        return ctx.b.add(L.Quantize, ctx.name(node), [x], quant=q)  # the 20.08 format on
    if not x.info.dtype.is_quantized:
        raise Unsupported("quantizes a float tensor computed inside the model; Arm NN's format has no "
                          "Quantize layer and one network cannot mix float and quantized tensors",
                          DEQUANTIZE_HINT)
    if (x.info.scale, x.info.offset) == q:
        return x
    ctx.report.decomposition("requantize", "Activation Linear(a=1, b=0) with the new quantization")
    return ctx.b.linear(x, 1.0, 0.0, ctx.name(node), quant=q)


@register("DequantizeLinear", since=10, layers=("Dequantize",), check=all_checks(needs_const(1, 2), _no_block),
          notes="folded on constants; on a quantized tensor absorbed into its quantization; "
                "identity with --dequantize")
def dequantize_linear(ctx, node):
    if ctx.quant.dequantize:
        return ctx.port(node, 0)
    x = ctx.port(node, 0, dtypes=None)
    if not x.info.dtype.is_quantized:
        raise Unsupported(f"dequantizes a {x.info.dtype.name} tensor computed at run time", DEQUANTIZE_HINT)
    check_port(x, _params(ctx, node, 1, 2), "input 0")
    out = node.outputs[0]
    if ctx.quant.float_edges and out in ctx.quant.graph_outputs and not ctx.quant.consumers.get(out):
        return ctx.b.add(L.Dequantize, ctx.name(node), [x])  # a float model output (20.08 format on)
    return x


# -- convolution -------------------------------------------------------------------------------------
def _conv(ctx, node, x: Port, w, bias, yq, wq=None, requantized=None) -> Port:
    """Convolution of x with OIHW (or OIL) weights w: float32, or uint8 with (scale, offset) wq."""
    x, nd = _to_4d(ctx, x, node)
    groups = int(ctx.attr(node, "group", 1))
    w = _conv_operands(x, w, bias, nd, groups)
    strides = _pair(ctx.attr(node, "strides"), nd, 1)
    dil = _pair(ctx.attr(node, "dilations"), nd, 1)
    pads = _pads(ctx, node, nd, x.info.shape[2:], w.shape[2:], strides, dil)
    bias = None if bias is None else np.asarray(bias, np.float32).reshape(-1)
    if yq is None:
        y = ctx.b.conv2d(x, w.astype(np.float32), bias, ctx.name(node), strides=strides, pads=pads,
                         dilations=dil, groups=groups)
    else:
        def fallback():  # requantized per-tensor weights, brought to 4-D as w was
            data, q = requantized()
            return _conv_operands(x, data, bias, nd, groups), q
        y = quant_conv2d_nchw(ctx.b, x, w, wq, bias, yq, ctx.name(node), strides=strides, pads=pads,
                              dilations=dil, groups=groups, requantized=requantized and fallback)
    return _back(ctx, y, nd, node)


def _per_axis(ctx, real_o, src):
    """(int8 weights, scales) of per-channel symmetric int8 weights whose scales run along the
    output axis 0 of `real_o` (checked: real = q * scale), on the rich targets; else None."""
    if src is None or not ctx.b.g.target.at_least("20.08"):
        return None
    q, scale, zp = src[:3]
    sc = np.asarray(scale, np.float32).reshape(-1)
    q = np.asarray(q)
    if sc.size < 2 or np.all(sc == sc[0]) or sc.size != q.shape[0] or not perchannel.symmetric_int8(q, zp):
        return None
    real = q.astype(np.float64) * sc.astype(np.float64).reshape((-1,) + (1,) * (q.ndim - 1))
    if q.shape != np.shape(real_o) or not np.allclose(real, real_o, rtol=1e-6, atol=0):
        return None
    return q, sc


def _conv_per_axis(ctx, node, x: Port, pa, bias, yq):
    """_conv with per-axis weights (lowering/perchannel.py), or None (grouped convolutions)."""
    q, sc = pa
    groups = int(ctx.attr(node, "group", 1))
    cin = ctx.lshape(x)[1]
    if not (groups == 1 or (groups == cin and q.shape[1] == 1)):
        return None
    x, nd = _to_4d(ctx, x, node)
    w = _conv_operands(x, q, bias, nd, groups)
    strides, dil = _pair(ctx.attr(node, "strides"), nd, 1), _pair(ctx.attr(node, "dilations"), nd, 1)
    pads = _pads(ctx, node, nd, x.info.shape[2:], w.shape[2:], strides, dil)
    b = None if bias is None else perchannel.bias(np.asarray(bias, np.float64).reshape(-1), x.info.scale, sc)
    y = perchannel.conv2d(ctx.b, x, w, sc, b, yq, ctx.name(node), strides=strides, pads=pads,
                          dilations=dil, groups=groups)
    return _back(ctx, y, nd, node)


@register("QLinearConv", since=10, layers=("Convolution2d", "DepthwiseConvolution2d", "FullyConnected", "Permute",
                                          "Reshape", "Pad", "Addition", "StridedSlice", "SpaceToBatchNd",
                                          "BatchToSpaceNd", "Merger", "BatchNormalization"),
          check=all_checks(needs_const(1, 2, 3, 4, 5, 6, 7, 8, what="weights/parameters"), _spatial_rank_check),
          notes="per-channel weights exact as one convolution per run of channels sharing a scale (up to "
                "64, joined by Mergers), else requantized per tensor (reported); the bias inside the layer "
                "(FullyConnected for 1x1, extra constant input channels or rows), else a BatchNormalization")
def qlinear_conv(ctx, node):
    x = _qport(ctx, node, 0, 1, 2)
    w = ctx.const(node, 3, "weights")
    ws, wz = _scale(ctx, node, 4), _zp(ctx, node, 5, w)
    real = dequantized(w, ws, wz, 0)
    bias = None
    if ctx.has(node, 8):
        xs = np.float64(_scale(ctx, node, 1)[0])
        bias = ctx.const(node, 8, "bias").astype(np.float64).reshape(-1) * xs * ws.astype(np.float64)
    if ctx.quant.dequantize:
        ctx.quant.note_dequantized(node.inputs[3])
        return _saturate(ctx, node, _conv(ctx, node, x, real, bias, None), 6, 7)
    pa = _per_axis(ctx, real, (w, ws, wz))
    y = None if pa is None else _conv_per_axis(ctx, node, x, pa, bias, _params(ctx, node, 6, 7))
    if y is not None:
        return y
    wu8, wq, fallback = ctx.quant.conv_weights(ctx.name(node), node.inputs[3], real, (w, ws, wz, 0))
    return _conv(ctx, node, x, wu8, bias, _params(ctx, node, 6, 7), wq, fallback)


@qdq("Conv", layers=("Convolution2d", "DepthwiseConvolution2d", "Addition", "FullyConnected", "Merger", "Pad",
                     "Permute", "Reshape", "SpaceToBatchNd", "StridedSlice"))
def qdq_conv(ctx, node):
    x = ctx.port(node, 0, dtypes=None)
    real = ctx.const(node, 1, "weights").astype(np.float32)
    bias = ctx.const(node, 2, "bias").reshape(-1) if ctx.has(node, 2) else None
    src = ctx.quant.weight(ctx, node.inputs[1])
    pa = _per_axis(ctx, real, src)
    y = None if pa is None else _conv_per_axis(ctx, node, x, pa, bias, ctx.quant.out_quant(node))
    if y is not None:
        return y
    wu8, wq, fallback = ctx.quant.conv_weights(ctx.name(node), node.inputs[1], real, src)
    return _conv(ctx, node, x, wu8, bias, ctx.quant.out_quant(node), wq, fallback)


# -- matrix products ---------------------------------------------------------------------------------
def _fc_quant(ctx, x: Port, w_oi: np.ndarray, wq, bias, yq, name: str) -> Port:
    """x [..., K] @ w_oi.T (+ bias) with uint8 weights [O, K] into quantization yq."""
    shape = x.info.shape
    if w_oi.shape[1] != shape[-1]:
        raise Unsupported(f"weights {w_oi.shape[::-1]} do not fit an input of shape {shape}")
    flat = ctx.b.reshape(x, (int(np.prod(shape[:-1], dtype=np.int64)), shape[-1]), f"{name}_2d")
    w = ConstTensor(np.ascontiguousarray(w_oi), TensorInfo(w_oi.shape, DataType.QuantisedAsymm8, *wq))
    b = None
    if bias is not None:
        b = bias_int32(np.broadcast_to(np.asarray(bias, np.float64).reshape(-1), (w_oi.shape[0],)),
                       float(np.float32(x.info.scale) * np.float32(wq[0])))
    y = ctx.b.fully_connected(flat, w, b, name, quant=yq)
    return ctx.b.reshape(y, shape[:-1] + (w_oi.shape[0],), f"{name}_nd")


def _matrix(ctx, node, x: Port, real_oi, src_oi, bias, yq, tensor: str) -> Port:
    """x @ weights for [O, I] weights (float, and their quantized form when known)."""
    name = ctx.name(node)
    if yq is None:
        return _fc(ctx, x, real_oi, None if bias is None else np.broadcast_to(
            np.asarray(bias, np.float32).reshape(-1), (real_oi.shape[0],)).copy(), name)
    pa = _per_axis(ctx, real_oi, src_oi)
    if pa is not None:
        return _fc_per_axis(ctx, x, pa, bias, yq, name)
    wu8, wq = ctx.quant.weights_u8(name, tensor, real_oi, src_oi, 0)
    return _fc_quant(ctx, x, wu8, wq, bias, yq, name)


def _fc_per_axis(ctx, x: Port, pa, bias, yq, name: str) -> Port:
    """_fc_quant with per-axis weights [O, K] (lowering/perchannel.py: a 1x1 convolution)."""
    q, sc = pa
    shape = x.info.shape
    if q.shape[1] != shape[-1]:
        raise Unsupported(f"weights {q.shape[::-1]} do not fit an input of shape {shape}")
    flat = ctx.b.reshape(x, (int(np.prod(shape[:-1], dtype=np.int64)), shape[-1]), f"{name}_2d")
    b = None if bias is None else perchannel.bias(
        np.broadcast_to(np.asarray(bias, np.float64).reshape(-1), (q.shape[0],)), x.info.scale, sc)
    y = perchannel.fully_connected(ctx.b, flat, q, sc, b, yq, name)
    return ctx.b.reshape(y, shape[:-1] + (q.shape[0],), f"{name}_nd")


def _const_weights(ctx, node, i, what="weights"):
    if not ctx.is_const(node, i):
        raise Unsupported(f"input {i} ({what}) is computed at run time; a quantized matrix product needs "
                          "constant weights", DEQUANTIZE_HINT)
    w = ctx.const(node, i, what)
    if w.ndim != 2:
        raise Unsupported(f"{w.ndim}-D weights (only 2-D weights of a quantized matrix product)")
    return w


def _transposed(src):
    return None if src is None else (src[0].T,) + tuple(src[1:])


@register("QLinearMatMul", since=10, layers=("FullyConnected", "Convolution2d", "Reshape"), check=needs_const(1, 2, 3, 4, 5, 6, 7))
def qlinear_matmul(ctx, node):
    a = _qport(ctx, node, 0, 1, 2)
    b = _const_weights(ctx, node, 3)
    bs, bz = _scale(ctx, node, 4), _zp(ctx, node, 5, b)
    real = dequantized(b, bs, bz, 1)  # per-column parameters
    if ctx.quant.dequantize:
        ctx.quant.note_dequantized(node.inputs[3])
        return _saturate(ctx, node, _matrix(ctx, node, a, real.T, None, None, None, node.inputs[3]), 6, 7)
    return _matrix(ctx, node, a, real.T, (b.T, bs, bz), None, _params(ctx, node, 6, 7), node.inputs[3])


@qdq("MatMul", layers=("FullyConnected", "Convolution2d", "Reshape"))
def qdq_matmul(ctx, node):
    a = ctx.port(node, 0, dtypes=None)
    b = _const_weights(ctx, node, 1).astype(np.float32)
    src = _transposed(ctx.quant.weight(ctx, node.inputs[1]))
    y = _matrix(ctx, node, a, b.T, src, None, ctx.quant.out_quant(node), node.inputs[1])
    return y


def _gemm_inputs(ctx, node, a: Port):
    if a.info.rank != 2:
        raise Unsupported("Gemm operands must be 2-D")
    return ctx.b.permute(a, (1, 0), ctx.name(node, "at")) if ctx.attr(node, "transA", 0) else a


@qdq("Gemm", layers=("FullyConnected", "Convolution2d", "Reshape"))
def qdq_gemm(ctx, node):
    a = _gemm_inputs(ctx, node, ctx.port(node, 0, dtypes=None))
    b = _const_weights(ctx, node, 1).astype(np.float32)
    src = ctx.quant.weight(ctx, node.inputs[1])
    if not ctx.attr(node, "transB", 0):
        b, src = b.T, _transposed(src)
    alpha, beta = float(ctx.attr(node, "alpha", 1.0)), float(ctx.attr(node, "beta", 1.0))
    if alpha != 1.0:
        b, src = b * np.float32(alpha), None
    bias = None
    if ctx.has(node, 2) and beta != 0.0:
        if not ctx.is_const(node, 2):
            raise Unsupported("C is computed at run time; a quantized Gemm needs a constant bias", DEQUANTIZE_HINT)
        c = ctx.const(node, 2, "C")
        if c.size not in (1, b.shape[0]) or (c.ndim == 2 and c.shape[0] != 1):
            raise Unsupported(f"C of shape {c.shape} is not a bias of the {b.shape[0]} outputs")
        bias = c.astype(np.float64).reshape(-1) * beta
    return _matrix(ctx, node, a, b, src, bias, ctx.quant.out_quant(node), node.inputs[1])


@register("QGemm", since=1, layers=("FullyConnected", "Permute", "Convolution2d", "Reshape"),
          check=needs_const(1, 2, 3, 4, 5, 6, 7, 8),
          notes="com.microsoft; a float output only with --dequantize")
def qgemm(ctx, node):
    a = _gemm_inputs(ctx, node, _qport(ctx, node, 0, 1, 2))
    b = _const_weights(ctx, node, 3)
    bs, bz = _scale(ctx, node, 4), _zp(ctx, node, 5, b)
    alpha = np.float64(ctx.attr(node, "alpha", 1.0))
    if not ctx.attr(node, "transB", 0):
        b = b.T
    real = (dequantized(b, bs, bz, 0) * alpha).astype(np.float32)  # [N, K]; per-column parameters
    bias = None
    if ctx.has(node, 6):  # int32 with scale alpha * a_scale * b_scale
        c = ctx.const(node, 6, "C").astype(np.float64)
        if c.size not in (1, b.shape[0]) or (c.ndim == 2 and c.shape[0] != 1):
            raise Unsupported(f"C of shape {c.shape} is not a bias of the {b.shape[0]} outputs")
        bias = c.reshape(-1) * alpha * np.float64(_scale(ctx, node, 1)[0]) * bs.astype(np.float64)
    if ctx.quant.dequantize:
        ctx.quant.note_dequantized(node.inputs[3])
        y = _matrix(ctx, node, a, real, None, bias, None, node.inputs[3])
        return _saturate(ctx, node, y, 7, 8) if ctx.has(node, 7) else y
    if not ctx.has(node, 7):
        raise Unsupported("QGemm with a float output in a quantized network", DEQUANTIZE_HINT)
    src = (b, bs, bz) if alpha == 1.0 else None
    return _matrix(ctx, node, a, real, src, bias, _params(ctx, node, 7, 8), node.inputs[3])


# -- elementwise -------------------------------------------------------------------------------------
def _binary(ctx, node, ltype, a, b, yq) -> Port:
    """a (op) b for Add and Mul; one operand may be a constant (real values)."""
    name = ctx.name(node)
    if yq is None:
        return binary(ctx, ltype, a, b, name)
    out_shape = broadcast(ctx.lshape(a), ctx.lshape(b))
    if isinstance(a, Port) and isinstance(b, Port):
        return ctx.to_shape(ctx.b.binary(ltype, a, b, name, quant=yq), out_shape, f"{name}_shape")
    x, c = (a, b) if isinstance(a, Port) else (b, a)  # Add and Mul commute
    c = np.asarray(c, np.float32)
    if tuple(out_shape) != ctx.lshape(x):
        raise Unsupported("a constant operand that broadcasts the quantized input to a larger shape")
    flat = c.reshape(-1)
    if np.all(flat == flat[0]):
        v = float(flat[0])
        y = ctx.b.linear(x, 1.0, v, name, quant=yq) if ltype == L.Addition else ctx.b.linear(x, v, 0.0, name, quant=yq)
        return y
    axis = varying_axis(c, x.info.rank)
    if axis is None:
        raise Unsupported("a constant operand varying along more than one axis of a quantized tensor",
                          DEQUANTIZE_HINT)
    per = np.moveaxis(np.broadcast_to(c, x.info.shape), axis, 0).reshape(x.info.shape[axis], -1)[:, 0]
    if ltype == L.Addition:
        return ctx.b.batchnorm(x, np.ones_like(per), per, axis, name, quant=yq)
    return ctx.b.batchnorm(x, per, np.zeros_like(per), axis, name, quant=yq)


def _qoperand(ctx, node, i, si, zi):
    """Operand i of QLinearAdd/QLinearMul: a Port, or a constant's real values."""
    if ctx.is_const(node, i):
        c = ctx.const(node, i)
        return dequantized(c, _scale(ctx, node, si), _zp(ctx, node, zi, c))
    return _qport(ctx, node, i, si, zi)


def _qlinear_binary(ltype):
    def convert(ctx, node):
        a, b = _qoperand(ctx, node, 0, 1, 2), _qoperand(ctx, node, 3, 4, 5)
        if ctx.quant.dequantize:
            return _saturate(ctx, node, _binary(ctx, node, ltype, a, b, None), 6, 7)
        return _binary(ctx, node, ltype, a, b, _params(ctx, node, 6, 7))
    return convert


def _qdq_binary(ltype):
    def convert(ctx, node):
        return _binary(ctx, node, ltype, ctx.val(node, 0), ctx.val(node, 1), ctx.quant.out_quant(node))
    return convert


for _op, _lt in (("Add", L.Addition), ("Mul", L.Multiplication)):
    register(f"QLinear{_op}", since=1, layers=(_lt.name, "Activation", "BatchNormalization"),
             check=needs_const(1, 2, 4, 5, 6, 7), notes="com.microsoft")(_qlinear_binary(_lt))
    qdq(_op, layers=(_lt.name,))(_qdq_binary(_lt))


def _alpha(ctx, node, fn) -> float:
    return float(ctx.attr(node, "alpha", 0.01)) if fn == AF.LeakyReLu else 0.0


def _activation(fn, keeps_range=False):
    """A one-layer activation computing into the output's quantization."""
    def convert(ctx, node):
        x = ctx.port(node, 0, dtypes=None)
        yq = ctx.quant.out_quant(node, keep=x if keeps_range else None)
        return ctx.b.activation(x, fn, ctx.name(node), a=_alpha(ctx, node, fn), quant=yq)
    return convert


qdq("Relu", layers=("Activation",))(_activation(AF.ReLu, keeps_range=True))
qdq("Sigmoid", layers=("Activation",))(_activation(AF.Sigmoid))
qdq("LeakyRelu", layers=("Activation",))(_activation(AF.LeakyReLu, keeps_range=True))


@qdq("Clip", layers=("Activation",))
def qdq_clip(ctx, node):
    x = ctx.port(node, 0, dtypes=None)
    if ctx.opset < 11:
        lo, hi = ctx.attr(node, "min", -np.inf), ctx.attr(node, "max", np.inf)
    else:
        lo = float(ctx.const(node, 1, "min").reshape(-1)[0]) if ctx.has(node, 1) else -np.inf
        hi = float(ctx.const(node, 2, "max").reshape(-1)[0]) if ctx.has(node, 2) else np.inf
    return ctx.b.clamp(x, lo, hi, ctx.name(node), quant=ctx.quant.out_quant(node, keep=x))


def _qlinear_activation(fn):
    def convert(ctx, node):
        x = _qport(ctx, node, 0, 1, 2)
        if ctx.quant.dequantize:
            return _saturate(ctx, node, ctx.b.activation(x, fn, ctx.name(node), a=_alpha(ctx, node, fn)), 3, 4)
        return ctx.b.activation(x, fn, ctx.name(node), a=_alpha(ctx, node, fn), quant=_params(ctx, node, 3, 4))
    return convert


register("QLinearLeakyRelu", since=1, layers=("Activation",), check=needs_const(1, 2, 3, 4),
         notes="com.microsoft")(_qlinear_activation(AF.LeakyReLu))
register("QLinearSigmoid", since=1, layers=("Activation",), check=needs_const(1, 2, 3, 4),
         notes="com.microsoft")(_qlinear_activation(AF.Sigmoid))


# -- pooling and concatenation -----------------------------------------------------------------------
def _gap(ctx, node, x: Port, yq, channels_last=False) -> Port:
    rank = x.info.rank
    if rank < 3:
        raise Unsupported(f"a {rank}-D input (global pooling needs N, C and spatial axes)")
    axes = list(range(1, rank - 1)) if channels_last else list(range(2, rank))
    if yq is None:
        return mean(ctx, x, axes, ctx.name(node))
    if rank > 4:
        raise Unsupported("global pooling of a quantized tensor of more than 4 dimensions")
    count = int(np.prod([x.info.shape[a] for a in axes]))
    if (x.info.scale, x.info.offset) == (float(np.float32(yq[0])), yq[1]) and count % 2 == 0 and \
            list(axes) == [rank - 2, rank - 1]:
        # an even count makes ties, which onnxruntime rounds to even, Arm NN away from the zero point
        return mean_half_even(ctx.b, x, axes, ctx.name(node))
    return ctx.b.mean(x, axes, True, ctx.name(node), quant=yq)


@register("QLinearGlobalAveragePool", since=1, layers=("Mean", "Activation", "Addition", "Multiplication",
                  "Permute", "Subtraction"), check=needs_const(1, 2, 3, 4),
          notes="com.microsoft; channels_last too")
def qlinear_global_average_pool(ctx, node):
    x = _qport(ctx, node, 0, 1, 2)
    last = bool(ctx.attr(node, "channels_last", 0))
    if ctx.quant.dequantize:
        return _saturate(ctx, node, _gap(ctx, node, x, None, last), 3, 4)
    return _gap(ctx, node, x, _params(ctx, node, 3, 4), last)


@qdq("GlobalAveragePool", layers=("Mean", "Activation", "Addition", "Multiplication", "Permute",
                                  "Subtraction"))
def qdq_global_average_pool(ctx, node):
    x = ctx.port(node, 0, dtypes=None)
    return _gap(ctx, node, x, ctx.quant.out_quant(node, keep=x))


def _pool(ctx, node, x: Port, algo, yq) -> Port:
    if len(node.outputs) > 1 and node.outputs[1]:
        raise Unsupported("the Indices output of MaxPool has no Arm NN equivalent")
    x, nd = _to_4d(ctx, x, node)
    kernel = _kernel(ctx, node, nd)
    if _pair(ctx.attr(node, "dilations"), nd, 1) != (1, 1):
        raise Unsupported("dilated pooling of a quantized tensor")
    strides, pads, ceil = _pool_geometry(ctx, node, x, nd, kernel)
    y = ctx.b.pool2d(x, algo, kernel, ctx.name(node), strides=strides, pads=pads, ceil=ceil,
                     exclude_pad=not ctx.attr(node, "count_include_pad", 0), quant=yq)
    return _back(ctx, y, nd, node)


def _qdq_pool(algo):
    def convert(ctx, node):
        x = ctx.port(node, 0, dtypes=None)
        return _pool(ctx, node, x, algo, ctx.quant.out_quant(node, keep=x))
    return convert


qdq("MaxPool", layers=("Pooling2d",))(_qdq_pool(PoolingAlgorithm.Max))
qdq("AveragePool", layers=("Pooling2d",))(_qdq_pool(PoolingAlgorithm.Average))


def _check_qpool(node, ctx):
    if ctx.attr(node, "channels_last", 0):
        return "channels_last average pooling"
    return _spatial_rank_check(node, ctx)


@register("QLinearAveragePool", since=1, layers=("Pooling2d",), check=all_checks(needs_const(1, 2, 3, 4), _check_qpool),
          notes="com.microsoft")
def qlinear_average_pool(ctx, node):
    x = _qport(ctx, node, 0, 1, 2)
    if ctx.quant.dequantize:
        return _saturate(ctx, node, _pool(ctx, node, x, PoolingAlgorithm.Average, None), 3, 4)
    return _pool(ctx, node, x, PoolingAlgorithm.Average, _params(ctx, node, 3, 4))


def _concat(ctx, node, ports, yq) -> Port:
    if any(not isinstance(p, Port) for p in ports):
        raise Unsupported("a constant input of a quantized Concat", DEQUANTIZE_HINT)
    axis = norm_axes([ctx.attr(node, "axis", 0)], ports[0].info.rank)[0]
    if len(ports) == 1:
        return ports[0] if yq is None else ctx.b.linear(ports[0], 1.0, 0.0, ctx.name(node), quant=yq)
    return ctx.b.concat(ports, axis, ctx.name(node), quant=yq)


@qdq("Concat", layers=("Merger",))
def qdq_concat(ctx, node):
    vals = [ctx.val(node, i) for i in range(len(node.inputs)) if ctx.has(node, i)]
    return _concat(ctx, node, vals, ctx.quant.out_quant(node))


def _check_qconcat(node, ctx):
    if (len(node.inputs) - 2) % 3 or len(node.inputs) < 5:
        return f"{len(node.inputs)} inputs (Y_scale, Y_zero_point, then (X, scale, zero point) per input)"
    return needs_const(0, 1, *[i for k in range(2, len(node.inputs), 3) for i in (k + 1, k + 2)])(node, ctx)


@register("QLinearConcat", since=1, layers=("Merger",), check=_check_qconcat, notes="com.microsoft")
def qlinear_concat(ctx, node):
    if ctx.quant.dequantize:
        ports = [ctx.port(node, k) if not ctx.is_const(node, k) else
                 ctx.materialize(_qoperand(ctx, node, k, k + 1, k + 2), ctx.name(node, f"in{k}"))
                 for k in range(2, len(node.inputs), 3)]
        return _saturate(ctx, node, _concat(ctx, node, ports, None), 0, 1)
    ports = []
    for k in range(2, len(node.inputs), 3):
        if ctx.is_const(node, k):
            raise Unsupported("a constant input of a quantized Concat", DEQUANTIZE_HINT)
        ports.append(_qport(ctx, node, k, k + 1, k + 2))
    return _concat(ctx, node, ports, _params(ctx, node, 0, 1))
