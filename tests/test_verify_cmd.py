"""`armnn-import verify` and `--verify`: the source model runs in onnxruntime or
LiteRT (the independent reference), the .armnn file in the numpy executor."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from armnn_import import cli
from armnn_import.ir.types import ConstTensor, LayerType
from armnn_import.serialize import read
from armnn_import.verify_cmd import MissingRuntimeError, Tolerance, VerifyError, verify

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # pytest runs with --import-mode=importlib
from reference_models import ROOT, converted, flip_weight, params  # noqa: E402

# With verify's seeded random inputs (8-bit inputs over their whole range), these quantized
# outputs are off by more than 1 LSB. All hold per-channel int8 weights: a convolution keeps them
# exact as one layer per run of channels sharing a scale (lowering/quant.py, MAX_CHANNEL_RUNS),
# but the layers past that many channels, and dilated ones, requantize them to one scale per
# tensor (Arm NN 20.08's QuantisedAsymm8 has no per-axis quantization); in the networks the
# error of each layer adds up over many layers. test_wider_tolerances_are_requantizations
# checks the report says so. Values: the largest error measured, in LSB.
PER_CHANNEL_REQUANTIZED_LSB = {
    "tflite/models/efficientnet_mini.int8.tflite": 8, "tflite/models/mobilenet_v1_025.int8.tflite": 5,
    "tflite/models/mobilenet_v2_035.int8.tflite": 14, "tflite/models/mobilenet_v3_small_075.int8.tflite": 5,
    "tflite/ops/conv_2d_dilated.int8.tflite": 2, "tflite/ops/conv_2d_dilated.uint8io.tflite": 2,
    "tflite/ops/depthwise_conv_2d_dilated.int8.tflite": 2,
    "tflite/ops/depthwise_conv_2d_dilated.uint8io.tflite": 2,
}
# LiteRT's hybrid (dynamic-range) kernels quantize the float activations to int8 on the fly, so
# the source runtime itself is off from the float computation the .armnn network does.
HYBRID_KERNEL_ATOL = {"tflite/ops/conv_fc.dynamic.tflite": 1e-2}

ONNX_RESNET = ROOT / "onnx" / "resnet_small.onnx"
TFLITE_RESNET = ROOT / "tflite" / "models" / "resnet_mini.float32.tflite"
# A float network whose output depends on every conv's weights, so one changed weight shows at
# its output (the TFLite networks were regenerated to be input-sensitive; this one is the smallest).
TFLITE_SENSITIVE = ROOT / "tflite" / "models" / "mobilenet_v1_mini.float32.tflite"


def main(capsys, *args):
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("model_id, path, npz", params())
def test_verify_passes_on_reference_model(model_id, path, npz):
    result = converted(path)
    tol = Tolerance(atol=HYBRID_KERNEL_ATOL.get(model_id, 1e-4), lsb=PER_CHANNEL_REQUANTIZED_LSB.get(model_id, 1))
    float_model = not any(o.get("quantization") for o in result.report.inputs + result.report.outputs)
    # verify reads the written bytes back; float models are also checked layer by layer
    check = verify(path, result.to_bytes(), report=result.report, tolerance=tol,
                   per_layer=float_model and model_id not in HYBRID_KERNEL_ATOL)
    assert check.ok, check.format()
    assert len(check.outputs) == len(result.network.output_layers)
    if check.layers is not None:
        # no false alarm: every source node whose tensor the .armnn file has agrees (or is
        # put right one step later, where a pass merged two nodes' layers)
        assert check.first_divergence is None, check.format()


@pytest.mark.parametrize("model_id", sorted(PER_CHANNEL_REQUANTIZED_LSB))
def test_wider_tolerances_are_requantizations(model_id):
    report = converted(ROOT / model_id).report
    assert any("per-channel" in q.get("decision", "") and "requantized" in q["decision"]
               for q in report.quantization), report.quantization


def test_flipped_weight_fails_and_per_layer_names_the_layer(tmp_path, capsys):
    import armnn_import

    result = armnn_import.convert(ONNX_RESNET)
    layer = flip_weight(result, LayerType.Convolution2d)
    broken = tmp_path / "broken.armnn"
    result.save(broken)
    report = tmp_path / "report.json"
    report.write_text(json.dumps(result.report.to_dict()))

    code, out, err = main(capsys, "verify", ONNX_RESNET, broken)
    assert code == 1 and "FAIL" in out
    assert len(err.splitlines()) == 1 and err.startswith("armnn-import: error: verify failed")

    code, out, err = main(capsys, "verify", ONNX_RESNET, broken, "--per-layer", "--report", report)
    assert code == 1
    assert f"first diverging layer: {layer.name!r}" in out
    assert f"first diverging layer {layer.name!r}" in err

    # without --report, the node -> layers map comes from converting the source again
    code, out, _ = main(capsys, "verify", ONNX_RESNET, broken, "--per-layer")
    assert code == 1 and f"first diverging layer: {layer.name!r}" in out


def test_flipped_weight_in_tflite_model_named_by_its_node(tmp_path):
    import armnn_import

    result = armnn_import.convert(TFLITE_SENSITIVE)
    layer = flip_weight(result, LayerType.Convolution2d)
    check = verify(TFLITE_SENSITIVE, result.to_bytes(), report=result.report, per_layer=True)
    assert not check.ok
    # a TFLite node (conv + bias + fused activation) is several layers; its last one shows the error
    node = next(n for n in result.report.nodes if layer.name in n["layers"])
    assert check.first_divergence.name == node["layers"][-1]
    assert check.first_divergence.node == node["node"]


def test_untouched_files_pass_from_the_command_line(tmp_path, capsys):
    out_file = tmp_path / "m.armnn"
    code, out, err = main(capsys, ONNX_RESNET, "-o", out_file, "--verify")
    assert (code, err) == (0, "")
    assert "verify: PASS (rtol 0.001, atol 0.0001, 1 LSB)" in out
    assert out.count("ok") >= 1 and "max abs err" in out
    code, out, err = main(capsys, "verify", ONNX_RESNET, out_file, "--quiet")
    assert (code, out, err) == (0, "", "")


def test_verify_on_convert_fails_with_exit_1(tmp_path, capsys, monkeypatch):
    # a tolerance nothing meets: the conversion is written, the verdict fails
    code, out, err = main(capsys, ONNX_RESNET, "-o", tmp_path / "m.armnn", "--verify", "--atol", "0",
                          "--rtol", "0")
    assert code == 1 and (tmp_path / "m.armnn").exists()
    assert "verify: FAIL" in out and "verify failed" in err


def test_inputs_from_npz_and_npy(tmp_path, capsys):
    model = ROOT / "tflite" / "models" / "mobilenet_v1_mini.int8.tflite"
    npz = ROOT / "tflite" / "models" / "mobilenet_v1_mini.int8.npz"
    armnn_file = tmp_path / "m.armnn"
    converted(model).save(armnn_file)
    # the reference .npz (keys input_0, output_0) feeds the same inputs LiteRT's expected outputs came from
    code, out, _ = main(capsys, "verify", model, armnn_file, "--inputs", npz, "--lsb", "3")
    assert code == 0 and f"inputs: {npz}" in out
    x = np.load(npz)["input_0"]
    np.save(tmp_path / "x.npy", x)
    code, out2, _ = main(capsys, "verify", model, armnn_file, "--inputs", tmp_path / "x.npy", "--lsb", "3")
    assert code == 0 and out2.splitlines()[2:] == out.splitlines()[2:]  # same errors
    # the int8 input reached the QuantisedAsymm8 network as uint8 (+128): check against LiteRT's own output
    check = verify(model, armnn_file, inputs=[x], tolerance=Tolerance(lsb=3))
    assert check.ok and check.outputs[0].lsb <= 3

    code, _, err = main(capsys, "verify", model, armnn_file, "--inputs", tmp_path / "x.npy", tmp_path / "x.npy")
    assert code == 1 and "has 1 inputs" in err and len(err.splitlines()) == 1
    np.save(tmp_path / "bad.npy", x[:, :3])
    code, _, err = main(capsys, "verify", model, armnn_file, "--inputs", tmp_path / "bad.npy")
    assert code == 1 and "shape" in err and len(err.splitlines()) == 1


def test_layout_change_is_followed(tmp_path):
    """--layout nchw makes the .armnn input NCHW; verify permutes the NHWC source inputs."""
    import armnn_import

    result = armnn_import.convert(TFLITE_RESNET, layout="nchw")
    entry = result.report.inputs[0]
    assert (entry["source_layout"], entry["layout"]) == ("NHWC", "NCHW")
    n, h, w, c = [int(d) for d in np.load(str(TFLITE_RESNET).replace(".tflite", ".npz"))["input_0"].shape]
    assert tuple(result.network.input_layers[0].outputs[0].shape) == (n, c, h, w)
    for report in (result.report, None):  # from the report's layouts, or from the shapes alone
        check = verify(TFLITE_RESNET, result.to_bytes(), report=report)
        assert check.ok, check.format()


def test_quantized_output_error_in_lsb(tmp_path):
    model = ROOT / "tflite" / "models" / "mobilenet_v1_mini.uint8.tflite"
    result = converted(model)
    check = verify(model, result.to_bytes())
    out = check.outputs[0]
    scale = result.report.outputs[0]["quantization"]["scale"]
    assert out.lsb is not None and out.lsb == pytest.approx(out.max_abs / scale, abs=1e-3)
    assert check.ok and out.lsb <= 1


def test_armnn_runtime_option(armnn_release_runner, tmp_path, capsys):
    out_file = tmp_path / "m.armnn"
    converted(ONNX_RESNET).save(out_file)
    code, out, err = main(capsys, "verify", ONNX_RESNET, out_file, "--armnn-runtime", armnn_release_runner.path)
    assert (code, err) == (0, "") and "Arm NN runner" in out and "verify: PASS" in out
    code, _, err = main(capsys, "verify", ONNX_RESNET, out_file, "--armnn-runtime", tmp_path / "nope")
    assert code == 1 and "not an executable file" in err
    # --per-layer on the runtime: the compared tensors become extra network outputs
    code, out, err = main(capsys, "verify", ONNX_RESNET, out_file, "--armnn-runtime", armnn_release_runner.path,
                          "--per-layer")
    assert (code, err) == (0, "") and "first diverging layer: none" in out and "Arm NN runner" in out


@pytest.mark.parametrize("model, module, package", [
    (ONNX_RESNET, "onnxruntime", "onnxruntime"),
    (TFLITE_RESNET, "ai_edge_litert.interpreter", "ai-edge-litert"),
])
def test_missing_runtime_names_the_package(tmp_path, capsys, monkeypatch, model, module, package):
    out_file = tmp_path / "m.armnn"
    converted(model).save(out_file)
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` raise ImportError
    code, out, err = main(capsys, "verify", model, out_file)
    assert (code, out) == (1, "")
    assert err.splitlines() == [f"armnn-import: error: verifying {'an ONNX' if 'onnx' in module else 'a TFLite'} "
                                f"model needs {package}: pip install armnn-import[verify] "
                                f"(or pip install {package})"]
    with pytest.raises(MissingRuntimeError):
        verify(model, out_file)


def test_errors_are_one_line(tmp_path, capsys):
    armnn_file = tmp_path / "m.armnn"
    converted(ONNX_RESNET).save(armnn_file)
    other = ROOT / "tflite" / "models" / "mobilenet_v1_mini.float32.tflite"
    for args in (("verify", other, armnn_file),                     # another model's file
                 ("verify", armnn_file, armnn_file),                # not a source model
                 ("verify", ONNX_RESNET, ONNX_RESNET),              # not an .armnn file
                 ("verify", ONNX_RESNET, armnn_file, "--report", ONNX_RESNET)):
        code, _, err = main(capsys, *args)
        assert code == 1 and len(err.splitlines()) == 1 and err.startswith("armnn-import: error: "), (args, err)
    with pytest.raises(VerifyError):
        verify(other, armnn_file)
    code, _, err = main(capsys, "verify", ONNX_RESNET, armnn_file, "--lsb", "-1")
    assert code == 2


def test_result_of_the_api(tmp_path):
    result = converted(ONNX_RESNET)
    graph = read(result.to_bytes())
    check = verify(ONNX_RESNET, graph, seed=3)
    d = check.to_dict()
    assert d["ok"] is True and d["outputs"][0]["name"] == "output" and "seed 3" in d["inputs"]
    # another seed gives other inputs, so other (still passing) errors
    assert verify(ONNX_RESNET, graph, seed=4).outputs[0].max_abs != check.outputs[0].max_abs


def test_in_memory_sources_and_fixed_batch():
    import armnn_import
    import onnx
    import tflite

    graph = converted(ONNX_RESNET).network
    assert verify(onnx.load(ONNX_RESNET), graph).ok
    buf = TFLITE_RESNET.read_bytes()
    tgraph = converted(TFLITE_RESNET).network
    assert verify(tflite.Model.GetRootAsModel(buf, 0), tgraph).ok and verify(buf, tgraph).ok
    # an open batch dimension fixed at conversion: the source runs with the same batch of 4
    model = ROOT / "onnx" / "cnn_dynamic_batch.onnx"
    result = armnn_import.convert(model, input_shapes={"input": (4, 3, 40, 48)})
    check = verify(model, result.network)
    assert check.ok and check.outputs[0].shape == (4, 10)


# -- --per-layer on a QDQ model: fused groups (issue 19) ------------------------------------
QDQ_MOBILENET = ROOT / "onnx_quant" / "mobilenetv2_like_qdq_u8.onnx"
QDQ_INPUT = ROOT / "onnx_quant" / "mobilenetv2_like_qdq_u8.npz"


def test_per_layer_on_correct_qdq_mobilenet_names_no_layer():
    """Every Conv computes into the quantization of the QuantizeLinear after it (which folds
    its ReLU6): the group is compared at its last node, in levels, so nothing diverges."""
    result = converted(QDQ_MOBILENET)
    check = verify(QDQ_MOBILENET, result.to_bytes(), report=result.report, per_layer=True,
                   inputs=[QDQ_INPUT])
    assert check.ok and check.first_divergence is None, check.format()
    # every source node is compared or skipped under a named reason
    assert check.uncompared == sum(len(v) for v in check.skipped.values())
    assert set(check.skipped) <= {"folded to constants (no run-time tensor)",
                                  "fused into the node after them (compared at the group's last node)",
                                  "whose .armnn tensor a pass removed"}
    # the one removed tensor: the Flatten before the classifier (with its QDQ pair), the
    # FullyConnected's own flatten (passes/fc_flatten.py); its values are the FC's input's
    rec = {n["node"]: n for n in result.report.nodes}
    for name in check.skipped.get("whose .armnn tensor a pass removed", []):
        assert "Flatten" in {rec[m]["op"] for m in [name] + rec[name].get("fused", [])}, rec[name]
    fused = set(check.skipped["fused into the node after them (compared at the group's last node)"])
    ops = {c.node: c for c in check.layers}
    convs = [n["node"] for n in result.report.nodes if n["op"] == "Conv"]
    assert convs and set(convs) <= fused  # a Conv's own (float, pre-ReLU6) output is never compared
    # the tensor of each Conv is compared at its group's DequantizeLinear, in levels
    groups = [c for c in check.layers if any(f in convs for f in c.fused)]
    assert len(groups) == len(convs) and all(c.op == "DequantizeLinear" and c.lsb is not None for c in groups)
    assert len(ops) == len(check.layers) >= 60
    assert "first diverging layer: none" in check.format()


def _flip_quantized(result, layer_type):
    """Move the largest weight of the middle quantized layer of `layer_type` to the far end of
    the other side of its zero point (a depthwise kernel's first row: an input row, not one of
    the rows that add the bias)."""
    layers = [l for l in result.network.layers if l.type == layer_type and "weights" in l.tensors]
    layer = layers[len(layers) // 2]
    w = layer.tensors["weights"]
    data = w.data.copy()
    part = data[:, :, 0, :] if data.ndim == 4 else data
    k = np.unravel_index(int(np.argmax(np.abs(part.astype(np.int32) - w.info.offset))), part.shape)
    part[k] = 0 if part[k] > w.info.offset else 255
    layer.tensors["weights"] = ConstTensor(data, w.info)
    return layer


@pytest.mark.parametrize("layer_type", [LayerType.DepthwiseConvolution2d, LayerType.FullyConnected])
def test_per_layer_names_the_qdq_layer_with_a_wrong_weight(tmp_path, capsys, layer_type):
    import armnn_import

    result = armnn_import.convert(QDQ_MOBILENET)
    layer = _flip_quantized(result, layer_type)
    broken = tmp_path / "broken.armnn"
    result.save(broken)
    report = tmp_path / "report.json"
    report.write_text(json.dumps(result.report.to_dict()))
    # the node that made the layer, and the last node of its fused group (its QuantizeLinear's
    # DequantizeLinear), where the comparison is made
    node = next(n for n in result.report.nodes if layer.name in n["layers"])
    last = next(n for n in result.report.nodes if n["node"] == node.get("fused_into", node["node"]))
    check = verify(QDQ_MOBILENET, broken, report=report, per_layer=True, inputs=[QDQ_INPUT])
    d = check.first_divergence
    assert d is not None and d.node == last["node"] and node["node"] in d.fused, check.format()
    assert d.lsb > 1
    code, out, _ = main(capsys, "verify", QDQ_MOBILENET, broken, "--per-layer", "--report", report,
                        "--inputs", QDQ_INPUT)
    assert f"first diverging layer: {d.name!r}" in out and repr(node["node"]) in out


def test_per_layer_on_the_runtime_names_the_qdq_layer_with_a_wrong_weight(armnn_runner, tmp_path):
    """The same comparison on Arm NN 20.08 itself (its intermediate tensors as extra outputs)."""
    import armnn_import

    good = converted(QDQ_MOBILENET)
    check = verify(QDQ_MOBILENET, good.to_bytes(), report=good.report, per_layer=True, inputs=[QDQ_INPUT],
                   armnn_runtime=armnn_runner.path)
    assert check.ok and check.first_divergence is None and len(check.layers) >= 60, check.format()
    result = armnn_import.convert(QDQ_MOBILENET)
    layer = _flip_quantized(result, LayerType.DepthwiseConvolution2d)
    node = next(n for n in result.report.nodes if layer.name in n["layers"])
    check = verify(QDQ_MOBILENET, result.to_bytes(), report=result.report, per_layer=True, inputs=[QDQ_INPUT],
                   armnn_runtime=armnn_runner.path)
    d = check.first_divergence
    assert d is not None and d.node == node["fused_into"] and node["node"] in d.fused, check.format()
    # the network itself is unchanged: only its own outputs
    assert len(read(result.to_bytes()).output_layers) == 1


def test_qdq_reference_is_the_graph_as_written():
    """A QDQ model is checked against onnxruntime with its optimizations off: the graph as written
    (DequantizeLinear, float operator, QuantizeLinear), which onnx.reference computes too. Its fused
    int8 kernels saturate on CPUs without VNNI (CI's machine), several levels off that."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from onnx.reference import ReferenceEvaluator
    from armnn_import_frontends.onnx.verify import OnnxSource
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s"), numpy_helper.from_array(np.array(3, np.int8), "z"),
             numpy_helper.from_array(rng.integers(-127, 128, (8, 4, 3, 3)).astype(np.int8), "wq"),
             numpy_helper.from_array(np.array(0.02, np.float32), "ws"), numpy_helper.from_array(np.array(0, np.int8), "wz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"]),
             helper.make_node("Conv", ["xd", "wd"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c", "s", "z"], ["cq"]),
             helper.make_node("DequantizeLinear", ["cq", "s", "z"], ["y"])]
    g = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 6, 6])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    onnx.checker.check_model(model)
    src = OnnxSource(model)
    assert "optimizations off" in src.runtime
    x = rng.standard_normal((1, 4, 6, 6)).astype(np.float32) * 2
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    # within one level: the float Conv's summation order (its CPU kernel) may tip a rounding tie
    np.testing.assert_allclose(src.run([x])[0], want, atol=0.05 * 1.001)
