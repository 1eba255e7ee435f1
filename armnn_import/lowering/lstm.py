"""LSTM as Arm NN's own layers on the richer targets, shared by the ONNX and TFLite
frontends (the early layer set gets recurrent.unroll instead).

- `sequence` (the 23.08 format): one UnidirectionalSequenceLstm over the whole sequence,
  time-major (CpuRef permutes a batch-major input in place, in the input's own buffer, which
  another reader of that tensor would see: so a batch-major input gets a Permute of its own).
  CpuRef 23.08 never writes the layer's final-state outputs, so the last output state is the
  sequence's last step, and a wanted final cell state takes `steps` instead.
- `steps` (the 20.08 format): one Lstm layer per time step, the states passed along.

Both follow the same cell as recurrent.Cell (gates i, f, o, c; biases summed once, which is
what the unrolled form adds too). A zero initial state is made from the first step's input by
a FullyConnected with zero weights in `steps` (no Constant layer: a 20.08 file must also load
on 23.08, which misreads Constants of files without weightsLayoutScheme 1); like recurrent's
`constant`, NaN or infinity there would reach the state. `sequence` (23.08 files only) takes a
Constant layer of zeros.
"""
from __future__ import annotations

import numpy as np

from ..ir import descriptors as D
from ..ir.graph import Port
from ..ir.types import ActivationFunction as AF
from ..ir.types import ConstTensor, DataType
from ..ir.types import LayerType as L
from .builder import NetBuilder
from .recurrent import Cell

# the cell activation as LstmUtils' Android NN code (the gates are always Sigmoid)
_CODES = {(AF.TanH, 1.0, 1.0): 4, (AF.ReLu, 0.0, 0.0): 1, (AF.Sigmoid, 0.0, 0.0): 6, (AF.BoundedReLu, 6.0, 0.0): 3}
_GATES = {"input": 0, "forget": 1, "output": 2, "cell": 3}  # rows of Cell.w / Cell.r
_BIAS = {"input": "input_gate_bias", "forget": "forget_gate_bias", "output": "output_gate_bias",
         "cell": "cell_bias"}


def code(cell: Cell) -> int | None:
    """The Arm NN activation code of an LSTM cell that Arm NN's layers compute exactly, or None:
    Sigmoid gates and one activation for the cell input and output (g = h)."""
    if cell.kind != "lstm" or cell.acts[0] != (AF.Sigmoid, 0.0, 0.0) or cell.acts[1] != cell.acts[2]:
        return None
    act = cell.acts[1]
    return None if act is None else _CODES.get((act[0], float(act[1]), float(act[2])))


def _tensors(cell: Cell, ltype) -> tuple[dict, bool]:
    """The LstmInputParams tensors (made once: every step's layer holds the same objects) and
    whether peepholes are on."""
    hid, (bias, _) = cell.hidden, cell.biases()
    f32 = lambda a: ConstTensor(np.ascontiguousarray(a, np.float32))  # noqa: E731
    t = {}
    for g, k in _GATES.items():
        rows = slice(k * hid, (k + 1) * hid)
        t[f"input_to_{g}_weights"], t[f"recurrent_to_{g}_weights"] = f32(cell.w[rows]), f32(cell.r[rows])
        t[_BIAS[g]] = f32(bias[rows])
    peep = cell.peephole is not None and any(np.asarray(p).any() for p in cell.peephole)
    if peep:
        for g, p in zip(("input", "forget", "output"), cell.peephole):
            t[f"cell_to_{g}_weights"] = f32(np.asarray(p, np.float32).reshape(hid))
    elif ltype == L.Lstm:  # 20.08's ParseLstm reads cellToInputWeights whenever CIFG is off
        t["cell_to_input_weights"] = f32(np.zeros(hid, np.float32))
    return t, peep


def _desc(cell: Cell, ltype, peep: bool, **kw):
    cls = D.LstmDescriptor if ltype == L.Lstm else D.UnidirectionalSequenceLstmDescriptor
    return cls(activation_func=code(cell), clipping_thres_cell=float(cell.cell_clip), cifg_enabled=False,
               peephole_enabled=peep, **kw)


def _zeros(b: NetBuilder, col: Port, hid: int, name: str) -> Port:
    """A [B, hid] zero state from a [B, 1] column of the input (FullyConnected, zero weights
    [hid, 1]: a column, so the file holds hid zeros, not hid * I)."""
    return b.fully_connected(col, np.zeros((hid, 1), np.float32), None, name)


def steps(b: NetBuilder, cell: Cell, x: Port, time_axis: int, h0: Port | None, c0: Port | None,
          reverse: bool, name: str):
    """As recurrent.unroll, with one Lstm layer per step: (h of every step in time order, last h, last c)."""
    n_steps, batch, size = (x.info.shape if time_axis == 0 else
                            (x.info.shape[1], x.info.shape[0], x.info.shape[2]))
    flat = b.reshape(x, (n_steps * batch, size), f"{name}_x2d")

    def at(t):  # the [B, I] input of step t (rows t*B.. time-major, rows b*T + t batch-major)
        if time_axis == 0:
            return b.take(flat, 0, t * batch, (t + 1) * batch, f"{name}_t{t}_x")
        return b.take(flat, 0, t, n_steps * batch, f"{name}_t{t}_x", step=n_steps)

    tensors, peep = _tensors(cell, L.Lstm)
    desc = _desc(cell, L.Lstm, peep)
    order = range(n_steps - 1, -1, -1) if reverse else range(n_steps)
    hs: list = [None] * n_steps
    h, c = h0, c0
    for k, t in enumerate(order):
        xt = at(t)
        if h is None or c is None:
            rows = (t * batch, (t + 1) * batch, 1) if time_axis == 0 else (t, None, n_steps)
            col = b.slice(flat, [rows[0], 0], [rows[1], 1], [rows[2], 1], f"{name}_x0")  # [B, 1]
            zero = _zeros(b, col, cell.hidden, f"{name}_zero")
            h, c = h or zero, c or zero
        layer = b.lstm(L.Lstm, xt, h, c, tensors, desc, f"{name}_t{t}")
        # (the output state, not the equal output 3: CpuRef 20.08 and 23.08 compute wrong values
        # when output 1 has no consumer, tests/test_lstm_layers.py)
        h, c = layer.out(1), layer.out(2)
        hs[t] = h
    return hs, h, c


def sequence(b: NetBuilder, cell: Cell, x: Port, time_axis: int, h0: Port | None, c0: Port | None,
             reverse: bool, name: str):
    """One UnidirectionalSequenceLstm: (the output sequence in x's layout and time order, last h)."""
    n_steps = x.info.shape[time_axis]
    xt = b.permute(x, (1, 0, 2), f"{name}_time_major") if time_axis == 1 else x  # [T, B, I]
    if reverse:
        xt = b.slice(xt, [None] * 3, [None] * 3, [-1, 1, 1], f"{name}_reversed")
    if h0 is None or c0 is None:
        # one Constant layer: 23.08-format files say weightsLayoutScheme 1, so Arm NN 23.08 reads
        # it as written (and no NaN of the input can reach the state, as with _zeros)
        zero = b.add(L.Constant, f"{name}_zero", [], tensors={"input": ConstTensor(
            np.zeros((xt.info.shape[1], cell.hidden), np.float16 if xt.info.dtype == DataType.Float16
                     else np.float32))})
        h0, c0 = h0 or zero, c0 or zero
    tensors, peep = _tensors(cell, L.UnidirectionalSequenceLstm)
    layer = b.lstm(L.UnidirectionalSequenceLstm, xt, h0, c0, tensors,
                   _desc(cell, L.UnidirectionalSequenceLstm, peep, time_major=True), name)
    y = layer.out(2)                                  # [T, B, H], in the order the layer ran
    last = b.take(y, 0, n_steps - 1, n_steps, f"{name}_last")
    h_last = b.reshape(last, y.info.shape[1:], f"{name}_h")
    if reverse:
        y = b.slice(y, [None] * 3, [None] * 3, [-1, 1, 1], f"{name}_y")
    if time_axis == 1:
        y = b.permute(y, (1, 0, 2), f"{name}_batch_major")
    return y, h_last
