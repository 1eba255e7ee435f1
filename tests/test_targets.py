"""--target: the richer formats of Arm NN 20.08 and 23.08, judged on the real runtime.

Every reference model that converts for the seed (19.02) converts for each richer target,
as the CLI writes it, and matches its source runtime (onnxruntime or LiteRT) when the
file runs on Arm NN (CpuRef) with no more layers that compute than the seed's file (see
_computing). The default stays the seed's format, byte for byte."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import armnn_import
from armnn_import import cli
from armnn_import.errors import ConversionError
from armnn_import.serialize import read
from armnn_import.target import RELEASES, get
from armnn_import.testing.armnn_runtime import harness_dir
from armnn_import.verify_cmd import Tolerance, verify

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # pytest runs with --import-mode=importlib
from reference_models import NOT_CONVERTING_YET, ROOT, converted, params  # noqa: E402
from test_verify_cmd import HYBRID_KERNEL_ATOL, PER_CHANNEL_REQUANTIZED_LSB  # noqa: E402

RICH = [r for r in RELEASES if r != "19.02"]
# Per-channel int8 weights are exact in the richer formats (QSymmS8 with per-axis scales,
# lowering/perchannel.py): every single-operator per-channel model matches LiteRT exactly (0 LSB
# on Arm NN 20.08 and 23.08). Whole networks still differ where Arm NN's float arithmetic rounds
# differently from LiteRT's fixed-point kernels and the differences grow layer by layer: the first
# layer off by more than 1 LSB is a LOGISTIC (efficientnet) or a pointwise convolution whose input
# is already 1 LSB off (mobilenet v1). Values: the largest error measured on Arm NN 20.08 and
# 23.08, in LSB (with per-tensor requantized weights they were 5, 4, 15 and 6).
RICH_NETWORK_LSB = {"tflite/models/efficientnet_mini.int8.tflite": 7,
                    "tflite/models/mobilenet_v1_025.int8.tflite": 4,
                    "tflite/models/mobilenet_v3_small_075.int8.tflite": 6}


def _computing(graph) -> list:
    """The layers that compute from the network's inputs. Not counted: a Constant layer (20.08's
    CpuRef writes nothing per inference, 23.08's copies its own values) and a Reshape of one (the
    same constant in another shape: NetBuilder.constant_layer's [1, 1, rows, last] form, the one
    Arm NN 23.08 reads right in a 20.08 file). So constant operands are free: a scaled
    BatchNormalization that becomes Multiplication + Addition by Constants (passes/bn_split.py,
    where CpuRef runs that faster) counts 2 for 1, and a richer target still computes with no
    more layers than the seed (densenet_mini on 20.08: 105 of 165 layers compute, the seed's 148)."""
    const = {id(l) for l in graph.layers if l.type.name == "Constant"}
    return [l for l in graph.layers if id(l) not in const
            and not (l.type.name == "Reshape" and id(l.inputs[0].layer) in const)]


def _convert_cli(path, out, *args) -> None:
    code = cli.main([str(path), "-o", str(out), "-q", *map(str, args)])
    assert code == 0, f"armnn-import {path} {' '.join(args)} exited with {code}"


@pytest.mark.parametrize("model_id, path, npz", params())
def test_reference_model_on_the_20_08_runtime(model_id, path, npz, armnn_runner, tmp_path):
    seed = converted(path)  # (a strict xfail where the seed target refuses the model)
    out = tmp_path / "model.armnn"
    _convert_cli(path, out, "--target", "20.08")
    graph = read(out.read_bytes())
    assert graph.target.release == "20.08"
    # a per-channel FullyConnected is an exact 1x1 Convolution2d between two Reshapes
    # (lowering/perchannel.py: neither CpuRef runs per-axis FullyConnected weights)
    extra = sum(l.name.endswith(("_perchannel_rows", "_perchannel_out")) for l in graph.layers)
    assert len(_computing(graph)) - extra <= len(_computing(seed.network))
    lsb = RICH_NETWORK_LSB.get(model_id, 1)
    tol = Tolerance(atol=HYBRID_KERNEL_ATOL.get(model_id, 1e-4), lsb=lsb)
    check = verify(path, str(out), tolerance=tol, armnn_runtime=armnn_runner.path)
    assert check.ok, check.format()
    # the numpy executor follows the runtime on the new fields (bias, dilation, NHWC) too
    check = verify(path, str(out), tolerance=tol)
    assert check.ok, check.format()


@pytest.mark.parametrize("target", RELEASES)
def test_round_trip_per_target(target):
    from armnn_import.ir.graph import graph_differences
    from armnn_import.serialize import write
    for name in ("onnx/resnet_small.onnx", "onnx/deeplab_aspp.onnx", "tflite/models/mobilenet_v2_035.float32.tflite",
                 "tflite/models/mobilenet_v1_mini.uint8.tflite"):
        g = armnn_import.convert(ROOT / name, target=target).network
        back = read(write(g))
        assert back.target == g.target == get(target)
        assert graph_differences(g, back) == [], name
        assert write(back) == write(g)


def test_rich_targets_carry_bias_dilation_and_nhwc():
    from armnn_import.ir.types import DataLayout, LayerType
    g = armnn_import.convert(ROOT / "onnx" / "deeplab_aspp.onnx", target="20.08").network
    convs = [l for l in g.layers if l.type == LayerType.Convolution2d]
    assert convs and all(c.desc.bias_enabled for c in convs)
    assert any(c.desc.dilation_x > 1 for c in convs)
    assert not any(l.type in (LayerType.SpaceToBatchNd, LayerType.BatchToSpaceNd) for l in g.layers)
    t = armnn_import.convert(ROOT / "tflite" / "models" / "mobilenet_v2_035.float32.tflite", target="20.08").network
    assert not any(l.type in (LayerType.Permute, LayerType.Transpose) for l in t.layers)
    assert {l.desc.data_layout for l in t.layers if l.type in (LayerType.Convolution2d,
                                                                LayerType.DepthwiseConvolution2d)} == {DataLayout.NHWC}


def test_default_target_is_the_seed_format():
    path = ROOT / "onnx" / "resnet_small.onnx"
    assert armnn_import.convert(path).to_bytes() == armnn_import.convert(path, target="19.02").to_bytes()
    assert read(armnn_import.convert(path).to_bytes()).target.release == "19.02"


def test_unknown_target_is_refused(capsys):
    with pytest.raises(ConversionError, match="unknown target '21.02'"):
        armnn_import.convert(ROOT / "onnx" / "resnet_small.onnx", target="21.02")
    code = cli.main([str(ROOT / "onnx" / "resnet_small.onnx"), "--target", "21.02"])
    assert code == 2
    assert "21.02" in capsys.readouterr().err


def test_inspect_and_report_show_the_target(tmp_path, capsys):
    out = tmp_path / "m.armnn"
    _convert_cli(ROOT / "onnx" / "resnet_small.onnx", out, "--target", "20.08", "--report", tmp_path / "r.json")
    import json
    assert json.loads((tmp_path / "r.json").read_text())["target"] == "20.08"
    capsys.readouterr()
    assert cli.main(["inspect", str(out)]) == 0
    assert "Arm NN 20.08 format" in capsys.readouterr().out
    assert cli.main(["inspect", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["target"] == "20.08"


def test_ops_lists_what_each_target_takes(capsys):
    assert cli.main(["ops", "--target", "19.02", "--format", "onnx"]) == 0
    seed = capsys.readouterr().out
    assert cli.main(["ops", "--target", "20.08", "--format", "onnx"]) == 0
    rich = capsys.readouterr().out
    assert "ArgMax" not in seed and "LogSoftmax" not in seed
    assert "ArgMax" in rich and "LogSoftmax" in rich and "  Log  " not in rich
    assert cli.main(["ops", "--format", "onnx"]) == 0
    assert "needs --target 23.08" in capsys.readouterr().out


def test_an_operator_of_a_richer_format_is_refused_with_the_target_to_use(tmp_path, capsys):
    import onnx
    from onnx import TensorProto as TP
    from onnx import helper as h
    g = h.make_graph([h.make_node("ArgMax", ["x"], ["y"], axis=1)], "g",
                     [h.make_tensor_value_info("x", TP.FLOAT, [2, 5])], [h.make_tensor_value_info("y", TP.INT64, None)])
    src = tmp_path / "argmax.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), src)
    assert cli.main([str(src), "-o", str(tmp_path / "a.armnn")]) == 1
    err = capsys.readouterr().err
    assert "needs the Arm NN 20.08 format" in err and "--target 20.08" in err
    assert cli.main([str(src), "-o", str(tmp_path / "a.armnn"), "--target", "20.08", "-q"]) == 0


@pytest.mark.parametrize("name", ["resnet_small", "mobilenetv2_small", "squeezenet_small", "deeplab_aspp"])
def test_onnx_cnn_in_nhwc_has_no_permute_from_20_08(name, armnn_runner, tmp_path):
    """--layout nhwc: the input's Permute sinks through the convolutions (which take NHWC from
    the 20.08 format on) until it meets the output's, and a Permute of unit axes is a Reshape."""
    from armnn_import.ir.types import LayerType
    path = ROOT / "onnx" / f"{name}.onnx"
    out = tmp_path / "m.armnn"
    _convert_cli(path, out, "--target", "20.08", "--layout", "nhwc", "--report", tmp_path / "r.json")
    graph = read(out.read_bytes())
    assert not [l for l in graph.layers if l.type in (LayerType.Permute, LayerType.Transpose)]
    assert graph.input_layers[0].outputs[0].shape[-1] == 3  # NHWC input
    check = verify(path, str(out), report=str(tmp_path / "r.json"), armnn_runtime=armnn_runner.path)
    assert check.ok, check.format()


RUNNER_23_08 = os.environ.get("ARMNN_RUNNER_23_08", str(harness_dir("23.08") / "armnn-run"))  # this Debian's (plan.py)
PER_CHANNEL_MODELS = [p for p in params() if p.values[0] in PER_CHANNEL_REQUANTIZED_LSB
                      or p.values[0] == "tflite/ops/fully_connected_pruned.sparseint8.tflite"]


@pytest.mark.parametrize("model_id, path, npz", PER_CHANNEL_MODELS)
@pytest.mark.parametrize("target", RICH)
def test_per_channel_model_on_the_23_08_runtime(target, model_id, path, npz, tmp_path):
    """Per-channel int8 TFLite models written for 20.08 and 23.08, on Arm NN 23.08: exact weights,
    so every single-operator model is within 1 LSB of LiteRT (see RICH_NETWORK_LSB)."""
    if not os.access(RUNNER_23_08, os.X_OK):
        pytest.skip(f"no Arm NN 23.08 runner at {RUNNER_23_08}")
    out = tmp_path / "model.armnn"
    _convert_cli(path, out, "--target", target)
    tol = Tolerance(atol=HYBRID_KERNEL_ATOL.get(model_id, 1e-4), lsb=RICH_NETWORK_LSB.get(model_id, 1))
    check = verify(path, str(out), tolerance=tol, armnn_runtime=RUNNER_23_08)
    assert check.ok, check.format()


ONNX_QUANT = ROOT / "onnx_quant"
S8PC = sorted(p.stem for p in ONNX_QUANT.glob("*_s8pc.onnx"))


@pytest.mark.parametrize("name", S8PC)
@pytest.mark.parametrize("target, release", [("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")])
def test_onnx_per_channel_networks_within_one_level(target, release, name, armnn_runner, tmp_path):
    """onnxruntime quantize_static per-channel int8 networks (QDQ and QOperator): per-axis weights
    and float inputs and outputs (Quantize and Dequantize layers at the edges) on the rich targets,
    within 1 LSB of the output's quantization of onnxruntime on the real runtimes (the 19.02
    target's requantized weights are 3 to 13 LSB off on these inputs)."""
    runner = armnn_runner.path if release == "20.08" else RUNNER_23_08
    if not os.access(runner, os.X_OK):
        pytest.skip(f"no Arm NN {release} runner at {runner}")
    src = ONNX_QUANT / f"{name}.onnx"
    out = tmp_path / "model.armnn"
    _convert_cli(src, out, "--target", target)
    graph = read(out.read_bytes())
    assert any(ct.info.scales for l in graph.layers for ct in l.tensors.values())
    from armnn_import.ir.types import DataType, LayerType
    assert [l.outputs[0].dtype for l in graph.input_layers] == [DataType.Float32]
    deq = [l for l in graph.layers if l.type == LayerType.Dequantize]
    assert len(deq) == len(graph.output_layers) == 1 and graph.output_layers[0].inputs[0].layer is deq[0]
    step = deq[0].inputs[0].info.scale
    data = np.load(ONNX_QUANT / f"{name}.npz")
    check = verify(src, str(out), inputs=[data["input_0"]], tolerance=Tolerance(lsb=1), armnn_runtime=runner)
    assert check.outputs[0].max_abs <= step * 1.001, check.format()  # at most 1 level of the output


@pytest.mark.parametrize("model_id, path, npz", params())
def test_depthwise_reference_model_on_the_23_08_runtime(model_id, path, npz, tmp_path):
    """The 23.08 target writes weightsLayoutScheme 1 and depthwise weights [1, H, W, I*M]
    (serialize/layouts.py): every reference model with a DepthwiseConvolution2d, as the CLI
    writes it for 23.08, matches its source runtime on Arm NN 23.08, and reads back to
    the IR's [M, I, H, W]."""
    converted(path)  # (a strict xfail where the seed target refuses the model)
    out = tmp_path / "model.armnn"
    _convert_cli(path, out, "--target", "23.08")
    from armnn_import.ir.types import LayerType
    graph = read(out.read_bytes())
    dw = [l for l in graph.layers if l.type == LayerType.DepthwiseConvolution2d]
    if not dw:
        pytest.skip("no DepthwiseConvolution2d under --target 23.08")
    if not os.access(RUNNER_23_08, os.X_OK):
        pytest.skip(f"no Arm NN 23.08 runner at {RUNNER_23_08}")
    c = dw[0].inputs[0].info.shape[1 if dw[0].desc.data_layout == 1 else 3]
    assert dw[0].tensors["weights"].info.shape[1] == c  # [M, I, H, W] again
    tol = Tolerance(atol=HYBRID_KERNEL_ATOL.get(model_id, 1e-4), lsb=RICH_NETWORK_LSB.get(model_id, 1))
    check = verify(path, str(out), tolerance=tol, armnn_runtime=RUNNER_23_08)
    assert check.ok, check.format()


_LAYERS_23_08 = ("Reduce", "LogicalBinary", "Tile", "ReverseV2", "ElementwiseUnary")


@pytest.mark.parametrize("model_id, path, npz", [pytest.param(*p.values, id=p.id) for p in params()])
def test_23_08_layers_reference_model_on_the_23_08_runtime(model_id, path, npz, tmp_path):
    """Every reference model whose --target 23.08 file (as the CLI writes it) holds one of the
    23.08 format's Reduce, LogicalBinary, Tile, ReverseV2 or ElementwiseUnary layers matches its
    source runtime on Arm NN 23.08 (quantized: within 1 LSB), and the numpy executor matches too.
    (No strict xfail here: models the default target refuses, such as the logical ones and
    quantized REDUCE_PROD, convert for 23.08.)"""
    out = tmp_path / "model.armnn"
    if model_id in NOT_CONVERTING_YET and cli.main([str(path), "-o", str(out), "-q", "--target", "23.08"]):
        pytest.skip("refused by the default target, and by 23.08 too (e.g. a quantized EXP)")
    _convert_cli(path, out, "--target", "23.08")
    graph = read(out.read_bytes())
    if not any(l.type.name in _LAYERS_23_08 for l in graph.layers):
        pytest.skip("none of the 23.08 layers under --target 23.08")
    if not os.access(RUNNER_23_08, os.X_OK):
        pytest.skip(f"no Arm NN 23.08 runner at {RUNNER_23_08}")
    tol = Tolerance(atol=HYBRID_KERNEL_ATOL.get(model_id, 1e-4), lsb=RICH_NETWORK_LSB.get(model_id, 1))
    check = verify(path, str(out), tolerance=tol, armnn_runtime=RUNNER_23_08)
    assert check.ok, check.format()
    check = verify(path, str(out), tolerance=tol)
    assert check.ok, check.format()
