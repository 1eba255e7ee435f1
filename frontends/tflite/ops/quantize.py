"""QUANTIZE and DEQUANTIZE. Arm NN's format has neither layer: constants are
converted at conversion time, QUANTIZE/DEQUANTIZE at the model's edges are
absorbed by Ctx._edges (the network takes and gives quantized tensors),
requantization is an Activation Linear with the new output quantization, and
with --dequantize both become identities."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.types import DataType, LayerType
from armnn_import.lowering.quant import DEQUANTIZE_HINT

from .. import quant as Q
from .. import types as T
from . import REGISTRY


def _same_type(op, ctx):
    """--dequantize makes QUANTIZE and DEQUANTIZE identities: both ends must be float."""
    i, o = op.inputs[0], op.outputs[0]
    if ctx.dtype_of(i) != ctx.dtype_of(o):
        return f"output {ctx.t(o).name!r} of type {ctx.t(o).type_name} for an input of type {ctx.t(i).type_name}"
    return None


def _check_dequantize(op, ctx):
    i = op.inputs[0]
    if ctx.is_const(i):
        return None
    if ctx.dequantize or ctx.t(i).type == T.INT16:  # (16x8 mode: the identity of ../grid16.py)
        return _same_type(op, ctx)
    if ctx.b.g.target.has(LayerType.Quantize):
        return None if ctx.is_quant(i) and ctx.dtype_of(op.outputs[0]) == DataType.Float32 else \
            "DEQUANTIZE of a tensor that is not 8-bit quantized, or into a type other than float32"
    return ("converts a quantized tensor to float inside the model; Arm NN's format has no "
            "Dequantize layer and one network cannot mix float and quantized tensors", DEQUANTIZE_HINT)


@REGISTRY.register("DEQUANTIZE", since=1, until=6, foldable=True, types="free",
                   check=_check_dequantize, layers=("Dequantize",),
                   notes="constants (float16, int8) converted to float32; identity with --dequantize")
def dequantize(ctx, op):
    i = op.inputs[0]
    if ctx.is_const(i):
        t = ctx.t(i)
        kind = "float16" if t.type == T.FLOAT16 else t.type_name.lower()
        ctx.report.quantization.append({"tensor": t.name, "decision": f"{kind} constant converted to float32"})
        return ctx.const(i)
    if ctx.is_quant(i) and not ctx.dequantize:  # the 20.08 format on (see _check_dequantize)
        return ctx.b.add(LayerType.Dequantize, ctx.name(op), [ctx.port(i)])
    return ctx.port(i)


def _check_quantize(op, ctx):
    i = op.inputs[0]
    if ctx.is_const(i):
        return None
    if ctx.dequantize or ctx.t(op.outputs[0]).type == T.INT16:  # (16x8 mode: ../grid16.py rounds)
        return _same_type(op, ctx)
    if ctx.is_quant(i):
        o = op.outputs[0]
        return None if ctx.is_quant(o) else f"requantizes into {ctx.t(o).name!r}, which is not 8-bit quantized"
    if ctx.b.g.target.has(LayerType.Quantize):
        return None if ctx.is_quant(op.outputs[0]) and ctx.dtype_of(i) == DataType.Float32 else \
            "QUANTIZE of a tensor that is not float32, or into a type that is not 8-bit quantized"
    return ("quantizes a float tensor inside the model; Arm NN's format has no Quantize layer and "
            "one network cannot mix float and quantized tensors", DEQUANTIZE_HINT)


@REGISTRY.register("QUANTIZE", since=1, until=3, foldable=True, types="free",
                   check=_check_quantize, layers=("Activation", "Quantize"),
                   notes="requantization as Linear(a=1) into the new quantization")
def quantize(ctx, op):
    i, o = op.inputs[0], op.outputs[0]
    if ctx.is_const(i):
        t = ctx.t(o)
        real = ctx.const(i)
        if t.quant is not None:  # the values the quantized constant really holds
            qmin, qmax = (-128, 127) if t.type == Q.INT8 else (0, 255)
            s, zp = float(t.quant.scale[0]), int(t.quant.zero_point[0])
            real = ((np.clip(np.round(real / s) + zp, qmin, qmax) - zp) * s).astype(np.float32)
        return real
    x = ctx.port(i)
    q = ctx.out_quant(op)
    if q is not None and not x.info.dtype.is_quantized:  # the 20.08 format on (see _check_quantize)
        return ctx.b.add(LayerType.Quantize, ctx.name(op), [x], quant=q)
    if q is None or (x.info.scale, x.info.offset) == q:
        return x
    return ctx.b.linear(x, 1.0, 0.0, ctx.name(op), quant=q)


@REGISTRY.register("DENSIFY", since=1, until=1, foldable=True, layers=(),
                   check=lambda op, ctx: None if ctx.is_const(op.inputs[0]) else
                   "densifies a tensor computed at run time (only sparse constants are densified)",
                   notes="sparse constants are densified when the file is read (frontends/tflite/sparse.py); "
                         "DENSIFY folds")
def densify(ctx, op):
    # model.bypass_densify already routed the users of most DENSIFY ops to their constant
    return ctx.const(op.inputs[0])
