"""ONNX LSTM, GRU and RNN unrolled onto the early layer set: single-node models
built with onnx.helper, converted to a file, run on the real Arm NN 20.08 runtime
and compared with onnxruntime (layout 0) or onnx.reference (layout 1, which
onnxruntime refuses); the numpy executor must agree too. Then the refusals."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh
from onnx.reference import ReferenceEvaluator

import armnn_import
from armnn_import.errors import UnsupportedModelError
from armnn_import.executor import run
from armnn_import.ir.types import LayerType

ort = pytest.importorskip("onnxruntime")
RTOL, ATOL = 1e-5, 1e-5
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
T, B, I, H = 5, 2, 3, 4
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def recurrent_model(op, *, direction="forward", layout=0, bias=True, h0=None, c0=None, peephole=False,
                    lens=None, outputs=None, opset=17, seed=0, steps=T, **attrs):
    """One `op` node; h0 / c0: None (absent), "input" (a graph input) or "const" (an initializer)."""
    rng = np.random.default_rng(seed)
    d, g = 2 if direction == "bidirectional" else 1, GATES[op]
    xshape, sshape = ((steps, B, I), (d, B, H)) if layout == 0 else ((B, steps, I), (B, d, H))
    rand = lambda *s: (rng.standard_normal(s) * 0.6).astype(np.float32)  # noqa: E731
    inits = {"W": rand(d, g * H, I), "R": rand(d, g * H, H)}
    feeds = {"X": rand(*xshape) * 2}
    names = ["X", "W", "R", "B" if bias else "", "lens" if lens is not None else ""]
    if bias:
        inits["B"] = rand(d, 2 * g * H)
    if lens is not None:
        inits["lens"] = np.asarray(lens, np.int32)
    for name, kind in (("h0", h0), ("c0", c0)):
        if name == "c0" and op != "LSTM":
            continue
        names.append(name if kind else "")
        if kind == "input":
            feeds[name] = rand(*sshape)
        elif kind == "const":
            inits[name] = rand(*sshape)
    if peephole:
        names.append("P")
        inits["P"] = rand(d, 3 * H)
    while names[-1] == "":
        names.pop()
    outs = outputs or (["Y", "Y_h", "Y_c"] if op == "LSTM" else ["Y", "Y_h"])
    node = h.make_node(op, names, outs, hidden_size=H, direction=direction,
                       **({"layout": layout} if layout else {}), **attrs)
    graph = h.make_graph([node], "rnn", [h.make_tensor_value_info(k, TP.FLOAT, v.shape) for k, v in feeds.items()],
                         [h.make_tensor_value_info(o, TP.FLOAT, None) for o in outs if o],
                         [nh.from_array(v, k) for k, v in inits.items()])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)]), feeds


def reference(model, feeds):
    if any(a.name == "layout" and a.i == 1 for a in model.graph.node[0].attribute):
        return ReferenceEvaluator(model).run(None, feeds)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def check(armnn_runner, tmp_path, model, feeds):
    """Convert to a file (as the CLI writes it), run on Arm NN and the executor, compare."""
    want = reference(model, feeds)
    result = armnn_import.convert(model)
    path = tmp_path / "model.armnn"
    result.save(path)
    net = result.network
    assert not any(layer.type == LayerType.Constant for layer in net.layers), net.summary()
    arrays = [feeds[layer.name] for layer in net.input_layers]
    got = armnn_runner(str(path), arrays)
    mine = run(net, arrays)
    assert len(got) == len(want) == len(mine)
    for g, m, w in zip(got, mine, want):
        assert g.size == w.size, (g.shape, w.shape)
        np.testing.assert_allclose(g.reshape(w.shape), w, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(m.reshape(w.shape), w, rtol=RTOL, atol=ATOL)
    return result


VARIANTS = [
    {}, {"direction": "reverse"}, {"direction": "bidirectional"},
    {"h0": "input"}, {"h0": "const", "direction": "bidirectional"}, {"bias": False},
    {"layout": 1}, {"layout": 1, "direction": "bidirectional", "h0": "input"},
    {"lens": [T] * B}, {"outputs": ["", "Y_h"]}, {"outputs": ["Y"]}, {"opset": 13, "direction": "reverse"},
    {"steps": 1, "h0": "input"},
    {"activations": ["Relu"] * 3}, {"activations": ["Tanh", "Sigmoid", "Relu"]},
]


def _for(op, v):
    v = dict(v)
    if "activations" in v:
        v["activations"] = v["activations"][:{"LSTM": 3, "GRU": 2, "RNN": 1}[op]]
    if "outputs" in v and op == "LSTM" and v["outputs"] == ["", "Y_h"]:
        v["outputs"] = ["", "Y_h", "Y_c"]
    return v


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(f"{k}={v[k]}" for k in v) or "default")
@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_recurrent_matches_reference(armnn_runner, tmp_path, op, variant):
    check(armnn_runner, tmp_path, *recurrent_model(op, **_for(op, variant)))


@pytest.mark.parametrize("variant", [{"h0": "input", "c0": "input"}, {"c0": "const", "direction": "reverse"},
                                     {"peephole": True}, {"peephole": True, "h0": "input", "c0": "input",
                                                          "direction": "bidirectional"},
                                     {"peephole": True, "layout": 1, "c0": "input"}],
                         ids=lambda v: "-".join(f"{k}={v[k]}" for k in v))
def test_lstm_states_and_peepholes(armnn_runner, tmp_path, variant):
    check(armnn_runner, tmp_path, *recurrent_model("LSTM", **variant))


@pytest.mark.parametrize("variant", [{}, {"h0": "input"}, {"direction": "bidirectional", "h0": "const"},
                                     {"layout": 1, "h0": "input"}, {"bias": False}],
                         ids=lambda v: "-".join(f"{k}={v[k]}" for k in v) or "default")
def test_gru_linear_before_reset(armnn_runner, tmp_path, variant):
    check(armnn_runner, tmp_path, *recurrent_model("GRU", linear_before_reset=1, **variant))


def test_layers_are_those_of_the_early_set():
    result = armnn_import.convert(recurrent_model("LSTM", direction="bidirectional", h0="input")[0])
    types = {layer.type.name for layer in result.network.layers}
    assert types <= {"Input", "Output", "FullyConnected", "StridedSlice", "Addition", "Multiplication",
                     "Activation", "Reshape", "Merger"}, types
    # one input projection per direction, one recurrent FullyConnected per step and direction
    assert sum(layer.type == LayerType.FullyConnected for layer in result.network.layers) == 2 * (1 + T)


REFUSED = [
    ("LSTM", {"clip": 3.0}, "clip"),
    ("GRU", {"clip": 1.0}, "clip"),
    ("LSTM", {"input_forget": 1}, "input_forget"),
    ("RNN", {"activations": ["HardSigmoid"]}, "HardSigmoid"),
    ("GRU", {"activations": ["Sigmoid", "Softsign"]}, "Softsign"),
    ("LSTM", {"activations": ["Sigmoid", "Tanh"]}, "3 per direction"),
    ("RNN", {"lens": [T, T - 1]}, "sequence_lens"),
    ("LSTM", {"lens": [T - 2, T - 2]}, "differ from the sequence length"),
]


@pytest.mark.parametrize("op,kw,text", REFUSED, ids=[f"{o}-{t}" for o, _, t in REFUSED])
def test_refusals_name_the_reason(op, kw, text):
    with pytest.raises(UnsupportedModelError) as info:
        armnn_import.convert(recurrent_model(op, **kw)[0])
    (problem,) = info.value.problems
    assert problem.op == op and text in problem.reason, problem


def test_runtime_sequence_lens_is_refused():
    model, _ = recurrent_model("GRU")
    node = model.graph.node[0]
    node.input[:] = ["X", "W", "R", "", "lens"]
    model.graph.input.append(h.make_tensor_value_info("lens", TP.INT32, [B]))
    with pytest.raises(UnsupportedModelError) as info:
        armnn_import.convert(model)
    assert "sequence_lens" in info.value.problems[0].reason and "run time" in info.value.problems[0].reason


def test_runtime_weights_are_refused():
    model, _ = recurrent_model("RNN")
    w = model.graph.initializer[0]
    model.graph.input.append(h.make_tensor_value_info(w.name, TP.FLOAT, list(w.dims)))
    del model.graph.initializer[0]
    with pytest.raises(UnsupportedModelError) as info:
        armnn_import.convert(model)
    assert "weights" in info.value.problems[0].reason


def test_cli_refuses_a_dynamic_sequence_length(tmp_path):
    """A symbolic time axis (layout 0: dimension 0 of X) would otherwise be taken for a batch of 1."""
    model, _ = recurrent_model("LSTM")
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "time"
    path, out = tmp_path / "dyn.onnx", tmp_path / "dyn.armnn"
    onnx.save(model, str(path))
    proc = subprocess.run([sys.executable, "-m", "armnn_import", str(path), "-o", str(out)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "sequence length" in proc.stderr and "dynamic" in proc.stderr and "--input-shape" in proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()
    pinned = subprocess.run([sys.executable, "-m", "armnn_import", str(path), "-o", str(out),
                             "--input-shape", f"X={T},{B},{I}"], capture_output=True, text=True, cwd=REPO,
                            timeout=120)
    assert pinned.returncode == 0, pinned.stderr
    assert out.exists()
