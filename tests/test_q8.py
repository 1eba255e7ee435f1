"""int8 stays int8 from the 20.08 format on (lowering/int8.py): the model's int8 tensors are
QAsymmS8 with their own zero points, not uint8 shifted by 128, on the real Arm NN 20.08 and
23.08 runtimes (CpuRef).

- Layer facts: every layer case of tests/layer_cases.py whose type keep_int8 puts on QAsymmS8
  (int8.S8_LAYERS) runs on both CpuRefs as QAsymmS8 and gives exactly the bytes of its
  QuantisedAsymm8 network less 128 (the runtime's own uint8 result is the reference).
- Reference models: every int8 model of test_models/ (TFLite int8, ONNX quantize_static s8
  per-channel QDQ and QOperator), converted by the CLI for 20.08 (run on 20.08 and 23.08) and
  23.08 (run on 23.08): QAsymmS8 tensors with the model's zero points read back from the
  file, no QuantisedAsymm8 left, outputs within 1 level of LiteRT / onnxruntime (the three
  networks of test_targets.RICH_NETWORK_LSB keep their measured bounds).
- 19.02 keeps uint8 + 128 (scripts/output_hashes.py --check stays identical).
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from armnn_import import cli
from armnn_import.executor import run as run_executor
from armnn_import.ir.kinds import since
from armnn_import.ir.graph import Graph
from armnn_import.ir.types import DataLayout, DataType, LayerType, TensorInfo
from armnn_import.ir.verify import verify
from armnn_import.lowering import NetBuilder, perchannel
from armnn_import.lowering.int8 import S8_LAYERS, keep_int8, to_int8
from armnn_import.report import Report
from armnn_import.serialize import read, write
from armnn_import.target import get as get_target
from armnn_import.testing.armnn_runtime import ArmnnRuntimeError, harness_dir, run_armnn
from armnn_import.verify_cmd import Tolerance, verify as verify_files

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # pytest runs with --import-mode=importlib
from layer_cases import QA8, RANDOM_LAYERS, TARGET_VARIANTS, Case, _layouts, random_network, status  # noqa: E402
from reference_models import NOT_CONVERTING_YET, ROOT, all_models  # noqa: E402
from test_targets import RICH_NETWORK_LSB  # noqa: E402

U8, S8 = DataType.QuantisedAsymm8, DataType.QAsymmS8
# this Debian's harness directories (<cache>/<release>-deb<N>, plan.py), built by scripts/test.sh
RUNNERS = {"20.08": os.environ.get("ARMNN_RUNNER", str(harness_dir("20.08") / "armnn-run")),
           "23.08": os.environ.get("ARMNN_RUNNER_23_08", str(harness_dir("23.08") / "armnn-run"))}
ANCHOR_20_08 = str(harness_dir("20.08") / "armnn-tflite-anchor")
# (target, runtime): 20.08 output on 20.08 and 23.08, 23.08 output on 23.08
PAIRS = [("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]


def _runner(release):
    path = RUNNERS[release]
    if not os.access(path, os.X_OK):
        pytest.skip(f"no Arm NN {release} runner at {path}")
    return lambda data, ins: run_armnn(data, list(ins), runner=path)


def _s8(a):
    return (a.astype(np.int16) - 128).astype(np.int8) if a.dtype == np.uint8 else a


# -- which layers CpuRef runs on QAsymmS8 -------------------------------------------------------
def _cases():
    out = []
    for lt in sorted(S8_LAYERS, key=lambda t: t.name):
        target = max("20.08", since(lt))  # the format that has the layer and QAsymmS8
        for layout in _layouts(lt):
            for v in (None,) + tuple(x for x in TARGET_VARIANTS.get(lt, ()) if x):
                out.append(Case(lt, QA8, layout, v, target=target))
    return out


CASES = _cases()


@pytest.mark.parametrize("release", ["20.08", "23.08"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_layer_runs_as_qasymms8(case, release):
    if tuple(map(int, case.target.split("."))) > tuple(map(int, release.split("."))):
        pytest.skip(f"a {case.target}-format case: Arm NN {release} does not read that format")
    kind, why = status(case, release)
    if kind != "pass":
        pytest.skip(f"the QuantisedAsymm8 case does not pass on {release} either: {why}")
    run = _runner(release)
    graph, inputs = case.build()
    want_u8 = run(write(graph), inputs)
    s8_graph, _ = case.build()
    assert to_int8(s8_graph) > 0
    verify(s8_graph)
    s8_inputs = [_s8(a) for a in inputs]
    data = write(s8_graph)
    back = read(data)
    assert U8 not in {o.dtype for l in back.layers for o in l.outputs}
    got = run(data, s8_inputs)
    for w, g in zip(want_u8, got):
        if w.dtype == np.uint8:
            assert g.dtype == np.int8
            np.testing.assert_array_equal(g, _s8(w))  # exactly the uint8 bytes less 128
        else:
            np.testing.assert_array_equal(g, w)
    # the numpy executor follows the runtime on QAsymmS8 (within 1 level, as for QuantisedAsymm8)
    for e, g in zip(run_executor(s8_graph, s8_inputs), got):
        assert e.dtype == g.dtype and e.shape == g.shape
        if g.dtype == np.int8:
            assert np.abs(e.astype(int) - g.astype(int)).max(initial=0) <= 1
        elif g.dtype.kind == "f":
            np.testing.assert_allclose(e, g, rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(e, g)


@pytest.mark.parametrize("release", ["20.08", "23.08"])
@pytest.mark.parametrize("layer", RANDOM_LAYERS, ids=lambda t: t.name)
def test_random_configurations_as_qasymms8(layer, release):
    """Windows, paddings, strides, blocks and axes drawn at random (layer_cases.random_network):
    the QAsymmS8 network gives the QuantisedAsymm8 network's bytes less 128 on the runtime."""
    run = _runner(release)
    graph, inputs = random_network(layer, QA8, seed=int(layer) * 10 + int(QA8))
    graph.target = get_target("20.08")
    want = run(write(graph), inputs)
    assert to_int8(graph) > 0
    verify(graph)
    got = run(write(graph), [_s8(a) for a in inputs])
    assert len(got) == len(want) >= 12
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, _s8(w))


def test_pad_fills_the_uint8_byte_less_128():
    """Pad.cpp writes its fill value raw: a QAsymmS8 Pad fills with pad_value - 128, the same real."""
    g = Graph("20.08")
    nb = NetBuilder(g)
    x = g.add_input("x", TensorInfo((1, 2, 3, 3), U8, 0.1, 30))
    g.add_output("y", nb.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], "pad"))
    to_int8(g)
    pad = next(l for l in g.layers if l.type == LayerType.Pad)
    assert pad.outputs[0].dtype == S8 and pad.desc.pad_value == -128.0
    y = run_executor(g, [np.zeros((1, 2, 3, 3), np.int8)])[0]
    assert y[0, 0, 0, 0] == -128 and read(write(g)).layers[1].desc.pad_value == -128.0


def _uint8_floor_graph():
    g = Graph("20.08")
    x = g.add_input("x", TensorInfo((2, 3), U8, 0.1, 128))
    y = g.add(LayerType.Floor, "floor", [x]).out()
    g.add_output("y", g.add(LayerType.Activation, "act", [y]).out())
    return g, x


def test_a_component_with_an_unproven_layer_keeps_uint8():
    g, x = _uint8_floor_graph()
    report = Report()
    assert keep_int8(g, {x: True}, report) == 0
    assert all(o.dtype == U8 for l in g.layers for o in l.outputs)
    assert "Floor is not proven on QAsymmS8" in report.quantization[-1]["decision"]


def test_a_component_the_model_holds_as_uint8_keeps_uint8():
    g = Graph("20.08")
    nb = NetBuilder(g)
    a = g.add_input("a", TensorInfo((2, 3), U8, 0.1, 128))
    b = g.add_input("b", TensorInfo((2, 3), U8, 0.1, 128))
    g.add_output("y", nb.binary(LayerType.Addition, a, b, "add", quant=(0.2, 128)))
    assert keep_int8(g, {a: True, b: False}) == 0  # one uint8 tensor: the component stays uint8
    assert keep_int8(g, {a: True, b: True}) == 3 and g.layers[-1].inputs[0].info == TensorInfo((2, 3), S8, 0.2, 0)
    seed = Graph("19.02")
    x = seed.add_input("x", TensorInfo((2, 3), U8, 0.1, 128))
    seed.add_output("y", NetBuilder(seed).linear(x, 1.0, 0.0, "id"))
    assert keep_int8(seed, {x: True}) == 0  # the seed format has no QAsymmS8


# -- per-channel weights under QAsymmS8 activations ---------------------------------------------
@pytest.mark.parametrize("release", ["20.08", "23.08"])
def test_per_axis_convolutions_on_qasymms8(release, rng=np.random.default_rng(11)):
    """QSymmS8 per-axis weights on a QAsymmS8 input: Convolution2d, DepthwiseConvolution2d and a
    FullyConnected as a 1x1 convolution, each exactly its uint8 network less 128 on the runtime."""
    run = _runner(release)
    xq, yq = (0.05, 120), (0.08, 100)
    w, s = rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8), rng.uniform(0.002, 0.2, 4).astype(np.float32)
    dw, ds = rng.integers(-127, 128, (6, 1, 3, 3)).astype(np.int8), rng.uniform(0.002, 0.2, 6).astype(np.float32)
    fw, fs = rng.integers(-127, 128, (5, 3)).astype(np.int8), rng.uniform(0.002, 0.2, 5).astype(np.float32)
    b = rng.normal(0, 0.3, 6)

    def build():
        g = Graph(release)
        nb = NetBuilder(g)
        x = g.add_input("x", TensorInfo((1, 5, 6, 3), U8, *xq))
        nhwc = DataLayout.NHWC
        g.add_output("conv", perchannel.conv2d(nb, x, w, s, perchannel.bias(b[:4], xq[0], s), yq, "conv",
                                               pads=(1, 1, 1, 1), layout=nhwc))
        g.add_output("dw", perchannel.conv2d(nb, x, dw, ds, perchannel.bias(b, xq[0], ds), yq, "dw", groups=3,
                                             layout=nhwc))
        rows = nb.reshape(x, (30, 3), "rows")
        g.add_output("fc", perchannel.fully_connected(nb, rows, fw, fs, perchannel.bias(b[:5], xq[0], fs), yq, "fc"))
        return g
    x = rng.integers(0, 256, (1, 5, 6, 3)).astype(np.uint8)
    want = run(write(build()), [x])
    g = build()
    assert keep_int8(g, {g.input_layers[0].out(): True}) > 0
    verify(g)
    assert all(l.tensors["weights"].info.dtype == DataType.QSymmS8 for l in g.layers if "weights" in l.tensors)
    got = run(write(g), [_s8(x)])
    for wu, gs in zip(want, got):
        np.testing.assert_array_equal(gs, _s8(wu))
    for e, gs in zip(run_executor(g, [_s8(x)]), got):
        assert np.abs(e.astype(int) - gs.astype(int)).max() <= 1


@pytest.mark.parametrize("release", ["20.08", "23.08"])
def test_neither_cpuref_runs_a_per_axis_fully_connected_on_qasymms8(release):
    """Why a per-channel FullyConnected stays a 1x1 convolution on int8 too (lowering/perchannel.py)."""
    from test_perchannel import _per_axis_fc_graph
    run = _runner(release)
    g = _per_axis_fc_graph(release)
    to_int8(g)
    assert g.input_layers[0].outputs[0].dtype == S8
    with pytest.raises(ArmnnRuntimeError) as e:
        run(write(g), [np.zeros((2, 5), np.int8)])
    want = "GetBiasTypeFromWeightsType" if release == "20.08" else "FullyConnected is not supported"
    assert want in e.value.stderr


def test_arm_nn_20_08s_own_per_channel_files_fail_where_ours_run(armnn_runner, tmp_path):
    """Arm NN 20.08's TfLite parser writes per-channel int8 FullyConnected weights that its CpuRef
    rejects; our 20.08 file of the same model runs on 20.08 (a 1x1 convolution, int8 kept)."""
    if not os.access(ANCHOR_20_08, os.X_OK):
        pytest.skip(f"no Arm NN 20.08 TfLite parser at {ANCHOR_20_08}")
    import subprocess
    src = ROOT / "tflite" / "ops" / "fully_connected.int8.tflite"
    data = np.load(src.with_suffix(".npz"))
    theirs = tmp_path / "anchor.armnn"
    subprocess.run([ANCHOR_20_08, str(src), str(theirs)], check=True, capture_output=True, timeout=120)
    with pytest.raises(ArmnnRuntimeError, match="GetBiasTypeFromWeightsType"):
        armnn_runner(theirs.read_bytes(), [data["input_0"]])
    ours = tmp_path / "ours.armnn"
    assert cli.main([str(src), "-o", str(ours), "-q", "--target", "20.08"]) == 0
    got = armnn_runner(ours.read_bytes(), [data["input_0"]])[0]
    assert got.dtype == np.int8 and np.abs(got.astype(int) - data["output_0"].astype(int)).max() <= 1


# -- every int8 reference model, as the CLI writes it ---------------------------------------------
def _int8_models():
    out = []
    for mid, path, npz in all_models():
        if mid in NOT_CONVERTING_YET:
            continue
        if mid.startswith("tflite/") and path.name.split(".")[-2] in ("int8", "sparseint8", "int8floatio"):
            out.append((mid, path, npz))
    for path in sorted((ROOT / "onnx_quant").glob("*_s8pc.onnx")):
        out.append((f"onnx_quant/{path.name}", path, path.with_suffix(".npz")))
    return out


INT8_MODELS = _int8_models()


def _check_int8_tensors(graph):
    """No QuantisedAsymm8 left: every 8-bit tensor QAsymmS8 (per-axis weights QSymmS8)."""
    kinds = {o.dtype for l in graph.layers for o in l.outputs} | \
        {t.info.dtype for l in graph.layers for t in l.tensors.values()}
    assert U8 not in kinds and S8 in kinds
    for l in graph.layers:
        for t in l.tensors.values():
            assert t.info.dtype != DataType.QSymmS8 or t.info.scales is not None


def _check_model_zero_points(model_id, path, graph):
    """The file's inputs and outputs carry the model's own int8 zero points (no +128)."""
    if model_id.startswith("tflite/"):
        from armnn_import_frontends.tflite.model import load
        m = load(path.read_bytes())
        for layer, i in zip(graph.input_layers, m.inputs):
            t = m.tensors[i]
            if t.type == 9:  # INT8
                info = layer.outputs[0]
                assert (info.dtype, info.offset) == (S8, int(t.quant.zero_point[0]))
        return
    import onnx
    model = onnx.load(str(path))
    first = next(n for n in model.graph.node
                 if n.op_type == "QuantizeLinear" and n.input[0] == model.graph.input[0].name)
    zp = next(onnx.numpy_helper.to_array(t) for t in model.graph.initializer if t.name == first.input[2])
    assert zp.dtype == np.int8
    assert [l.outputs[0].dtype for l in graph.input_layers] == [DataType.Float32]
    quantize = next(l for l in graph.layers if l.type == LayerType.Quantize)
    assert (quantize.outputs[0].dtype, quantize.outputs[0].offset) == (S8, int(zp))


@pytest.mark.parametrize("model_id, path, npz", INT8_MODELS, ids=[m[0] for m in INT8_MODELS])
@pytest.mark.parametrize("target, release", PAIRS)
def test_int8_reference_model(target, release, model_id, path, npz, tmp_path):
    runner = RUNNERS[release]
    if not os.access(runner, os.X_OK):
        pytest.skip(f"no Arm NN {release} runner at {runner}")
    out = tmp_path / "model.armnn"
    assert cli.main([str(path), "-o", str(out), "-q", "--target", target]) == 0
    graph = read(out.read_bytes())
    assert graph.target.release == target
    _check_int8_tensors(graph)
    _check_model_zero_points(model_id, path, graph)
    if model_id.startswith("onnx_quant/"):
        data = np.load(npz)
        check = verify_files(path, str(out), inputs=[data["input_0"]], tolerance=Tolerance(lsb=1),
                             armnn_runtime=runner)
        deq = graph.output_layers[0].inputs[0].layer
        assert deq.type == LayerType.Dequantize
        step = deq.inputs[0].info.scale
        assert check.outputs[0].max_abs <= step * 1.001, check.format()  # within 1 level of onnxruntime
        return
    tol = Tolerance(lsb=RICH_NETWORK_LSB.get(model_id, 1))
    check = verify_files(path, str(out), tolerance=tol, armnn_runtime=runner)
    assert check.ok, check.format()


def test_the_seed_target_keeps_uint8_plus_128(tmp_path):
    src = ROOT / "tflite" / "ops" / "add.int8.tflite"
    out = tmp_path / "seed.armnn"
    assert cli.main([str(src), "-o", str(out), "-q"]) == 0
    graph = read(out.read_bytes())
    assert {l.outputs[0].dtype for l in graph.input_layers} == {U8}
    assert [l.outputs[0].offset for l in graph.input_layers] == [4 + 128, -2 + 128]  # the model's zero points + 128
