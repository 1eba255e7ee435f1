"""Recurrent layers (LSTM, GRU, simple RNN) unrolled over a static sequence
length onto the early layer set, shared by the ONNX and TFLite frontends.

Per direction: one FullyConnected projects every time step's input at once
(x W^T + biases, [T*B, G*H]); per step a StridedSlice picks the step's rows,
a FullyConnected applies the recurrent weights (h R^T), an Addition joins the
two, StridedSlices split the gates, Activations and Multiplication/Addition
compute the new state. Exact up to the order of the float summation (the
biases are added once, in the projection). A zero initial state skips the
recurrent terms of the first step (0 * w is 0 for finite weights).

Gates are in this module's order (the frontends reorder their weights):
LSTM (i, f, o, c) -- the three sigmoid gates first, so one Activation covers
them; GRU (z, r, h); RNN (h).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.graph import Port
from ..ir.types import ActivationFunction as AF
from ..ir.types import ConstTensor
from ..ir.types import LayerType as L
from .builder import NetBuilder

# (function, a, b) of an Arm NN Activation
SIGMOID, TANH, RELU = (AF.Sigmoid, 0.0, 0.0), (AF.TanH, 1.0, 1.0), (AF.ReLu, 0.0, 0.0)


@dataclass(frozen=True)
class Cell:
    """One direction of a recurrent layer.

    w [G*H, I], r [G*H, H]: input and recurrent weights ([out, in], gates in
    the order above); wb, rb [G*H] or None: input and recurrent biases;
    acts: LSTM (f, g, h), GRU (f, g), RNN (f,), each (function, a, b) or None (identity);
    peephole: LSTM (p_i, p_f, p_o), each [H], or None; cell_clip: LSTM, TFLite's
    clamp of the new cell state to [-cell_clip, cell_clip] (0: none)."""
    kind: str
    w: np.ndarray
    r: np.ndarray
    wb: np.ndarray | None
    rb: np.ndarray | None
    acts: tuple
    peephole: tuple | None = None
    linear_before_reset: bool = False
    cell_clip: float = 0.0

    @property
    def hidden(self) -> int:
        return self.r.shape[1]

    def biases(self):
        """(bias of the input projection, bias of the recurrent FullyConnected or None).
        Only GRU with linear_before_reset keeps a recurrent bias inside a product (r * (h R_h + Rb_h))."""
        g = self.r.shape[0]
        wb = np.zeros(g, np.float32) if self.wb is None else np.asarray(self.wb, np.float32)
        rb = np.zeros(g, np.float32) if self.rb is None else np.asarray(self.rb, np.float32)
        if self.kind == "gru" and self.linear_before_reset:
            inner = rb.copy()
            inner[:2 * self.hidden] = 0
            outer = rb - inner
            return wb + outer, (inner if inner.any() else None)
        return wb + rb, None


def unroll(b: NetBuilder, cell: Cell, x: Port, time_axis: int, h0: Port | None, c0: Port | None,
           reverse: bool, name: str):
    """Run `cell` over x ([T, B, I] for time_axis 0, [B, T, I] for 1), from the
    states h0, c0 ([B, H], None = zeros). Returns (h of every step in time order,
    last h, last c (LSTM) or None)."""
    steps, batch, size = (x.info.shape if time_axis == 0 else
                          (x.info.shape[1], x.info.shape[0], x.info.shape[2]))
    n = steps * batch
    bias, rbias = cell.biases()
    wts = _Weights(cell, rbias)
    flat = b.reshape(x, (n, size), f"{name}_x2d")
    proj = b.fully_connected(flat, np.ascontiguousarray(cell.w, np.float32), bias, f"{name}_xw")
    b.report.decomposition(cell.kind.upper(), "unrolled: one FullyConnected for the inputs, per step a "
                           "FullyConnected for the state, Activations, Multiplication and Addition")
    step_fn = {"lstm": _lstm_step, "gru": _gru_step, "rnn": _rnn_step}[cell.kind]
    hs: list[Port | None] = [None] * steps
    h, c = h0, c0
    for k in range(steps):
        t = steps - 1 - k if reverse else k
        if time_axis == 0:
            px = b.take(proj, 0, t * batch, (t + 1) * batch, f"{name}_t{t}_x")
        else:  # rows b * T + t
            px = b.take(proj, 0, t, n, f"{name}_t{t}_x", step=steps)
        h, c = step_fn(b, cell, px, h, c, wts, f"{name}_t{t}")
        hs[t] = h
    return hs, h, c


def _act(b, x, act, name):
    """act: (function, a, b), or None for the identity."""
    return x if act is None else b.activation(x, act[0], name, act[1], act[2])


class _Weights:
    """The recurrent weights as ConstTensors made once: every step's FullyConnected
    holds the same tensor, which the writer stores once."""

    def __init__(self, cell: Cell, rbias):
        hid, f = cell.hidden, (lambda a: ConstTensor(np.ascontiguousarray(a, np.float32)))
        self.r = f(cell.r)
        self.rbias = None if rbias is None else f(rbias)
        self.rbias_h = None if rbias is None else rbias[2 * hid:].reshape(1, -1)  # GRU: Rb_h
        if cell.kind == "gru":
            self.r_zr, self.r_h = f(cell.r[:2 * hid]), f(cell.r[2 * hid:])


def _recurrent(b, cell, px, h, wts, name):
    """px + h R^T (px alone for a zero state)."""
    if h is None:
        return px
    hr = b.fully_connected(h, wts.r, wts.rbias, f"{name}_hr")
    return b.binary(L.Addition, px, hr, f"{name}_gates")


def _cols(b, x, start, stop, name):
    return b.take(x, 1, start, stop, name)


def _lstm_step(b, cell, px, h, c, wts, name):
    hid, (f_act, g_act, h_act) = cell.hidden, cell.acts
    gates = _recurrent(b, cell, px, h, wts, name)
    if cell.peephole is None:
        # i, f and o in one Activation
        ifo = _act(b, _cols(b, gates, 0, 3 * hid, f"{name}_ifo_in"), f_act, f"{name}_ifo")
        i, f, o = (_cols(b, ifo, k * hid, (k + 1) * hid, f"{name}_{g}") for k, g in enumerate("ifo"))
    else:
        pi, pf, po = cell.peephole
        i = _act(b, _peep(b, _cols(b, gates, 0, hid, f"{name}_i_in"), c, pi, f"{name}_pi"), f_act, f"{name}_i")
        f = _act(b, _peep(b, _cols(b, gates, hid, 2 * hid, f"{name}_f_in"), c, pf, f"{name}_pf"), f_act,
                 f"{name}_f")
    g = _act(b, _cols(b, gates, 3 * hid, 4 * hid, f"{name}_c_in"), g_act, f"{name}_g")
    ig = b.binary(L.Multiplication, i, g, f"{name}_ig")
    c_new = ig if c is None else b.binary(L.Addition, b.binary(L.Multiplication, f, c, f"{name}_fc"), ig,
                                          f"{name}_c")
    if cell.cell_clip > 0:
        c_new = b.clamp(c_new, -cell.cell_clip, cell.cell_clip, f"{name}_c_clip")
    if cell.peephole is not None:
        o = _act(b, _peep(b, _cols(b, gates, 2 * hid, 3 * hid, f"{name}_o_in"), c_new, po, f"{name}_po"),
                 f_act, f"{name}_o")
    h_new = b.binary(L.Multiplication, o, _act(b, c_new, h_act, f"{name}_hc"), f"{name}_h")
    return h_new, c_new


def _peep(b, gate, c, p, name):
    """gate + p * c for a constant p [H] (nothing for a zero state or p)."""
    p = np.asarray(p, np.float32)
    if c is None or not p.any():
        return gate
    pc = b.binary_const(L.Multiplication, c, p.reshape(1, -1), f"{name}_mul", channel_axis=1)
    return b.binary(L.Addition, gate, pc, name)


def _gru_step(b, cell, px, h, c, wts, name):
    hid, (f_act, g_act) = cell.hidden, cell.acts
    pzr, ph = _cols(b, px, 0, 2 * hid, f"{name}_zr_x"), _cols(b, px, 2 * hid, 3 * hid, f"{name}_h_x")
    if h is None:
        zr = pzr
        if wts.rbias_h is not None:  # r * (0 R_h + Rb_h)
            r0 = _act(b, _cols(b, zr, hid, 2 * hid, f"{name}_r_in"), f_act, f"{name}_r")
            ph = b.binary(L.Addition, ph, b.binary_const(L.Multiplication, r0, wts.rbias_h,
                                                         f"{name}_rh", channel_axis=1), f"{name}_n_in")
    elif cell.linear_before_reset:
        hr = b.fully_connected(h, wts.r, wts.rbias, f"{name}_hr")
        zr = b.binary(L.Addition, pzr, _cols(b, hr, 0, 2 * hid, f"{name}_zr_h"), f"{name}_zr_in")
        r = _act(b, _cols(b, zr, hid, 2 * hid, f"{name}_r_in"), f_act, f"{name}_r")
        rh = b.binary(L.Multiplication, r, _cols(b, hr, 2 * hid, 3 * hid, f"{name}_h_h"), f"{name}_rh")
        ph = b.binary(L.Addition, ph, rh, f"{name}_n_in")
    else:
        zr = b.binary(L.Addition, pzr, b.fully_connected(h, wts.r_zr, None, f"{name}_zr_h"), f"{name}_zr_in")
        r = _act(b, _cols(b, zr, hid, 2 * hid, f"{name}_r_in"), f_act, f"{name}_r")
        rh = b.fully_connected(b.binary(L.Multiplication, r, h, f"{name}_rh"),
                               wts.r_h, None, f"{name}_rhr")
        ph = b.binary(L.Addition, ph, rh, f"{name}_n_in")
    z = _act(b, _cols(b, zr, 0, hid, f"{name}_z_in"), f_act, f"{name}_z")
    n = _act(b, ph, g_act, f"{name}_n")
    # h = (1 - z) * n + z * h, as ONNX writes it
    out = b.binary(L.Multiplication, b.linear(z, -1.0, 1.0, f"{name}_1mz"), n, f"{name}_zn")
    if h is not None:
        out = b.binary(L.Addition, out, b.binary(L.Multiplication, z, h, f"{name}_zh"), f"{name}_h")
    return out, None


def _rnn_step(b, cell, px, h, c, wts, name):
    return _act(b, _recurrent(b, cell, px, h, wts, name), cell.acts[0], f"{name}_h"), None


def stack(b: NetBuilder, parts: list[Port], axis: int, name: str) -> Port:
    """parts (all of one shape) stacked along a new axis `axis` (Reshape, Merger)."""
    shape = parts[0].info.shape
    one = shape[:axis] + (1,) + shape[axis:]
    parts = [b.reshape(p, one, f"{name}_{k}") for k, p in enumerate(parts)]
    return b.concat(parts, axis, name)
