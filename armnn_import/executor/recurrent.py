"""Lstm (the 20.08 format) and UnidirectionalSequenceLstm (23.08), following Arm NN's
CpuRef: RefLstmWorkload (20.08), Lstm.cpp LstmImpl and RefUnidirectionalSequenceLstmWorkload
(23.08), with LstmUtils.cpp's loops: every gate starts from its bias and accumulates
W x, then R h, one product at a time in float32."""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError
from ..ir.types import ActivationFunction as AF
from ..ir.types import LayerType
from .common import const_of as _const, cpp_max as _cpp_max, cpp_min as _cpp_min, layer_fn
from .layers import activation_fn as _activation
from .numeric import F32, decode, encode

# LstmUtils SetActivationParameters: the Android NN activation codes
_ACTS = {1: (AF.ReLu, 0.0, 0.0), 3: (AF.BoundedReLu, 6.0, 0.0), 4: (AF.TanH, 1.0, 1.0), 6: (AF.Sigmoid, 0.0, 0.0)}


def _mac(acc, w, v):
    """MatrixBatchVectorMultiplyAccumulate: acc[b, r] += w[r, c] * v[b, c], c in order."""
    for c in range(w.shape[1]):
        acc = acc + w[:, c][None, :] * v[:, c:c + 1]
    return acc


def _tensor(layer, name):
    return _const(layer, name) if name in layer.tensors else None


def _step(layer, x, h, c):
    """One LstmImpl time step without layer normalization: (scratch blocks, new h, new c)."""
    d, t = layer.desc, (lambda n: _tensor(layer, n))
    if d.layer_norm_enabled or d.projection_enabled:
        raise ExecutionError(f"{layer.name}: layer normalization and projection are not implemented here")
    batch = x.shape[0]
    gates = ("forget", "cell", "output") if d.cifg_enabled else ("input", "forget", "cell", "output")
    bias = {"input": "input_gate_bias", "forget": "forget_gate_bias", "cell": "cell_bias",
            "output": "output_gate_bias"}
    acc = {}
    for g in gates:
        a = np.broadcast_to(t(bias[g])[None, :], (batch, t(bias[g]).shape[0])).astype(F32)
        a = _mac(a, t(f"input_to_{g}_weights"), x)
        acc[g] = _mac(a, t(f"recurrent_to_{g}_weights"), h)
    sig = lambda v: _activation(v, AF.Sigmoid, 0.0, 0.0)  # noqa: E731
    act = _ACTS.get(int(d.activation_func))
    if not d.cifg_enabled:
        if d.peephole_enabled:
            acc["input"] = acc["input"] + t("cell_to_input_weights")[None, :] * c
        acc["input"] = sig(acc["input"])
    if d.peephole_enabled:
        acc["forget"] = acc["forget"] + t("cell_to_forget_weights")[None, :] * c
    acc["forget"] = sig(acc["forget"])
    c_new = acc["forget"] * c
    if act is not None:
        acc["cell"] = _activation(acc["cell"], *act)
    if d.cifg_enabled:
        acc["forget"] = F32(1) - acc["forget"]  # Sub1Vector, in place: the scratch keeps 1 - f
        c_new = c_new + acc["cell"] * acc["forget"]
    else:
        c_new = c_new + acc["cell"] * acc["input"]
    if d.clipping_thres_cell > 0:
        lim = F32(d.clipping_thres_cell)  # ClipVector: max(-lim, min(lim, v))
        c_new = _cpp_max(np.full_like(c_new, -lim), _cpp_min(np.full_like(c_new, lim), c_new))
    if d.peephole_enabled:
        acc["output"] = acc["output"] + t("cell_to_output_weights")[None, :] * c_new
    acc["output"] = sig(acc["output"])
    if act is not None:  # (with none, CpuRef multiplies by the cell input's scratch, not the state)
        acc["cell"] = _activation(c_new, *act)
    acc["output"] = acc["output"] * acc["cell"]
    return [acc[g] for g in gates], acc["output"], c_new


@layer_fn(LayerType.Lstm)
def lstm(layer, ins, infos):
    x, h, c = (decode(a, i) for a, i in zip(ins, infos))
    with np.errstate(all="ignore"):
        blocks, h_new, c_new = _step(layer, x, h, c)
    # the scratch buffer holds each gate's [batch, cells] block one after the other
    # (non-CIFG: input, cell, forget, output; the order RefLstmWorkload indexes them in)
    order = [1, 0, 2] if layer.desc.cifg_enabled else [0, 2, 1, 3]
    scratch = np.stack([blocks[k] for k in order]).reshape(layer.outputs[0].shape)
    return [encode(v, info) for v, info in zip((scratch, h_new, c_new, h_new), layer.outputs)]


@layer_fn(LayerType.UnidirectionalSequenceLstm)
def unidirectional_sequence_lstm(layer, ins, infos):
    x, h, c = (decode(a, i) for a, i in zip(ins, infos))
    if not layer.desc.time_major:
        x = x.transpose(1, 0, 2)
    ys = []
    with np.errstate(all="ignore"):
        for step in range(x.shape[0]):
            _, h, c = _step(layer, x[step], h, c)
            ys.append(h)
    y = np.stack(ys)
    if not layer.desc.time_major:
        y = y.transpose(1, 0, 2)
    # CpuRef 23.08 keeps the final states in buffers of its own and never writes outputs 0 and 1:
    # they are undefined, so NaN here (the converters read only output 2)
    h_out, c_out = (encode(np.full(i.shape, np.nan, F32), i) for i in layer.outputs[:2])
    return [h_out, c_out, encode(np.ascontiguousarray(y), layer.outputs[2])]
