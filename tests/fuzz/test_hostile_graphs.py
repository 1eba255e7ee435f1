"""Hand-made broken graphs: cycles, references to nothing, data that disagrees
with its declared shape and type. Each must be refused with an
ArmnnImportError (never another exception, never an empty or unloadable
network)."""
import os
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import armnn_import
from armnn_import.errors import ArmnnImportError, LoadError

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tflite"))
from tfl_builder import ModelBuilder  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_mutators as fm  # noqa: E402


def _onnx(nodes, inputs=("x",), outputs=("y",), inits=(), opset=13) -> bytes:
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in inputs]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in outputs]
    g = helper.make_graph(nodes, "g", ins, outs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


def _refused(data, match=None, error=ArmnnImportError):
    with pytest.raises(error, match=match):
        armnn_import.convert(data)


def test_onnx_valid_base_converts():
    r = armnn_import.convert(_onnx([helper.make_node("Relu", ["x"], ["y"])]))
    assert len(r.network.input_layers) == 1 and len(r.network.output_layers) == 1


def test_onnx_cycle():
    _refused(_onnx([helper.make_node("Add", ["x", "b"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
                    helper.make_node("Relu", ["a"], ["y"])]), "cycle", LoadError)


def test_onnx_self_loop():
    _refused(_onnx([helper.make_node("Add", ["x", "y"], ["y"])]), None, LoadError)


def test_onnx_node_input_references_nothing():
    _refused(_onnx([helper.make_node("Add", ["x", "ghost"], ["y"])]), "ghost", LoadError)


def test_onnx_output_references_nothing():
    # Must not give an empty network (Arm NN 20.08 cannot load a graph without layers).
    _refused(_onnx([helper.make_node("Relu", ["x"], ["r"])], outputs=("ghost",)), "ghost")


def test_onnx_no_outputs():
    _refused(_onnx([helper.make_node("Relu", ["x"], ["r"])], outputs=()))


def test_onnx_tensor_produced_twice():
    _refused(_onnx([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Sigmoid", ["x"], ["y"])]),
             "twice", LoadError)


def _weight(**fields) -> TensorProto:
    # Built by hand: onnx.helper refuses to make these broken tensors.
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4])
    for k, v in fields.items():
        if isinstance(v, list):
            getattr(w, k).extend(v)
        else:
            setattr(w, k, v)
    return w


@pytest.mark.parametrize("nbytes", [4, 15, 17, 64])
def test_onnx_raw_data_disagrees_with_shape(nbytes):
    w = _weight(raw_data=b"\0" * nbytes)
    _refused(_onnx([helper.make_node("Add", ["x", "w"], ["y"])], inits=[w]), None, LoadError)


@pytest.mark.parametrize("values", [[], [1.0, 2.0, 3.0], [1.0] * 5])
def test_onnx_typed_data_disagrees_with_shape(values):
    w = _weight(float_data=values)
    _refused(_onnx([helper.make_node("Add", ["x", "w"], ["y"])], inits=[w]), None, LoadError)


def test_onnx_data_in_the_wrong_typed_field():
    w = _weight(int64_data=[1, 2, 3, 4])
    _refused(_onnx([helper.make_node("Add", ["x", "w"], ["y"])], inits=[w]), None, LoadError)


@pytest.mark.parametrize("dims", [[-1, 4], [1, -4], [-1, -4], [2, -2, -4]])
def test_onnx_negative_dims(dims):
    # 16 bytes of data: numpy's reshape would read -1 as "infer this dimension"
    w = _weight(raw_data=np.ones(4, np.float32).tobytes())
    del w.dims[:]
    w.dims.extend(dims)
    _refused(_onnx([helper.make_node("Add", ["x", "w"], ["y"])], inits=[w]), None, LoadError)


def test_onnx_unknown_data_type():
    w = numpy_helper.from_array(np.ones((1, 4), np.float32), "w")
    w.data_type = 1000
    _refused(_onnx([helper.make_node("Add", ["x", "w"], ["y"])], inits=[w]), None, LoadError)


# -- TFLite --------------------------------------------------------------------------------------
def _tfl(build) -> bytes:
    mb = ModelBuilder()
    build(mb)
    return mb.build(infer_shapes=False)


def _relu_chain(mb):
    x = mb.input("x", [1, 4])
    mb.output(mb.op("RELU", [x], out_shape=[1, 4]))


def test_tflite_valid_base_converts():
    r = armnn_import.convert(_tfl(_relu_chain))
    assert len(r.network.input_layers) == 1 and len(r.network.output_layers) == 1


def test_tflite_operator_reads_a_tensor_nothing_computes():
    def build(mb):
        x = mb.input("x", [1, 4])
        ghost = mb.tensor("ghost", [1, 4])
        mb.output(mb.op("ADD", [x, ghost], "AddOptions", out_shape=[1, 4]))
    _refused(_tfl(build), "ghost")


def test_tflite_cycle():
    def build(mb):
        x = mb.input("x", [1, 4])
        b = mb.tensor("b", [1, 4])
        a = mb.op("ADD", [x, b], "AddOptions", out_shape=[1, 4])
        mb.ops.append(("RELU", 1, [a], [b], None, {}, None))  # b = relu(a): a cycle through b
        mb.output(mb.op("RELU", [a], out_shape=[1, 4]))
    _refused(_tfl(build))


def test_tflite_output_nothing_computes():
    def build(mb):
        x = mb.input("x", [1, 4])
        mb.op("RELU", [x], out_shape=[1, 4])
        mb.output(mb.tensor("ghost", [1, 4]))
    _refused(_tfl(build), "ghost")


def test_tflite_no_outputs():
    def build(mb):
        x = mb.input("x", [1, 4])
        mb.op("RELU", [x], out_shape=[1, 4])
    _refused(_tfl(build))


@pytest.mark.parametrize("shape", [[1, 3], [1, 5], [2, 4], [4]])
def test_tflite_buffer_disagrees_with_shape(shape):
    def build(mb):
        x = mb.input("x", [1, 4])
        w = mb.const("w", np.ones((1, 4), np.float32))
        mb.tensors[w]["shape"] = shape  # the buffer keeps its 16 bytes
        mb.output(mb.op("ADD", [x, w], "AddOptions", out_shape=[1, 4]))
    data = _tfl(build)
    if shape == [4]:  # the same 16 bytes: a legal rank-1 constant, broadcast by ADD
        armnn_import.convert(data)
    else:
        _refused(data, None, LoadError)


def test_tflite_buffer_type_disagrees_with_data():
    def build(mb):
        x = mb.input("x", [1, 4])
        w = mb.const("w", np.ones((1, 4), np.float32))
        mb.tensors[w]["dtype"] = np.dtype(np.float16)  # 8 bytes needed, 16 present
        mb.output(mb.op("ADD", [x, w], "AddOptions", out_shape=[1, 4]))
    _refused(_tfl(build), None, LoadError)


@pytest.mark.parametrize("where", ["op_input", "op_output", "subgraph_output"])
def test_tflite_tensor_index_out_of_range(where):
    def build(mb):
        x = mb.input("x", [1, 4])
        y = mb.op("RELU", [x], out_shape=[1, 4])
        name, ver, ins, outs, *rest = mb.ops[0]
        if where == "op_input":
            mb.ops[0] = (name, ver, [7], outs, *rest)
        elif where == "op_output":
            mb.ops[0] = (name, ver, ins, [-5], *rest)
        mb.output(99 if where == "subgraph_output" else y)
    _refused(_tfl(build), None, LoadError)


@pytest.mark.parametrize("used", ["x", "y"])
def test_tflite_unused_model_input(used, armnn_runner):
    """Arm NN 20.08 cannot load a network with an Input layer that feeds
    nothing ("No input layer is associated with id N"): such an input is
    dropped (or the model refused), never written."""
    def build(mb):
        x, y = mb.input("x", [1, 4]), mb.input("y", [1, 4])
        mb.output(mb.op("RELU", [x if used == "x" else y], out_shape=[1, 4]))
    try:
        r = armnn_import.convert(_tfl(build))
    except ArmnnImportError:
        return
    consumers = {id(p.layer) for l in r.network.layers for p in l.inputs}
    assert all(id(l) in consumers for l in r.network.input_layers)
    x = np.arange(4, dtype=np.float32).reshape(1, 4) - 2
    outs = armnn_runner(r.to_bytes(), [x] * len(r.network.input_layers))
    np.testing.assert_array_equal(outs[0], np.maximum(x, 0))


def _names(network):
    return [l.name for l in network.layers]


def test_onnx_names_that_are_not_utf8():
    """protobuf hands out bytes for string fields holding invalid UTF-8; layer
    names must still be str (or the model refused)."""
    data = _onnx([helper.make_node("Relu", ["x"], ["y"], name="abc")]).replace(b"abc", b"a\xffc")
    data = data.replace(b"\n\x01x", b"\n\x01\xfe")  # the input's name too (tag, length 1, 'x')
    try:
        r = armnn_import.convert(data)
    except ArmnnImportError:
        return
    assert all(isinstance(n, str) for n in _names(r.network)), _names(r.network)
    from armnn_import.serialize import read, write
    assert write(read(r.to_bytes())) == r.to_bytes()


def test_tflite_names_that_are_not_utf8():
    def build(mb):
        x = mb.input("x", [1, 4])
        mb.output(mb.op("RELU", [x], out_shape=[1, 4], out_names=["abc"]))
    data = _tfl(build).replace(b"abc", b"a\xffc")
    try:
        r = armnn_import.convert(data)
    except ArmnnImportError:
        return
    assert all(isinstance(n, str) for n in _names(r.network)), _names(r.network)


# -- attribute values out of range: refused, never a crash in the writer or an allocation ---------
def _refused_cleanly(data):
    """convert() and to_bytes() refuse with an ArmnnImportError that is not a
    wrapped internal error, within 10 s and 3 GiB."""
    with fm.bounded(10):
        with pytest.raises(ArmnnImportError) as e:
            armnn_import.convert(data).to_bytes()
    assert "internal error" not in str(e.value) and "MemoryError" not in str(e.value), str(e.value)


def _onnx_4d(node, inits=(), shape=(1, 4, 8, 8)) -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph([node], "g", [x], [y], initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


ONNX_BAD_ATTRIBUTES = {
    "lrn_size_negative": lambda: _onnx_4d(helper.make_node("LRN", ["x"], ["y"], size=-1)),
    "avgpool_stride_2^40": lambda: _onnx_4d(helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2],
                                                             strides=[1 << 40, 1])),
    "depth_to_space_blocksize_2^31": lambda: _onnx_4d(helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=1 << 31)),
    "input_dim_2^40": lambda: _onnx_4d(helper.make_node("Relu", ["x"], ["y"]), shape=(1, 1 << 40)),
    "input_dim_2^32": lambda: _onnx_4d(helper.make_node("Relu", ["x"], ["y"]), shape=(1, 1 << 32)),
}


@pytest.mark.parametrize("case", list(ONNX_BAD_ATTRIBUTES))
def test_onnx_out_of_range_values(case):
    _refused_cleanly(ONNX_BAD_ATTRIBUTES[case]())


def _tfl_lrn(mb):
    x = mb.input("x", [1, 2, 2, 8])
    mb.output(mb.op("LOCAL_RESPONSE_NORMALIZATION", [x], "LocalResponseNormalizationOptions", out_shape=[1, 2, 2, 8],
                    radius=-1, bias=1.0, alpha=1.0, beta=0.5))


def _tfl_transpose_conv(mb):
    x = mb.input("x", [1, 2, 2, 1])
    shape = mb.const("shape", np.array([1, 4, 4, 1], np.int32))
    w = mb.const("w", np.ones((1, 2, 2, 1), np.float32))
    mb.output(mb.op("TRANSPOSE_CONV", [shape, w, x], "TransposeConvOptions", out_shape=[1, 4, 4, 1],
                    padding="VALID", stride_w=1 << 20, stride_h=1 << 20))


def _tfl_pool_stride(mb):
    x = mb.input("x", [1, 8, 8, 4])
    mb.output(mb.op("AVERAGE_POOL_2D", [x], "Pool2DOptions", out_shape=[1, 1, 1, 4], padding="VALID",
                    stride_w=(1 << 31) - 1, stride_h=1, filter_width=2, filter_height=2))


@pytest.mark.parametrize("build", [_tfl_lrn, _tfl_transpose_conv, _tfl_pool_stride], ids=lambda f: f.__name__)
def test_tflite_out_of_range_values(build):
    _refused_cleanly(_tfl(build))
