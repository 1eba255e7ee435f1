"""A quantized ReduceMean over H and W (torch's `x.mean((2, 3))`, as torchvision's ShuffleNetV2
and MNASNet end, quantized by onnxruntime's quantize_static in QDQ and QOperator form): the
global average pool's lowering, and the kept axes dropped for keepdims=0. It was refused ("no
quantized lowering of ReduceMean"). The CLI writes the file; it runs on each target's Arm NN
CpuRef against onnxruntime: within one level of the graph as written (unoptimized), and of
its fused kernels within their own spread (they saturate on CPUs without VNNI) plus one."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from test_onnx_quant import quantize, session, w  # noqa: E402

import armnn_import  # noqa: E402
from armnn_import import cli  # noqa: E402
from armnn_import.errors import UnsupportedModelError  # noqa: E402

COMBOS = [("19.02", "20.08"), ("20.08", "20.08"), ("23.08", "23.08")]


def conv_mean(keepdims: int, axes=(2, 3), side=6) -> onnx.ModelProto:
    """Conv -> Relu -> ReduceMean(axes, keepdims) -> Flatten -> Gemm on a 1x3xSxS input (opset 13):
    the Gemm makes onnxruntime quantize the mean's output, as in the torchvision networks."""
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("ReduceMean", ["r"], ["m"], axes=list(axes), keepdims=keepdims),
             helper.make_node("Flatten", ["m"], ["f"]),
             helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1)]
    g = helper.make_graph(nodes, "conv_mean", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, side, side])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
                          [w("w", 8, 3, 3, 3), w("b", 8), w("fw", 5, 8 if list(axes) == [2, 3] else side * side),
                           w("fb", 5)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m, full_check=True)
    return m


def cli_convert(tmp_path, qmodel, target):
    src, dst, rep = tmp_path / "q.onnx", tmp_path / f"q.{target}.armnn", tmp_path / f"q.{target}.json"
    onnx.save(qmodel, src)
    assert cli.main(["convert", str(src), "-o", str(dst), "--target", target, "--report", str(rep), "-q"]) == 0
    return dst, json.loads(rep.read_text())


def feed(report, x):
    """x as the network's input takes it: float from 20.08 on (Quantize at the edge), else the
    model's first QuantizeLinear's levels."""
    info = report["inputs"][0]
    if info["dtype"] == "Float32":
        return x
    q, (dt, lo, hi) = info["quantization"], {"QuantisedAsymm8": (np.uint8, 0, 255), "QAsymmS8": (np.int8, -128, 127)}[info["dtype"]]
    return np.clip(np.round(x / np.float32(q["scale"])) + q["offset"], lo, hi).astype(dt)


def output_step(qmodel) -> float:
    """The scale of the model's output quantization (its last DequantizeLinear's)."""
    dq = next(n for n in qmodel.graph.node if n.op_type == "DequantizeLinear" and n.output[0] == "y")
    return float(next(numpy_helper.to_array(t) for t in qmodel.graph.initializer if t.name == dq.input[1]))


def real(report, got):
    info = report["outputs"][0]
    if info["dtype"] == "Float32":
        return got.astype(np.float64)
    q = info["quantization"]
    return (got.astype(np.float64) - q["offset"]) * q["scale"]


@pytest.mark.parametrize("target, release", COMBOS)
@pytest.mark.parametrize("fmt, kind", [("QDQ", "s8"), ("QDQ", "u8"), ("QOperator", "u8")])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_quantized_spatial_mean_within_one_level(armnn_runner_for, tmp_path, target, release, fmt, kind, keepdims):
    qmodel = quantize(conv_mean(keepdims), tmp_path, fmt, kind)
    assert "ReduceMean" in {n.op_type for n in qmodel.graph.node}
    dst, report = cli_convert(tmp_path, qmodel, target)
    x = np.random.default_rng(3).standard_normal((1, 3, 6, 6)).astype(np.float32)
    (got,) = armnn_runner_for(release)(dst, [feed(report, x)])
    step = output_step(qmodel)
    (plain,) = session(qmodel, False).run(None, {"x": x})
    (fast,) = session(qmodel, True).run(None, {"x": x})
    ours = real(report, got).reshape(plain.shape)
    err = np.abs(ours - plain) / step
    assert err.max() <= 1.0 + 1e-3, f"{err.max():.2f} levels off onnxruntime unoptimized"
    # onnxruntime's fused int8 kernels saturate on CPUs without VNNI: within their spread + 1
    spread = np.abs(fast - plain).max() / step
    assert np.abs(ours - fast).max() / step <= spread + 1.0 + 1e-3, f"onnxruntime's spread: {spread:.2f} levels"


def test_quantized_mean_over_other_axes_refused_with_hint(tmp_path):
    qmodel = quantize(conv_mean(1, axes=(1,)), tmp_path, "QDQ", "u8")
    src = tmp_path / "q.onnx"
    onnx.save(qmodel, src)
    with pytest.raises(UnsupportedModelError) as err:
        armnn_import.convert(src)
    (p,) = err.value.problems
    assert p.op == "ReduceMean" and "only over H and W" in p.reason and "--dequantize" in p.hint


@pytest.mark.parametrize("target, release", [("20.08", "20.08"), ("23.08", "23.08")])
def test_verify_counts_float_io_quantized_output_in_steps(armnn_runner_for, tmp_path, capsys, target, release):
    """From 20.08 on a quantized model keeps float outputs (a Dequantize at the edge); its values
    are on the output quantization's grid, as onnxruntime's, so `verify` counts the error in that
    grid's steps (--lsb) as it does for the same model's uint8 output under 19.02, rather than a
    float tolerance that one step fails (torchvision EfficientNet-B0 QDQ: off by 1 step, 0.0058)."""
    qmodel = quantize(conv_mean(0), tmp_path, "QDQ", "s8")
    dst, report = cli_convert(tmp_path, qmodel, target)
    assert report["outputs"][0]["dtype"] == "Float32"
    capsys.readouterr()
    rc = cli.main(["verify", str(tmp_path / "q.onnx"), str(dst), "--armnn-runtime", armnn_runner_for(release).path])
    row = next(line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("y "))
    assert rc == 0 and row[-1] == "ok"
    step = output_step(qmodel)
    assert row[-2] != "-" and float(row[-2]) == pytest.approx(float(row[2]) / step, abs=1e-3)
