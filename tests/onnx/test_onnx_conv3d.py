"""3-D Conv and pooling written as 2-D layers where exact (an axis of size 1, a depth
the kernel covers whole, an axis of kernel 1); run on Arm NN against onnxruntime.
Other 3-D cases stay refused with a reason."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import armnn_import
from armnn_import.errors import UnsupportedModelError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ort_check import check  # noqa: E402

RNG = np.random.default_rng(3)


def f(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def model(node, x_shape, inits=()):
    g = h.make_graph([node], "c3d", [h.make_tensor_value_info("x", TP.FLOAT, list(x_shape))],
                     [h.make_tensor_value_info("y", TP.FLOAT, None)], list(inits))
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


CONV = [  # (input shape, weights shape, attributes): which axis goes, and how
    ((1, 4, 1, 7, 8), (6, 4, 1, 3, 3), dict(pads=[0, 1, 1, 0, 1, 1])),                  # D of 1: dropped
    ((2, 4, 5, 6, 1), (6, 2, 3, 3, 1), dict(group=2, strides=[2, 1, 1])),               # W of 1: dropped
    ((1, 4, 3, 7, 8), (5, 4, 3, 3, 3), dict(pads=[0, 1, 1, 0, 1, 1])),                  # D covered: channels
    ((2, 4, 3, 6, 6), (4, 2, 3, 2, 2), dict(group=2, strides=[1, 2, 2])),               # D covered, grouped
    ((1, 3, 5, 7, 6), (4, 3, 1, 3, 3), dict(strides=[2, 1, 1], pads=[0, 1, 0, 0, 1, 0])),  # kernel 1 on D: batch
    ((2, 3, 6, 4, 5), (4, 3, 3, 1, 3), dict(auto_pad="SAME_UPPER", strides=[1, 3, 2])),    # kernel 1 on H: batch
    ((1, 3, 7, 4, 5), (4, 3, 2, 1, 2), dict(dilations=[3, 1, 2], pads=[1, 0, 1, 2, 0, 0])),
]


@pytest.mark.parametrize("x_shape,w_shape,attrs", CONV, ids=[str(c[1]) + str(c[2]) for c in CONV])
def test_conv3d_as_2d(armnn_runner, x_shape, w_shape, attrs):
    inits = [nh.from_array(f(*w_shape), "w"), nh.from_array(f(w_shape[0]), "b")]
    m = model(h.make_node("Conv", ["x", "w", "b"], ["y"], **attrs), x_shape, inits)
    r = check(armnn_runner, m, {"x": f(*x_shape)})
    assert "3-D Conv" in r.report.decompositions


POOL = [
    ("MaxPool", (1, 3, 4, 6, 6), dict(kernel_shape=[1, 2, 2], strides=[2, 2, 2])),           # depth folds into C
    ("AveragePool", (2, 3, 3, 5, 5), dict(kernel_shape=[1, 3, 3], pads=[0, 1, 1, 0, 1, 1])),
    ("AveragePool", (1, 2, 3, 5, 5), dict(kernel_shape=[1, 3, 3], pads=[0, 1, 1, 0, 1, 1], count_include_pad=1)),
    ("AveragePool", (1, 2, 5, 7, 6), dict(kernel_shape=[1, 3, 2], strides=[2, 2, 2], ceil_mode=1)),
    ("MaxPool", (1, 3, 4, 5, 6), dict(kernel_shape=[2, 1, 2], strides=[1, 2, 2])),            # kernel 1 on H
    ("MaxPool", (1, 3, 4, 5, 1), dict(kernel_shape=[2, 3, 1], pads=[1, 1, 0, 0, 1, 0])),      # W of 1
    ("LpPool", (1, 3, 2, 6, 6), dict(kernel_shape=[1, 2, 2], strides=[1, 2, 2], p=2)),
]


@pytest.mark.parametrize("op,x_shape,attrs", POOL, ids=[f"{p[0]}{p[2]}" for p in POOL])
def test_pool3d_as_2d(armnn_runner, op, x_shape, attrs):
    m = model(h.make_node(op, ["x"], ["y"], **attrs), x_shape)
    check(armnn_runner, m, {"x": f(*x_shape)})


@pytest.mark.parametrize("node,x_shape,inits", [
    (h.make_node("Conv", ["x", "w"], ["y"]), (1, 2, 4, 4, 4), [nh.from_array(f(3, 2, 2, 2, 2), "w")]),
    (h.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1, 1, 1]), (1, 2, 3, 4, 4),
     [nh.from_array(f(3, 2, 3, 3, 3), "w")]),  # the kernel covers the depth, but it is padded
    (h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2, 2]), (1, 2, 4, 4, 4), []),
], ids=["conv-2x2x2", "conv-padded-depth", "maxpool-2x2x2"])
def test_other_3d_cases_are_refused_with_a_reason(node, x_shape, inits):
    with pytest.raises(UnsupportedModelError) as info:
        armnn_import.convert(model(node, x_shape, inits))
    (p,) = info.value.problems
    assert "3-D" in p.reason and "no exact 2-D form" in p.reason, p
