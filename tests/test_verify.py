"""verify(): valid graphs pass; each kind of broken graph raises GraphError
with a message naming the layer and the problem."""
import re

import numpy as np
import pytest

from armnn_import.errors import GraphError
from armnn_import.ir import (ActivationDescriptor, ActivationFunction, BatchNormalizationDescriptor,
                             ConstTensor, Convolution2dDescriptor, DataLayout, DataType,
                             DepthwiseConvolution2dDescriptor, FullyConnectedDescriptor, LayerType,
                             OriginsDescriptor, PermuteDescriptor, Pooling2dDescriptor, ReshapeDescriptor,
                             SoftmaxDescriptor, StridedSliceDescriptor, TensorInfo)
from armnn_import.ir.graph import Graph, Port
from armnn_import.ir.verify import verify
from armnn_import.serialize import read, write

F32 = np.float32


def float_net():
    """input 1x3x8x8 -> conv -> batchnorm -> relu -> pool -> reshape -> fc(+bias) -> softmax,
    plus a second input added to the result; also a depthwise conv on the side."""
    rng = np.random.default_rng(3)
    g = Graph()
    x = g.add_input("x", TensorInfo((1, 3, 8, 8)))
    conv = g.add(LayerType.Convolution2d, "conv", [x], Convolution2dDescriptor(stride_x=1, stride_y=1),
                 tensors={"weights": ConstTensor(rng.standard_normal((4, 3, 3, 3), dtype=F32))})
    bn = g.add(LayerType.BatchNormalization, "bn", [conv.out()],
               BatchNormalizationDescriptor(eps=1e-5, data_layout=DataLayout.NCHW),
               tensors={k: ConstTensor(np.ones(4, F32)) for k in ("mean", "variance", "beta", "gamma")})
    relu = g.add(LayerType.Activation, "relu", [bn.out()], ActivationDescriptor(ActivationFunction.ReLu))
    pool = g.add(LayerType.Pooling2d, "pool", [relu.out()],
                 Pooling2dDescriptor(pool_width=2, pool_height=2, stride_x=2, stride_y=2,
                                     data_layout=DataLayout.NCHW))
    flat = g.add(LayerType.Reshape, "flat", [pool.out()], ReshapeDescriptor((1, 36)))
    fc = g.add(LayerType.FullyConnected, "fc", [flat.out()], FullyConnectedDescriptor(bias_enabled=True),
               tensors={"weights": ConstTensor(rng.standard_normal((36, 10), dtype=F32)),
                        "biases": ConstTensor(np.zeros(10, F32))})
    y = g.add_input("y", TensorInfo((1, 10)))
    add = g.add(LayerType.Addition, "add", [fc.out(), y])
    sm = g.add(LayerType.Softmax, "softmax", [add.out()], SoftmaxDescriptor(beta=1.0))
    g.add_output("probs", sm.out())
    dw = g.add(LayerType.DepthwiseConvolution2d, "dw", [x], DepthwiseConvolution2dDescriptor(stride_x=1, stride_y=1),
               tensors={"weights": ConstTensor(np.ones((2, 3, 3, 3), F32))})
    g.add_output("dw_out", dw.out())
    return g


def quant_net():
    """QuantisedAsymm8 FullyConnected with a Signed32 bias of scale input*weight."""
    g = Graph()
    x = g.add_input("q", TensorInfo((1, 4), DataType.QuantisedAsymm8, 0.5, 128))
    fc = g.add(LayerType.FullyConnected, "qfc", [x], FullyConnectedDescriptor(bias_enabled=True),
               tensors={"weights": ConstTensor.quantized(np.arange(12).reshape(4, 3), 0.25, 100),
                        "biases": ConstTensor(np.array([1, -2, 3], np.int32),
                                              TensorInfo((3,), DataType.Signed32, 0.125, 0))},
               quant=(1.0, 10))
    g.add_output("out", fc.out())
    return g


def misc_net():
    """Merger, Permute, StridedSlice and Gather."""
    g = Graph()
    a = g.add_input("a", TensorInfo((2, 3)))
    b = g.add_input("b", TensorInfo((2, 5)))
    cat = g.add(LayerType.Merger, "cat", [a, b],
                OriginsDescriptor(concat_axis=1, num_views=2, num_dimensions=2, view_origins=((0, 0), (0, 3))))
    perm = g.add(LayerType.Permute, "perm", [cat.out()], PermuteDescriptor((1, 0)))
    sl = g.add(LayerType.StridedSlice, "slice", [perm.out()],
               StridedSliceDescriptor(begin=(0, 0), end=(4, 2), stride=(1, 1)))
    idx = g.add_input("idx", TensorInfo((3,), DataType.Signed32))
    gat = g.add(LayerType.Gather, "gather", [sl.out(), idx])
    g.add_output("out", gat.out())
    return g


def L(g, name):
    return g.layer_by_name(name)


def test_valid_graphs_pass():
    for make in (float_net, quant_net, misc_net):
        g = make()
        verify(g)
        verify(read(write(g)))


def broken(make, mutate):
    g = make()
    mutate(g)
    return g


def set_(obj, **kw):
    for k, v in kw.items():
        setattr(obj, k, v)


def _cycle(g):
    L(g, "relu").inputs = [L(g, "pool").out()]


def _swap(g):
    i, j = g.layers.index(L(g, "relu")), g.layers.index(L(g, "pool"))
    g.layers[i], g.layers[j] = g.layers[j], g.layers[i]


def _foreign(g):
    other = Graph()
    L(g, "relu").inputs = [other.add_input("stranger", TensorInfo((1, 4, 6, 6)))]


def _unused_input(g):
    g.add_input("z", TensorInfo((1, 4)))


def _quant_slice(g):
    sl = g.add(LayerType.StridedSlice, "qslice", [L(g, "q").out()],
               StridedSliceDescriptor(begin=(0, 0), end=(1, 2), stride=(1, 1)), quant=(0.5, 7))
    g.add_output("sliced", sl.out())


CASES = {
    "cycle": (float_net, _cycle, r"^cycle: 'relu' -> 'pool' -> 'relu'$"),
    "dangling-layer": (float_net, _foreign,
                       r"layer 'relu' input 0 comes from layer 'stranger', which is not in the graph"),
    "dangling-slot": (float_net, lambda g: setattr(L(g, "relu"), "inputs", [Port(L(g, "bn"), 1)]),
                      r"layer 'relu' input 0 uses output 1 of 'bn', which has 1 outputs"),
    "not-topological": (float_net, _swap, r"layer 'pool' \(position \d+\) uses 'relu' .* not in topological order"),
    "duplicate-name": (float_net, lambda g: setattr(L(g, "pool"), "name", "relu"),
                       r"layer name 'relu' is used by 2 layers"),
    "binding-ids": (float_net, lambda g: setattr(L(g, "y"), "binding_id", 0),
                    r"Input binding ids are \[0, 0\]; expected 0\.\.1, each once"),
    "binding-gap": (float_net, lambda g: setattr(L(g, "dw_out"), "binding_id", 5),
                    r"Output binding ids are \[0, 5\]"),
    "input-count": (float_net, lambda g: L(g, "add").inputs.pop(),
                    r"layer 'add' \(Addition\): takes 2 inputs, got 1"),
    "output-count": (float_net, lambda g: L(g, "relu").outputs.append(TensorInfo((1,))),
                     r"layer 'relu' \(Activation\): has 1 outputs, got 2"),
    "missing-tensor": (float_net, lambda g: L(g, "bn").tensors.pop("gamma"),
                       r"layer 'bn' \(BatchNormalization\): missing constant tensor 'gamma'"),
    "extra-tensor": (float_net, lambda g: L(g, "relu").tensors.update(weights=ConstTensor(np.ones(1, F32))),
                     r"layer 'relu' \(Activation\): unexpected constant tensor 'weights'"),
    "missing-bias": (float_net, lambda g: L(g, "fc").tensors.pop("biases"),
                     r"layer 'fc' \(FullyConnected\): missing constant tensor 'biases'"),
    "bias-not-enabled": (float_net, lambda g: set_(L(g, "fc").desc, bias_enabled=False),
                         r"layer 'fc' \(FullyConnected\): has biases but bias_enabled is false"),
    "conv-bias-slot": (float_net, lambda g: set_(L(g, "conv").desc, bias_enabled=True),
                       r"layer 'conv' \(Convolution2d\): descriptor field 'bias_enabled' is True; .*dilation"),
    "conv-layout-slot": (float_net, lambda g: set_(L(g, "dw").desc, data_layout=DataLayout.NHWC),
                         r"layer 'dw' \(DepthwiseConvolution2d\): descriptor field 'data_layout'"),
    "conv-weight-rank": (float_net, lambda g: L(g, "conv").tensors.update(weights=ConstTensor(np.ones((4, 3, 9), F32))),
                         r"layer 'conv' \(Convolution2d\): needs a 4-D input and 4-D weights, .*\(4, 3, 9\)"),
    "conv-in-channels": (float_net, lambda g: L(g, "conv").tensors.update(weights=ConstTensor(np.ones((4, 2, 3, 3), F32))),
                         r"layer 'conv' .*weights \(4, 2, 3, 3\) \(\[O, I, kH, kW\]\) are for 2 input channels, "
                         r"the input \(1, 3, 8, 8\) has 3"),
    "depthwise-channels": (float_net, lambda g: L(g, "dw").tensors.update(weights=ConstTensor(np.ones((3, 2, 3, 3), F32))),
                           r"layer 'dw' .*\[M, C, kH, kW\]\) are for 2 input channels"),
    "fc-weight-rank": (float_net, lambda g: L(g, "fc").tensors.update(weights=ConstTensor(np.ones(360, F32))),
                       r"layer 'fc' \(FullyConnected\): weights must be 2-D, got \(360,\)"),
    "fc-features": (float_net, lambda g: L(g, "fc").tensors.update(weights=ConstTensor(np.ones((35, 10), F32))),
                    r"layer 'fc' .*take 35 inputs, the input \(1, 36\) gives 36"),
    "batchnorm-size": (float_net, lambda g: L(g, "bn").tensors.update(mean=ConstTensor(np.ones(3, F32))),
                       r"layer 'bn' .*'mean' must be 1-D of the 4 channels \(NCHW\), got \(3,\)"),
    "bias-shape": (float_net, lambda g: L(g, "fc").tensors.update(biases=ConstTensor(np.ones((1, 10), F32))),
                   r"layer 'fc' .*biases must be 1-D of the 10 output channels, got \(1, 10\)"),
    "float-bias-dtype": (float_net, lambda g: L(g, "fc").tensors.update(biases=ConstTensor(np.ones(10, np.int32))),
                         r"layer 'fc' .*biases are Signed32; a Float32 input needs Float32 biases"),
    "weight-dtype": (float_net, lambda g: L(g, "fc").tensors.update(weights=ConstTensor(np.ones((36, 10), np.float16))),
                     r"layer 'fc' .*weights are Float16, the input is Float32"),
    "quant-bias-dtype": (quant_net, lambda g: L(g, "qfc").tensors.update(biases=ConstTensor(np.ones(3, F32))),
                         r"layer 'qfc' .*biases are Float32; a QuantisedAsymm8 input needs Signed32 biases"),
    "quant-bias-scale": (quant_net, lambda g: L(g, "qfc").tensors.update(biases=ConstTensor(
        np.ones(3, np.int32), TensorInfo((3,), DataType.Signed32, 0.25, 0))),
        r"layer 'qfc' .*biases have quantization \(0\.25, 0\); .*= 0\.125, 0\)"),
    "quant-bias-offset": (quant_net, lambda g: L(g, "qfc").tensors.update(biases=ConstTensor(
        np.ones(3, np.int32), TensorInfo((3,), DataType.Signed32, 0.125, 4))),
        r"layer 'qfc' .*biases have quantization \(0\.125, 4\)"),
    "quant-scale-zero": (quant_net, lambda g: setattr(L(g, "q"), "outputs", [TensorInfo((1, 4), DataType.QuantisedAsymm8, 0.0, 128)]),
                         r"layer 'q' \(Input\): output 0 is QuantisedAsymm8 with scale 0\.0; it must be finite and > 0"),
    "quant-scale-nan": (quant_net, lambda g: setattr(L(g, "qfc"), "outputs", [TensorInfo((1, 3), DataType.QuantisedAsymm8, float("nan"), 1)]),
                        r"layer 'qfc' .*scale nan"),
    "quant-offset": (quant_net, lambda g: setattr(L(g, "qfc"), "outputs", [TensorInfo((1, 3), DataType.QuantisedAsymm8, 1.0, 256)]),
                     r"layer 'qfc' .*offset 256; it must be in 0\.\.255"),
    "output-shape": (float_net, lambda g: setattr(L(g, "relu"), "outputs", [TensorInfo((1, 4, 6, 5))]),
                     r"layer 'relu' \(Activation\): output 0 is 1x4x6x5 Float32, but its inputs give \(1, 4, 6, 6\) Float32"),
    "output-dtype": (float_net, lambda g: setattr(L(g, "softmax"), "outputs", [TensorInfo((1, 10), DataType.Float16)]),
                     r"layer 'softmax' .*output 0 is 1x10 Float16, but its inputs give \(1, 10\) Float32"),
    "binary-dtypes": (float_net, lambda g: setattr(L(g, "y"), "outputs", [TensorInfo((1, 10), DataType.Float16)]),
                      r"layer 'add' \(Addition\): inputs mix data types \['Float32', 'Float16'\]"),
    "merger-views": (misc_net, lambda g: set_(L(g, "cat").desc, num_views=3),
                     r"layer 'cat' \(Merger\): num_views is 3, but it has 2 inputs"),
    "merger-dims": (misc_net, lambda g: set_(L(g, "cat").desc, num_dimensions=3),
                    r"layer 'cat' \(Merger\): num_dimensions is 3, the inputs have rank 2"),
    "merger-origins": (misc_net, lambda g: set_(L(g, "cat").desc, view_origins=((0, 0), (0, 2))),
                       r"layer 'cat' \(Merger\): view_origins \(\(0, 0\), \(0, 2\)\) .* needs \(\(0, 0\), \(0, 3\)\)"),
    "permute": (misc_net, lambda g: set_(L(g, "perm").desc, dim_mappings=(1, 1)),
                r"layer 'perm' \(Permute\): dim_mappings \(1, 1\) is not a permutation of 0\.\.1"),
    "strided-slice": (misc_net, lambda g: set_(L(g, "slice").desc, stride=(1,)),
                      r"layer 'slice' \(StridedSlice\): begin/end/stride have lengths \(2, 2, 1\)"),
    "strided-slice-quant": (quant_net, _quant_slice,
                            r"layer 'qslice' \(StridedSlice\): output quantization \(0\.5, 7\) differs from the "
                            r"input's \(0\.5, 128\); Arm NN requires them equal"),
    "reshape": (float_net, lambda g: set_(L(g, "flat").desc, target_shape=(1, 35)),
                r"layer 'flat' \(Reshape\): target shape \(1, 35\) has 35 elements, the input \(1, 4, 3, 3\) has 36"),
    "gather-indices": (misc_net, lambda g: setattr(L(g, "idx"), "outputs", [TensorInfo((3,))]),
                       r"layer 'gather' \(Gather\): indices \(input 1\) are Float32; Arm NN needs Signed32"),
    "no-output": (quant_net, lambda g: g.remove([L(g, "out")]), r"^the network has no Output layer$"),
    "unused-input": (float_net, _unused_input, r"^Input layer 'z' feeds no layer"),
    "uint32-field": (float_net, lambda g: set_(L(g, "pool").desc, stride_x=1 << 40),
                     r"layer 'pool' \(Pooling2d\): descriptor field 'stride_x' holds 1099511627776, outside the "
                     r"schema's uint32 range"),
    "negative-uint32": (misc_net, lambda g: set_(L(g, "perm").desc, dim_mappings=(1, -1)),
                        r"layer 'perm' \(Permute\): descriptor field 'dim_mappings' holds -1, outside"),
    "int32-field": (misc_net, lambda g: set_(L(g, "slice").desc, end_mask=1 << 31),
                    r"layer 'slice' \(StridedSlice\): descriptor field 'end_mask' holds 2147483648, outside "
                    r"the schema's int32 range"),
    "dimension-range": (misc_net, lambda g: setattr(L(g, "a"), "outputs", [TensorInfo((2, 1 << 32))]),
                        r"layer 'a' \(Input\): output 0 shape \(2, 4294967296\) has a dimension outside the "
                        r"uint32 range"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_broken_graph_is_rejected(case):
    make, mutate, pattern = CASES[case]
    g = broken(make, mutate)
    with pytest.raises(GraphError) as info:
        verify(g)
    lines = str(info.value).splitlines()
    assert any(re.search(pattern, line) for line in lines), lines


def test_every_problem_is_listed_one_per_line():
    g = float_net()
    L(g, "fc").tensors.pop("biases")
    set_(L(g, "flat").desc, target_shape=(1, 35))
    with pytest.raises(GraphError) as info:
        verify(g)
    lines = str(info.value).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("layer 'flat' (Reshape):") and lines[1].startswith("layer 'fc' (FullyConnected):")
    assert info.value.lines() == [str(info.value)]
