"""Keras models as the TFLite converter writes them (scripts/gen_keras_layer_models.py; the whole
sweep is docs/keras-sweep.md), through the CLI, against LiteRT's stored outputs.

- 16x8 mode (int16 activations, int8 weights, int64 biases): from --target 20.08 on, float I/O and
  int16 tensors rounded to their grid (frontends/tflite/grid16.py), within one output step of
  LiteRT's int16 kernels; refused by the 19.02 format (no QSymmS16), with the --dequantize hint;
  with --dequantize, a float32 network within a few steps on every runtime that reads the file.
- Keras 3 recurrent layers: a WHILE loop of fixed trip count, unrolled (frontends/tflite/unroll.py); unrolled
  Bidirectional LSTMs reverse the backward sequence with REVERSE_V2 (every target)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import armnn_import
from armnn_import import cli

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tfl_builder import run_litert  # noqa: E402

MODELS = Path(__file__).resolve().parents[2] / "test_models" / "tflite" / "models"
CONV_16X8 = MODELS / "keras_conv_big.16x8"
GRU_16X8 = MODELS / "keras_gru_unroll_last.16x8"
GRU_WHILE = MODELS / "keras_gru_seq.float32"
READS = [("19.02", "20.08"), ("19.02", "23.08"), ("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]


def _refused(path, target, capsys, *args):
    code = cli.main([str(path), "-o", "/nonexistent/never.armnn", "--target", target, *args])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and "internal error" not in err, err
    return [ln for ln in err.splitlines() if ln.startswith("armnn-import: error:")]


def test_16x8_model_is_refused_by_the_19_02_format(capsys):
    lines = _refused(f"{CONV_16X8}.tflite", "19.02", capsys)
    assert lines and all("16-bit quantized tensor" in ln and "16x8 mode" in ln and "needs QSymmS16" in ln and
                         "--target 20.08 or later" in ln and
                         "hint: --dequantize converts the model to a float32 network" in ln for ln in lines)


def _grid16_inputs():
    ref = np.load(f"{CONV_16X8}.npz")
    rng = np.random.default_rng(3)
    return [ref["input_0"]] + [a * rng.standard_normal(ref["input_0"].shape).astype(np.float32) for a in (1, 3)]


@pytest.mark.parametrize("target, release", [r for r in READS if r[0] != "19.02"])
def test_16x8_model_on_its_int16_grid_on_the_runtime(target, release, armnn_runner_for, tmp_path):
    """From the 20.08 format on (frontends/tflite/grid16.py): float I/O, each int16 result rounded
    to its grid by Quantize (QSymmS16) + Dequantize, TFLite's 16-bit output multipliers folded
    into the float weights. Measured: equal to LiteRT's int16 kernels on 575 of 576 outputs and
    within one step on all (before the multipliers were folded in: up to 2 steps, 27% apart)."""
    from armnn_import.executor.run import run as execute
    from armnn_import.serialize.reader import read
    out = tmp_path / "m.armnn"
    assert cli.main([f"{CONV_16X8}.tflite", "-o", str(out), "-q", "--target", target]) == 0
    g = read(out.read_bytes())
    kinds = [layer.type.name for layer in g.layers]
    assert kinds.count("Quantize") == kinds.count("Dequantize") == 3 and len(kinds) <= 11  # (the anchor's: 11)
    buf = Path(f"{CONV_16X8}.tflite").read_bytes()
    step = float(np.float32(9.824623e-05))  # the output's int16 scale
    for x in _grid16_inputs():
        (want,) = run_litert(buf, [x])
        got, = armnn_runner_for(release)(str(out), [x])
        got = got.reshape(want.shape)
        assert got.dtype == np.float32
        levels = got / step
        np.testing.assert_allclose(levels, np.round(levels), atol=0.01)  # on the int16 grid
        apart = np.abs(got - want) / step
        assert apart.max() < 1.01 and (apart > 0.5).mean() < 0.01, (apart.max(), (apart > 0.5).sum())
        mine, = execute(g, [x])  # the numpy executor agrees with the runtime
        np.testing.assert_allclose(mine.reshape(want.shape), got, rtol=0, atol=1.01 * step)


GRID16_READS = [r for r in READS if r[0] != "19.02"]


@pytest.mark.parametrize("target, release", GRID16_READS)
def test_16x8_gru_with_a_shared_bias_on_the_runtime(target, release, armnn_runner_for, tmp_path, capsys):
    """The unrolled GRU's recurrent FULLY_CONNECTEDs share one int64 bias whose recorded scale is
    the first step's s_in * s_w; LiteRT adds its raw values in each step's own accumulator scale
    (weights.bias_values). Read by the recorded scale, the output was 1,933 int16 steps off.
    What is left is LiteRT's int16 LOGISTIC/TANH lookup tables (1 and 2 steps from the exact
    functions), grown through the recurrence: measured 3 steps, and the CLI says so."""
    out = tmp_path / "m.armnn"
    assert cli.main([f"{GRU_16X8}.tflite", "-o", str(out), "--target", target]) == 0
    err = capsys.readouterr().err
    assert "int16 LOGISTIC kernel uses a lookup table" in err and "int16 TANH kernel" in err
    ref = np.load(f"{GRU_16X8}.npz")  # LiteRT's outputs (reference kernels)
    rng = np.random.default_rng(3)
    x2 = rng.standard_normal(ref["input_0"].shape).astype(np.float32)
    (want2,) = run_litert(Path(f"{GRU_16X8}.tflite").read_bytes(), [x2])
    step = float(np.float32(1.975431e-05))  # the output's int16 scale
    for x, want in ((ref["input_0"], ref["output_0"]), (x2, want2)):
        got, = armnn_runner_for(release)(str(out), [x])
        apart = np.abs(got.reshape(want.shape) - want) / step
        assert apart.max() <= 4.01, apart.max()


@pytest.mark.parametrize("target, release", GRID16_READS)
def test_16x8_gru_computes_on_the_int16_tensors(target, release, armnn_runner_for, tmp_path, monkeypatch):
    """passes/int16.py: the Additions, Multiplications, Activations and movers between int16
    roundings read and write QSymmS16 tensors, which CpuRef decodes, computes in float32 and
    rounds: the same numbers as a float layer between Dequantize and Quantize, in half the layers
    (213 -> 102 at 23.08; Arm NN 23.08's own TfLite parser writes 98, which its CpuRef refuses)."""
    import armnn_import.passes.int16 as P
    from armnn_import.serialize.reader import read
    out = tmp_path / "m.armnn"
    assert cli.main([f"{GRU_16X8}.tflite", "-o", str(out), "-q", "--target", target]) == 0
    kinds = [layer.type.name for layer in read(out.read_bytes()).layers]
    assert len(kinds) <= 105 and kinds.count("Quantize") <= 10, (len(kinds), kinds.count("Quantize"))
    assert {layer.outputs[0].dtype.name for layer in read(out.read_bytes()).layers
            if layer.type.name in ("Addition", "Multiplication", "Activation")} == {"QSymmS16"}
    monkeypatch.setattr(P, "_change", lambda graph, S, report: 0)
    rounded = armnn_import.convert(f"{GRU_16X8}.tflite", target=target)  # every result rounded by its pair
    assert len(rounded.network.layers) > 200
    ref = np.load(f"{GRU_16X8}.npz")
    rng = np.random.default_rng(5)
    run = armnn_runner_for(release)
    for x in [ref["input_0"]] + [rng.uniform(-2, 2, ref["input_0"].shape).astype(np.float32) for _ in range(2)]:
        got, = run(str(out), [x])
        np.testing.assert_array_equal(got, run(rounded.to_bytes(), [x])[0])
        (want,) = run_litert(Path(f"{GRU_16X8}.tflite").read_bytes(), [x])
        assert np.abs(got.reshape(want.shape) - want).max() / float(np.float32(1.975431e-05)) <= 4.01


@pytest.mark.parametrize("target, release", READS)
def test_16x8_model_with_dequantize_on_the_runtime(target, release, armnn_runner_for, tmp_path):
    out = tmp_path / "m.armnn"
    assert cli.main([f"{CONV_16X8}.tflite", "-o", str(out), "-q", "--target", target, "--dequantize"]) == 0
    ref = np.load(f"{CONV_16X8}.npz")
    got, = armnn_runner_for(release)(str(out), [ref["input_0"]])
    want = ref["output_0"]
    assert got.dtype == np.float32
    # LiteRT computes in int16 (symmetric, scale = max |output| / 32767): a few of those steps apart
    step = np.abs(want).max() / 32767
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=0, atol=4 * step)


@pytest.mark.parametrize("target, release", GRID16_READS)
@pytest.mark.parametrize("mode", ["float32", "int8floatio"])
def test_keras3_embedding_negative_ids_on_the_runtime(mode, target, release, armnn_runner_for, tmp_path):
    """Keras 3's Embedding wraps negative ids, SELECT_V2(LESS(ids, 0), ADD(ids, 30), ids), before
    its GATHER (frontends/tflite/wrap.py): 23.08's Gather wraps them itself; at 20.08 the table is
    gathered twice over at ids + 30. Stored ids in [-30, 30), and both ends."""
    from armnn_import.executor.run import run as execute
    from armnn_import.serialize.reader import read
    stem = MODELS / f"keras_embedding.{mode}"
    out = tmp_path / "m.armnn"
    assert cli.main([f"{stem}.tflite", "-o", str(out), "-q", "--target", target]) == 0
    g = read(out.read_bytes())
    (gather,) = [layer for layer in g.layers if layer.type.name == "Gather"]
    assert gather.inputs[0].info.shape[0] == (60 if target == "20.08" else 30)  # (the table twice over at 20.08)
    ref = np.load(f"{stem}.npz")
    ends = np.array([[-30, -1, 0, 29, -30, 29, -15]], np.int32)
    (want2,) = run_litert(Path(f"{stem}.tflite").read_bytes(), [ends])
    for x, want in ((ref["input_0"], ref["output_0"]), (ends, want2)):
        assert (x < 0).any()
        got, = armnn_runner_for(release)(str(out), [x])
        np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-6)
        mine, = execute(g, [x])  # the executor follows the file's release (23.08 wraps)
        np.testing.assert_array_equal(mine.reshape(want.shape), got.reshape(want.shape))


def _wrap_model(n_added: int, rows: int = 30, zero: int = 0) -> bytes:
    """GATHER(table, SELECT_V2(LESS(ids, zero), ADD(ids, n_added), ids)), a table of `rows` rows."""
    from tfl_builder import ModelBuilder
    mb = ModelBuilder()
    ids = mb.input("ids", (1, 5), np.int32)
    less = mb.op("LESS", [ids, mb.const("zero", np.array(zero, np.int32))], out_dtype=np.bool_)
    add = mb.op("ADD", [ids, mb.const("n", np.array(n_added, np.int32))], "AddOptions")
    sel = mb.op("SELECT_V2", [less, add, ids], out_dtype=np.int32)
    table = mb.const("table", np.arange(rows * 3, dtype=np.float32).reshape(rows, 3))
    mb.output(mb.op("GATHER", [table, sel], "GatherOptions", axis=0))
    return mb.build()


@pytest.mark.parametrize("target", ["20.08", "23.08"])
def test_only_the_embedding_wrap_of_select_v2_converts(target, armnn_runner_for):
    """The idiom converts; a SELECT_V2 that is not it (n other than the table's rows, a comparison
    with another constant) stays refused: ops/select.py selects float and 8-bit values, not int32."""
    from armnn_import import UnsupportedModelError, convert
    data = _wrap_model(30)
    ids = np.array([[-30, -1, 0, 7, 29]], np.int32)
    (want,) = run_litert(data, [ids])
    got, = armnn_runner_for(target)(convert(data, target=target).to_bytes(), [ids])
    np.testing.assert_array_equal(got.reshape(want.shape), want)
    for bad in (_wrap_model(29), _wrap_model(30, zero=1)):
        with pytest.raises(UnsupportedModelError) as e:
            convert(bad, target=target)
        assert "SELECT_V2" in [p.op for p in e.value.problems]


LSTM_WHILE_FP16 = MODELS / "keras_lstm_last.fp16w"


@pytest.mark.parametrize("target, release", READS)
@pytest.mark.parametrize("stem", [GRU_WHILE, LSTM_WHILE_FP16], ids=lambda p: p.name)
def test_keras3_while_loop_unrolled_on_the_runtime(stem, target, release, armnn_runner_for, tmp_path, capsys):
    """The WHILE's cond (two counters below constants) runs in numpy: its body once per step. In the
    float16-weights LSTM the loop's zero start states are DEQUANTIZEs of float16 constants (refused
    as 'constant tensor ... used where Arm NN needs a computed tensor' before session 15)."""
    out = tmp_path / "m.armnn"
    assert cli.main([f"{stem}.tflite", "-o", str(out), "--target", target]) == 0
    assert "subgraphs" not in capsys.readouterr().err  # (no operator left that calls one)
    ref = np.load(f"{stem}.npz")  # LiteRT's outputs
    rng = np.random.default_rng(7)
    x2 = rng.standard_normal(ref["input_0"].shape).astype(np.float32)
    (want2,) = run_litert(Path(f"{stem}.tflite").read_bytes(), [x2])
    for x, want in ((ref["input_0"], ref["output_0"]), (x2, want2)):
        got, = armnn_runner_for(release)(str(out), [x])
        np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-6)


def _while_model():
    from armnn_import_frontends.tflite.model import load
    return load(Path(f"{GRU_WHILE}.tflite").read_bytes())


def test_while_loop_with_a_run_time_trip_count_stays_refused(capsys):
    from dataclasses import replace
    from armnn_import_frontends.tflite import unroll
    m = _while_model()
    loop = next(op for op in m.operators if op.op == "WHILE")
    assert len(unroll.trips(m, loop)) == 5 and "WHILE" not in [op.op for op in unroll.unroll(m).operators]
    start = loop.inputs[0]  # the step counter's start: now a run-time value
    m.tensors[start] = replace(m.tensors[start], data=None)
    assert unroll.trips(m, loop) is None and "WHILE" in [op.op for op in unroll.unroll(m).operators]


def test_while_loop_over_the_trip_limit_stays_refused(monkeypatch):
    from armnn_import_frontends.tflite import unroll
    monkeypatch.setattr(unroll, "MAX_TRIPS", 4)
    m = _while_model()
    assert "WHILE" in [op.op for op in unroll.unroll(m).operators]


BILSTM = MODELS / "keras_bilstm_unroll_seq"


def _run(path, target, release, runner_for, tmp_path):
    out = tmp_path / "m.armnn"
    assert cli.main([f"{path}.tflite", "-o", str(out), "-q", "--target", target]) == 0
    ref = np.load(f"{path}.npz")
    x = ref["input_0"]
    shift = target == "19.02" and x.dtype == np.int8  # (19.02: int8 I/O becomes uint8, value + 128)
    got, = runner_for(release)(str(out), [(x.astype(np.int16) + 128).astype(np.uint8) if shift else x])
    if shift:
        got = (got.astype(np.int16) - 128).astype(np.int8)
    return got.reshape(ref["output_0"].shape), ref["output_0"]


@pytest.mark.parametrize("target, release", READS)
def test_bidirectional_lstm_reverses_on_every_target(target, release, armnn_runner_for, tmp_path):
    """REVERSE_V2 (the backward sequence): a ReverseV2 layer from 23.08, a constant-index
    selection before (it was refused at 19.02 and 20.08)."""
    got, want = _run(f"{BILSTM}.float32", target, release, armnn_runner_for, tmp_path)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target, release", [r for r in READS if r[0] != "19.02"])
def test_int8_bidirectional_lstm_reverse_copies_the_bytes(target, release, armnn_runner_for, tmp_path):
    """The int8 REVERSE_V2 has another output quantization than its input's, and LiteRT copies
    the bytes: requantizing it (as before) put the backward half 26-31 levels off on 23.08."""
    from ai_edge_litert.interpreter import Interpreter
    it = Interpreter(model_path=f"{BILSTM}.int8.tflite")
    td = {t["index"]: t for t in it.get_tensor_details()}
    rev, = [op for op in it._get_ops_details() if op["op_name"] == "REVERSE_V2"]
    assert td[rev["inputs"][0]]["quantization"] != td[rev["outputs"][0]]["quantization"]
    got, want = _run(f"{BILSTM}.int8", target, release, armnn_runner_for, tmp_path)
    assert got.dtype == want.dtype == np.int8
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1


DYNAMIC = MODELS.parent / "ops" / "conv_fc.dynamic.tflite"


@pytest.mark.parametrize("args, warned", [((), True), (("--dequantize",), False)])
def test_dynamic_range_model_says_it_computes_in_float(args, warned, tmp_path, capsys):
    """A dynamic-range file's weights become float32; the user is told once, with why LiteRT's
    hybrid kernels give other numbers (Keras Dense/Conv2D: 0.005-0.02, docs/keras-sweep.md)."""
    assert cli.main([str(DYNAMIC), "-o", str(tmp_path / "m.armnn"), *args]) == 0
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "dynamic-range model" in ln]
    assert len(lines) == (1 if warned else 0), lines
    assert not warned or ("float32" in lines[0] and "hybrid kernels" in lines[0] and "--atol" in lines[0])


@pytest.mark.parametrize("target, release", READS)
@pytest.mark.parametrize("name", ["keras_layernorm.float32", "keras_reshape_permute_flatten.float32",
                                  "keras_global_max_pool1d.int8"])
def test_keras3_dense_on_a_sequence_folds_the_shape_product(name, target, release, armnn_runner_for, tmp_path):
    """Keras 3's Dense on a 3-D input with a dynamic batch sizes its RESHAPE with the REDUCE_PROD
    of a slice of SHAPE: a reduction of a constant, folded at conversion (it was refused)."""
    from ai_edge_litert.interpreter import Interpreter
    ops = [d["op_name"] for d in Interpreter(model_path=str(MODELS / f"{name}.tflite"))._get_ops_details()]
    assert "SHAPE" in ops and "REDUCE_PROD" in ops
    got, want = _run(MODELS / name, target, release, armnn_runner_for, tmp_path)
    if want.dtype == np.int8:
        assert got.dtype == np.int8 and np.abs(got.astype(int) - want.astype(int)).max() <= 1
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target, release", [r for r in READS if r[0] != "19.02"])
def test_tf_argmax_int64_indices_as_signed32(target, release, armnn_runner_for, tmp_path):
    """tf.argmax's default output_type is int64: the indices come out as Signed32 (they were
    refused: 'type INT64, which Arm NN's format cannot hold')."""
    got, want = _run(MODELS / "keras_tf_argmax.float32", target, release, armnn_runner_for, tmp_path)
    assert want.dtype == np.int64 and got.dtype == np.int32
    np.testing.assert_array_equal(got, want)
