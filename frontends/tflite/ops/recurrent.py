"""UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM and
UNIDIRECTIONAL_SEQUENCE_RNN (float32),
unrolled over the static sequence length (armnn_import/lowering/recurrent.py).

The state inputs are variable tensors: LiteRT keeps them from one invocation
to the next (starting from zeros), while an Arm NN network has no state, so
every run starts from zeros, as LiteRT's first invocation does."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.types import ActivationFunction as AF
from armnn_import.lowering import Unsupported
from armnn_import.ir.types import LayerType as L
from armnn_import.lowering import lstm as LS
from armnn_import.lowering import recurrent as R

from . import REGISTRY

FLOAT32 = 0
# TFLite's fused activation as the cell's activation (lstm_eval.cc ApplyActivationsToVector);
# None: the identity
ACTS = {0: None, 1: R.RELU, 2: (AF.BoundedReLu, 1.0, -1.0), 3: (AF.BoundedReLu, 6.0, 0.0), 4: R.TANH}
LSTM_W, LSTM_R, LSTM_B = (1, 2, 4, 3), (5, 6, 8, 7), (12, 13, 15, 14)  # gates i, f, o, c
LSTM_UNSUPPORTED = {(9, 10, 11): "peephole (cell-to-gate) weights", (16, 17): "a projection layer"}
LAYERS = ("FullyConnected", "StridedSlice", "Addition", "Multiplication", "Activation", "Reshape", "Merger")
# LSTM: Arm NN's own layers where the target has them (lowering/lstm.py), else the unrolled form
LSTM_LAYERS = LAYERS + ("Lstm", "UnidirectionalSequenceLstm", "Permute", "Constant")


def _present(op, i):
    return i < len(op.inputs) and op.inputs[i] >= 0


def _check_common(op, ctx, weights, state):
    o = op.options
    if int(o.get("fused_activation_function", 0)) not in ACTS:
        return f"fused activation {o.get('fused_activation_function')} has no Arm NN equivalent here"
    if o.get("asymmetric_quantize_inputs") and any(ctx.t(op.inputs[i]).type != FLOAT32 for i in weights):
        return "hybrid (quantized-weight) kernel"
    for i in weights:
        t = ctx.t(op.inputs[i])
        if t.type != FLOAT32:
            return f"weight tensor {t.name!r} is {t.type_name}; only float32 recurrent layers are converted"
        if not ctx.is_const(op.inputs[i]):
            return f"weight tensor {t.name!r} must be a constant"
    if ctx.t(op.inputs[0]).type != FLOAT32:
        return f"input {ctx.t(op.inputs[0]).name!r} is {ctx.t(op.inputs[0]).type_name}, not float32"
    if len(ctx.t(op.inputs[0]).shape) != 3:
        return f"input of rank {len(ctx.t(op.inputs[0]).shape)}, not 3"
    for i in state:
        if not _present(op, i):
            return f"state input {i} is missing"
        if ctx.t(op.inputs[i]).data is not None:
            return (f"state tensor {ctx.t(op.inputs[i]).name!r} is a variable with a buffer, "
                    "which LiteRT does not load either")
    return None


def _check_lstm_options(op):
    o = op.options
    if float(o.get("cell_clip", 0.0)) < 0:
        return f"cell_clip = {o['cell_clip']}"
    if int(o.get("fused_activation_function", 0)) == 0:
        # ApplyActivationToVector returns without writing its result for NONE
        return "fused activation NONE: LiteRT's kernel leaves the cell output undefined (not the identity)"
    if o.get("diagonal_recurrent_tensors"):
        return "diagonal recurrent weights"
    return None


def _check_lstm_weights(op, base):
    """The weights of the direction at input offset `base` (0, or 17 for the backward one)."""
    if not all(_present(op, base + i) for i in (1, 5, 12)):
        return "coupled input and forget gates (CIFG: no input-gate weights) are not implemented"
    for idx, what in LSTM_UNSUPPORTED.items():
        if any(_present(op, base + i) for i in idx):
            return f"{what} is not implemented"
    return None


def _check_lstm(op, ctx):
    if len(op.inputs) < 20:
        return f"{len(op.inputs)} inputs, not 20 or 24"
    if any(_present(op, i) for i in (20, 21, 22, 23)):
        return "layer normalization is not implemented"
    return (_check_lstm_options(op) or _check_lstm_weights(op, 0)
            or _check_common(op, ctx, LSTM_W + LSTM_R + LSTM_B, (18, 19)))


def _check_bidi_lstm(op, ctx):
    if len(op.inputs) < 39:
        return f"{len(op.inputs)} inputs, not 48"
    if any(_present(op, i) for i in range(39, len(op.inputs))):
        return "an auxiliary input is not implemented"
    if not op.options.get("merge_outputs") and len(op.outputs) != 2:
        return f"{len(op.outputs)} outputs without merge_outputs, not 2"
    weights = tuple(k + i for k in (0, 17) for i in LSTM_W + LSTM_R + LSTM_B)
    return (_check_lstm_options(op) or _check_lstm_weights(op, 0) or _check_lstm_weights(op, 17)
            or _check_common(op, ctx, weights, (35, 36, 37, 38)))


def _check_rnn(op, ctx):
    if len(op.inputs) < 5:
        return f"{len(op.inputs)} inputs, not 5"
    return _check_common(op, ctx, (1, 2, 3), (4,))


def _sequences(ctx, op, cells):
    """The output sequence of each cell (the second runs backwards), [T, B, H] or [B, T, H]."""
    nb, name = ctx.b, ctx.name(op)
    x = ctx.port(op.inputs[0])
    time_axis = 0 if op.options.get("time_major", False) else 1
    ctx.report.warn(f"{ctx.node(op)}: {op.op}'s state is a variable that LiteRT carries from one invocation "
                    "to the next; the Arm NN network starts every run from zeros, as a new interpreter does")
    outs = []
    for d, cell in enumerate(cells):
        cname = f"{name}_d{d}" if d else name
        if LS.code(cell) is not None and nb.target.has(L.UnidirectionalSequenceLstm):
            outs.append(LS.sequence(nb, cell, x, time_axis, None, None, d == 1, cname)[0])
            continue
        lower = LS.steps if LS.code(cell) is not None and nb.target.has(L.Lstm) else R.unroll
        hs, _, _ = lower(nb, cell, x, time_axis, None, None, d == 1, cname)
        outs.append(R.stack(nb, hs, time_axis, f"{name}_bw" if d else name))
    return outs


def _lstm_cell(ctx, op, base):
    w = np.concatenate([ctx.const(op.inputs[base + i]) for i in LSTM_W])
    r = np.concatenate([ctx.const(op.inputs[base + i]) for i in LSTM_R])
    b = np.concatenate([ctx.const(op.inputs[base + i]).reshape(-1) for i in LSTM_B])
    hid = ctx.shape(op.inputs[base + LSTM_R[0]])[0]
    if w.shape[0] != 4 * hid or r.shape != (4 * hid, hid) or b.shape != (4 * hid,):
        raise Unsupported(f"weights {w.shape}, {r.shape} and biases {b.shape} do not fit {hid} units")
    act = ACTS[int(op.options.get("fused_activation_function", 0))]
    # proj_clip only acts on a projection, which is refused
    return R.Cell("lstm", w, r, b, None, (R.SIGMOID, act, act), cell_clip=float(op.options.get("cell_clip", 0.0)))


@REGISTRY.register("UNIDIRECTIONAL_SEQUENCE_LSTM", since=1, until=4, state_inputs=(18, 19),
                   check=_check_lstm, layers=LSTM_LAYERS,
                   notes="float32, unrolled over the static sequence length; time_major both; cell_clip; "
                         "no CIFG, peephole, projection or layer norm; from --target 20.08 one Lstm layer per "
                         "step, on 23.08 one UnidirectionalSequenceLstm (not with RELU_N1_TO_1)")
def unidirectional_sequence_lstm(ctx, op):
    return _sequences(ctx, op, [_lstm_cell(ctx, op, 0)])[0]


@REGISTRY.register("BIDIRECTIONAL_SEQUENCE_LSTM", since=1, until=3, multi_output=True,
                   state_inputs=(35, 36, 37, 38),
                   check=_check_bidi_lstm, layers=LSTM_LAYERS,
                   notes="as UNIDIRECTIONAL_SEQUENCE_LSTM; merge_outputs both; no auxiliary input")
def bidirectional_sequence_lstm(ctx, op):
    fw, bw = _sequences(ctx, op, [_lstm_cell(ctx, op, 0), _lstm_cell(ctx, op, 17)])
    if op.options.get("merge_outputs"):
        return ctx.b.concat([fw, bw], 2, f"{ctx.name(op)}_merged")
    else:
        return fw, bw


@REGISTRY.register("UNIDIRECTIONAL_SEQUENCE_RNN", since=1, until=3, state_inputs=(4,),
                   check=_check_rnn, layers=LAYERS,
                   notes="float32, unrolled over the static sequence length; time_major both")
def unidirectional_sequence_rnn(ctx, op):
    w, r, b = (ctx.const(op.inputs[i]) for i in (1, 2, 3))
    hid = r.shape[0]
    if w.shape[0] != hid or r.shape != (hid, hid) or b.reshape(-1).shape != (hid,):
        raise Unsupported(f"weights {w.shape}, {r.shape} and bias {b.shape} do not fit {hid} units")
    cell = R.Cell("rnn", w, r, b.reshape(-1), None, (ACTS[int(op.options.get("fused_activation_function", 0))],))
    return _sequences(ctx, op, [cell])[0]
