"""Per-operator tests of the ONNX frontend: single-node (or small) models
built with onnx.helper, run by onnxruntime (the reference) and, converted,
by the real Arm NN 20.08 runtime (CpuRef)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import armnn_import
from armnn_import.ir.types import LayerType

ort = pytest.importorskip("onnxruntime")
RTOL, ATOL = 1e-3, 1e-4
RNG = np.random.default_rng(1234)


def randn(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def make(nodes, inputs, outputs=("y",), inits=None, opset=17, out_type=TP.FLOAT):
    """inputs: {name: array}; inits: {name: array} initializers."""
    g = h.make_graph(nodes, "test",
                     [h.make_tensor_value_info(n, TP.FLOAT if v.dtype == np.float32 else TP.INT64, v.shape)
                      for n, v in inputs.items()],
                     [h.make_tensor_value_info(n, out_type, None) for n in outputs],
                     [nh.from_array(v, n) for n, v in (inits or {}).items()])
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


def check(armnn_runner, model, feeds, constant_layers_ok=False):
    """Convert `model`, run it on Arm NN and compare with onnxruntime."""
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    result = armnn_import.convert(model)
    net = result.network
    if not constant_layers_ok:
        assert not any(l.type == LayerType.Constant for l in net.layers), net.summary()
    arrays = [np.asarray(feeds[l.name]).astype(l.outputs[0].dtype.np_dtype) for l in net.input_layers]
    got = armnn_runner(result.to_bytes(), arrays)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.size == w.size, (g.shape, w.shape)
        g = g.reshape(w.shape)
        if w.dtype == bool:
            np.testing.assert_array_equal(g.astype(bool), w)
        else:
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)
    return result


def node(op, n_in=1, **attrs):
    return h.make_node(op, [f"x{i}" for i in range(n_in)], ["y"], **attrs)


X4 = (1, 3, 6, 7)

UNARY = [
    ("Abs", {}), ("Neg", {}), ("Reciprocal", {}), ("Floor", {}), ("Ceil", {}), ("Relu", {}),
    ("LeakyRelu", {"alpha": 0.2}), ("Sigmoid", {}), ("Tanh", {}), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
    ("HardSwish", {}), ("Softsign", {}), ("Elu", {"alpha": 0.7}), ("Selu", {}),
    ("Celu", {"alpha": 1.5}), ("Mish", {}), ("Exp", {}),
]


@pytest.mark.parametrize("op,attrs", UNARY, ids=[u[0] for u in UNARY])
def test_unary(armnn_runner, op, attrs):
    x = randn(*X4, scale=2.0)
    if op == "Reciprocal":
        x = np.where(np.abs(x) < 0.1, 0.5, x).astype(np.float32)
    check(armnn_runner, make([node(op, **attrs)], {"x0": x}, opset=19), {"x0": x})


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, -1.0, -2.0, -0.5, 0.5, 1.7])
def test_pow_constant_exponent(armnn_runner, p):
    x = randn(2, 3, 4)
    if p != int(p) or p < 0:
        x = np.abs(x) + 0.2
    check(armnn_runner, make([node("Pow", 2)], {"x0": x}, inits={"x1": np.array(p, np.float32)}), {"x0": x})


def test_sqrt(armnn_runner):
    x = np.abs(randn(*X4)) + 0.01
    check(armnn_runner, make([node("Sqrt")], {"x0": x}), {"x0": x})


def test_exp_large_range(armnn_runner):
    x = np.linspace(-80, 80, 64, dtype=np.float32).reshape(1, 64)
    check(armnn_runner, make([node("Exp")], {"x0": x}), {"x0": x})


BINARY = ["Add", "Sub", "Mul", "Div", "Max", "Min"]


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("shape_b", [X4, (1, 3, 1, 1), (7,), (1, 1, 6, 1)], ids=str)
def test_binary_runtime(armnn_runner, op, shape_b):
    a, b = randn(*X4), randn(*shape_b) + (3.0 if op == "Div" else 0.0)
    check(armnn_runner, make([node(op, 2)], {"x0": a, "x1": b}), {"x0": a, "x1": b})


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("shape_c", [(), (3, 1, 1), (1, 3, 6, 7), (7,)], ids=str)
def test_binary_constant(armnn_runner, op, shape_c):
    a = randn(*X4)
    c = (randn(*shape_c) + (3.0 if op == "Div" else 0.0)).astype(np.float32)
    check(armnn_runner, make([node(op, 2)], {"x0": a}, inits={"x1": c}), {"x0": a})


def test_binary_constant_first(armnn_runner):
    a = randn(*X4)
    c = randn(3, 1, 1)
    m = make([h.make_node("Sub", ["c", "x0"], ["y"])], {"x0": a}, inits={"c": c})
    check(armnn_runner, m, {"x0": a})


@pytest.mark.parametrize("op", ["Equal", "Greater", "Less"])
def test_comparison(armnn_runner, op):
    a = np.round(randn(2, 5)).astype(np.float32)
    b = np.round(randn(2, 5)).astype(np.float32)
    check(armnn_runner, make([node(op, 2)], {"x0": a, "x1": b}, out_type=TP.BOOL), {"x0": a, "x1": b})


@pytest.mark.parametrize("op", ["Sum", "Mean", "Max", "Min"])
def test_variadic(armnn_runner, op):
    xs = {f"x{i}": randn(2, 3, 4) for i in range(3)}
    check(armnn_runner, make([node(op, 3)], xs), xs)


def test_prelu_per_channel(armnn_runner):
    x = randn(*X4)
    check(armnn_runner, make([node("PRelu", 2)], {"x0": x}, inits={"x1": randn(3, 1, 1)}), {"x0": x})


def test_prelu_scalar(armnn_runner):
    x = randn(*X4)
    check(armnn_runner, make([node("PRelu", 2)], {"x0": x}, inits={"x1": np.array([0.1], np.float32)}), {"x0": x})


@pytest.mark.parametrize("lo,hi", [(-0.5, 0.5), (0.0, None), (None, 1.0)])
def test_clip(armnn_runner, lo, hi):
    x = randn(*X4)
    inits, names = {}, ["x0"]
    for n, v in (("lo", lo), ("hi", hi)):
        if v is None:
            names.append("")
        else:
            inits[n] = np.array(v, np.float32)
            names.append(n)
    m = make([h.make_node("Clip", names, ["y"])], {"x0": x}, inits=inits)
    check(armnn_runner, m, {"x0": x})


def test_clip_attributes_opset6(armnn_runner):
    x = randn(*X4)
    check(armnn_runner, make([node("Clip", min=-0.3, max=0.6)], {"x0": x}, opset=9), {"x0": x})


CONV = [
    dict(),
    dict(pads=[1, 1, 1, 1]),
    dict(pads=[0, 1, 2, 1], strides=[2, 1]),
    dict(auto_pad="SAME_UPPER", strides=[2, 2]),
    dict(auto_pad="SAME_LOWER"),
    dict(dilations=[2, 2], pads=[2, 2, 2, 2]),
    dict(dilations=[2, 1], strides=[2, 2]),
]


@pytest.mark.parametrize("attrs", CONV, ids=str)
def test_conv2d(armnn_runner, attrs):
    x = randn(1, 3, 9, 10)
    inits = {"w": randn(4, 3, 3, 3), "b": randn(4)}
    m = make([h.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)], {"x": x}, inits=inits)
    check(armnn_runner, m, {"x": x})


@pytest.mark.parametrize("groups,cout", [(4, 4), (4, 8), (2, 6)], ids=["depthwise", "depth-mult", "grouped"])
def test_conv_groups(armnn_runner, groups, cout):
    x = randn(1, 4, 8, 8)
    inits = {"w": randn(cout, 4 // groups, 3, 3), "b": randn(cout)}
    m = make([h.make_node("Conv", ["x", "w", "b"], ["y"], group=groups, pads=[1, 1, 1, 1])], {"x": x}, inits=inits)
    check(armnn_runner, m, {"x": x})


def test_conv1d(armnn_runner):
    x = randn(2, 3, 12)
    m = make([h.make_node("Conv", ["x", "w"], ["y"], pads=[1, 2], strides=[2])], {"x": x},
             inits={"w": randn(5, 3, 4)})
    check(armnn_runner, m, {"x": x})


@pytest.mark.parametrize("attrs", [dict(strides=[2, 2]), dict(strides=[2, 2], pads=[1, 1, 1, 1]),
                                   dict(strides=[2, 3], output_padding=[1, 1]), dict(),
                                   dict(strides=[2, 2], group=2), dict(dilations=[2, 2])], ids=str)
def test_conv_transpose(armnn_runner, attrs):
    x = randn(1, 4, 5, 6)
    g = attrs.get("group", 1)
    m = make([h.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)], {"x": x},
             inits={"w": randn(4, 6 // g, 3, 3), "b": randn(6)})
    check(armnn_runner, m, {"x": x})


POOL = [
    ("MaxPool", dict(kernel_shape=[2, 2], strides=[2, 2])),
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    ("MaxPool", dict(kernel_shape=[3, 2], auto_pad="SAME_UPPER", strides=[2, 2])),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    ("LpPool", dict(kernel_shape=[2, 2], strides=[2, 2])),
    ("LpPool", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], p=2)),
    ("LpPool", dict(kernel_shape=[2, 3], strides=[1, 2], p=3)),
    ("MaxPool", dict(kernel_shape=[2, 2], dilations=[2, 2])),
    ("AveragePool", dict(kernel_shape=[2, 3], dilations=[2, 2], strides=[2, 1])),
]


@pytest.mark.parametrize("op,attrs", POOL, ids=[f"{p[0]}-{p[1]}" for p in POOL])
def test_pool(armnn_runner, op, attrs):
    x = randn(1, 3, 9, 10)
    check(armnn_runner, make([node(op, **attrs)], {"x0": x}, opset=19), {"x0": x})


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pool(armnn_runner, op):
    x = randn(2, 3, 5, 6)
    check(armnn_runner, make([node(op)], {"x0": x}), {"x0": x})


def test_batchnorm(armnn_runner):
    x = randn(2, 3, 4, 5)
    inits = {"s": randn(3), "b": randn(3), "m": randn(3), "v": np.abs(randn(3)) + 0.5}
    m = make([h.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)], {"x": x}, inits=inits)
    check(armnn_runner, m, {"x": x})


def test_instance_norm(armnn_runner):
    x = randn(2, 3, 4, 5)
    m = make([h.make_node("InstanceNormalization", ["x", "s", "b"], ["y"])], {"x": x},
             inits={"s": randn(3), "b": randn(3)})
    check(armnn_runner, m, {"x": x})


@pytest.mark.parametrize("axis", [-1, 1])
def test_layer_norm(armnn_runner, axis):
    x = randn(2, 4, 6)
    shape = x.shape[axis:] if axis != -1 else x.shape[-1:]
    m = make([h.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=axis)], {"x": x},
             inits={"s": randn(*shape), "b": randn(*shape)})
    check(armnn_runner, m, {"x": x})


def test_group_norm(armnn_runner):
    x = randn(2, 6, 3, 4)
    m = make([h.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3)], {"x": x},
             inits={"s": randn(6), "b": randn(6)}, opset=21)
    check(armnn_runner, m, {"x": x})


@pytest.mark.parametrize("p,axis", [(2, 1), (1, -1)])
def test_lp_norm(armnn_runner, p, axis):
    x = randn(2, 3, 4)
    check(armnn_runner, make([node("LpNormalization", p=p, axis=axis)], {"x0": x}), {"x0": x})


def test_lrn(armnn_runner):
    x = randn(1, 6, 4, 5)
    check(armnn_runner, make([node("LRN", size=3, alpha=1e-2, beta=0.6, bias=1.5)], {"x0": x}), {"x0": x})


def test_mvn(armnn_runner):
    x = randn(2, 3, 4, 5)
    check(armnn_runner, make([node("MeanVarianceNormalization")], {"x0": x}), {"x0": x})


@pytest.mark.parametrize("attrs", [dict(), dict(transA=1), dict(transB=1, alpha=0.5, beta=2.0)], ids=str)
def test_gemm(armnn_runner, attrs):
    a = randn(3, 5) if not attrs.get("transA") else randn(5, 3)
    bw = randn(5, 4) if not attrs.get("transB") else randn(4, 5)
    m = make([h.make_node("Gemm", ["a", "b", "c"], ["y"], **attrs)], {"a": a}, inits={"b": bw, "c": randn(4)})
    check(armnn_runner, m, {"a": a})


def test_gemm_full_bias(armnn_runner):
    a = randn(3, 5)
    m = make([h.make_node("Gemm", ["a", "b", "c"], ["y"])], {"a": a}, inits={"b": randn(5, 4), "c": randn(3, 4)})
    check(armnn_runner, m, {"a": a})


@pytest.mark.parametrize("sa,sb", [((3, 5), (5, 4)), ((2, 3, 5), (5, 4)), ((5,), (5, 4)), ((2, 3, 5), (2, 5, 4))],
                         ids=str)
def test_matmul_constant(armnn_runner, sa, sb):
    a = randn(*sa)
    check(armnn_runner, make([node("MatMul", 2)], {"x0": a}, inits={"x1": randn(*sb)}), {"x0": a})


def test_matmul_constant_left(armnn_runner):
    b = randn(2, 5, 4)
    check(armnn_runner, make([node("MatMul", 2)], {"x1": b}, inits={"x0": randn(3, 5)}), {"x1": b})


@pytest.mark.parametrize("sa,sb", [((3, 5), (5, 4)), ((2, 3, 5), (2, 5, 4)), ((2, 2, 3, 5), (2, 2, 5, 4)),
                                   ((2, 1, 3, 5), (1, 3, 5, 4))], ids=str)
def test_matmul_runtime(armnn_runner, sa, sb):
    a, b = randn(*sa), randn(*sb)
    check(armnn_runner, make([node("MatMul", 2)], {"x0": a, "x1": b}), {"x0": a, "x1": b})


@pytest.mark.parametrize("axis,opset", [(-1, 13), (1, 13), (0, 13), (1, 11), (2, 11)])
def test_softmax(armnn_runner, axis, opset):
    x = randn(2, 3, 4)
    check(armnn_runner, make([node("Softmax", axis=axis)], {"x0": x}, opset=opset), {"x0": x})


def test_flatten_reshape_transpose(armnn_runner):
    x = randn(2, 3, 4, 5)
    nodes = [h.make_node("Flatten", ["x"], ["f"], axis=2),
             h.make_node("Reshape", ["f", "s"], ["r"]),
             h.make_node("Transpose", ["r"], ["y"], perm=[2, 0, 1])]
    m = make(nodes, {"x": x}, inits={"s": np.array([0, -1, 4], np.int64)})
    check(armnn_runner, m, {"x": x})


def test_squeeze_unsqueeze(armnn_runner):
    x = randn(2, 1, 4)
    nodes = [h.make_node("Squeeze", ["x", "a"], ["s"]), h.make_node("Unsqueeze", ["s", "b"], ["y"])]
    m = make(nodes, {"x": x}, inits={"a": np.array([1], np.int64), "b": np.array([0, 3], np.int64)})
    check(armnn_runner, m, {"x": x})


def test_concat_with_constant(armnn_runner):
    x = randn(1, 2, 3, 4)
    m = make([h.make_node("Concat", ["x", "c", "x"], ["y"], axis=1)], {"x": x}, inits={"c": randn(1, 3, 3, 4)})
    check(armnn_runner, m, {"x": x})


@pytest.mark.parametrize("opset", [11, 13, 18])
def test_split(armnn_runner, opset):
    x = randn(2, 6, 3)
    if opset == 11:
        n = h.make_node("Split", ["x"], ["a", "b"], axis=1, split=[2, 4])
        inits = {}
    elif opset == 13:
        n = h.make_node("Split", ["x", "s"], ["a", "b"], axis=1)
        inits = {"s": np.array([2, 4], np.int64)}
    else:
        n = h.make_node("Split", ["x"], ["a", "b"], axis=1, num_outputs=2)
        inits = {}
    check(armnn_runner, make([n], {"x": x}, outputs=("a", "b"), inits=inits, opset=opset), {"x": x})


@pytest.mark.parametrize("starts,ends,axes,steps", [
    ([1], [3], [1], [1]), ([0, 5], [2, 1], [0, 2], [1, -2]), ([-3], [1000], [-1], [2]),
    ([4], [-1000], [2], [-1])], ids=str)
def test_slice(armnn_runner, starts, ends, axes, steps):
    x = randn(3, 4, 6)
    inits = {"s": np.array(starts, np.int64), "e": np.array(ends, np.int64), "a": np.array(axes, np.int64),
             "t": np.array(steps, np.int64)}
    check(armnn_runner, make([h.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])], {"x": x}, inits=inits),
          {"x": x})


@pytest.mark.parametrize("mode,value", [("constant", 0.0), ("constant", 1.5), ("reflect", 0.0), ("edge", 0.0),
                                        ("wrap", 0.0)])
def test_pad(armnn_runner, mode, value):
    x = randn(1, 2, 4, 5)
    inits = {"p": np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64), "v": np.array(value, np.float32)}
    m = make([h.make_node("Pad", ["x", "p", "v"], ["y"], mode=mode)], {"x": x}, inits=inits, opset=19)
    check(armnn_runner, m, {"x": x})


def test_tile_expand(armnn_runner):
    x = randn(1, 3, 1)
    nodes = [h.make_node("Tile", ["x", "r"], ["t"]), h.make_node("Expand", ["t", "s"], ["y"])]
    m = make(nodes, {"x": x}, inits={"r": np.array([2, 1, 1], np.int64), "s": np.array([2, 2, 3, 5], np.int64)})
    check(armnn_runner, m, {"x": x})


@pytest.mark.parametrize("indices,axis", [([2, 0, 1], 0), ([[1, 3], [0, 0]], 1), (2, 2), ([-1], 1),
                                          (list(range(40))[::-3] + [0, 5, 2] * 10, 2)], ids=str)
def test_gather_constant_indices(armnn_runner, indices, axis):
    x = randn(3, 5, 40)
    m = make([h.make_node("Gather", ["x", "i"], ["y"], axis=axis)], {"x": x},
             inits={"i": np.array(indices, np.int64)})
    check(armnn_runner, m, {"x": x})


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space(armnn_runner, mode):
    x = randn(2, 8, 3, 4)
    check(armnn_runner, make([node("DepthToSpace", blocksize=2, mode=mode)], {"x0": x}), {"x0": x})


def test_space_to_depth(armnn_runner):
    x = randn(2, 3, 4, 6)
    check(armnn_runner, make([node("SpaceToDepth", blocksize=2)], {"x0": x}), {"x0": x})


RESIZE = [
    ("nearest", "asymmetric", "floor", [1, 1, 2, 2]),
    ("nearest", "half_pixel", "round_prefer_floor", [1, 1, 1.5, 2.5]),
    ("linear", "asymmetric", None, [1, 1, 2, 2]),
    ("linear", "half_pixel", None, [1, 1, 2, 3]),
    # (onnxruntime and the ONNX reference disagree on align_corners when in * scale is not an integer)
    ("linear", "align_corners", None, [1, 1, 0.6, 1.5]),
    ("linear", "pytorch_half_pixel", None, [1, 1, 2, 0.5]),
    ("cubic", "half_pixel", None, [1, 1, 2, 2]),
]


@pytest.mark.parametrize("mode,coord,nearest,scales", RESIZE, ids=[f"{r[0]}-{r[1]}" for r in RESIZE])
def test_resize(armnn_runner, mode, coord, nearest, scales):
    x = randn(1, 2, 5, 6)
    attrs = dict(mode=mode, coordinate_transformation_mode=coord)
    if nearest:
        attrs["nearest_mode"] = nearest
    m = make([h.make_node("Resize", ["x", "", "s"], ["y"], **attrs)], {"x": x},
             inits={"s": np.array(scales, np.float32)})
    check(armnn_runner, m, {"x": x})


def test_resize_sizes(armnn_runner):
    x = randn(1, 2, 5, 6)
    m = make([h.make_node("Resize", ["x", "", "", "z"], ["y"], mode="linear")], {"x": x},
             inits={"z": np.array([1, 2, 7, 4], np.int64)})
    check(armnn_runner, m, {"x": x})


def test_upsample(armnn_runner):
    x = randn(1, 2, 3, 4)
    m = make([h.make_node("Upsample", ["x", "s"], ["y"], mode="nearest")], {"x": x},
             inits={"s": np.array([1, 1, 2, 3], np.float32)}, opset=9)
    check(armnn_runner, m, {"x": x})


REDUCE = ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceProd"]


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("axes,keep", [([1], 1), ([0, 2], 0), (None, 0)], ids=str)
def test_reduce(armnn_runner, op, axes, keep):
    x = randn(2, 3, 4)
    inits, names = {}, ["x"]
    if axes is not None:
        inits["a"] = np.array(axes, np.int64)
        names.append("a")
    m = make([h.make_node(op, names, ["y"], keepdims=keep)], {"x": x}, inits=inits, opset=18)
    check(armnn_runner, m, {"x": x})


def test_shape_arithmetic_is_folded(armnn_runner):
    """A PyTorch-style flatten: Shape -> Gather -> Unsqueeze -> Concat -> Reshape, all folded."""
    x = randn(2, 3, 4, 5)
    nodes = [h.make_node("Shape", ["x"], ["s"]),
             h.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             h.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
             h.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
             h.make_node("Reshape", ["x", "shape"], ["r"]),
             h.make_node("Identity", ["r"], ["i"]),
             h.make_node("Dropout", ["i"], ["y"])]
    inits = {"zero": np.array(0, np.int64), "ax": np.array([0], np.int64), "minus1": np.array([-1], np.int64)}
    result = check(armnn_runner, make(nodes, {"x": x}, inits=inits), {"x": x})
    assert {"Shape_0", "Gather_1", "Unsqueeze_2", "Concat_3"} <= set(result.report.folded)
    assert [l.type for l in result.network.layers] == [LayerType.Input, LayerType.Reshape, LayerType.Output]


def test_symbolic_batch_defaults_to_one(armnn_runner):
    x = randn(1, 3)
    g = h.make_graph([node("Relu")], "t", [h.make_tensor_value_info("x0", TP.FLOAT, ["N", 3])],
                     [h.make_tensor_value_info("y", TP.FLOAT, None)])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    result = check(armnn_runner, m, {"x0": x})
    assert any("batch" in w for w in result.report.warnings)


def test_input_shapes_pin_dynamic_dims(armnn_runner):
    x = randn(2, 3, 5)
    g = h.make_graph([node("Sigmoid")], "t", [h.make_tensor_value_info("x0", TP.FLOAT, ["N", 3, "L"])],
                     [h.make_tensor_value_info("y", TP.FLOAT, None)])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    result = armnn_import.convert(m, input_shapes={"x0": (2, 3, 5)})
    assert result.network.input_layers[0].outputs[0].shape == (2, 3, 5)
    got = armnn_runner(result.to_bytes(), [x])[0]
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-x)), rtol=RTOL, atol=ATOL)


def test_transformer_block(armnn_runner):
    """Self-attention + LayerNorm + MLP with a tanh Gelu, as exported from PyTorch
    (runtime MatMuls, Softmax over the last axis, Transpose of heads)."""
    s, d, heads = 6, 8, 2
    dh = d // heads
    x = randn(1, s, d)
    inits = {n: randn(d, d, scale=0.3) for n in ("wq", "wk", "wv", "wo")}
    inits.update({"w1": randn(d, 16, scale=0.3), "w2": randn(16, d, scale=0.3), "ln_s": randn(d), "ln_b": randn(d),
                  "hshape": np.array([1, s, heads, dh], np.int64), "oshape": np.array([1, s, d], np.int64),
                  "scale": np.array(1 / np.sqrt(dh), np.float32)})
    nodes = []
    for n in ("q", "k", "v"):
        nodes += [h.make_node("MatMul", ["x", f"w{n}"], [f"{n}0"]),
                  h.make_node("Reshape", [f"{n}0", "hshape"], [f"{n}1"]),
                  h.make_node("Transpose", [f"{n}1"], [f"{n}h"], perm=[0, 2, 1, 3] if n != "k" else [0, 2, 3, 1])]
    nodes += [h.make_node("MatMul", ["qh", "kh"], ["att0"]),
              h.make_node("Mul", ["att0", "scale"], ["att1"]),
              h.make_node("Softmax", ["att1"], ["att"], axis=-1),
              h.make_node("MatMul", ["att", "vh"], ["ctx0"]),
              h.make_node("Transpose", ["ctx0"], ["ctx1"], perm=[0, 2, 1, 3]),
              h.make_node("Reshape", ["ctx1", "oshape"], ["ctx2"]),
              h.make_node("MatMul", ["ctx2", "wo"], ["o"]),
              h.make_node("Add", ["o", "x"], ["r1"]),
              h.make_node("LayerNormalization", ["r1", "ln_s", "ln_b"], ["n1"], axis=-1),
              h.make_node("MatMul", ["n1", "w1"], ["m1"]),
              h.make_node("Gelu", ["m1"], ["g"], approximate="tanh"),
              h.make_node("MatMul", ["g", "w2"], ["m2"]),
              h.make_node("Add", ["m2", "n1"], ["y"])]
    check(armnn_runner, make(nodes, {"x": x}, inits=inits, opset=20), {"x": x})


@pytest.mark.parametrize("op", ["Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"])
def test_comparison_as_output_and_mask(armnn_runner, op):
    """A comparison straight to an output (Boolean) and as a Where mask (float 0/1)."""
    a = np.round(randn(2, 5) * 2).astype(np.float32)
    b = np.round(randn(2, 5) * 2).astype(np.float32)
    nodes = [h.make_node(op, ["a", "b"], ["c"]), h.make_node("Where", ["c", "a", "b"], ["w"])]
    m = make(nodes, {"a": a, "b": b}, outputs=("w",))
    g = m.graph
    g.output.insert(0, h.make_tensor_value_info("c", TP.BOOL, None))
    check(armnn_runner, m, {"a": a, "b": b})


def test_where_constant_mask_with_infinite_fill(armnn_runner):
    """PyTorch's masked_fill with -inf before a Softmax (a causal attention mask)."""
    x = randn(1, 4, 4)
    mask = np.triu(np.ones((4, 4), bool), 1)
    nodes = [h.make_node("Where", ["mask", "fill", "x"], ["w"]), h.make_node("Softmax", ["w"], ["y"], axis=-1)]
    m = make(nodes, {"x": x}, inits={"mask": mask, "fill": np.array(-np.inf, np.float32)})
    check(armnn_runner, m, {"x": x})


def test_boolean_logic_and_cast(armnn_runner):
    a, b = randn(3, 4), randn(3, 4)
    nodes = [h.make_node("Greater", ["a", "b"], ["g"]), h.make_node("Less", ["a", "zero"], ["l"]),
             h.make_node("Or", ["g", "l"], ["o"]), h.make_node("Not", ["o"], ["n"]),
             h.make_node("Xor", ["n", "g"], ["x"]), h.make_node("And", ["x", "l"], ["an"]),
             h.make_node("Reshape", ["an", "shape"], ["r"]), h.make_node("Cast", ["r"], ["y"], to=TP.FLOAT),
             h.make_node("Cast", ["a"], ["ab"], to=TP.BOOL), h.make_node("Cast", ["ab"], ["y2"], to=TP.FLOAT)]
    m = make(nodes, {"a": a, "b": b}, outputs=("y", "y2"),
             inits={"zero": np.array(0.0, np.float32), "shape": np.array([4, 3], np.int64)})
    a[0, 0] = 0.0
    check(armnn_runner, m, {"a": a, "b": b})


@pytest.mark.parametrize("op,attrs", [("ThresholdedRelu", {"alpha": 0.5}), ("Sign", {}),
                                      ("Shrink", {"lambd": 0.7, "bias": 0.2})])
def test_step_based_unary(armnn_runner, op, attrs):
    x = np.round(randn(3, 8) * 2, 1).astype(np.float32)
    x[0, :3] = [0.0, 0.5, -0.7]
    check(armnn_runner, make([node(op, **attrs)], {"x0": x}), {"x0": x})


def test_where_drops_nan_of_the_unselected_branch(armnn_runner):
    """where(a > 0, sqrt(a), -inf): the NaNs of sqrt(negative) are not selected, nor leaked."""
    a = randn(4, 6)
    nodes = [h.make_node("Greater", ["a", "zero"], ["pos"]), h.make_node("Sqrt", ["a"], ["s"]),
             h.make_node("Where", ["pos", "s", "fill"], ["y"])]
    m = make(nodes, {"a": a}, inits={"zero": np.array(0.0, np.float32), "fill": np.array(-np.inf, np.float32)})
    check(armnn_runner, m, {"a": a})


def test_constant_node_attribute_forms(armnn_runner):
    """Every Constant form folds: value, value_float(s), value_int(s), sparse_value."""
    x = randn(2, 3)
    sparse = h.make_sparse_tensor(nh.from_array(np.array([5.0], np.float32), "sv"),
                                  nh.from_array(np.array([4], np.int64), "si"), [2, 3])
    nodes = [h.make_node("Constant", [], ["c0"], value=nh.from_array(randn(2, 3), "t")),
             h.make_node("Constant", [], ["c1"], value_float=0.5),
             h.make_node("Constant", [], ["c2"], value_floats=[1.0, 2.0, 3.0]),
             h.make_node("Constant", [], ["c3"], value_ints=[3, 2]),
             h.make_node("Constant", [], ["c4"], value_int=1),
             h.make_node("Constant", [], ["c5"], sparse_value=sparse),
             h.make_node("Add", ["x", "c0"], ["a0"]), h.make_node("Mul", ["a0", "c1"], ["a1"]),
             h.make_node("Sub", ["a1", "c2"], ["a2"]), h.make_node("Add", ["a2", "c5"], ["a3"]),
             h.make_node("Reshape", ["a3", "c3"], ["a4"]), h.make_node("Cast", ["c4"], ["c4f"], to=TP.FLOAT),
             h.make_node("Div", ["a4", "c4f"], ["y"])]
    result = check(armnn_runner, make(nodes, {"x": x}), {"x": x})
    assert {"Constant_0", "Constant_5", "Cast_11"} <= set(result.report.folded)
