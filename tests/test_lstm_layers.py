"""LSTM as Arm NN's own layers: Lstm (one step, the 20.08 format) and UnidirectionalSequenceLstm
(a whole sequence, 23.08), on the real runtimes.

Every recurrent reference model, as the CLI writes it for --target 20.08 (on Arm NN 20.08 and
23.08) and 23.08 (on 23.08), matches onnxruntime / LiteRT, and so does the numpy executor; LSTMs
take the new layers and fewer layers than the unrolled form, GRU and RNN stay unrolled. Generated
ONNX LSTMs cover the directions, layouts, initial states, peepholes and activations."""
from __future__ import annotations

import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from armnn_import import cli
from armnn_import.executor import run
from armnn_import.ir.graph import graph_differences
from armnn_import.ir.types import LayerType as L
from armnn_import.serialize import read, write
from armnn_import.verify_cmd import verify

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # pytest runs with --import-mode=importlib
from layer_cases import F32, Case  # noqa: E402
from reference_models import converted, params  # noqa: E402

COMBOS = [("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]
RECURRENT = [p for p in params() if any(k in p.values[0] for k in ("/lstm_", "/bilstm_", "/gru_", "/rnn_"))]


def _convert_cli(path, out, *args) -> None:
    code = cli.main([str(path), "-o", str(out), "-q", *map(str, args)])
    assert code == 0, f"armnn-import {path} {' '.join(args)} exited with {code}"


def _counts(graph):
    out = {}
    for layer in graph.layers:
        out[layer.type] = out.get(layer.type, 0) + 1
    return out


def test_recurrent_models_found():
    assert len(RECURRENT) == 12  # 8 ONNX (3 LSTM, 3 GRU, 2 RNN), 3 TFLite LSTMs (one bidirectional), 1 RNN


@pytest.mark.parametrize("model_id, path, npz", RECURRENT)
@pytest.mark.parametrize("target, release", COMBOS)
def test_recurrent_reference_model(target, release, model_id, path, npz, armnn_runner_for, tmp_path):
    runner = armnn_runner_for(release)
    out = tmp_path / "model.armnn"
    _convert_cli(path, out, "--target", target)
    graph = read(out.read_bytes())
    assert graph.target.release == target
    counts, seed = _counts(graph), len(converted(path).network.layers)
    if "lstm" in model_id:
        assert counts.get(L.Lstm, 0) + counts.get(L.UnidirectionalSequenceLstm, 0) > 0
        assert len(graph.layers) * 2 < seed  # well under half the unrolled form
        if target == "23.08" and "tflite" in model_id:  # no final cell state wanted: whole sequences
            want = 2 if "/bilstm_" in model_id else 1  # (one per direction)
            assert counts.get(L.UnidirectionalSequenceLstm) == want and L.Lstm not in counts
    else:
        assert L.Lstm not in counts and len(graph.layers) <= seed  # GRU and RNN stay unrolled
    check = verify(path, str(out), armnn_runtime=runner.path)
    assert check.ok, check.format()
    check = verify(path, str(out))  # the numpy executor
    assert check.ok, check.format()


@pytest.mark.parametrize("target", ["20.08", "23.08"])
def test_round_trip(target):
    cases = [Case(L.Lstm, F32, variant=v, target="20.08") for v in (None, "peephole", "clip")]
    if target == "23.08":
        cases += [Case(L.UnidirectionalSequenceLstm, F32, variant=v, target="23.08")
                  for v in (None, "peephole", "batch_major")]
    for case in cases:
        graph, _ = case.build()
        data = write(graph)
        back = read(data)
        assert graph_differences(graph, back) == [], case.id
        assert write(back) == data


def test_lstm_output_state_needs_a_consumer(armnn_release_runner):
    """A fact the lowering works around (lowering/lstm.py passes output 1, not output 3, to the next
    step): when the output state (output 1) of an Lstm layer has no consumer, CpuRef 20.08 and 23.08
    compute wrong values on the other outputs."""
    graph, inputs = Case(L.Lstm, F32, target="20.08").build()
    lstm = next(l for l in graph.layers if l.type == L.Lstm)
    for out in [l for l in graph.output_layers if l.inputs[0].slot in (0, 1)]:
        graph.remove([out])
    want = run(graph, inputs)
    got = armnn_release_runner(write(graph), inputs)
    assert [p.slot for p in (l.inputs[0] for l in graph.output_layers)] == [2, 3] and lstm in graph
    assert not np.allclose(got[1], want[1], atol=1e-3)


# -- generated ONNX LSTMs -------------------------------------------------------------------

T, B, I, H = 4, 2, 3, 5


def _onnx_lstm(path, direction="forward", layout=0, states=False, peephole=False, y_c=False,
               activations=None, seed=0):
    rng = np.random.default_rng(seed)
    d = 2 if direction == "bidirectional" else 1
    x_shape = [T, B, I] if layout == 0 else [B, T, I]
    s_shape = [d, B, H] if layout == 0 else [B, d, H]
    inits = [helper.make_tensor(n, TensorProto.FLOAT, v.shape, v.ravel()) for n, v in (
        ("W", rng.standard_normal((d, 4 * H, I)).astype(np.float32) * 0.5),
        ("R", rng.standard_normal((d, 4 * H, H)).astype(np.float32) * 0.5),
        ("B", rng.standard_normal((d, 8 * H)).astype(np.float32) * 0.5),
        ("P", rng.standard_normal((d, 3 * H)).astype(np.float32) * 0.5))]
    if not peephole:
        inits = inits[:3]
    ins = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)]
    if states:
        ins += [helper.make_tensor_value_info(n, TensorProto.FLOAT, s_shape) for n in ("h0", "c0")]
    node_in = ["X", "W", "R", "B", "", "h0" if states else "", "c0" if states else ""] + (["P"] if peephole else [])
    node_out = ["Y", "Y_h"] + (["Y_c"] if y_c else [])
    attrs = {"hidden_size": H, "direction": direction, "layout": layout}
    if activations:
        attrs["activations"] = activations
    node = helper.make_node("LSTM", node_in, node_out, **attrs)
    y_shape = [T, d, B, H] if layout == 0 else [B, T, d, H]
    outs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, y_shape)] + \
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s_shape) for n in node_out[1:]]
    model = helper.make_model(helper.make_graph([node], "lstm", ins, outs, inits),
                              opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


ONNX_CASES = {
    "forward": {}, "reverse": {"direction": "reverse"}, "bidirectional": {"direction": "bidirectional"},
    "batch_first_states": {"layout": 1, "states": True}, "peephole_states": {"peephole": True, "states": True},
    "bidirectional_peephole_batch_first": {"direction": "bidirectional", "peephole": True, "layout": 1},
    "relu": {"activations": ["Sigmoid", "Relu", "Relu"]},
    "y_c": {"y_c": True, "states": True, "direction": "bidirectional"},
    # g and h differ: Arm NN's cell applies one function to both, so it stays unrolled
    "mixed_activations": {"activations": ["Sigmoid", "Tanh", "Relu"]},
}


@pytest.mark.parametrize("name", ONNX_CASES)
@pytest.mark.parametrize("target, release", COMBOS)
def test_generated_onnx_lstm(target, release, name, armnn_runner_for, tmp_path):
    runner = armnn_runner_for(release)
    src, out = tmp_path / "lstm.onnx", tmp_path / "lstm.armnn"
    kw = ONNX_CASES[name]
    _onnx_lstm(src, **kw)
    _convert_cli(src, out, "--target", target)
    counts = _counts(read(out.read_bytes()))
    dirs = 2 if kw.get("direction") == "bidirectional" else 1
    if name == "mixed_activations":
        assert L.Lstm not in counts and L.UnidirectionalSequenceLstm not in counts
    elif target == "23.08" and not kw.get("y_c"):
        assert counts.get(L.UnidirectionalSequenceLstm) == dirs
        assert L.Lstm not in counts
    else:
        assert counts.get(L.Lstm) == T * dirs
    if kw.get("layout"):  # onnxruntime has no batch-major LSTM: onnx.reference is the reference
        _compare_with_onnx_reference(src, out, runner)
        return
    check = verify(str(src), str(out), armnn_runtime=runner.path)
    assert check.ok, check.format()
    check = verify(str(src), str(out))
    assert check.ok, check.format()


def _compare_with_onnx_reference(src, out, runner):
    from onnx.reference import ReferenceEvaluator
    graph = read(out.read_bytes())
    rng = np.random.default_rng(7)
    feeds = {l.name: rng.standard_normal(l.outputs[0].shape).astype(np.float32) for l in graph.input_layers}
    want = ReferenceEvaluator(str(src)).run(None, feeds)
    inputs = [feeds[l.name] for l in graph.input_layers]
    by_name = {o.name: i for i, o in enumerate(onnx.load(str(src)).graph.output)}
    for got in (runner(out.read_bytes(), inputs), run(graph, inputs)):
        for layer, g in zip(graph.output_layers, got):
            np.testing.assert_allclose(g, want[by_name[layer.name]], rtol=1e-4, atol=1e-5, err_msg=layer.name)


def test_19_02_keeps_the_unrolled_form():
    from armnn_import import convert
    src = [p.values[1] for p in RECURRENT if "lstm_keras." in p.values[0]][0]
    counts = _counts(convert(src).network)
    assert L.Lstm not in counts and counts[L.FullyConnected] > 1


@pytest.mark.parametrize("name", ["lstm_keras", "lstm_keras_time_major"])
def test_23_08_sequence_runs_batch_major_without_permutes(name, armnn_runner_for, tmp_path):
    """passes/lstm_major.py: on 23.08 a Keras LSTM is Input, Constant (the zero states),
    UnidirectionalSequenceLstm, Output (Arm NN's own parser writes 5 layers), and its output
    matches LiteRT's stored output on Arm NN 23.08, run after run (the workload permutes its
    input in place: the network re-fills it on every inference)."""
    from reference_models import ROOT
    path = ROOT / "tflite" / "models" / f"{name}.float32.tflite"
    out = tmp_path / "m.armnn"
    _convert_cli(path, out, "--target", "23.08")
    graph = read(out.read_bytes())
    assert sorted(_counts(graph)) == sorted([L.Input, L.Constant, L.UnidirectionalSequenceLstm, L.Output])
    lstm = next(l for l in graph.layers if l.type == L.UnidirectionalSequenceLstm)
    data = np.load(ROOT / "tflite" / "models" / f"{name}.float32.npz")
    x = data[sorted(k for k in data.files if k.startswith("input"))[0]]
    want = data[sorted(k for k in data.files if k.startswith("output"))[0]]
    assert lstm.desc.time_major == (name == "lstm_keras_time_major")
    runner = armnn_runner_for("23.08")
    for _ in range(2):
        got, = runner(out.read_bytes(), [x])
        np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-4, atol=1e-5)
