"""passes/conv_fc.py: a Convolution2d whose one window covers its whole input is a
FullyConnected where that adds no layer. Each model is converted by the CLI twice, with the
pass and without it (main's pipeline), and both written files run on the real Arm NN
runtimes (19.02 and 20.08 files on 20.08 and 23.08, 23.08 files on 23.08): the outputs are
bit-identical (the same sums in the same order, ConvImpl.cpp vs FullyConnected.cpp), and the
new file matches LiteRT / onnxruntime. Where a reader needs the 4-D shape, where the weights
are per-axis, or where the layout sums in another order (NHWC with a window > 1x1), the file
is byte-identical to the one without the pass."""
from __future__ import annotations

import collections
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import armnn_import.passes as passes
from armnn_import import cli
from armnn_import.ir.types import LayerType as L
from armnn_import.serialize import read
from armnn_import.verify_cmd import Tolerance, verify

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tflite"))
from reference_models import ROOT  # noqa: E402
from tfl_builder import ModelBuilder  # noqa: E402

TARGETS = {"20.08": ("19.02", "20.08"), "23.08": ("19.02", "20.08", "23.08")}
WITHOUT = tuple(p for p in passes.PIPELINE if p[0] != "convs_as_fully_connected")
NP_TYPES = {"Float32": np.float32, "Float16": np.float16, "QAsymmS8": np.int8, "QuantisedAsymm8": np.uint8}


def _convert(src, out, target, monkeypatch, *, with_pass=True, extra=()):
    with monkeypatch.context() as m:
        if not with_pass:
            m.setattr(passes, "PIPELINE", WITHOUT)
        assert cli.main([str(src), "-o", str(out), "-q", "--target", target, *extra]) == 0
    return collections.Counter(l.type for l in read(out.read_bytes()).layers)


def _inputs(path, seed=0):
    rng = np.random.default_rng(seed)
    arrays = []
    for layer in read(path.read_bytes()).input_layers:
        info = layer.outputs[0]
        dt = NP_TYPES[info.dtype.name]
        if np.issubdtype(dt, np.floating):
            arrays.append(rng.standard_normal(info.shape).astype(dt))
        else:
            arrays.append(rng.integers(np.iinfo(dt).min, np.iinfo(dt).max + 1, info.shape).astype(dt))
    return arrays


def _pair(src, tmp_path, target, monkeypatch, extra=()):
    """(new file, its layer counts, old file, its layer counts)."""
    new, old = tmp_path / f"new_{target}.armnn", tmp_path / f"old_{target}.armnn"
    return (new, _convert(src, new, target, monkeypatch, extra=extra),
            old, _convert(src, old, target, monkeypatch, with_pass=False, extra=extra))


def _bit_identical(runner, new, old):
    x = _inputs(new)
    a, b = runner(new, x), runner(old, x)
    assert len(a) == len(b)
    for u, v in zip(a, b):
        assert u.dtype == v.dtype and u.shape == v.shape and u.tobytes() == v.tobytes()


def _matches_source(src, new, runner, lsb=1.0):
    for runtime in (runner.path, None):  # the release's CpuRef, then the numpy executor
        result = verify(src, str(new), tolerance=Tolerance(atol=1e-4, lsb=lsb), armnn_runtime=runtime)
        assert result.ok, result.format()


# -- TFLite: CONV_2D 1x1 on [N, 1, 1, C] -> RESHAPE [N, O] -----------------------------------------
def _tflite_model(kind, act, n=2, c=24, o=7):
    """(LiteRT runs no CONV_2D without a bias: "Tensor at index 2 was optional but was expected";
    the ONNX cases convert a convolution without one.)"""
    rng = np.random.default_rng(len(kind) + len(act))
    mb, q = ModelBuilder(), None
    if kind == "float32":
        x = mb.input("x", [n, 1, 1, c])
        w = mb.const("w", rng.standard_normal((o, 1, 1, c)).astype(np.float32))
        b = mb.const("b", rng.standard_normal(o).astype(np.float32))
    else:
        dt, zp, wz = (np.int8, -3, 0) if kind == "int8" else (np.uint8, 125, 120)
        x = mb.input("x", [n, 1, 1, c], dt, quant=(0.05, zp))
        info = np.iinfo(dt)
        w = mb.const("w", rng.integers(info.min + (dt == np.int8), info.max + 1, (o, 1, 1, c)).astype(dt),
                     quant=(0.02, wz))
        b = mb.const("b", rng.integers(-500, 500, o).astype(np.int32), quant=(0.05 * 0.02, 0))
        q = (0.1, 2 if dt == np.int8 else 130)
    y = mb.op("CONV_2D", [x, w, b], "Conv2DOptions", padding="VALID", stride_w=1, stride_h=1,
              fused_activation_function=act, out_quant=q)
    mb.output(mb.op("RESHAPE", [y, mb.const("shape", np.array([n, o], np.int32))], out_quant=q))
    return mb.build()


TFLITE_CASES = [("float32", "NONE"), ("float32", "RELU"), ("float32", "RELU6"), ("int8", "NONE"), ("int8", "RELU"),
                ("uint8", "NONE"), ("uint8", "RELU6")]


@pytest.mark.parametrize("kind, act", TFLITE_CASES)
def test_tflite_1x1_conv_on_1x1_is_a_fully_connected(kind, act, armnn_release_runner, tmp_path, monkeypatch):
    src = tmp_path / "conv.tflite"
    src.write_bytes(_tflite_model(kind, act))
    for target in TARGETS[armnn_release_runner.release]:
        new, types, old, old_types = _pair(src, tmp_path, target, monkeypatch)
        assert types[L.Convolution2d] == 0 and types[L.FullyConnected] == 1, (target, types)
        if target != "19.02" or kind == "float32":  # (a quantized 19.02 convolution is a FullyConnected already)
            assert old_types[L.Convolution2d] == 1 and types[L.Reshape] == 0, (target, old_types, types)
            assert types[L.Permute] == types[L.StridedSlice] == types[L.Addition] == 0, (target, types)
        assert sum(types.values()) <= sum(old_types.values())
        _bit_identical(armnn_release_runner, new, old)
        _matches_source(src, new, armnn_release_runner)


@pytest.mark.parametrize("target", ["20.08", "23.08"])
def test_float16_network_too(target, armnn_release_runner, tmp_path, monkeypatch):
    if target not in TARGETS[armnn_release_runner.release]:
        pytest.skip(f"a {target} file does not run on Arm NN {armnn_release_runner.release}")
    src = tmp_path / "conv.tflite"
    src.write_bytes(_tflite_model("float32", "RELU"))
    new, types, old, _ = _pair(src, tmp_path, target, monkeypatch, extra=("--fp16",))
    fc = next(l for l in read(new.read_bytes()).layers if l.type == L.FullyConnected)
    assert types[L.Convolution2d] == 0 and fc.outputs[0].dtype.name == "Float16"
    _bit_identical(armnn_release_runner, new, old)


def _perchannel_model(n=2, c=16, o=5):
    rng = np.random.default_rng(9)
    mb = ModelBuilder()
    x = mb.input("x", [n, 1, 1, c], np.int8, quant=(0.05, -3))
    s = rng.uniform(0.01, 0.03, o).astype(np.float32)
    w = mb.const("w", rng.integers(-127, 128, (o, 1, 1, c)).astype(np.int8), quant=(s, np.zeros(o, np.int64), 0))
    bs = (np.float32(0.05) * s).astype(np.float32)
    b = mb.const("b", rng.integers(-500, 500, o).astype(np.int32), quant=(bs, np.zeros(o, np.int64), 0))
    y = mb.op("CONV_2D", [x, w, b], "Conv2DOptions", padding="VALID", stride_w=1, stride_h=1, out_quant=(0.1, 2))
    mb.output(mb.op("RESHAPE", [y, mb.const("shape", np.array([n, o], np.int32))], out_quant=(0.1, 2)))
    return mb.build()


def test_per_axis_weights_keep_their_convolution(armnn_release_runner, tmp_path, monkeypatch):
    """Neither release's CpuRef runs a per-axis FullyConnected (lowering/perchannel.py)."""
    src = tmp_path / "perchannel.tflite"
    src.write_bytes(_perchannel_model())
    for target in TARGETS[armnn_release_runner.release][1:]:
        new, types, old, _ = _pair(src, tmp_path, target, monkeypatch)
        assert types[L.Convolution2d] == 1 and new.read_bytes() == old.read_bytes(), (target, types)
        _matches_source(src, new, armnn_release_runner)


# -- ONNX: Conv on [N, C, H, W] with an H x W kernel -> Relu -> (Flatten -> Gemm | other readers) -------
def _onnx_model(path, hw, tail, bias=True, n=3, c=16, o=6):
    rng = np.random.default_rng(hw + len(tail))
    init = lambda name, a: numpy_helper.from_array(np.asarray(a, np.float32), name)  # noqa: E731
    nodes = [helper.make_node("Conv", ["x", "w", "b"] if bias else ["x", "w"], ["c"], kernel_shape=[hw, hw]),
             helper.make_node("Relu", ["c"], ["r"])]
    inits = [init("w", rng.standard_normal((o, c, hw, hw)))] + ([init("b", rng.standard_normal(o))] if bias else [])
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, (n, c, hw, hw))]
    outs = ["y"]
    if tail == "mul":  # an SE block's scale reads the 4-D shape
        nodes.append(helper.make_node("Mul", ["r", "z"], ["y"]))
        inputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, (n, o, 1, 1)))
    else:
        nodes += [helper.make_node("Flatten", ["r"], ["f"], axis=1), helper.make_node("Gemm", ["f", "g", "gb"], ["y"])]
        inits += [init("g", rng.standard_normal((o, 3))), init("gb", rng.standard_normal(3))]
        if tail == "output":  # the convolution's 4-D result is a graph output too
            outs.append("r")
    g = helper.make_graph(nodes, "m", inputs, [helper.make_tensor_value_info(v, TensorProto.FLOAT, None)
                                               for v in outs], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


@pytest.mark.parametrize("hw, bias", [(1, True), (1, False), (3, True)], ids=["1x1_on_1x1", "no_bias", "3x3_on_3x3"])
def test_onnx_conv_flatten_gemm(hw, bias, armnn_release_runner, tmp_path, monkeypatch):
    """NCHW: Convolve sums c, y, x as the FullyConnected reads the flattened input, so a window
    covering a 3x3 input is exact too."""
    src = _onnx_model(tmp_path / "m.onnx", hw, "gemm", bias)
    for target in TARGETS[armnn_release_runner.release]:
        new, types, old, old_types = _pair(src, tmp_path, target, monkeypatch)
        assert old_types[L.Convolution2d] == 1 and types[L.Convolution2d] == 0
        assert types[L.FullyConnected] == 2  # (the Gemm's; 19.02's bias table FullyConnected went too)
        assert types[L.Reshape] == 0 and sum(types.values()) <= sum(old_types.values()), (target, types)
        _bit_identical(armnn_release_runner, new, old)
        _matches_source(src, new, armnn_release_runner)


def test_19_02_bias_kept_as_batchnorm(armnn_release_runner, tmp_path, monkeypatch):
    """--conv-bias batchnorm: the scale-1 BatchNormalization computes 1 * x + beta, bit for bit
    the FullyConnected's x + bias."""
    src = _onnx_model(tmp_path / "m.onnx", 3, "gemm")
    new, types, old, old_types = _pair(src, tmp_path, "19.02", monkeypatch, extra=("--conv-bias", "batchnorm"))
    assert old_types[L.BatchNormalization] == 1 and types[L.BatchNormalization] == types[L.Convolution2d] == 0
    _bit_identical(armnn_release_runner, new, old)
    _matches_source(src, new, armnn_release_runner)


@pytest.mark.parametrize("tail, hw, extra", [("mul", 1, ()), ("output", 1, ()), ("gemm", 3, ("--layout", "nhwc"))],
                         ids=["se_multiplication", "graph_output", "nhwc_3x3"])
def test_conv_stays(tail, hw, extra, armnn_release_runner, tmp_path, monkeypatch):
    """A reader of the 4-D shape would need a Reshape back; NHWC sums y, x, c in the
    FullyConnected but c, y, x in Convolve."""
    src = _onnx_model(tmp_path / "m.onnx", hw, tail)
    for target in TARGETS[armnn_release_runner.release][1 if extra else 0:]:
        new, types, old, _ = _pair(src, tmp_path, target, monkeypatch, extra=extra)
        assert types[L.Convolution2d] == 1 and new.read_bytes() == old.read_bytes(), (target, types)
        _matches_source(src, new, armnn_release_runner)


# -- reference models --------------------------------------------------------------------------------
# model -> layers fewer per target (the head's 1x1 convolution on the pooled [1, 1, 1, C] and its
# Reshape; in 19.02 also its bias's StridedSlice and Addition, and the Permute back to NHWC)
REFERENCE = {"tflite/models/mobilenet_v1_025.float32.tflite": {"19.02": 4, "20.08": 1, "23.08": 1},
             "tflite/models/mobilenet_v3_small_075.float32.tflite": {"19.02": 4, "20.08": 1, "23.08": 1},
             "tflite/models/mobilenet_v1_025.int8.tflite": {"20.08": 0, "23.08": 0}}  # (per-axis weights)


@pytest.mark.parametrize("model_id", sorted(REFERENCE))
def test_reference_models(model_id, armnn_release_runner, tmp_path, monkeypatch):
    src = ROOT / model_id
    for target, fewer in REFERENCE[model_id].items():
        if target not in TARGETS[armnn_release_runner.release]:
            continue
        new, types, old, old_types = _pair(src, tmp_path, target, monkeypatch)
        assert sum(old_types.values()) - sum(types.values()) == fewer, (target, old_types, types)
        assert old_types[L.Convolution2d] - types[L.Convolution2d] == (1 if fewer else 0)
        if not fewer:
            assert new.read_bytes() == old.read_bytes()
            continue
        _bit_identical(armnn_release_runner, new, old)
        _matches_source(src, new, armnn_release_runner)
