"""Bounds before allocation: armnn_import.limits, and models that declare
absurdly large tensors, which must be refused quickly without allocating.

The hostile models are converted in a subprocess that measures its own peak
RSS (VmHWM, reset through /proc/self/clear_refs after a warm-up conversion)
under an address-space cap, so a regression cannot take the machine down."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import armnn_import
from armnn_import import limits as L
from armnn_import.errors import LoadError, SerializationError

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tflite"))
from tfl_builder import ModelBuilder  # noqa: E402

HUGE = [1 << 20, 1 << 20]  # 2^40 elements
MAX_SECONDS, MAX_GROWTH_MB = 1.0, 100


# -- the helpers -----------------------------------------------------------------------------------
def test_check_shape_counts_elements():
    assert L.check_shape([2, 3, 4], "t") == 24
    assert L.check_shape([], "t") == 1
    assert L.check_shape([5, 0, 7], "t") == 0
    assert L.check_shape(np.array([2, 3], np.int64), "t") == 6
    assert L.check_shape((np.int32(4), np.uint64(4)), "t") == 16


@pytest.mark.parametrize("shape, match", [
    ([2, -3], "negative"), ([1] * 9, "rank 9"), ([1 << 16, 1 << 16], "over the limit"),
    ([1 << 62, 1 << 62, 1 << 62], "over the limit"), ([2.5, 2], "not an integer"), (["4"], "not an integer"),
])
def test_check_shape_refuses(shape, match):
    with pytest.raises(LoadError, match=match):
        L.check_shape(shape, "tensor 'w'")


def test_check_shape_stops_before_multiplying_everything():
    # Python ints do not overflow; the check must still name the tensor and not hang on big numbers.
    with pytest.raises(LoadError, match="tensor 'w'"):
        L.check_shape([1 << 4000, 1 << 4000], "tensor 'w'")


def test_element_limit_is_inclusive():
    assert L.check_shape([1 << 31], "t") == 1 << 31
    with pytest.raises(LoadError):
        L.check_shape([(1 << 31) + 1], "t")


def test_check_tensor_bytes():
    assert L.check_tensor_bytes([2, 8], 4, 64, "t") == 64
    assert L.check_tensor_bytes([3, 3], 0.5, 5, "t") == 5  # packed int4: ceil(9 / 2)
    assert L.check_tensor_bytes([2, 8], 4, None, "t") == 64
    for nbytes in (0, 63, 65, 128):
        with pytest.raises(LoadError, match="needs 64 bytes"):
            L.check_tensor_bytes([2, 8], 4, nbytes, "t")


def test_limits_are_configurable():
    small = L.Limits(max_rank=2, max_elements=10, max_constant_bytes=100, max_file_bytes=1000)
    with pytest.raises(LoadError, match="rank 3"):
        L.check_shape([1, 1, 1], "t", small)
    with pytest.raises(LoadError):
        L.check_shape([4, 4], "t", small)
    previous = L.set_limits(small)
    try:
        assert L.get_limits() is small
        with pytest.raises(LoadError):
            L.check_shape([11], "t")
        with pytest.raises(LoadError, match="1,001 bytes"):
            L.check_file_size(1001, "model.tflite")
        budget = L.ConstantBudget()
        budget.add(60, "a")
        with pytest.raises(LoadError, match="120 bytes"):
            budget.add(60, "b")
    finally:
        L.set_limits(previous)
    assert L.get_limits() == L.Limits()
    with pytest.raises(TypeError):
        L.set_limits({"max_rank": 3})


def test_default_limits():
    d = L.Limits()
    assert (d.max_rank, d.max_elements, d.max_constant_bytes) == (8, 1 << 31, 4 << 30)
    assert d.max_file_bytes >= 4 << 30


def test_check_network():
    from armnn_import.ir.graph import Graph
    from armnn_import.ir.types import ConstTensor, DataType, LayerType, TensorInfo

    g = Graph()
    x = g.add_input("x", TensorInfo((1, 4), DataType.Float32))
    c = g.add(LayerType.Constant, "c", tensors={"input": ConstTensor(np.ones((1, 4), np.float32))})
    g.add_output("y", g.add(LayerType.Addition, "add", [x, c.out()]).out())
    L.check_network(g)
    with pytest.raises(LoadError, match="'c' input.*over the limit of 15 bytes"):
        L.check_network(g, L.Limits(max_constant_bytes=15))
    with pytest.raises(LoadError, match="layer 'x' .*output 0.*over the limit of 3 "):
        L.check_network(g, L.Limits(max_elements=3))
    huge = Graph()
    t = huge.add_input("x", TensorInfo(tuple(HUGE), DataType.Float32))
    huge.add_output("y", huge.add(LayerType.Activation, "relu", [t]).out())
    with pytest.raises(LoadError, match="1,099,511,627,776 elements"):
        L.check_network(huge)


# -- the 2 GiB output limit ------------------------------------------------------------------------
def _onnx_with_weights(n: int) -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((n, n)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [x], [y], initializer=[w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


def test_output_over_the_flatbuffers_limit_is_refused_with_a_hint(monkeypatch, tmp_path, capsys):
    from armnn_import import cli
    from armnn_import.serialize import writer

    # 64 KiB of weights against a limit lowered to 1 MiB + 16 KiB (the writer keeps 1 MiB of headroom)
    model = tmp_path / "m.onnx"
    model.write_bytes(_onnx_with_weights(128))
    monkeypatch.setattr(writer, "MAX_BYTES", (1 << 20) + (16 << 10))
    with pytest.raises(SerializationError, match="2 GiB") as e:
        armnn_import.convert(str(model)).to_bytes()
    assert "--fp16" in str(e.value) and "quantized" in str(e.value)
    out = tmp_path / "m.armnn"
    assert cli.main([str(model), "-o", str(out)]) == 1
    assert "2 GiB" in capsys.readouterr().err
    assert not out.exists() and os.listdir(tmp_path) == ["m.onnx"]


# -- hostile models: refused fast, without allocating ----------------------------------------------
_MEASURE = textwrap.dedent("""
    import json, os, resource, sys, time, warnings
    warnings.simplefilter("ignore")
    import armnn_import
    from armnn_import.errors import ArmnnImportError

    def status(key):
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith(key + ":"))

    armnn_import.convert(open(sys.argv[2], "rb").read()).to_bytes()  # warm-up: imports, caches
    # a safety net only: far above what the test allows, far below what would hurt the machine
    cap = status("VmSize") + (2 << 30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current RSS
    except OSError:
        pass
    data = open(sys.argv[1], "rb").read()
    before = status("VmRSS")
    t0 = time.perf_counter()
    try:
        armnn_import.convert(data).to_bytes()
        result, message = "converted", ""
    except ArmnnImportError as e:
        result, message = type(e).__name__, str(e)
    except BaseException as e:
        result, message = "CRASH " + type(e).__name__, str(e)
    seconds = time.perf_counter() - t0
    print(json.dumps({"result": result, "message": message[:500], "seconds": seconds,
                      "growth_mb": (status("VmHWM") - before) / 2**20}))
""")


def _measure(tmp_path, data: bytes, warmup: bytes) -> dict:
    (tmp_path / "hostile").write_bytes(data)
    (tmp_path / "warmup").write_bytes(warmup)
    proc = subprocess.run([sys.executable, "-c", _MEASURE, str(tmp_path / "hostile"), str(tmp_path / "warmup")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _assert_refused_cheaply(r: dict):
    assert r["result"] in ("LoadError", "ConversionError", "UnsupportedModelError"), r
    assert "MemoryError" not in r["message"], f"an allocation was attempted: {r['message']}"
    assert r["seconds"] < MAX_SECONDS, r
    assert r["growth_mb"] < MAX_GROWTH_MB, r


def _onnx(nodes, inits=(), in_shape=(1, 4), opset=13) -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(in_shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph(nodes, "g", [x], [y], initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


ONNX_WARMUP = _onnx([helper.make_node("Relu", ["x"], ["y"])])


def _ints(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _huge_initializer(raw: bytes) -> TensorProto:
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=HUGE)
    if raw:
        w.raw_data = raw
    return w


ONNX_HOSTILE = {
    # the declared dims are 2^40 elements; the data is 16 bytes, or none
    "initializer_dims": lambda: _onnx([helper.make_node("Add", ["x", "w"], ["y"])],
                                      [_huge_initializer(np.ones(4, np.float32).tobytes())]),
    "initializer_dims_no_data": lambda: _onnx([helper.make_node("Add", ["x", "w"], ["y"])], [_huge_initializer(b"")]),
    "input_dims": lambda: _onnx([helper.make_node("Relu", ["x"], ["y"])], in_shape=HUGE),
    "constant_of_shape": lambda: _onnx([helper.make_node("ConstantOfShape", ["s"], ["c"]),
                                        helper.make_node("Add", ["x", "c"], ["y"])], [_ints("s", HUGE)]),
    "range": lambda: _onnx([helper.make_node("Range", ["a", "b", "d"], ["r"]),
                            helper.make_node("Add", ["x", "r"], ["y"])],
                           [_ints("a", 0), _ints("b", 1 << 40), _ints("d", 1)]),
    "tile": lambda: _onnx([helper.make_node("Tile", ["x", "r"], ["y"])], [_ints("r", [1 << 20, 1 << 18])]),
}


@pytest.mark.parametrize("case", list(ONNX_HOSTILE))
def test_onnx_huge_tensor_refused_fast(case, tmp_path):
    _assert_refused_cheaply(_measure(tmp_path, ONNX_HOSTILE[case](), ONNX_WARMUP))


def _tfl(build) -> bytes:
    mb = ModelBuilder()
    build(mb)
    return mb.build(infer_shapes=False)


def _tfl_warmup(mb):
    x = mb.input("x", [1, 4])
    mb.output(mb.op("RELU", [x], out_shape=[1, 4]))


def _tfl_const(mb):
    # tensor shape 2^40 elements, its buffer 16 bytes
    x = mb.input("x", [1, 4])
    w = mb.const("w", np.ones((1, 4), np.float32))
    mb.tensors[w]["shape"] = [1 << 10] * 4
    mb.output(mb.op("ADD", [x, w], "AddOptions", out_shape=[1, 4]))


def _tfl_input(mb):
    x = mb.input("x", [1 << 10] * 4)
    mb.output(mb.op("RELU", [x], out_shape=[1 << 10] * 4))


# The size comes from a constant operand; the declared output shape is either
# the true one (huge) or a lie (small), which the converter must not trust.
def _tfl_tile(declared):
    def build(mb):
        x = mb.input("x", [1, 4])
        m = mb.const("m", np.array([1 << 20, 1 << 18], np.int32))
        mb.output(mb.op("TILE", [x, m], out_shape=declared or [1 << 20, 1 << 20]))
    return build


def _tfl_resize(declared):
    def build(mb):
        # (an interpolation matrix [out, in] per axis would take 16 GiB)
        x = mb.input("x", [1, 256, 256, 1])
        s = mb.const("s", np.array([1 << 24, 1 << 24], np.int32))
        mb.output(mb.op("RESIZE_BILINEAR", [x, s], "ResizeBilinearOptions",
                        out_shape=declared or [1, 1 << 24, 1 << 24, 1]))
    return build


def _tfl_broadcast(declared):
    def build(mb):
        x = mb.input("x", [1, 4])
        s = mb.const("s", np.array([1 << 20, 1 << 18, 4], np.int32))
        mb.output(mb.op("BROADCAST_TO", [x, s], out_shape=declared or [1 << 20, 1 << 18, 4]))
    return build


TFLITE_HOSTILE = {"const_shape_and_buffer": _tfl_const, "input_shape": _tfl_input,
                  "tile": _tfl_tile(None), "tile_declared_small": _tfl_tile([1, 4]),
                  "resize": _tfl_resize(None), "resize_declared_small": _tfl_resize([1, 256, 256, 1]),
                  "broadcast_to": _tfl_broadcast(None), "broadcast_to_declared_small": _tfl_broadcast([1, 4])}


@pytest.mark.parametrize("case", list(TFLITE_HOSTILE))
def test_tflite_huge_tensor_refused_fast(case, tmp_path):
    _assert_refused_cheaply(_measure(tmp_path, _tfl(TFLITE_HOSTILE[case]), _tfl(_tfl_warmup)))


@pytest.mark.parametrize("offset, size", [(64, 1 << 40), (1 << 40, 16), ((1 << 64) - 8, 16)])
def test_tflite_buffer_offset_and_size_checked_against_the_file(offset, size, tmp_path, monkeypatch):
    """A buffer stored after the FlatBuffer (offset/size fields, the layout of
    models over 2 GiB) that points outside the file is refused before any read."""
    import importlib
    tb = importlib.import_module("tflite.Buffer")

    def add_data(b, vec):  # replace the inline data by offset/size fields
        tb.AddOffset(b, offset)
        tb.AddSize(b, size)

    with monkeypatch.context() as mp:
        mp.setattr(tb, "AddData", add_data)
        data = _tfl(_tfl_const_small)
    _assert_refused_cheaply(_measure(tmp_path, data, _tfl(_tfl_warmup)))


def test_tflite_vector_length_past_the_end_of_the_file(tmp_path):
    import struct
    from tflite.Model import Model

    data = bytearray(_tfl(_tfl_const_small))
    tab = Model.GetRootAs(bytes(data), 0).Buffers(1)._tab
    struct.pack_into("<I", data, tab.Vector(tab.Offset(4)) - 4, 0x7FFFFFFF)
    _assert_refused_cheaply(_measure(tmp_path, bytes(data), _tfl(_tfl_warmup)))


def _tfl_const_small(mb):
    x = mb.input("x", [1, 4])
    w = mb.const("w", np.ones((1, 4), np.float32))
    mb.output(mb.op("ADD", [x, w], "AddOptions", out_shape=[1, 4]))
