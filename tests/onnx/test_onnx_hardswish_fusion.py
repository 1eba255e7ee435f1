"""x * HardSigmoid(x) with alpha 1/6, beta 1/2: how torch exports hardswish before opset 14
(torchvision MobileNetV3 at opset 13: 38 more layers than at opset 17), and by ONNX's own
definition the HardSwish operator. Where the target has the HardSwish activation (20.08 on) it
is one layer, as HardSwish is; the CLI writes the file, each target's CpuRef runs it against
onnxruntime. Another alpha, or the product with another tensor, stays as it was."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from armnn_import import cli
from armnn_import.ir.types import ActivationFunction as AF
from armnn_import.ir.types import LayerType as L
from armnn_import.serialize import read

SHAPE = [1, 4, 8, 8]


def model(alpha=1.0 / 6.0, other=False) -> onnx.ModelProto:
    """y = m * HardSigmoid(h), h = x + 0.25 (an operator's output, as a Conv's is in MobileNetV3),
    m = h, or x when `other`."""
    c = helper.make_tensor("c", TensorProto.FLOAT, [1], [0.25])
    nodes = [helper.make_node("Add", ["x", "c"], ["h"]),
             helper.make_node("HardSigmoid", ["h"], ["s"], alpha=alpha, beta=0.5),
             helper.make_node("Mul", ["x" if other else "h", "s"], ["y"])]
    g = helper.make_graph(nodes, "hswish", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)], [c])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m, full_check=True)
    return m


def inputs():
    """Values across both knees (h = -3 and 3) and beyond, plus exact knee points."""
    x = np.random.default_rng(4).uniform(-6, 6, SHAPE).astype(np.float32)
    x.reshape(-1)[:6] = np.array([-3.25, 2.75, -6.0, 6.0, 0.0, -0.25], np.float32)
    return x


def convert(tmp_path, m, target):
    src, dst = tmp_path / "m.onnx", tmp_path / f"m.{target}.armnn"
    onnx.save(m, src)
    assert cli.main(["convert", str(src), "-o", str(dst), "--target", target, "-q"]) == 0
    return dst


def activations(dst):
    g = read(dst.read_bytes())
    return [l.desc.function for l in g.layers if l.type == L.Activation], [l.type for l in g.layers]


@pytest.mark.parametrize("target, release", [("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")])
def test_x_times_hard_sigmoid_is_one_hardswish(armnn_runner_for, tmp_path, target, release):
    m = model()
    dst = convert(tmp_path, m, target)
    fns, types = activations(dst)
    assert AF.HardSwish in fns and L.Multiplication not in types and AF.BoundedReLu not in fns
    x = inputs()
    (got,) = armnn_runner_for(release)(dst, [x])
    (want,) = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("target, kwargs", [("19.02", {}), ("23.08", {"alpha": 0.2}), ("23.08", {"other": True})])
def test_other_forms_keep_the_multiplication(armnn_runner_for, tmp_path, target, kwargs):
    m = model(**kwargs)
    dst = convert(tmp_path, m, target)
    fns, types = activations(dst)
    assert AF.HardSwish not in fns and L.Multiplication in types
    x = inputs()
    (got,) = armnn_runner_for("23.08")(dst, [x])
    (want,) = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-6, atol=1e-6)
