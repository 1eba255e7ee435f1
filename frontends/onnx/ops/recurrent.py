"""LSTM, GRU and RNN, unrolled over their static sequence length
(armnn_import/lowering/recurrent.py): both directions, initial states,
layout 0 and 1, sequence_lens only where every sequence has the full length."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.graph import Port
from armnn_import.lowering import Unsupported
from armnn_import.ir.types import LayerType as L
from armnn_import.lowering import lstm as LS
from armnn_import.lowering import recurrent as R

from ..registry import all_checks, needs_const, register

# ONNX gate order -> the recipe's (LSTM i o f c -> i f o c; GRU z r h and RNN unchanged)
ORDER = {"LSTM": (0, 2, 1, 3), "GRU": (0, 1, 2), "RNN": (0,)}
DEFAULT_ACTS = {"LSTM": ("Sigmoid", "Tanh", "Tanh"), "GRU": ("Sigmoid", "Tanh"), "RNN": ("Tanh",)}
ACTS = {"sigmoid": R.SIGMOID, "tanh": R.TANH, "relu": R.RELU}
DIRECTIONS = {"forward": 1, "reverse": 1, "bidirectional": 2}
LAYERS = ("FullyConnected", "StridedSlice", "Addition", "Multiplication", "Activation", "Reshape", "Merger",
          "BatchNormalization")
# LSTM: Arm NN's own layers where the target has them (lowering/lstm.py), else the unrolled form
LSTM_LAYERS = LAYERS + ("Lstm", "UnidirectionalSequenceLstm", "Permute", "Constant")


def _text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _activations(node, ctx):
    """The activations of each direction as the recipe's (function, a, b), or a refusal."""
    names = [_text(a) for a in ctx.attr(node, "activations", [])] or list(DEFAULT_ACTS[node.op])
    k, dirs = len(DEFAULT_ACTS[node.op]), DIRECTIONS.get(_text(ctx.attr(node, "direction", b"forward")), 1)
    if len(names) == k and dirs == 2:
        names = names * 2
    if len(names) != k * dirs:
        raise Unsupported(f"{len(names)} activations given; {node.op} takes {k} per direction")
    bad = [a for a in names if a.lower() not in ACTS]
    if bad:
        raise Unsupported(f"activation {bad[0]} has no parameter-free Arm NN equivalent here "
                          "(Sigmoid, Tanh and Relu are supported)")
    acts = [ACTS[a.lower()] for a in names]
    return [tuple(acts[d * k:(d + 1) * k]) for d in range(dirs)]


def _check_attrs(node, ctx):
    direction = _text(ctx.attr(node, "direction", b"forward"))
    if direction not in DIRECTIONS:
        return f"direction {direction!r} (forward, reverse or bidirectional)"
    if ctx.attr(node, "layout", 0) not in (0, 1):
        return f"layout {ctx.attr(node, 'layout')} (0 or 1)"
    if ctx.attr(node, "clip") is not None:
        return ("clip (a cell clip threshold) is not implemented", "export without clip")
    if node.op == "LSTM" and ctx.attr(node, "input_forget", 0):
        return "input_forget=1 (coupled input and forget gates) is not implemented"
    try:
        _activations(node, ctx)
    except Unsupported as e:
        return e.reason
    if ctx.has(node, 4) and ctx.is_const(node, 4):
        x, lens = ctx.shape(node, 0), ctx.value(node, 4)
        steps = None if x is None or len(x) != 3 else x[ctx.attr(node, "layout", 0)]
        if lens is not None and steps is not None and np.any(np.asarray(lens) != steps):
            return _lens_reason(lens, steps)
    return None


def _lens_reason(lens, steps):
    return (f"sequence_lens {np.asarray(lens).reshape(-1).tolist()[:8]} differ from the sequence length {steps}",
            "the unrolled network runs every sequence over the full length; pad or split the batch")


def _check(node, ctx):
    return all_checks(needs_const(1, 2, 3, 7, what="weights"), needs_const(4, what="sequence_lens"),
                      _check_attrs)(node, ctx)


def _states(ctx, node, i, d, layout, shape):
    """Initial state `i` of direction d as a [B, H] Port, or None for zeros."""
    v = ctx.val(node, i)
    if v is None:
        return None
    if not isinstance(v, Port):
        v = np.asarray(v, np.float32)
        if tuple(v.shape) != shape:
            raise Unsupported(f"input {i} has the shape {tuple(v.shape)}, not {shape}")
        part = v[d] if layout == 0 else v[:, d]
        # zeros (of either sign) add nothing: the first step skips the state
        return ctx.materialize(part, ctx.name(node, f"state{i}_d{d}")) if part.any() else None
    if v.info.shape != shape:
        raise Unsupported(f"input {i} has the shape {v.info.shape}, not {shape}")
    part = ctx.b.take(v, layout, d, d + 1, ctx.name(node, f"state{i}_d{d}"))
    return ctx.b.reshape(part, shape[1:] if layout == 0 else (shape[0], shape[2]),
                         ctx.name(node, f"state{i}_d{d}_2d"))


def _cell(ctx, node, d, hid, acts) -> R.Cell:
    g = len(ORDER[node.op])
    w, r = (np.asarray(ctx.const(node, i, what), np.float32) for i, what in ((1, "W"), (2, "R")))
    dirs, size = w.shape[0], w.shape[-1]
    if w.shape != (dirs, g * hid, size) or r.shape != (dirs, g * hid, hid):
        raise Unsupported(f"W {w.shape} and R {r.shape} do not fit hidden_size {hid}")
    rows = np.concatenate([np.arange(k * hid, (k + 1) * hid) for k in ORDER[node.op]])
    wb = rb = peep = None
    if ctx.has(node, 3):
        bias = np.asarray(ctx.const(node, 3, "B"), np.float32).reshape(dirs, 2 * g * hid)
        wb, rb = bias[d, :g * hid][rows], bias[d, g * hid:][rows]
    if node.op == "LSTM" and ctx.has(node, 7):
        p = np.asarray(ctx.const(node, 7, "P"), np.float32).reshape(dirs, 3, hid)[d]
        peep = (p[0], p[2], p[1])  # ONNX P is i, o, f
    return R.Cell(node.op.lower(), w[d][rows], r[d][rows], wb, rb, acts, peep,
                  bool(ctx.attr(node, "linear_before_reset", 0)))


def recurrent(ctx, node):
    n, b = ctx.name(node), ctx.b
    layout = int(ctx.attr(node, "layout", 0))
    direction = _text(ctx.attr(node, "direction", b"forward"))
    x = ctx.port(node, 0)
    if x.info.rank != 3:
        raise Unsupported(f"X has {x.info.rank} dimensions, not 3")
    steps, batch = (x.info.shape[0], x.info.shape[1]) if layout == 0 else (x.info.shape[1], x.info.shape[0])
    if layout == 0 and node.inputs[0] in getattr(ctx, "guessed_dim0", ()):
        raise Unsupported(f"the sequence length (dimension 0 of {node.inputs[0]!r}) is dynamic; the unrolled "
                          "network needs a static length", f"give it with --input-shape {node.inputs[0]}=T,B,I")
    if ctx.has(node, 4):
        lens = ctx.const(node, 4, "sequence_lens")
        if np.any(np.asarray(lens) != steps):
            raise Unsupported(*_lens_reason(lens, steps))
    hid = int(ctx.attr(node, "hidden_size", 0) or ctx.shape(node, 2)[-1])
    acts = _activations(node, ctx)
    dirs = len(acts)
    state_shape = (dirs, batch, hid) if layout == 0 else (batch, dirs, hid)
    cells = [_cell(ctx, node, d, hid, acts[d]) for d in range(dirs)]
    want_c = len(node.outputs) > 2 and node.outputs[2] != ""
    lower = _lowering(b.target, cells, want_c)
    results = []
    for d, cell in enumerate(cells):
        h0 = _states(ctx, node, 5, d, layout, state_shape)
        c0 = _states(ctx, node, 6, d, layout, state_shape) if node.op == "LSTM" else None
        reverse = direction == "reverse" or d == 1
        results.append(lower(b, cell, x, layout, h0, c0, reverse, f"{n}_d{d}"))
    return _outputs(ctx, node, results, layout, steps, batch, hid)


def _lowering(target, cells, want_c):
    """An LSTM that Arm NN's layers compute exactly (Sigmoid gates, g = h) becomes one
    UnidirectionalSequenceLstm per direction (23.08; its final cell state is not written by
    CpuRef, so not when Y_c is wanted), or one Lstm layer per step (20.08); else it is unrolled."""
    if all(LS.code(c) is not None for c in cells):
        if target.has(L.UnidirectionalSequenceLstm) and not want_c:
            return lambda *a: LS.sequence(*a) + (None,)
        if target.has(L.Lstm):
            return LS.steps
    return R.unroll


def _outputs(ctx, node, results, layout, steps, batch, hid):
    """Y [T, D, B, H] (layout 1: [B, T, D, H]), Y_h and Y_c [D, B, H] ([B, D, H])."""
    n, b, dirs = ctx.name(node), ctx.b, len(results)
    want = [i < len(node.outputs) and node.outputs[i] != "" for i in range(3)]
    outs = [None] * len(node.outputs)
    if want[0] and isinstance(results[0][0], Port):  # whole sequences [T, B, H] ([B, T, H]): a direction axis
        y = R.stack(b, [r[0] for r in results], layout + 1, f"{n}_Y_dirs")
        outs[0] = b.reshape(y, (steps, dirs, batch, hid) if layout == 0 else (batch, steps, dirs, hid), f"{n}_Y")
    elif want[0]:
        parts = [results[d][0][t] for t in range(steps) for d in range(dirs)]
        y = R.stack(b, parts, layout, f"{n}_Y_steps")
        outs[0] = b.reshape(y, (steps, dirs, batch, hid) if layout == 0 else (batch, steps, dirs, hid), f"{n}_Y")
    for k in (1, 2):
        if want[k] and k < len(outs):
            y = R.stack(b, [results[d][k] for d in range(dirs)], layout, f"{n}_Y{'hc'[k - 1]}_dirs")
            outs[k] = b.reshape(y, (dirs, batch, hid) if layout == 0 else (batch, dirs, hid), f"{n}_Y{'hc'[k - 1]}")
    return outs


for _op in ("LSTM", "GRU", "RNN"):
    register(_op, since=7, layers=LSTM_LAYERS if _op == "LSTM" else LAYERS, check=_check,
             notes="unrolled over the static sequence length; activations Sigmoid/Tanh/Relu; "
                   "sequence_lens only at the full length; no clip" +
                   ("; peepholes; no input_forget; from --target 20.08 one Lstm layer per step, on 23.08 one "
                    "UnidirectionalSequenceLstm per direction unless Y_c is wanted (Sigmoid gates, g = h)"
                    if _op == "LSTM" else "") +
                   ("; linear_before_reset 0 and 1" if _op == "GRU" else ""))(recurrent)
