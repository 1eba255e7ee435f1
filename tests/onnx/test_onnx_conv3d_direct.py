"""3-D Conv, MaxPool and AveragePool that have no exact 2-D form, as one Convolution3d or
Pooling3d layer (--target 23.08), on the real Arm NN 23.08 runtime against onnxruntime; the
numpy executor too. Cases with a 2-D form keep it; the seed target still refuses the rest."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import armnn_import
from armnn_import import cli
from armnn_import.errors import UnsupportedModelError
from armnn_import.ir.types import LayerType as L
from armnn_import.serialize import read
from armnn_import.verify_cmd import Tolerance, verify

RNG = np.random.default_rng(5)


def f(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def model(node, x_shape, inits=()):
    g = h.make_graph([node], "c3d", [h.make_tensor_value_info("x", TP.FLOAT, list(x_shape))],
                     [h.make_tensor_value_info("y", TP.FLOAT, None)], list(inits))
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def conv(x_shape, w_shape, bias=True, **attrs):
    inits = [nh.from_array(f(*w_shape), "w")] + ([nh.from_array(f(w_shape[0]), "b")] if bias else [])
    node = h.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["y"], **attrs)
    return model(node, x_shape, inits)


CASES = {
    "conv-2x2x2": conv((1, 2, 4, 4, 4), (3, 2, 2, 2, 2), bias=False),
    "conv-padded-depth": conv((1, 2, 3, 4, 4), (3, 2, 3, 3, 3), pads=[1, 1, 1, 1, 1, 1]),
    "conv-strided-dilated": conv((2, 3, 7, 6, 8), (4, 3, 2, 3, 2), strides=[2, 1, 2], dilations=[2, 1, 1],
                                 pads=[0, 1, 1, 1, 0, 1]),
    "conv-same": conv((1, 2, 5, 5, 6), (2, 2, 3, 3, 3), auto_pad="SAME_UPPER", strides=[2, 2, 1]),
    "maxpool-2x2x2": model(h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2, 2]), (1, 2, 4, 4, 4)),
    "maxpool-padded-strided": model(h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 2, 3], strides=[2, 2, 1],
                                                pads=[1, 0, 1, 1, 1, 1]), (2, 3, 5, 6, 7)),
    "maxpool-ceil": model(h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2, 2], strides=[2, 2, 2],
                                      ceil_mode=1), (1, 2, 5, 5, 5)),
    "avgpool-exclude-pad": model(h.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3, 3],
                                             pads=[1, 1, 1, 1, 1, 1]), (1, 2, 4, 5, 6)),
    "avgpool-include-pad": model(h.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 3, 2], strides=[2, 2, 2],
                                             pads=[1, 1, 0, 0, 1, 1], count_include_pad=1), (1, 3, 5, 6, 5)),
}


@pytest.mark.parametrize("name", CASES)
def test_3d_as_one_layer_on_armnn_23_08(name, armnn_runner_for, tmp_path):
    runner = armnn_runner_for("23.08")
    src, out = tmp_path / "m.onnx", tmp_path / "m.armnn"
    onnx.save(CASES[name], src)
    with pytest.raises(UnsupportedModelError):  # no 2-D form: the seed target refuses it
        armnn_import.convert(CASES[name])
    assert cli.main([str(src), "-o", str(out), "-q", "--target", "23.08"]) == 0
    types = {l.type for l in read(out.read_bytes()).layers}
    assert (L.Convolution3d if name.startswith("conv") else L.Pooling3d) in types
    tol = Tolerance(atol=1e-4, rtol=1e-4)
    for rt in (runner.path, None):  # the runtime, then the numpy executor
        check = verify(str(src), str(out), tolerance=tol, armnn_runtime=rt)
        assert check.ok, check.format()


def test_grouped_3d_conv_stays_refused_with_a_reason():
    m = conv((1, 4, 4, 4, 4), (4, 2, 2, 2, 2), group=2)
    with pytest.raises(UnsupportedModelError) as info:
        armnn_import.convert(m, target="23.08")
    (p,) = info.value.problems
    assert "group 2" in p.reason, p


def test_a_2d_form_is_kept_on_23_08():
    m = conv((1, 4, 1, 7, 8), (6, 4, 1, 3, 3), pads=[0, 1, 1, 0, 1, 1])  # a depth of 1
    types = {l.type for l in armnn_import.convert(m, target="23.08").network.layers}
    assert L.Convolution2d in types and L.Convolution3d not in types
