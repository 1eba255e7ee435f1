"""Quantized matrix products: QLinearMatMul, QGemm and the QDQ MatMul and Gemm (see qlinear.py)."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.graph import Port
from armnn_import.ir.types import ConstTensor, DataType, TensorInfo
from armnn_import.lowering import Unsupported, perchannel
from armnn_import.lowering.quant import bias_int32

from ..quant import DEQUANTIZE_HINT, dequantized, qdq
from ..registry import needs_const, register
from .matrix import fc_nd as _fc
from .qlinear import params as _params, per_axis as _per_axis, qport as _qport
from .qlinear import saturate as _saturate, scales as _scale, zero_points as _zp


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
