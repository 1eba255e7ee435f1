"""Einsum of one or two operands, as the layers MatMul already uses (so on every target): each
operand transposed to [batch, free, contracted] and flattened to a 3-D matrix stack, one MatMul
(BatchMatMul from --target 23.08; FullyConnected for a constant operand; before 23.08 a
Multiplication and Mean for two run-time ones), the result unflattened and transposed to the
output's letters. One operand: a transpose."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.graph import Port
from armnn_import.ir.types import DataType
from armnn_import.ir.types import LayerType as L
from armnn_import.lowering import Unsupported

from ..registry import register
from .matrix import matmul


def parse(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """The operands' letters and the output's, '...' spelled out as upper-case letters; an
    implicit output is the letters used once, in alphabetical order (after the ellipsis)."""
    eq = equation
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise Unsupported(f"equation {equation!r} names {len(terms)} operands for {len(ranks)} inputs", code="bad-model")
    ells = {r - len(t.replace("...", "")) for t, r in zip(terms, ranks) if "..." in t}
    if len(ells) > 1:  # (onnx shape inference refuses it too)
        raise Unsupported(f"equation {equation!r}: '...' stands for {sorted(ells)} dimensions", code="bad-model")
    ell = max(ells, default=0)
    free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in eq]
    if ell > len(free):
        raise Unsupported(f"equation {equation!r}: too many dimensions under '...'", code="bad-model")
    fill = "".join(free[:ell])

    terms = [t.replace("...", fill) for t in terms]
    if any(len(t) != r or not t.isalpha() for t, r in zip(terms, ranks)):
        raise Unsupported(f"equation {equation!r} does not match operands of ranks {ranks}", code="bad-model")
    if arrow:
        if ells and "..." not in out:  # (as onnxruntime: the ellipsis dimensions are never summed)
            raise Unsupported(f"equation {equation!r}: the operands have '...' and the output has not", code="bad-model")
        out = out.replace("...", fill)
    else:
        once = sorted(c for c in set("".join(terms)) if "".join(terms).count(c) == 1 and c not in fill)
        out = fill + "".join(once)
    return terms, out


def _operand(ctx, v, letters: str, order: str, shape: tuple[int, ...], name: str):
    """v with its axes in `order`, reshaped to `shape` (numpy for a constant)."""
    perm = tuple(letters.index(c) for c in order)
    if isinstance(v, Port):
        return ctx.b.reshape(ctx.b.permute(v, perm, f"{name}_t"), shape, f"{name}_3d")
    return np.ascontiguousarray(np.transpose(np.asarray(v, np.float32), perm)).reshape(shape)


@register("Einsum", since=12, layers=("Permute", "Reshape", "FullyConnected", "BatchMatMul", "Multiplication", "Mean",
                                      "Activation", "Merger", "StridedSlice", "Constant"),
          notes="one or two operands, each letter of an operand in the other or in the output (no "
                "diagonals, no sums over one operand's letter); batch letters of equal sizes")
def einsum(ctx, node):
    n = ctx.name(node)
    vals = [ctx.val(node, i) for i in range(len(node.inputs))]
    if not 1 <= len(vals) <= 2:
        raise Unsupported(f"{len(vals)} operands (one or two are supported: a chain is several Einsums)")
    shapes = [tuple(ctx.lshape(v)) for v in vals]
    terms, out = parse(str(ctx.attr(node, "equation", "")), [len(s) for s in shapes])
    size = {}
    for t, s in zip(terms, shapes):
        if len(set(t)) != len(t):
            raise Unsupported(f"operand {t!r} repeats a letter (a diagonal)")
        for c, d in zip(t, s):
            if size.setdefault(c, d) != d:
                raise Unsupported(f"letter {c!r} has sizes {size[c]} and {d} (broadcasting is not supported)")
    if len(set(out)) != len(out) or any(c not in size for c in out):
        raise Unsupported(f"output {out!r} repeats a letter or names one no operand has", code="bad-model")
    if len(terms) == 1:
        if sorted(out) != sorted(terms[0]):
            raise Unsupported(f"a sum over letters of one operand ({terms[0]}->{out})")
        return ctx.b.permute(ctx.port(node, 0), tuple(terms[0].index(c) for c in out), n)
    (a, b), (ta, tb) = vals, terms
    if not isinstance(a, Port):  # (a run-time operand first: the constant one becomes weights)
        (a, b), (ta, tb) = (b, a), (tb, ta)
    if any(c not in tb and c not in out for c in ta) or any(c not in ta and c not in out for c in tb):
        raise Unsupported(f"a sum over a letter of one operand only ({','.join(terms)}->{out})")
    batch = [c for c in out if c in ta and c in tb]
    left, right = [c for c in out if c in ta and c not in tb], [c for c in out if c in tb and c not in ta]
    inner = [c for c in ta if c in tb and c not in out]
    dims = [int(np.prod([size[c] for c in g], dtype=np.int64)) for g in (batch, left, inner, right)]
    bs = tuple(size[c] for c in batch) if len(batch) <= 2 else (dims[0],)  # (at most 4-D products)
    m, k, nn = dims[1:]
    direct = isinstance(b, Port) and ctx.b.target.has(L.BatchMatMul) and \
        a.info.dtype == b.info.dtype == DataType.Float32
    # a BatchMatMul reads either operand transposed: no Permute for an operand stored that way
    ta_t = direct and ta == "".join(batch + inner + left)
    tb_t = direct and tb == "".join(batch + right + inner)
    a3 = _operand(ctx, a, ta, "".join(batch + (inner + left if ta_t else left + inner)),
                  bs + ((k, m) if ta_t else (m, k)), f"{n}_a")
    b3 = _operand(ctx, b, tb, "".join(batch + (right + inner if tb_t else inner + right)),
                  bs + ((nn, k) if tb_t else (k, nn)), f"{n}_b")
    if direct:
        y = ctx.b.batch_matmul(a3, b3, f"{n}_mm", transpose_a=ta_t, transpose_b=tb_t)
    else:
        y = matmul(ctx, a3, b3, f"{n}_mm")
    got = "".join(batch + left + right)
    if not out:
        return ctx.to_shape(y, (), n)
    y = ctx.b.reshape(y, tuple(size[c] for c in got), f"{n}_unflat")
    return ctx.b.permute(y, tuple(got.index(c) for c in out), n)
