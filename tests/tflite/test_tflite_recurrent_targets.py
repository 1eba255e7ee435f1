"""TFLite UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM as Arm NN's own LSTM
layers: one Lstm per step (--target 20.08, run on Arm NN 20.08 and 23.08) and one
UnidirectionalSequenceLstm per direction (--target 23.08, on 23.08), written by the CLI,
against LiteRT; the numpy executor too. RELU_N1_TO_1 has no Arm NN LSTM activation code and
stays unrolled, as UNIDIRECTIONAL_SEQUENCE_RNN does."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from test_tflite_recurrent import bidi_model, lstm_model, rnn_model  # noqa: E402
from tfl_builder import run_litert  # noqa: E402

from armnn_import import cli  # noqa: E402
from armnn_import.executor import run  # noqa: E402
from armnn_import.ir.types import LayerType as L  # noqa: E402
from armnn_import.serialize import read  # noqa: E402

COMBOS = [("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]


def check(runner, tmp_path, target, data, x, wants=None, layer=True, dirs=1, time_major=False):
    wants = run_litert(data, [x]) if wants is None else wants
    src, out = tmp_path / "m.tflite", tmp_path / "m.armnn"
    src.write_bytes(data)
    assert cli.main([str(src), "-o", str(out), "-q", "--target", target]) == 0
    graph = read(out.read_bytes())
    types = [l.type for l in graph.layers]
    if not layer:
        assert L.Lstm not in types and L.UnidirectionalSequenceLstm not in types
    elif target == "23.08":
        assert types.count(L.UnidirectionalSequenceLstm) == dirs and L.Lstm not in types
    else:
        assert types.count(L.Lstm) == dirs * x.shape[0 if time_major else 1]  # one per step
    got, mine = runner(out.read_bytes(), [x]), run(graph, [x])
    assert len(got) == len(mine) == len(wants)
    for g, m, want in zip(got, mine, wants):
        np.testing.assert_allclose(g.reshape(want.shape), want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(m.reshape(want.shape), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target, release", COMBOS)
@pytest.mark.parametrize("time_major", [False, True])
@pytest.mark.parametrize("act", ["TANH", "RELU", "RELU6", "RELU_N1_TO_1"])
def test_lstm(armnn_runner_for, tmp_path, target, release, time_major, act):
    check(armnn_runner_for(release), tmp_path, target, *lstm_model(time_major, act), layer=act != "RELU_N1_TO_1",
          time_major=time_major)


@pytest.mark.parametrize("target, release", COMBOS)
@pytest.mark.parametrize("time_major", [False, True])
def test_lstm_cell_clip(armnn_runner_for, tmp_path, target, release, time_major):
    check(armnn_runner_for(release), tmp_path, target, *lstm_model(time_major, cell_clip=0.4), time_major=time_major)


@pytest.mark.parametrize("target, release", COMBOS)
@pytest.mark.parametrize("time_major", [False, True])
@pytest.mark.parametrize("merge", [True, False])
def test_bidirectional_lstm(armnn_runner_for, tmp_path, target, release, time_major, merge):
    data, x = bidi_model(time_major, merge)
    wants = None
    if merge and not time_major:  # (LiteRT's merged batch-major kernel is unstable: test_tflite_recurrent.py)
        fw, bw = run_litert(bidi_model(time_major, False)[0], [x])
        wants = [np.concatenate([fw, bw], axis=-1)]
    check(armnn_runner_for(release), tmp_path, target, data, x, wants, dirs=2, time_major=time_major)


@pytest.mark.parametrize("target", ["20.08", "23.08"])
def test_rnn_stays_unrolled(armnn_runner_for, tmp_path, target):
    check(armnn_runner_for(target), tmp_path, target, *rnn_model(False, "TANH"), layer=False)
