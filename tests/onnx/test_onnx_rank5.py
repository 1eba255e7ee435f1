"""Five-dimensional tensors through the layers that take at most 4-D in Arm NN
(StridedSlice, Pad): the untouched axes are merged so that the layer sees at most
4-D; run on the real Arm NN runtime against onnxruntime."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

from armnn_import.ir.types import LayerType

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ort_check import check  # noqa: E402

RNG = np.random.default_rng(5)
X5 = RNG.standard_normal((2, 3, 4, 5, 6)).astype(np.float32)


def model(nodes, inits=(), shape=X5.shape, opset=13):
    g = h.make_graph(nodes, "rank5", [h.make_tensor_value_info("x", TP.FLOAT, list(shape))],
                     [h.make_tensor_value_info("y", TP.FLOAT, None)], list(inits))
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


def i64(name, values):
    return nh.from_array(np.asarray(values, np.int64), name)


def slice_model(starts, ends, axes, steps=None):
    inits = [i64("s", starts), i64("e", ends), i64("a", axes)] + ([i64("st", steps)] if steps else [])
    return model([h.make_node("Slice", ["x", "s", "e", "a"] + (["st"] if steps else []), ["y"])], inits)


def assert_at_most_4d(result):
    for layer in result.network.layers:
        if layer.type in (LayerType.StridedSlice, LayerType.Pad):
            assert layer.inputs[0].info.rank <= 4, (layer.name, layer.inputs[0].info.shape)


SLICES = [
    ([0], [2], [4], None),                       # the last axis (YOLO's y[..., 0:2])
    ([1], [3], [2], None),                       # a middle axis: the axes after it merge into it
    ([1], [2], [0], None),                       # the leading axis (a packed QKV split)
    ([4, 1], [0, 3], [4, 1], [-2, 1]),           # a negative step on the last axis
    ([5], [-10**10], [3], [-1]),                 # reversed to index 0 (the end mask)
    ([0, 1, 1, 1, 1], [1, 3, 3, 4, 5], [0, 1, 2, 3, 4], [1, 1, 2, 2, 3]),  # every axis: one at a time
    ([1, 0], [2, 6], [1, 4], [1, 2]),
]


@pytest.mark.parametrize("starts,ends,axes,steps", SLICES, ids=str)
def test_slice_of_a_5d_tensor(armnn_runner, starts, ends, axes, steps):
    r = check(armnn_runner, slice_model(starts, ends, axes, steps), {"x": X5})
    assert_at_most_4d(r)


@pytest.mark.parametrize("indices,axis", [(1, 0), (3, 2), ([2, 0], 1), (-1, 4)], ids=str)
def test_gather_on_a_5d_tensor(armnn_runner, indices, axis):
    m = model([h.make_node("Gather", ["x", "i"], ["y"], axis=axis)], [i64("i", indices)])
    assert_at_most_4d(check(armnn_runner, m, {"x": X5}))


def test_split_of_a_5d_tensor(armnn_runner):
    m = model([h.make_node("Split", ["x", "sp"], ["a", "b", "c"], axis=3),
               h.make_node("Concat", ["c", "a"], ["ca"], axis=3), h.make_node("Mul", ["ca", "ca"], ["y"])],
              [i64("sp", [1, 2, 2])])
    assert_at_most_4d(check(armnn_runner, m, {"x": X5}))


@pytest.mark.parametrize("pads,value,mode", [
    ([0, 0, 0, 0, 1, 0, 0, 0, 0, 2], 0.0, "constant"),
    ([0, 1, 0, 0, 0, 0, 1, 0, 0, 0], 1.5, "constant"),
    ([0, 0, 1, 0, 0, 0, 0, 2, 0, 0], 0.0, "reflect"),
    ([0, 0, 0, 1, 1, 0, 0, 0, 1, 1], 0.0, "edge"),
], ids=str)
def test_pad_of_a_5d_tensor(armnn_runner, pads, value, mode):
    inits = [i64("p", pads), nh.from_array(np.array(value, np.float32), "v")]
    m = model([h.make_node("Pad", ["x", "p", "v"], ["y"], mode=mode)], inits)
    assert_at_most_4d(check(armnn_runner, m, {"x": X5}))


def test_yolo_style_5d_head(armnn_runner):
    """(B, A*(5+C), H, W) -> (B, A, 5+C, H, W) -> permute -> sigmoid -> slices of the last axis
    with grid arithmetic -> concat -> (B, A*H*W, 5+C), as torch exports a YOLO Detect head."""
    b, a, no, hh, ww = 2, 3, 7, 4, 5
    x = RNG.standard_normal((b, a * no, hh, ww)).astype(np.float32)
    grid = RNG.standard_normal((1, 1, hh, ww, 2)).astype(np.float32)
    nodes = [h.make_node("Reshape", ["x", "s5"], ["r"]), h.make_node("Transpose", ["r"], ["t"], perm=[0, 1, 3, 4, 2]),
             h.make_node("Sigmoid", ["t"], ["sg"]),
             h.make_node("Slice", ["sg", "z", "two", "last"], ["xy"]),
             h.make_node("Slice", ["sg", "two", "big", "last"], ["rest"]),
             h.make_node("Add", ["xy", "grid"], ["xyg"]), h.make_node("Concat", ["xyg", "rest"], ["c"], axis=-1),
             h.make_node("Reshape", ["c", "s3"], ["y"])]
    inits = [i64("s5", [b, a, no, hh, ww]), i64("s3", [b, -1, no]), i64("z", [0]), i64("two", [2]),
             i64("big", [2 ** 62]), i64("last", [-1]), nh.from_array(grid, "grid")]
    r = check(armnn_runner, model(nodes, inits, shape=x.shape), {"x": x})
    assert_at_most_4d(r)


@pytest.mark.parametrize("split", ["Gather", "Slice"])
def test_packed_qkv_split_on_the_leading_axis_of_5d(armnn_runner, split):
    """nn.MultiheadAttention's export: the packed projection (T, B, 3E) unflattened to
    (T, B, 3, E), unsqueezed to (1, T, B, 3, E), transposed to (3, T, B, 1, E) and split
    on the leading axis (Gather, or Slice in other exporter versions) before the Squeeze."""
    t, b, e = 5, 2, 8
    x = RNG.standard_normal((t, b, 3 * e)).astype(np.float32)
    nodes = [h.make_node("Reshape", ["x", "s4"], ["r"]), h.make_node("Unsqueeze", ["r", "zero"], ["u"]),
             h.make_node("Transpose", ["u"], ["tr"], perm=[3, 1, 2, 0, 4])]
    parts = []
    for i in range(3):
        if split == "Gather":
            nodes.append(h.make_node("Gather", ["tr", f"i{i}"], [f"g{i}"], axis=0))
            nodes.append(h.make_node("Squeeze", [f"g{i}", "two"], [f"p{i}"]))
        else:
            nodes.append(h.make_node("Slice", ["tr", f"b{i}", f"e{i}", "zero"], [f"g{i}"]))
            nodes.append(h.make_node("Squeeze", [f"g{i}", "zero3"], [f"p{i}"]))
        parts.append(f"p{i}")
    nodes += [h.make_node("Mul", [parts[0], parts[1]], ["qk"]), h.make_node("Add", ["qk", parts[2]], ["y"])]
    inits = [i64("s4", [t, b, 3, e]), i64("zero", [0]), i64("two", [2]), i64("zero3", [0, 3])]
    inits += [i64(f"i{i}", i) for i in range(3)] + [i64(f"b{i}", [i]) for i in range(3)] + \
             [i64(f"e{i}", [i + 1]) for i in range(3)]
    r = check(armnn_runner, model(nodes, inits, shape=x.shape), {"x": x})
    assert_at_most_4d(r)


def _one(op, inits=(), inputs=("x",), **attrs):
    return model([h.make_node(op, list(inputs) + [i.name for i in inits], ["y"], **attrs)], list(inits))


OTHERS = {
    "ReduceMean-2-4": _one("ReduceMean", axes=[2, 4], keepdims=1),
    "ReduceMax-1": _one("ReduceMax", axes=[1], keepdims=0),
    "Softmax-2": _one("Softmax", axis=2),
    "Transpose": _one("Transpose", perm=[4, 2, 0, 3, 1]),
    "Add-broadcast": _one("Add", [nh.from_array(RNG.standard_normal((1, 3, 1, 5, 1)).astype(np.float32), "c")]),
    "Concat": model([h.make_node("Concat", ["x", "x"], ["y"], axis=2)]),
    # its per-channel shift becomes an Addition whose constant is derived from the (5-D) input
    "InstanceNormalization": _one("InstanceNormalization", [nh.from_array(np.full(3, 1.5, np.float32), "s"),
                                                            nh.from_array(np.arange(3, dtype=np.float32), "b")]),
}


@pytest.mark.parametrize("name", OTHERS)
def test_other_5d_operators(armnn_runner, name):
    assert_at_most_4d(check(armnn_runner, OTHERS[name], {"x": X5}))


MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                      "test_models", "onnx")


@pytest.mark.parametrize("name,shape", [("yolo_head_dynamic", (2, 3, 32, 32)),
                                        ("torch_encoder_layer_dynamic", (3, 8, 32))])
def test_dynamic_batch_reference_models_at_a_larger_batch(armnn_runner, name, shape):
    """The exports with a dynamic batch axis, pinned to a batch over 1 (every 5-D tensor then
    has more than one axis over 1), against onnxruntime on the model file."""
    import onnx
    m = onnx.load(os.path.join(MODELS, f"{name}.onnx"))
    x = RNG.standard_normal(shape).astype(np.float32)
    r = check(armnn_runner, m, {"input": x}, input_shapes={"input": shape}, atol=2e-4)
    assert_at_most_4d(r)
