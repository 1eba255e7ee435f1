"""Quantized operators (see ../quant.py for the design): QuantizeLinear,
DequantizeLinear, QLinearConv, QLinearMatMul, the com.microsoft QLinear*
operators and QGemm, and the float operators of QDQ models lowered on their
quantized inputs. Every lowering computes straight into the output's
quantization; with --dequantize the QLinear operators are lowered in float
with dequantized weights, each result clamped to its quantization's range.

Here: QuantizeLinear, DequantizeLinear and what every family shares (a QLinear
operator's parameters and inputs, the --dequantize clamp, per-axis weights). The
families: qconv.py, qmatrix.py, qelementwise.py, qpool.py."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.graph import Port
from armnn_import.ir.types import DataType
from armnn_import.ir.types import LayerType as L
from armnn_import.lowering import Unsupported, perchannel

from ..quant import DEQUANTIZE_HINT, absent_zero_point, check_port, dequantized, qparams
from ..registry import all_checks, needs_const, register


def _params(ctx, node, si: int, zi: int) -> tuple[float, int]:
    zp = ctx.const(node, zi, "zero point") if ctx.has(node, zi) else None
    if zp is None and node.op == "QuantizeLinear":
        zp = absent_zero_point(ctx.attr(node, "output_dtype"))
    elif zp is None and node.op == "DequantizeLinear":  # the zero point of its input's type
        zp = absent_zero_point(_elem_type(ctx, node.inputs[0]))
    return qparams(ctx.const(node, si, "scale"), zp)


def _elem_type(ctx, name: str) -> int | None:
    """The ONNX element type of a tensor: shape inference's, else the graph input's declaration."""
    t = ctx.inferred_types.get(name)
    if t:
        return t
    return next((i.type.tensor_type.elem_type for i in ctx.model.graph.input if i.name == name), None)


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


def _qoperand(ctx, node, i, si, zi):
    """Operand i of QLinearAdd/QLinearMul: a Port, or a constant's real values."""
    if ctx.is_const(node, i):
        c = ctx.const(node, i)
        return dequantized(c, _scale(ctx, node, si), _zp(ctx, node, zi, c))
    return _qport(ctx, node, i, si, zi)


# The helpers the families (qconv.py, qmatrix.py, qelementwise.py, qpool.py) share, under public
# names; the converters call them by the short ones.
params, scales, zero_points, qport, saturate = _params, _scale, _zp, _qport, _saturate
per_axis, qoperand = _per_axis, _qoperand
