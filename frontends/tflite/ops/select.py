"""SELECT and SELECT_V2 of float32 values (8-bit ones, from the 20.08 format on, in float between a
Dequantize and a Quantize): where(c, x, y) as max(min(P, x), min(-P, y)), P = +-inf
from the condition's float 0/1 mask (armnn_import/lowering/masks.py, exact for NaN, infinities and
signed zeros). No Arm NN layer turns a Boolean into a number, so the mask is computed again from
what the condition comes from: a comparison of float32 (or, at --target 23.08, int32) operands,
LOGICAL_NOT/AND/OR of such conditions, or a constant. (A Keras 3 Embedding's negative-id wrap,
a SELECT_V2 before a GATHER, becomes part of the Gather instead: ../wrap.py.)"""
from __future__ import annotations

import numpy as np

from armnn_import.ir.types import DataType
from armnn_import.ir.types import LayerType as L
from armnn_import.lowering import Unsupported
from armnn_import.lowering.compare import int_mask
from armnn_import.lowering.masks import float_mask, select

from . import REGISTRY

_KINDS = {"GREATER": "gt", "LESS": "lt", "GREATER_EQUAL": "ge", "LESS_EQUAL": "le", "EQUAL": "eq",
          "NOT_EQUAL": "ne"}
_LOGICAL = ("LOGICAL_NOT", "LOGICAL_AND", "LOGICAL_OR")


def _value(ctx, i):
    return np.asarray(ctx.folded[i] if i in ctx.folded else ctx.m.tensors[i].data)


def _source(ctx, i):
    """The op computing condition tensor i, or the reason it cannot be made a mask."""
    k = ctx.producer.get(i)
    if k is None:
        return None, ("a Boolean model input (no Arm NN layer turns a Boolean into a number)",
                      "compute the condition inside the model from float comparisons")
    op = ctx.m.operators[k]
    if op.op in _LOGICAL:
        return op, None
    if op.op not in _KINDS:
        return None, (f"a condition computed by {op.op} (its 0/1 form is made from a comparison's operands)",
                      "compute the condition with GREATER, LESS, EQUAL, ... of float tensors")
    types = {ctx.dtype_of(j) for j in op.inputs[:2] if not ctx.is_const(j)}
    if types == {DataType.Signed32} and all(not ctx.is_const(j) for j in op.inputs[:2]):
        return (op, None) if ctx.b.g.target.has(L.Cast) else (None, (
            "a condition of int32 comparisons (its 0/1 form is a Cast)", "convert with --target 23.08"))
    if types == {DataType.Float32} and not any(ctx.is_quant(j) for j in op.inputs[:2]):
        return op, None
    if _same_quant(ctx, op.inputs[:2]) and ctx.b.g.target.has(L.Dequantize):
        return op, None
    return None, (f"a condition comparing {'/'.join(sorted(t.name for t in types if t))} tensors (its 0/1 "
                  "form needs float32 operands, 8-bit ones of one quantization from --target 20.08, or two "
                  "int32 tensors at --target 23.08)", "")


def _same_quant(ctx, tensors, q=None) -> bool:
    """Whether the tensors are all 8-bit quantized with one scale and zero point (q's, if given):
    their levels then compare, and are selected, as their values."""
    if not all(ctx.is_quant(j) and ctx.t(j).quant.per_tensor for j in tensors):
        return False
    return len({ctx.qparams(j) for j in tensors} | ({q} if q else set())) == 1


def _operand(ctx, j, name):
    """Tensor j as a float32 value: a constant's real values, a quantized Port dequantized."""
    if ctx.is_const(j):
        return ctx.const(j)
    p = ctx.port(j)
    return p if not p.info.dtype.is_quantized else ctx.b.add(L.Dequantize, f"{name}_float", [p])


def _problem(ctx, i):
    """Why condition tensor i has no 0/1 form here (pre-scan), or None."""
    if ctx.is_const(i):
        return None
    op, why = _source(ctx, i)
    if why is not None or op.op not in _LOGICAL:
        return why
    return next((p for j in op.inputs if (p := _problem(ctx, j))), None)


def mask(ctx, i, name):
    """Condition tensor i as a float32 0/1 Port, or a bool array for a constant."""
    if ctx.is_const(i):
        return _value(ctx, i).astype(bool)
    op, why = _source(ctx, i)
    if why is not None:
        raise Unsupported(*why)
    nb = ctx.b
    if op.op in _LOGICAL:
        ms = [mask(ctx, j, f"{name}_in{k}") for k, j in enumerate(op.inputs)]
        ms = [m if not isinstance(m, np.ndarray) else np.asarray(m, np.float32) for m in ms]
        if op.op == "LOGICAL_NOT":
            return 1.0 - ms[0] if isinstance(ms[0], np.ndarray) else nb.linear(ms[0], -1.0, 1.0, name)
        if any(isinstance(m, np.ndarray) for m in ms):
            raise Unsupported(f"{op.op} of a constant and a run-time condition", "fold the constant into the model")
        return nb.binary(L.Multiplication if op.op == "LOGICAL_AND" else L.Maximum, ms[0], ms[1], name)
    a, b = (_operand(ctx, j, f"{name}_in{k}") for k, j in enumerate(op.inputs[:2]))
    if ctx.dtype_of(op.inputs[0]) == DataType.Signed32:
        kind = {"lt": "gt"}.get(_KINDS[op.op], _KINDS[op.op])
        a, b = (b, a) if _KINDS[op.op] == "lt" else (a, b)
        ctx.report.warn(f"{name}: the mask of an int32 comparison is exact while the operands' difference "
                        "fits int32 (operands within +-2^30)")
        return int_mask(nb, kind, a, b, name)
    return float_mask(nb, _KINDS[op.op], a, b, name)


def _check_select(op, ctx):
    c, x, y = op.inputs[:3]
    if any(ctx.is_quant(j) for j in (x, y, op.outputs[0])):
        if not ctx.b.g.target.has(L.Quantize):
            return ("quantized values (selected in float between a Dequantize and a Quantize)",
                    "convert with --target 20.08 or later")
        if not _same_quant(ctx, (x, y), ctx.out_quant(op)):
            return "quantized values and result of more than one quantization (LiteRT copies their levels)"
    elif any(ctx.dtype_of(j) != DataType.Float32 for j in (x, y)):
        return "values that are not float32 or 8-bit quantized (the select works on float values: +-inf bounds)"
    if op.op == "SELECT" and len(ctx.shape(c)) == 1 and len(ctx.shape(x)) > 1:
        return None if ctx.shape(c)[0] == ctx.shape(x)[0] else "a 1-D condition of another length than x's rows"
    return _problem(ctx, c)


@REGISTRY.register("SELECT", "SELECT_V2", since=1, until=4, inputs=3, data_input=1, foldable=True,
                   check=_check_select,
                   layers=("Minimum", "Maximum", "Activation", "Floor", "Subtraction", "Multiplication",
                           "FullyConnected", "StridedSlice", "Reshape", "Constant", "Addition",
                           "ElementwiseUnary", "Cast", "Division", "Dequantize", "Quantize"),
                   notes="float32 values (8-bit ones of one quantization from 20.08); the condition a "
                         "comparison of float32 tensors (8-bit: 20.08, int32: 23.08), LOGICAL_NOT/AND/OR "
                         "of such, or a constant")
def select_v2(ctx, op):
    c, x, y = op.inputs[:3]
    name = ctx.name(op)
    if all(ctx.is_const(j) for j in (c, x, y)):
        return np.where(_value(ctx, c).astype(bool), ctx.const(x), ctx.const(y))
    m = mask(ctx, c, f"{name}_cond")
    if op.op == "SELECT" and len(ctx.shape(c)) == 1 and len(ctx.shape(x)) > 1:  # one condition per row
        shape = (ctx.shape(c)[0],) + (1,) * (len(ctx.shape(x)) - 1)
        m = m.reshape(shape) if isinstance(m, np.ndarray) else ctx.b.reshape(m, shape, f"{name}_rows")
    q = ctx.out_quant(op)
    xv, yv = (_operand(ctx, j, f"{name}_{part}") for j, part in ((x, "x"), (y, "y")))
    out = select(ctx.b, m, xv, yv, name if q is None else f"{name}_float")
    if q is not None:  # (the values are on the output's grid: Quantize gives their levels back)
        out = ctx.b.add(L.Quantize, name, [out], quant=q)
    shape = tuple(ctx.t(op.outputs[0]).shape) or (1,)
    return out if out.info.shape == shape else ctx.b.reshape(out, shape, f"{name}_shape")
