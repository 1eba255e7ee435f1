"""--input-value NAME=V and convert(input_values=...): the input becomes a constant of that value
in the model's shape and dtype, so an If on it folds to the branch it selects (silero VAD's sample
rate). Checked through the CLI's file on the real runtimes against onnxruntime and LiteRT fed the
same fixed value; the refusals (an unknown name, a bad value, a dtype that cannot hold it) are one
typed line."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tflite"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnx"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from tfl_builder import ModelBuilder, run_litert  # noqa: E402
from reference_io import run_ort  # noqa: E402

from armnn_import import cli, convert  # noqa: E402
from armnn_import.errors import InputValueError  # noqa: E402
from armnn_import.serialize import read  # noqa: E402

PAIRS = [("19.02", "20.08"), ("20.08", "20.08"), ("23.08", "23.08")]
TOL = dict(rtol=1e-5, atol=1e-5)


def _branch(name, nodes, out):
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])


def _if_model() -> onnx.ModelProto:
    """y = If(mode == 2) then x * 2 else x + 1, plus bias (a [3] input): `mode` an int64 scalar
    input, as silero VAD's sample rate is."""
    two = onnx.numpy_helper.from_array(np.array(2, np.int64), "two")
    k = onnx.numpy_helper.from_array(np.array(2.0, np.float32), "k")
    then = _branch("then", [helper.make_node("Mul", ["x", "k"], ["t"])], "t")
    other = _branch("else", [helper.make_node("Add", ["x", "k"], ["e"])], "e")
    nodes = [helper.make_node("Equal", ["mode", "two"], ["cond"]),
             helper.make_node("If", ["cond"], ["z"], then_branch=then, else_branch=other),
             helper.make_node("Add", ["z", "bias"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3]),
                                       helper.make_tensor_value_info("mode", TensorProto.INT64, []),
                                       helper.make_tensor_value_info("bias", TensorProto.FLOAT, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3])], initializer=[two, k])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("target, release", PAIRS)
@pytest.mark.parametrize("mode", [2, 5])
def test_onnx_if_on_a_fixed_input_folds(tmp_path, mode, target, release, armnn_runner_for):
    model = _if_model()
    src, out, rep = tmp_path / "m.onnx", tmp_path / "m.armnn", tmp_path / "r.json"
    onnx.save(model, src)
    x = np.random.default_rng(mode).standard_normal((1, 2, 3)).astype(np.float32)
    bias = np.array([0.5, -1.25, 3.0], np.float32)
    (want,) = run_ort(model.SerializeToString(), {"x": x, "mode": np.array(mode, np.int64), "bias": bias})
    assert cli.main([str(src), "-o", str(out), "--target", target, "-q", "--input-value", f"mode={mode}",
                     "--input-value", "bias=0.5,-1.25,3", "--report", str(rep)]) == 0
    graph = read(out.read_bytes())
    assert [l.name for l in graph.input_layers] == ["x"]
    (got,) = armnn_runner_for(release)(out, [x])
    np.testing.assert_allclose(got.reshape(want.shape), want, **TOL)
    fixed = json.loads(rep.read_text())["input_values"]
    assert fixed == {"mode": {"value": mode, "shape": [], "dtype": "int64"},
                     "bias": {"value": [0.5, -1.25, 3.0], "shape": [3], "dtype": "float32"}}


def test_onnx_if_on_a_free_input_stays_refused(tmp_path, capsys):
    src = tmp_path / "m.onnx"
    onnx.save(_if_model(), src)
    assert cli.main([str(src), "-o", str(tmp_path / "m.armnn"), "--target", "23.08"]) == 1
    assert "its condition is computed at run time" in capsys.readouterr().err


def _tflite():
    """y = x * s + b: s a [1, 1, 4] input fixed by one value filling it, b by a list."""
    mb = ModelBuilder()
    x, s, b = mb.input("x", (1, 3, 4)), mb.input("s", (1, 1, 4)), mb.input("b", (4,))
    m = mb.op("MUL", [x, s], "MulOptions", out_shape=(1, 3, 4), out_dtype=np.float32)
    mb.output(mb.op("ADD", [m, b], "AddOptions", out_shape=(1, 3, 4), out_dtype=np.float32))
    return mb.build()


@pytest.mark.parametrize("target, release", PAIRS)
def test_tflite_fixed_inputs(tmp_path, target, release, armnn_runner_for):
    data = _tflite()
    src, out = tmp_path / "m.tflite", tmp_path / "m.armnn"
    src.write_bytes(data)
    x = np.random.default_rng(3).standard_normal((1, 3, 4)).astype(np.float32)
    s, b = np.full((1, 1, 4), -1.5, np.float32), np.array([1, 2, 3, 4.5], np.float32)
    want = run_litert(data, [x, s, b])[0]
    assert cli.main([str(src), "-o", str(out), "--target", target, "-q",
                     "--input-value", "s=-1.5", "--input-value", "b=1,2,3,4.5"]) == 0
    assert [l.name for l in read(out.read_bytes()).input_layers] == ["x"]
    (got,) = armnn_runner_for(release)(out, [x])
    np.testing.assert_allclose(got.reshape(want.shape), want, **TOL)


@pytest.mark.parametrize("values, message", [
    ({"nope": 1}, "'nope', which is not an input of the model (inputs: x, mode, bias)"),
    ({"mode": "abc"}, "'abc' is not a number"),
    ({"mode": 1.5}, "1.5 is not an integer; the input is int64"),
    ({"mode": 2 ** 63}, "is outside int64's range"),
    ({"bias": "1,2"}, "2 values for shape [3] (3 elements)"),
    ({"bias": 1e39}, "outside float32's range"),
    ({"mode": "1,2"}, "the input is a scalar, 2 values given")])
def test_bad_input_values_are_refused(values, message):
    with pytest.raises(InputValueError, match=None) as e:
        convert(_if_model(), input_values=values, target="23.08")
    assert message in str(e.value)


def test_bool_input_takes_boolean_words():
    g = helper.make_graph([helper.make_node("Where", ["c", "x", "k"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                           helper.make_tensor_value_info("c", TensorProto.BOOL, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
                          initializer=[onnx.numpy_helper.from_array(np.zeros(2, np.float32), "k")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    result = convert(model, input_values={"c": "true,false"}, target="23.08")
    assert result.report.input_values["c"]["value"] == [True, False]
    with pytest.raises(InputValueError, match="'2' is not a boolean"):
        convert(model, input_values={"c": "2"}, target="23.08")


def test_cli_errors_are_one_line(tmp_path, capsys):
    src = tmp_path / "m.onnx"
    onnx.save(_if_model(), src)
    assert cli.main([str(src), "-o", str(tmp_path / "m.armnn"), "--input-value", "mode=x1"]) == 1
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("armnn-import: error:") and "'x1' is not a number" in err[0], err
    assert cli.main([str(src), "-o", str(tmp_path / "m.armnn"), "--input-value", "mode"]) == 2
    assert "expected NAME=V or NAME=V,V,..." in capsys.readouterr().err


SILERO_RUNS = [(sr, t, r) for sr in (16000, 8000) for t, r in PAIRS + [("19.02", "23.08"), ("20.08", "23.08")]]


@pytest.mark.parametrize("sr, target, release", SILERO_RUNS, ids=[f"{sr}-{t}-{r}" for sr, t, r in SILERO_RUNS])
def test_silero_vad_with_its_sample_rate_fixed(tmp_path, sr, target, release, armnn_runner_for):
    """silero_vad.onnx (the silero-vad wheel) branches on its `sr` input: fixed, its Ifs fold, and
    the file matches onnxruntime run with the same sr (512 samples and 64 of context at 16 kHz,
    256 and 32 at 8 kHz, as the package feeds them)."""
    import pypi_cache
    import pypi_models as P

    model = P.BY_NAME["silero-vad"]
    try:
        src = str(pypi_cache.member(model.wheel, model.member))
    except pypi_cache.WheelUnavailable as e:
        pypi_cache.skip_or_fail(str(e))
    rng = np.random.default_rng(sr)
    feeds = {"input": rng.uniform(-0.5, 0.5, (1, 576 if sr == 16000 else 288)).astype(np.float32),
             "state": (rng.standard_normal((2, 1, 128)) * 0.3).astype(np.float32), "sr": np.array(sr, np.int64)}
    names = [o.name for o in onnx.load(src, load_external_data=False).graph.output]
    want = dict(zip(names, run_ort(open(src, "rb").read(), feeds)))
    out = tmp_path / "silero.armnn"
    shapes = [a for n in ("input", "state") for a in ("--input-shape", f"{n}={','.join(map(str, feeds[n].shape))}")]
    assert cli.main([src, "-o", str(out), "-q", "--target", target, "--input-value", f"sr={sr}", *shapes]) == 0
    graph = read(out.read_bytes())
    ins = sorted(graph.input_layers, key=lambda layer: layer.binding_id)
    assert [l.name for l in ins] == ["input", "state"]
    got = armnn_runner_for(release)(out, [feeds[l.name] for l in ins])
    outs = sorted(graph.output_layers, key=lambda layer: layer.binding_id)
    assert [l.name for l in outs] == names
    for g, layer in zip(got, outs):
        w = want[layer.name]
        np.testing.assert_allclose(g.reshape(w.shape), w, rtol=1e-3, atol=1e-4 * max(1.0, np.abs(w).max()))


@pytest.mark.parametrize("target", ["19.02", "23.08"])
def test_verify_feeds_the_fixed_values_to_the_source(tmp_path, target, capsys, armnn_runner_for):
    """--verify runs the source model with the fixed inputs at their values (report's input_values),
    the network on the real runtime: mode=2 takes the then branch in both."""
    src = tmp_path / "m.onnx"
    onnx.save(_if_model(), src)
    runner = armnn_runner_for("23.08")
    args = [str(src), "-o", str(tmp_path / "m.armnn"), "--target", target, "--verify", "--input-value", "mode=2",
            "--input-value", "bias=1"]
    if getattr(runner, "path", None):
        args += ["--armnn-runtime", runner.path]
    assert cli.main(args) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "inputs: random, seed 0: x 1x2x3 float32 N(0,1)\n" in out and "verify: PASS" in out, out


def test_tflite_refusals(tmp_path):
    data = _tflite()
    with pytest.raises(InputValueError, match=r"'y', which is not an input of the model \(inputs: x, s, b\)"):
        convert(data, input_values={"y": 1})
    with pytest.raises(InputValueError, match=r"3 values for shape \[1, 1, 4\] \(4 elements\)"):
        convert(data, input_values={"s": "1,2,3"})
    with pytest.raises(InputValueError, match="1e300' is outside float32's range"):
        convert(data, input_values={"s": "1e300"})
    result = convert(data, input_values={"s": [1, 2, 3, 4]}, target="23.08")
    assert result.report.input_values == {"s": {"value": [[[1.0, 2.0, 3.0, 4.0]]], "shape": [1, 1, 4],
                                                "dtype": "float32"}}
    assert [l.name for l in result.network.input_layers] == ["x", "b"]
