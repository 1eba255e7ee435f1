"""Large ONNX initializers used in place (frontends/onnx/wire.py): what is cut
out equals what protobuf and numpy_helper read, odd tensors are left alone, and
a converted file is byte-identical whichever way the weights were read."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import armnn_import
from armnn_import_frontends.onnx.loader import load_model
from armnn_import_frontends.onnx.wire import FLOAT_MIN_BYTES, MIN_BYTES, mapped_array, split_weights


def _model(initializers, extra_nodes=()):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 512])
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1), *extra_nodes]
    g = helper.make_graph(nodes, "g", [x], [y], initializer=initializers)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _weights(rng, dtype=np.float32):
    return rng.standard_normal((512, 64)).astype(dtype)


def test_large_initializer_is_cut_and_equal():
    rng = np.random.default_rng(0)
    w, b = _weights(rng), rng.standard_normal(512).astype(np.float32)
    small = rng.standard_normal(FLOAT_MIN_BYTES // 8).astype(np.float32)
    ints = np.arange(512, dtype=np.int64)  # 4 KB: integers (shapes, indices) stay below MIN_BYTES
    data = _model([numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"),
                   numpy_helper.from_array(small, "s"), numpy_helper.from_array(ints, "i")]).SerializeToString()
    rest, cut = split_weights(memoryview(data))
    assert set(cut) == {"w", "b"}  # s is small; b is a float tensor of FLOAT_MIN_BYTES or more
    assert len(rest) < len(data) - w.nbytes - b.nbytes + 64
    np.testing.assert_array_equal(mapped_array(data, cut["w"]), w)
    np.testing.assert_array_equal(mapped_array(data, cut["b"]), b)
    left = onnx.ModelProto.FromString(rest)
    whole = onnx.ModelProto.FromString(data)
    t = next(t for t in left.graph.initializer if t.name == "w")
    assert not t.HasField("raw_data") and list(t.dims) == [512, 64]
    whole.graph.initializer[0].ClearField("raw_data")
    whole.graph.initializer[1].ClearField("raw_data")
    assert left == whole  # everything else is kept as it was


@pytest.mark.parametrize("case", ["float_data", "external", "wrong_size", "duplicate", "small", "garbled"])
def test_odd_tensors_are_left_to_protobuf(case):
    rng = np.random.default_rng(1)
    w = _weights(rng)
    t = numpy_helper.from_array(w, "w")
    inits = [t, numpy_helper.from_array(np.zeros(FLOAT_MIN_BYTES // 8, np.float32), "b")]
    if case == "float_data":
        t.ClearField("raw_data")
        t.float_data.extend(w.reshape(-1).tolist())
    elif case == "external":
        t.data_location = TensorProto.EXTERNAL
    elif case == "wrong_size":
        t.dims[0] = 511
    elif case == "duplicate":
        inits.append(numpy_helper.from_array(w * 2, "w"))
    elif case == "small":
        t = numpy_helper.from_array(w[0, :FLOAT_MIN_BYTES // 8], "w")
        inits[0] = t
    data = _model(inits).SerializeToString()
    if case == "garbled":
        data = data[:len(data) // 2]
    rest, cut = split_weights(memoryview(data))
    assert rest is None and cut == {}
    assert FLOAT_MIN_BYTES > w[0, :FLOAT_MIN_BYTES // 8].nbytes


def test_load_model_maps_weights(tmp_path):
    rng = np.random.default_rng(2)
    w = _weights(rng)
    path = tmp_path / "m.onnx"
    path.write_bytes(_model([numpy_helper.from_array(w, "w"),
                             numpy_helper.from_array(np.ones(512, np.float32), "b")]).SerializeToString())
    mapped = {}
    load_model(str(path), mapped)
    assert set(mapped) == {"w", "b"} and not mapped["w"].flags.writeable and not mapped["b"].flags.writeable
    np.testing.assert_array_equal(mapped["w"], w)


def test_conversion_identical_from_path_and_bytes(tmp_path):
    """The path is parsed from a memory map with the weights cut out; bytes are parsed whole."""
    rng = np.random.default_rng(3)
    w, b = _weights(rng), rng.standard_normal(512).astype(np.float32)
    data = _model([numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]).SerializeToString()
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    from_path = armnn_import.convert(str(path)).to_bytes()
    assert from_path == armnn_import.convert(data).to_bytes()
    net = armnn_import.convert(str(path)).network
    fc = next(l for l in net.layers if l.type.name == "FullyConnected")
    np.testing.assert_array_equal(fc.tensors["weights"].data.reshape(w.shape), w)


def test_external_data_is_mapped(tmp_path):
    """Large external initializers are mapped from their file, not read in; the
    conversion equals that of the same model with the weights inside."""
    rng = np.random.default_rng(4)
    w, b = _weights(rng), rng.standard_normal(512).astype(np.float32)
    model = _model([numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    inline = model.SerializeToString()
    path = tmp_path / "ext.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=1024)
    mapped = {}
    proto = load_model(str(path), mapped)
    assert set(mapped) == {"w"} and not mapped["w"].flags.writeable
    np.testing.assert_array_equal(mapped["w"], w)
    t = {t.name: t for t in proto.graph.initializer}
    assert t["b"].HasField("raw_data") and not t["w"].HasField("raw_data")  # b is small: read in
    assert armnn_import.convert(str(path)).to_bytes() == armnn_import.convert(inline).to_bytes()


def test_garbage_is_not_walked_field_by_field(monkeypatch):
    """Bytes that parse as endless tiny fields are given up on after MODEL_FIELDS fields
    and left to protobuf (not walked byte by byte in Python)."""
    from armnn_import_frontends.onnx import wire

    calls = []
    real = wire._varint
    monkeypatch.setattr(wire, "_varint", lambda *a: calls.append(1) or real(*a))
    data = bytes([0x08, 0x01]) * 2_000_000  # 2M varint fields of field 1 (ir_version)
    assert split_weights(memoryview(data)) == (None, {})
    assert len(calls) <= 2 * wire.MODEL_FIELDS + 2


def test_conformance_models_convert_the_same_from_a_file(tmp_path, monkeypatch):
    """Every ONNX backend node case with initializers (weight-like inputs frozen into them,
    as tests/onnx/conformance.py does), converted from a file with every initializer cut
    out and mapped read-only, gives the bytes (or the refusal) of the in-memory model."""
    import sys
    from pathlib import Path

    from armnn_import_frontends.onnx import wire

    sys.path.insert(0, str(Path(__file__).parent))
    import conformance

    monkeypatch.setattr(wire, "MIN_BYTES", 1)
    path = tmp_path / "case.onnx"
    compared = 0
    for case in conformance.node_cases():
        inputs = case.data_sets[0][0]
        try:
            model = conformance.freeze_inputs(case.model, inputs) if len(inputs) > 1 else case.model
        except (NotImplementedError, ValueError):  # sequence / optional inputs
            continue
        if not model.graph.initializer:
            continue
        path.write_bytes(model.SerializeToString())
        outcomes = []
        for source in (model, str(path)):
            try:
                outcomes.append(armnn_import.convert(source).to_bytes())
            except armnn_import.ArmnnImportError as e:
                outcomes.append(type(e).__name__)
        assert outcomes[0] == outcomes[1], case.name
        compared += 1
    assert compared > 500


def _whole_after_cut(data: bytes, cut: dict) -> onnx.ModelProto:
    """What protobuf reads from `data`, with the raw_data of the cut-out tensors cleared."""
    whole = onnx.ModelProto.FromString(data)
    for t in whole.graph.initializer:
        if t.name in cut:
            t.ClearField("raw_data")
    return whole


@pytest.mark.unit
def test_damaged_bytes_are_cut_as_protobuf_reads_them():
    """The inline walk (no generator per field) on damaged bytes: either it gives up, or what it
    keeps parses as protobuf reads the whole, and every cut-out tensor is the one protobuf reads."""
    import random
    rng, gen = random.Random(0), np.random.default_rng(0)
    base = _model([numpy_helper.from_array(_weights(gen), "w"),
                   numpy_helper.from_array(gen.standard_normal(512).astype(np.float32), "b"),
                   numpy_helper.from_array(np.arange(3, dtype=np.int64), "i")]).SerializeToString()
    kept = 0
    for _ in range(400):
        data = bytearray(base)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(data))
            if rng.random() < 0.6:
                data[i] = rng.randrange(256)
            else:
                del data[i:i + rng.randint(1, 4)]
        data = bytes(data)
        rest, cut = split_weights(memoryview(data))
        if rest is None:
            continue
        whole = onnx.ModelProto.FromString(data)  # (a cut means the bytes were well-formed)
        for t in whole.graph.initializer:
            if t.name in cut:
                np.testing.assert_array_equal(mapped_array(data, cut[t.name]), numpy_helper.to_array(t))
        assert onnx.ModelProto.FromString(rest) == _whole_after_cut(data, cut)
        kept += 1
    assert kept > 50  # most damage falls inside the weights' bytes, which the walk steps over
