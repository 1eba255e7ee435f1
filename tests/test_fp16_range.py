"""--fp16's range check and --fp16-weights.

A network with the traits of the classic model-zoo CNNs (un-normalized 0-255
pixel inputs, no normalization layers, a VGG-like stack of Conv+Relu) has
activations beyond Float16's 65,504: --fp16 refuses it naming the layer and its
range, --fp16-force writes it, and the real Arm NN runtime then outputs inf,
which `verify` reports. Every float reference model still converts with --fp16.
"""
import glob
import json
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import armnn_import
from armnn_import import cli
from armnn_import.fp16_range import F16_MAX, SAFE_BOUND
from armnn_import.passes.fp16 import check_fp16_weights, fp16_widening_layer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_models import NOT_CONVERTING_YET  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "test_models")
FLOAT_MODELS = sorted(glob.glob(os.path.join(ROOT, "onnx", "*.onnx")) +
                      glob.glob(os.path.join(ROOT, "tflite", "models", "*.float32.tflite")) +
                      glob.glob(os.path.join(ROOT, "tflite", "ops", "*.float32.tflite")))
# (models only a richer target converts are tested there: tests/test_targets.py, test_attention_models.py)
FLOAT_MODELS = [p for p in FLOAT_MODELS if os.path.relpath(p, ROOT) not in NOT_CONVERTING_YET]


def vgg_like(gain: float = 4.0, seed: int = 0) -> onnx.ModelProto:
    """Conv3x3+Relu x2, MaxPool, Conv3x3+Relu x2, MaxPool, GlobalAveragePool, Gemm; He-initialized
    weights times `gain`, so that 0-255 inputs grow to about 1e5 at conv4 (Float16 overflows)."""
    rng = np.random.default_rng(seed)
    nodes, inits, x = [], [], "image"
    chans = [3, 8, 8, 16, 16]
    for i in range(4):
        ci, co = chans[i], chans[i + 1]
        w = (rng.standard_normal((co, ci, 3, 3)) * gain * np.sqrt(2 / (ci * 9))).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"),
                  numpy_helper.from_array((rng.standard_normal(co) * 0.1).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i + 1}", pads=[1] * 4),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i + 1}")]
        x = f"r{i}"
        if i in (1, 3):
            nodes.append(helper.make_node("MaxPool", [x], [f"p{i}"], name=f"pool{i // 2 + 1}",
                                          kernel_shape=[2, 2], strides=[2, 2]))
            x = f"p{i}"
    inits += [numpy_helper.from_array((rng.standard_normal((10, 16)) * 0.25).astype(np.float32), "fw"),
              numpy_helper.from_array(np.zeros(10, np.float32), "fb")]
    nodes += [helper.make_node("GlobalAveragePool", [x], ["gap"], name="gap"),
              helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
              helper.make_node("Gemm", ["flat", "fw", "fb"], ["logits"], name="fc", transB=1)]
    graph = helper.make_graph(nodes, "vgg_like", [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    """(folder, model path, .npz path, the 0-255 input)."""
    d = tmp_path_factory.mktemp("zoo")
    model = d / "vgg_like.onnx"
    onnx.save(vgg_like(), model)
    x = np.random.default_rng(1).integers(0, 256, (1, 3, 32, 32)).astype(np.float32)
    np.savez(d / "pixels.npz", image=x)
    return d, model, d / "pixels.npz", x


def main(capsys, *args):
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _ort_values(model_path, names, x) -> dict:
    """onnxruntime's values of the given tensors (as extra graph outputs)."""
    import onnxruntime as ort
    m = onnx.load(model_path)
    m.graph.output.extend(helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in names)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip(names, sess.run(names, {"image": x})))


def test_large_activations_refused_naming_the_layer(zoo, tmp_path, capsys):
    _, model, npz, x = zoo
    out_file = tmp_path / "v.armnn"
    code, out, err = main(capsys, model, "--fp16", "--inputs", npz, "-o", out_file)
    assert code == 1 and not out_file.exists()
    (line,) = err.splitlines()
    assert line.startswith(f"armnn-import: error: {model}: --fp16: layer 'conv4' (Convolution2d) reaches ")
    assert "--fp16-weights" in line and "--fp16-force" in line and "without --fp16" in line
    reached = float(line.split(" reaches ")[1].split()[0])
    # onnxruntime, independently: conv4 is the first convolution beyond the bound (and beyond Float16)
    ref = _ort_values(model, ["c0", "c1", "c2", "c3"], x)
    assert max(np.abs(ref[c]).max() for c in ("c0", "c1", "c2")) < SAFE_BOUND < F16_MAX < np.abs(ref["c3"]).max()
    # the message's layer is conv4 before its bias is added: within the bias of onnxruntime's value
    assert abs(reached - np.abs(ref["c3"]).max()) <= 1.0
    with pytest.raises(armnn_import.ConversionError, match="layer 'conv4'"):
        armnn_import.convert(str(model), fp16=True, fp16_inputs=str(npz))


def test_force_writes_it_and_verify_shows_the_inf(zoo, tmp_path, capsys, armnn_runner):
    _, model, npz, x = zoo
    out_file, report = tmp_path / "v.armnn", tmp_path / "r.json"
    code, out, err = main(capsys, model, "--fp16", "--fp16-force", "--inputs", npz, "-o", out_file, "--report", report)
    assert code == 0 and out_file.exists()
    assert f"armnn-import: warning: {model}: --fp16-force: layer 'conv4' (Convolution2d) reaches " in err
    # the report records every float layer's range and the first one over the bound
    r = json.loads(report.read_text())["fp16_range"]
    assert r["over"]["layer"] == "conv4" and r["bound"] == SAFE_BOUND and r["inputs"] == f"the inputs {npz}"
    by_layer = {d["layer"]: d["max_abs"] for d in r["layers"]}
    assert by_layer["image"] == float(x.max()) and by_layer["conv4"] > F16_MAX and by_layer["conv3"] < SAFE_BOUND
    # on the real runtime the Float16 network overflows where the float32 source does not
    (got,) = armnn_runner(out_file.read_bytes(), [x.astype(np.float16)])
    (want,) = _ort_values(model, ["logits"], x).values()
    assert np.isfinite(want).all() and not np.isfinite(got).all()
    code, out, err = main(capsys, "verify", model, out_file, "--inputs", npz, "--armnn-runtime", armnn_runner.path)
    assert code == 1
    row = next(line for line in out.splitlines() if line.startswith("logits"))
    assert row.split()[2] == "inf" and row.split()[-1] == "FAIL"
    assert err.splitlines() == ["armnn-import: error: verify failed (rtol 0.01, atol 0.02 x max |ref|, 1 LSB): "
                                "output 'logits' max abs error inf"]


def test_random_inputs_are_said_so(zoo, tmp_path, capsys):
    """Without --inputs the check runs on N(0,1), far smaller than this model's pixels: it passes,
    and the CLI says that the inputs were random."""
    _, model, _, _ = zoo
    code, out, err = main(capsys, model, "--fp16", "-o", tmp_path / "v.armnn")
    assert (code, err) == (0, "")
    (line,) = [line for line in out.splitlines() if "fp16 range" in line]
    assert line.startswith(f"{model}: fp16 range: largest |value| ")
    assert line.endswith("on seeded random inputs (float N(0,1), seed 0); "
                         "give real inputs with --inputs for a reliable check")
    r = armnn_import.convert(str(model), fp16=True).report.fp16_range
    assert r["random"] and r["over"] is None


def test_inputs_in_every_form_and_layout(zoo):
    _, model, npz, x = zoo
    for kwargs in ({}, {"layout": "nhwc"}, {"layout": "nhwc", "keep_io_layout": True}):
        for given in (str(npz), [str(npz)], [x], {"image": x}):
            with pytest.raises(armnn_import.ConversionError, match=r"layer 'conv4' \(Convolution2d\) reaches 102"):
                armnn_import.convert(str(model), fp16=True, fp16_inputs=given, **kwargs)
    assert armnn_import.convert(str(model), fp16=True, fp16_inputs=[x / 100]).report.fp16_range["over"] is None
    with pytest.raises(armnn_import.ConversionError, match="input 'image' has shape 1x2x32x32"):
        armnn_import.convert(str(model), fp16=True, fp16_inputs=[x[:, :2]])
    with pytest.raises(armnn_import.ConversionError, match="go with fp16=True"):
        armnn_import.convert(str(model), fp16_force=True)


def test_float32_inf_is_not_a_refusal():
    """A value already infinite in float32 (exp(200)) is no worse in Float16: noted, not refused."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    m = helper.make_model(helper.make_graph([helper.make_node("Exp", ["x"], ["y"], name="e")], "g", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 13)])
    r = armnn_import.convert(m, fp16=True, fp16_inputs=[np.array([[200, 1, 0, -1]], np.float32)]).report
    out = [d for d in r.fp16_range["layers"] if d.get("non_finite")]
    assert out and r.fp16_range["over"] is None and all(d["max_abs"] < 10 for d in out)


def test_quantized_network_has_nothing_to_check():
    path = os.path.join(ROOT, "onnx_quant", "mobilenetv2_small_qdq_u8.onnx")
    r = armnn_import.convert(path, fp16=True).report.fp16_range
    assert r["skipped"] == "the network has no float tensors" and r["layers"] == [] and r["over"] is None


def test_a_network_the_executor_cannot_run_is_converted_with_a_warning(zoo, monkeypatch):
    from armnn_import import fp16_range
    from armnn_import.errors import ExecutionError

    def fail(graph, arrays):
        raise ExecutionError("conv4: no such thing")
    monkeypatch.setattr(fp16_range, "layer_ranges", fail)
    r = armnn_import.convert(str(zoo[1]), fp16=True).report
    assert r.fp16_range["skipped"] == "the numpy executor cannot run the network: conv4: no such thing"
    assert r.warnings == ["fp16 range check skipped (the numpy executor cannot run the network: conv4: no such "
                          "thing); the Float16 network may overflow unnoticed"]


def test_fp16_weights_refused_with_its_reason(zoo, tmp_path, capsys):
    _, model, _, _ = zoo
    code, out, err = main(capsys, model, "--fp16-weights", "-o", tmp_path / "w.armnn")
    assert code == 1 and not (tmp_path / "w.armnn").exists()
    (line,) = err.splitlines()
    assert line.startswith(f"armnn-import: error: {model}: --fp16-weights: the Arm NN 19.02 format has no layer "
                           "that widens Float16 constants to Float32 at run time (no Cast or ConvertFp16ToFp32 "
                           "layer, and Arm NN 20.08's reference Dequantize takes only quantized inputs)")
    assert fp16_widening_layer(None) is None
    with pytest.raises(armnn_import.ConversionError, match="no layer that widens"):
        check_fp16_weights()
    with pytest.raises(armnn_import.ConversionError, match="no layer that widens"):
        armnn_import.convert(str(model), fp16_weights=True)
    # 23.08 has a Cast, but its weights live inside their layers in the files written
    with pytest.raises(armnn_import.ConversionError, match=r"Arm NN 23.08 format .*\(its Cast layer could, but "
                       r".*constantTensorsAsInputs 0\)"):
        armnn_import.convert(str(model), fp16_weights=True, target="23.08")
    with pytest.raises(armnn_import.ConversionError, match=r"Arm NN 20.08 format .*\(no Cast or ConvertFp16ToFp32"):
        armnn_import.convert(str(model), fp16_weights=True, target="20.08")


@pytest.mark.parametrize("args, message", [
    (["--fp16", "--fp16-weights"], "--fp16 and --fp16-weights exclude each other"),
    (["--fp16-force"], "--fp16-force goes with --fp16"),
    (["--inputs", "x.npz"], "--inputs goes with --fp16 (its range check) or --verify"),
])
def test_flag_combinations_are_usage_errors(zoo, capsys, args, message):
    _, model, _, _ = zoo
    code, out, err = main(capsys, model, *args)
    assert code == 2 and err.startswith(f"armnn-import: error: {message}")


def test_fp16_verify_uses_the_inputs(tmp_path, capsys):
    """The README's check: --inputs feeds both the range check and --verify."""
    model = os.path.join(ROOT, "onnx", "resnet_small.onnx")
    npz = os.path.join(ROOT, "onnx", "resnet_small.npz")
    code, out, err = main(capsys, model, "--fp16", "--inputs", npz, "--verify", "-o", tmp_path / "r.armnn")
    assert (code, err) == (0, "")
    assert f"{model}: fp16 range: largest |value| " in out and f"on the inputs {npz}" in out
    assert f"inputs: {npz}" in out.splitlines() and "verify: PASS (rtol 0.01, atol 0.02 x max |ref|, 1 LSB)" in out


def _reference_inputs(path, graph):
    data = np.load(os.path.splitext(path)[0] + ".npz")
    return [data[f"input_{i}"] for i in range(len(graph.input_layers))], data


@pytest.mark.parametrize("path", FLOAT_MODELS, ids=lambda p: os.path.relpath(p, ROOT))
def test_reference_models_pass_the_check(path):
    """No false refusal on the float reference models, with the seeded inputs or their own
    (N(0,1)-like) reference inputs; the range of the layer feeding each output is the
    source runtime's largest output value (from the model's .npz)."""
    rand = armnn_import.convert(path, fp16=True).report.fp16_range
    assert rand["over"] is None and rand["layers"]
    g = armnn_import.convert(path).network
    xs, data = _reference_inputs(path, g)
    result = armnn_import.convert(path, fp16=True, fp16_inputs=xs)
    r = result.report.fp16_range
    assert r["over"] is None and not r["skipped"]
    ranges = {d["layer"]: d["max_abs"] for d in r["layers"]}
    for k, out in enumerate(g.output_layers):
        p = out.inputs[0]
        name = p.layer.name if p.slot == 0 else f"{p.layer.name}:{p.slot}"
        if name in ranges:  # float outputs
            want = float(np.abs(data[f"output_{k}"]).max())
            assert ranges[name] == pytest.approx(want, rel=1e-4, abs=1e-5)
