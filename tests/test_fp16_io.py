"""--fp16 --fp16-io float32 (the 23.08 format): a Float16 network with Float32 inputs and outputs,
a Cast layer at each float edge. On Arm NN 23.08 its outputs are those of the Float16-I/O network
fed the inputs rounded to Float16, bit for bit (the Casts round to nearest even, as numpy), and
`verify` against the source runtime passes with the Float16 defaults."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import armnn_import
from armnn_import import cli
from armnn_import.errors import ConversionError
from armnn_import.executor import run
from armnn_import.ir.types import DataType
from armnn_import.serialize import read
from armnn_import.verify_cmd import verify

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_models import ROOT  # noqa: E402

# CNNs, a recurrent model with several outputs, int64 token ids and an ArgMax (Signed32) output
MODELS = ["onnx/resnet_small.onnx", "onnx/lstm_batch_first_states.onnx", "onnx/embedding_transformer.onnx",
          "onnx/argmax_classifier.onnx", "tflite/models/mobilenet_v2_035.float32.tflite",
          "tflite/models/keras_bilstm_unroll_seq.float32.tflite"]


def _inputs(model: str) -> list:
    """The stored inputs; int64 token ids as the Signed32 the network reads."""
    with np.load(str(ROOT / model).rsplit(".", 1)[0] + ".npz") as z:
        return [z[k].astype(np.int32) if z[k].dtype == np.int64 else z[k]
                for k in sorted(z.files) if k.startswith("input_")]


def _edges(graph):
    return ([l.outputs[0].dtype for l in graph.input_layers], [l.inputs[0].info.dtype for l in graph.output_layers])


@pytest.mark.parametrize("model", MODELS)
def test_float32_io_is_the_float16_network_with_exact_edge_casts(model, armnn_runner_for):
    runner = armnn_runner_for("23.08")
    xs = _inputs(model)
    half = armnn_import.convert(ROOT / model, fp16=True, target="23.08", fp16_inputs=xs)
    full = armnn_import.convert(ROOT / model, fp16=True, fp16_io="float32", target="23.08", fp16_inputs=xs)
    (in16, out16), (in32, out32) = _edges(half.network), _edges(full.network)
    assert DataType.Float16 in in16 + out16
    assert in32 == [DataType.Float32 if d == DataType.Float16 else d for d in in16]
    assert out32 == [DataType.Float32 if d == DataType.Float16 else d for d in out16]
    casts = full.network.summary().pop("Cast", 0) - half.network.summary().pop("Cast", 0)
    assert casts == (in16 + out16).count(DataType.Float16)
    assert full.network.summary() | {"Cast": 0} == half.network.summary() | {"Cast": 0}
    assert "--fp16-io float32" in " ".join(full.report.warnings)
    # on the runtime: the Float16-I/O network's outputs, as float32
    rounded = [x.astype(np.float16) if d == DataType.Float16 else x for x, d in zip(xs, in16)]
    got = runner(full.to_bytes(), xs)
    want = runner(half.to_bytes(), rounded)
    for g, w, d in zip(got, want, out16):
        assert g.dtype == (np.float32 if d == DataType.Float16 else w.dtype)
        np.testing.assert_array_equal(g, w.astype(g.dtype))
    # and the numpy executor agrees with the runtime (bit for bit on the CNNs; its Float16 LSTM
    # rounds at other places than CpuRef's)
    for g, e in zip(got, run(full.network, xs)):
        scale = float(np.max(np.abs(g), initial=0.0))
        np.testing.assert_allclose(e, g, rtol=1e-2, atol=1e-2 * scale)
    check = verify(ROOT / model, full.to_bytes(), inputs=xs, armnn_runtime=runner.path)
    assert check.ok, check.format()


def test_cast_saturates_what_float16_cannot_hold(armnn_runner_for):
    """The warning's claim: a Float32 input beyond Float16's range is +-65504 inside (23.08's
    Cast saturates), where the float32 model gives the input back."""
    model = ROOT / "tflite/ops/relu.float32.tflite"
    r = armnn_import.convert(model, fp16=True, fp16_io="float32", target="23.08")
    shape = r.network.input_layers[0].outputs[0].shape
    x = np.full(shape, 1e6, np.float32)
    x.reshape(-1)[0] = np.inf
    (got,) = armnn_runner_for("23.08")(r.to_bytes(), [x])
    assert got.dtype == np.float32 and np.all(got == 65504)
    np.testing.assert_array_equal(run(r.network, [x])[0], got)


@pytest.mark.parametrize("target", ["19.02", "20.08"])
def test_refused_where_the_format_has_no_cast(target):
    with pytest.raises(ConversionError, match=f"the Arm NN {target} format has no Cast layer.*--target 23.08"):
        armnn_import.convert(ROOT / "onnx/resnet_small.onnx", fp16=True, fp16_io="float32", target=target)


@pytest.mark.parametrize("kwargs, message", [
    ({"fp16_io": "float32"}, "fp16_io goes with fp16=True"),
    ({"fp16": True, "fp16_io": "float64"}, "fp16_io must be one of float16, float32"),
])
def test_api_refuses_inconsistent_options(kwargs, message):
    with pytest.raises(ConversionError, match=message):
        armnn_import.convert(ROOT / "onnx/resnet_small.onnx", target="23.08", **kwargs)


def test_cli_writes_it_and_the_file_runs(tmp_path, capsys, armnn_runner_for):
    model, out = ROOT / "onnx/resnet_small.onnx", tmp_path / "r.armnn"
    npz = str(model).rsplit(".", 1)[0] + ".npz"
    code = cli.main([str(model), "--fp16", "--fp16-io", "float32", "--target", "23.08", "--inputs", npz,
                     "-o", str(out), "--verify"])
    text, err = capsys.readouterr()
    assert code == 0 and "verify: PASS" in text and "--fp16-io float32" in err
    g = read(out.read_bytes())
    assert _edges(g) == ([DataType.Float32], [DataType.Float32])
    (got,) = armnn_runner_for("23.08")(out.read_bytes(), _inputs("onnx/resnet_small.onnx"))
    assert got.dtype == np.float32
    assert verify(model, str(out), inputs=[npz], armnn_runtime=armnn_runner_for("23.08").path).ok
    # without --fp16 the option is a usage error (exit 2, one line)
    code = cli.main([str(model), "--fp16-io", "float32", "-o", str(tmp_path / "x.armnn")])
    _, err = capsys.readouterr()
    assert code == 2 and err.splitlines() == ["armnn-import: error: --fp16-io goes with --fp16"]
    assert not (tmp_path / "x.armnn").exists()
