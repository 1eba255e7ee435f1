"""TFLite UNIDIRECTIONAL_SEQUENCE_LSTM and UNIDIRECTIONAL_SEQUENCE_RNN unrolled onto
the early layer set: single-op models built with tfl_builder, converted to a file
by armnn_import.convert, run on the real Arm NN 20.08 runtime and the numpy
executor, compared with LiteRT's reference kernels (a fresh interpreter, so its
variable state starts at zero). Then the refusals."""
from __future__ import annotations

import os
import sys
import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from tfl_builder import ModelBuilder, run_litert  # noqa: E402

import armnn_import  # noqa: E402
from armnn_import.errors import UnsupportedModelError  # noqa: E402
from armnn_import.executor import run  # noqa: E402

T, B, I, H = 5, 2, 3, 4
ACT = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3, "TANH": 4}


def _rng(*key):
    return np.random.default_rng(zlib.crc32("/".join(map(str, key)).encode()))


def lstm_model(time_major=False, act="TANH", cell_clip=0.0, drop=(), extra=(), weight_dtype=np.float32,
               state_data=False, infer=True):
    """drop: LSTM input indices left out (-1); extra: optional inputs given (peephole 9-11,
    projection 16, layer norm 20-23)."""
    r = _rng("lstm", time_major, act, cell_clip, drop, extra)
    mb = ModelBuilder()
    x = mb.input("x", (T, B, I) if time_major else (B, T, I))
    w = lambda *s, k=0.6: (r.standard_normal(s) * k).astype(np.float32)  # noqa: E731
    ins = [x]
    for i in range(1, 24):
        if i in drop or (i in (9, 10, 11, 16, 17, 20, 21, 22, 23) and i not in extra):
            ins.append(-1)
        elif i in (18, 19):
            data = w(B, H) if state_data else None
            ins.append(mb.tensor(f"state{i}", (B, H), data=data, variable=True))
        elif i <= 4:
            ins.append(mb.const(f"w{i}", w(H, I).astype(weight_dtype)))
        elif i <= 8 or i == 16:
            ins.append(mb.const(f"w{i}", w(H, H).astype(weight_dtype)))
        else:
            ins.append(mb.const(f"b{i}", w(H)))
    y = mb.op("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, "UnidirectionalSequenceLSTMOptions",
              fused_activation_function=act, cell_clip=cell_clip, proj_clip=0.0, time_major=time_major)
    mb.output(y)
    return mb.build(infer), r.standard_normal((T, B, I) if time_major else (B, T, I)).astype(np.float32) * 1.5


def bidi_model(time_major=False, merge=True, peephole_bw=False, infer=True):
    r = _rng("bidi", time_major)  # (the same weights merged or not: see the bidirectional test)
    mb = ModelBuilder()
    x = mb.input("x", (T, B, I) if time_major else (B, T, I))
    w = lambda *s: mb.const(f"w{len(mb.tensors)}", (r.standard_normal(s) * 0.6).astype(np.float32))  # noqa: E731
    ins = [x]
    for base in (0, 17):
        ins += [w(H, I) for _ in range(4)] + [w(H, H) for _ in range(4)]
        ins += [w(H) for _ in range(3)] if peephole_bw and base else [-1] * 3
        ins += [w(H) for _ in range(4)] + [-1, -1]
    ins += [mb.tensor(f"state{k}", (B, H), variable=True) for k in range(4)] + [-1] * 9
    y = mb.op("BIDIRECTIONAL_SEQUENCE_LSTM", ins, "BidirectionalSequenceLSTMOptions", outputs=1 if merge else 2,
              fused_activation_function="TANH", cell_clip=0.0, proj_clip=0.0, merge_outputs=merge,
              time_major=time_major)
    for t in (y if isinstance(y, list) else [y]):
        mb.output(t)
    return mb.build(infer), r.standard_normal((T, B, I) if time_major else (B, T, I)).astype(np.float32) * 1.5


def rnn_model(time_major=False, act="TANH"):
    r = _rng("rnn", time_major, act)
    mb = ModelBuilder()
    x = mb.input("x", (T, B, I) if time_major else (B, T, I))
    ins = [x, mb.const("w", (r.standard_normal((H, I)) * 0.6).astype(np.float32)),
           mb.const("r", (r.standard_normal((H, H)) * 0.6).astype(np.float32)),
           mb.const("b", (r.standard_normal(H) * 0.6).astype(np.float32)),
           mb.tensor("h", (B, H), variable=True)]
    y = mb.op("UNIDIRECTIONAL_SEQUENCE_RNN", ins, "SequenceRNNOptions", fused_activation_function=act,
              time_major=time_major)
    mb.output(y)
    return mb.build(), r.standard_normal((T, B, I) if time_major else (B, T, I)).astype(np.float32) * 1.5


def check(armnn_runner, tmp_path, data, x, wants=None):
    wants = run_litert(data, [x]) if wants is None else wants
    result = armnn_import.convert(data)
    assert any("state is a variable" in w for w in result.report.warnings)
    path = tmp_path / "model.armnn"
    result.save(path)
    got = armnn_runner(str(path), [x])
    mine = run(result.network, [x])
    assert len(got) == len(mine) == len(wants)
    for g, m, want in zip(got, mine, wants):
        np.testing.assert_allclose(g.reshape(want.shape), want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(m.reshape(want.shape), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("time_major", [False, True])
@pytest.mark.parametrize("act", ["TANH", "RELU", "RELU6", "RELU_N1_TO_1"])
def test_lstm_matches_litert(armnn_runner, tmp_path, time_major, act):
    check(armnn_runner, tmp_path, *lstm_model(time_major, act))


@pytest.mark.parametrize("time_major", [False, True])
def test_lstm_cell_clip(armnn_runner, tmp_path, time_major):
    check(armnn_runner, tmp_path, *lstm_model(time_major, cell_clip=0.4))


@pytest.mark.parametrize("time_major", [False, True])
@pytest.mark.parametrize("act", ["TANH", "RELU", "NONE"])
def test_rnn_matches_litert(armnn_runner, tmp_path, time_major, act):
    check(armnn_runner, tmp_path, *rnn_model(time_major, act))


@pytest.mark.parametrize("time_major", [False, True])
@pytest.mark.parametrize("merge", [True, False])
def test_bidirectional_lstm_matches_litert(armnn_runner, tmp_path, time_major, merge):
    data, x = bidi_model(time_major, merge)
    wants = None
    if merge and not time_major:
        # LiteRT's merged batch-major kernel gives a different answer from run to run (it reads
        # memory it has not written: seen as NaNs and errors up to 0.86 in 12 runs of one model);
        # its unmerged outputs of the same weights are stable, and merged they are the reference.
        fw, bw = run_litert(bidi_model(time_major, False)[0], [x])
        wants = [np.concatenate([fw, bw], axis=-1)]
    check(armnn_runner, tmp_path, data, x, wants)


def test_bidirectional_lstm_peephole_is_refused():
    with pytest.raises(UnsupportedModelError) as info:
        armnn_import.convert(bidi_model(peephole_bw=True, infer=False)[0])
    assert "peephole" in info.value.problems[0].reason


REFUSED = [
    (dict(drop=(1, 5, 12)), "CIFG"),
    (dict(extra=(9, 10, 11)), "peephole"),
    (dict(extra=(16,)), "projection"),
    (dict(extra=(20, 21, 22, 23)), "layer normalization"),
    (dict(act="NONE"), "leaves the cell output undefined"),
    (dict(weight_dtype=np.float16), "FLOAT16"),
]


def test_state_with_a_buffer_is_refused():
    data, _ = lstm_model(state_data=True, infer=False)  # LiteRT refuses to load it too
    with pytest.raises(UnsupportedModelError) as info:
        armnn_import.convert(data)
    assert "variable with a buffer" in info.value.problems[0].reason


@pytest.mark.parametrize("kw,text", REFUSED, ids=[t for _, t in REFUSED])
def test_lstm_refusals_name_the_reason(kw, text):
    data, _ = lstm_model(**kw, infer=False)
    with pytest.raises(UnsupportedModelError) as info:
        armnn_import.convert(data)
    (problem,) = info.value.problems
    assert problem.op == "UNIDIRECTIONAL_SEQUENCE_LSTM" and text in problem.reason, problem
