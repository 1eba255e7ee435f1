"""The ONNX frontend's refusals: every unsupported node reported at once,
typed errors for bad files and shapes, external data kept inside the
model's folder, and the CLI's one-line-per-node output."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import armnn_import
from armnn_import.errors import ConversionError, LoadError, UnsupportedModelError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tests/onnx
from shape_crash import assert_shape_inference_crash_refused  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def model(nodes, inputs, outputs, inits=(), opset=17, domains=()):
    g = h.make_graph(nodes, "m", inputs, outputs, list(inits))
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)] + [h.make_opsetid(d, 1) for d in domains])


def vi(name, shape, t=TP.FLOAT):
    return h.make_tensor_value_info(name, t, shape)


def unsupported_model():
    """Five offending nodes among supported ones."""
    nodes = [
        h.make_node("Relu", ["x"], ["r"], name="ok_relu"),
        h.make_node("Log", ["r"], ["l"], name="bad_log"),
        h.make_node("Conv", ["x", "w_runtime"], ["c"], name="bad_conv_runtime_weights"),
        h.make_node("Erf", ["c"], ["e"], name="bad_erf"),
        h.make_node("Add", ["l", "e"], ["a"], name="ok_add"),
        h.make_node("FusedGemm", ["a", "a"], ["f"], name="bad_custom_domain", domain="com.microsoft"),
        h.make_node("Softplus", ["f"], ["s"], name="bad_softplus"),
        h.make_node("Softmax", ["s"], ["y"], name="ok_softmax"),
    ]
    return model(nodes, [vi("x", [1, 3, 4, 4]), vi("w_runtime", [3, 3, 1, 1])], [vi("y", None)],
                 domains=["com.microsoft"])


BAD = {"bad_log": "Log", "bad_conv_runtime_weights": "Conv", "bad_erf": "Erf",
       "bad_custom_domain": "FusedGemm", "bad_softplus": "Softplus"}


def test_every_unsupported_node_is_reported_at_once():
    with pytest.raises(UnsupportedModelError) as info:
        armnn_import.convert(unsupported_model())
    problems = info.value.problems
    assert {p.node: p.op for p in problems} == BAD
    reasons = {p.node: p.reason for p in problems}
    assert "needs the Arm NN 23.08 format" in reasons["bad_log"] and "--target 23.08" in problems[0].hint + "".join(p.hint for p in problems)
    assert "constant" in reasons["bad_conv_runtime_weights"] and "run time" in reasons["bad_conv_runtime_weights"]
    assert "com.microsoft" in reasons["bad_custom_domain"]
    assert len(info.value.lines()) == len(BAD)


def test_cli_prints_one_line_per_unsupported_node(tmp_path):
    path = tmp_path / "bad.onnx"
    onnx.save(unsupported_model(), str(path))
    out = tmp_path / "bad.armnn"
    proc = subprocess.run([sys.executable, "-m", "armnn_import", str(path), "-o", str(out)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 1, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    for node, op in BAD.items():
        assert sum(node in line and op in line for line in lines) == 1, (node, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_value_dependent_refusals_are_collected_too():
    """Refusals found while lowering (here: attribute values only known then) come together."""
    nodes = [h.make_node("ReduceProd", ["x", "axes"], ["p"], name="big_product", keepdims=0),
             h.make_node("Relu", ["x"], ["r"]),
             h.make_node("LRN", ["r"], ["y2"], name="even_lrn", size=4),
             h.make_node("Identity", ["p"], ["y1"])]
    m = model(nodes, [vi("x", [1, 64, 2, 2])], [vi("y1", None), vi("y2", None)],
              inits=[nh.from_array(np.array([1], np.int64), "axes")], opset=18)
    with pytest.raises(UnsupportedModelError) as info:
        armnn_import.convert(m)
    assert sorted(p.node for p in info.value.problems) == ["big_product", "even_lrn"]


def test_runtime_gather_indices_are_refused():
    m = model([h.make_node("Gather", ["x", "i"], ["y"], name="g")], [vi("x", [5, 3]), vi("i", [2], TP.INT64)],
              [vi("y", None)])
    with pytest.raises(UnsupportedModelError) as info:
        armnn_import.convert(m)
    assert [p.node for p in info.value.problems] == ["g"]
    assert "Gather" in info.value.problems[0].reason


def test_unknown_inner_dimension_names_the_input_and_the_flag():
    m = model([h.make_node("Relu", ["x"], ["y"])], [vi("x", ["N", 3, "H", 8])], [vi("y", None)])
    with pytest.raises(ConversionError) as info:
        armnn_import.convert(m)
    assert "'x'" in str(info.value) and "--input-shape" in str(info.value)
    result = armnn_import.convert(m, input_shapes={"x": (2, 3, 5, 8)})
    assert result.network.input_layers[0].outputs[0].shape == (2, 3, 5, 8)


def test_input_shape_for_an_unknown_input_is_an_error():
    m = model([h.make_node("Relu", ["x"], ["y"])], [vi("x", [1, 3])], [vi("y", None)])
    with pytest.raises(ConversionError, match="not an input"):
        armnn_import.convert(m, input_shapes={"nope": (1, 3)})


def test_cli_input_shape_flag(tmp_path):
    m = model([h.make_node("Relu", ["x"], ["y"])], [vi("x", ["N", 3, "L"])], [vi("y", None)])
    path, out = tmp_path / "dyn.onnx", tmp_path / "dyn.armnn"
    onnx.save(m, str(path))
    cmd = [sys.executable, "-m", "armnn_import", str(path), "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 1 and "--input-shape" in proc.stderr
    proc = subprocess.run(cmd + ["--input-shape", "x=2,3,7"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert armnn_import.load(str(out)).input_layers[0].outputs[0].shape == (2, 3, 7)


@pytest.mark.parametrize("opset", [0, onnx.defs.onnx_opset_version() + 1])  # 1-6 are upgraded (test_onnx_old_opsets.py)
def test_opset_out_of_range(opset):
    m = model([h.make_node("Relu", ["x"], ["y"])], [vi("x", [1, 3])], [vi("y", None)], opset=opset)
    with pytest.raises(ConversionError, match="opset"):
        armnn_import.convert(m)


@pytest.mark.parametrize("data", [b"", b"\x08\x07garbage that is not protobuf \xff\xff\xff", b"\x0a\xff\xff\xff\x0f"])
def test_garbage_is_a_load_error(tmp_path, data):
    path = tmp_path / "junk.onnx"
    path.write_bytes(data)
    with pytest.raises(LoadError):
        from armnn_import_frontends.onnx.loader import load_model
        load_model(str(path))


# -- external data ---------------------------------------------------------------------------

def _external_model(tmp_path, location="weights.bin", offset=None, length=None, write=True):
    w = np.arange(12, dtype=np.float32).reshape(4, 3)
    t = nh.from_array(w, "w")
    t.ClearField("float_data")
    t.ClearField("raw_data")
    t.data_location = TP.EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = t.external_data.add()
            e.key, e.value = k, str(v)
    if write:
        (tmp_path / "weights.bin").write_bytes(b"\0" * 8 + w.tobytes())
    m = model([h.make_node("MatMul", ["x", "w"], ["y"])], [vi("x", [2, 4])], [vi("y", None)], inits=[t])
    path = tmp_path / "model.onnx"
    path.write_bytes(m.SerializeToString())
    return path, w


def test_external_data_in_the_model_folder(tmp_path, armnn_runner):
    path, w = _external_model(tmp_path, offset=8, length=48)
    result = armnn_import.convert(str(path))
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    got = armnn_runner(result.to_bytes(), [x])[0]
    np.testing.assert_allclose(got, x @ w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("location,match", [("../weights.bin", "outside"), ("/etc/passwd", "outside"),
                                            ("sub/../../weights.bin", "outside"), ("missing.bin", "not found")])
def test_external_data_location_is_confined(tmp_path, location, match):
    path, _ = _external_model(tmp_path, location=location, offset=8, length=48)
    with pytest.raises(LoadError, match=match):
        armnn_import.convert(str(path))


def test_external_data_symlink_out_of_the_folder(tmp_path):
    inner = tmp_path / "model_dir"
    inner.mkdir()
    _external_model(tmp_path, offset=8, length=48)  # writes tmp_path/weights.bin
    os.symlink(tmp_path / "weights.bin", inner / "link.bin")
    path, _ = _external_model(inner, location="link.bin", offset=8, length=48, write=False)
    with pytest.raises(LoadError, match="symbolic link"):
        armnn_import.convert(str(path))


@pytest.mark.parametrize("offset,length", [(8, 4800), (100, 48), (-1, 48)])
def test_external_data_range_is_checked(tmp_path, offset, length):
    path, _ = _external_model(tmp_path, offset=offset, length=length)
    with pytest.raises(LoadError):
        armnn_import.convert(str(path))


def test_external_data_needs_a_path():
    m = onnx.ModelProto()
    m.CopyFrom(model([h.make_node("Relu", ["x"], ["y"])], [vi("x", [1])], [vi("y", None)]))
    t = m.graph.initializer.add()
    t.name, t.data_type, t.data_location = "w", TP.FLOAT, TP.EXTERNAL
    t.dims.append(1)
    e = t.external_data.add()
    e.key, e.value = "location", "w.bin"
    with pytest.raises(LoadError, match="path"):
        armnn_import.convert(m.SerializeToString())


# -- what the report says --------------------------------------------------------------------

def test_report_records_nodes_folds_and_decompositions():
    nodes = [h.make_node("Shape", ["x"], ["s"], name="shape"),
             h.make_node("Cast", ["s"], ["sf"], name="cast", to=TP.FLOAT),
             h.make_node("Reshape", ["x", "s"], ["r"], name="reshape"),
             h.make_node("Ceil", ["r"], ["y"], name="ceil")]
    m = model(nodes, [vi("x", [2, 3])], [vi("y", None)])
    result = armnn_import.convert(m)
    rep = result.report
    assert {"shape", "cast"} <= set(rep.folded)
    recorded = {n["node"]: n for n in rep.nodes}
    assert recorded["ceil"]["op"] == "Ceil" and len(recorded["ceil"]["layers"]) == 3
    assert "Ceil" in rep.decompositions


def test_initializers_listed_as_inputs_are_constants():
    w = np.ones((3, 2), np.float32)
    m = model([h.make_node("MatMul", ["x", "w"], ["y"])], [vi("x", [1, 3]), vi("w", [3, 2])], [vi("y", None)],
              inits=[nh.from_array(w, "w")], opset=9)
    result = armnn_import.convert(m)
    assert [l.name for l in result.network.input_layers] == ["x"]


def test_a_model_that_crashes_onnx_shape_inference_is_refused_cleanly():
    """onnx's shape inference segfaults on GatherND with batch_dims=-5; it runs in a child process.
    tests/onnx/test_isolate.py runs the same with threads present, and crashes a child on purpose."""
    assert_shape_inference_crash_refused()


def test_operators_with_a_function_body_are_expanded(armnn_runner):
    """RMSNormalization has no converter of its own: its ONNX function body is lowered."""
    x = np.random.default_rng(3).standard_normal((2, 3, 8)).astype(np.float32)
    scale = np.linspace(0.5, 1.5, 8).astype(np.float32)
    m = model([h.make_node("RMSNormalization", ["x", "s"], ["y"], epsilon=1e-5)], [vi("x", [2, 3, 8])],
              [vi("y", None)], inits=[nh.from_array(scale, "s")], opset=23)
    result = armnn_import.convert(m)
    got = armnn_runner(result.to_bytes(), [x])[0]
    want = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-5) * scale
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def test_outputs_keep_their_onnx_names():
    """A node named like the graph output must not push the Output layer to another name."""
    m = model([h.make_node("Relu", ["x"], ["y"], name="y")], [vi("x", [1, 3])], [vi("y", None)])
    net = armnn_import.convert(m).network
    assert [l.name for l in net.output_layers] == ["y"]
    assert [l.name for l in net.input_layers] == ["x"]


def test_an_output_nothing_produces_is_a_load_error():
    m = model([h.make_node("Relu", ["x"], ["y"])], [vi("x", [1, 3])], [vi("y", None), vi("ghost", None)])
    with pytest.raises(LoadError, match="ghost"):
        armnn_import.convert(m)


def test_an_input_that_feeds_nothing_is_dropped(armnn_runner):
    """Arm NN cannot bind an input that feeds nothing: the network loses it
    (with a warning) and the remaining inputs are numbered from 0."""
    m = model([h.make_node("Shape", ["a"], ["s"]), h.make_node("Relu", ["b"], ["y"])],
              [vi("a", [2, 3]), vi("b", [1, 4])], [vi("y", None), vi("s", None, TP.INT64)])
    m.graph.output.pop()  # the shape only mattered to a removed output
    r = armnn_import.convert(m)
    assert [(l.name, l.binding_id) for l in r.network.input_layers] == [("b", 0)]
    assert any("'a' is not needed" in w for w in r.report.warnings)
    x = np.linspace(-2, 2, 4, dtype=np.float32).reshape(1, 4)
    np.testing.assert_array_equal(armnn_runner(r.to_bytes(), [x])[0].reshape(1, 4), np.maximum(x, 0))


def test_an_attribute_of_the_wrong_type_is_a_load_error():
    node = h.make_node("Flatten", ["x"], ["y"], name="flat")
    node.attribute.append(h.make_attribute("axis", 1.5))  # the schema says INT
    m = model([node], [vi("x", [1, 3, 2])], [vi("y", None)])
    with pytest.raises(LoadError, match=r"node 'flat': attribute 'axis' is FLOAT, but Flatten takes INT"):
        armnn_import.convert(m)


def _refusal(m) -> str:
    with pytest.raises(UnsupportedModelError) as info:
        armnn_import.convert(m)
    text = str(info.value)
    assert "internal error" not in text, text
    return text


def test_batchnorm_parameters_for_the_wrong_channel_count_are_refused():
    inits = [nh.from_array(np.ones(n, np.float32), k) for k, n in (("s", 3), ("b", 3), ("m", 4), ("v", 3))]
    m = model([h.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])],
              [vi("x", [1, 3, 2, 2])], [vi("y", None)], inits)
    assert "[3, 3, 4, 3] values for 3 channels" in _refusal(m)


def test_concat_of_inputs_that_do_not_fit_is_refused():
    c = nh.from_array(np.ones((2, 3, 1), np.float32), "c")
    m = model([h.make_node("Concat", ["x", "c"], ["y"], axis=1)], [vi("x", [2, 3])], [vi("y", None)], [c])
    assert "cannot be concatenated on axis 1" in _refusal(m)


def test_slice_with_float_starts_is_refused():
    inits = [nh.from_array(np.array([0.5], np.float32), "st"), nh.from_array(np.array([2], np.int64), "en")]
    m = model([h.make_node("Slice", ["x", "st", "en"], ["y"])], [vi("x", [4, 3])], [vi("y", None)], inits)
    assert "not an integer tensor" in _refusal(m)


def test_expand_to_more_dimensions_than_arm_nn_has_is_refused():
    """(fuzz: numpy's broadcast raised on 48 dimensions)"""
    shape = nh.from_array(np.ones(48, np.int64), "shape")
    m = model([h.make_node("Expand", ["x", "shape"], ["y"])], [vi("x", [1, 3])], [vi("y", None)], [shape])
    assert "Expand target shape has 48 dimensions; Arm NN tensors have at most 5" in _refusal(m)


@pytest.mark.parametrize("op, n_in, limit", [("Shape", 2, 1), ("Expand", 5, 2)])
def test_a_node_with_too_many_inputs_is_refused(op, n_in, limit):
    """(fuzz: op_type mutants; a Shape whose first input is constant but second is not
    reached the registry, which has no Shape entry)"""
    c = nh.from_array(np.ones(3, np.int64), "c")
    m = model([h.make_node(op, ["c", "x"] + ["c"] * (n_in - 2), ["y"], name="bad"), h.make_node("Relu", ["x"], ["r"])],
              [vi("x", [1, 3])], [vi("y", None), vi("r", None)], [c])
    assert f"{n_in} inputs, but {op} takes at most {limit} (the model is invalid)" in _refusal(m)


def test_running_out_of_memory_is_not_an_unsupported_operator(monkeypatch):
    """A MemoryError in a converter says "too large", never "this operator is unsupported"."""
    from armnn_import.lowering import NetBuilder

    def exhausted(*args, **kwargs):
        raise MemoryError()
    monkeypatch.setattr(NetBuilder, "activation", exhausted)
    m = model([h.make_node("Relu", ["x"], ["y"])], [vi("x", [1, 3])], [vi("y", None)])
    with pytest.raises(ConversionError, match="model too large"):
        armnn_import.convert(m)


def test_missing_required_inputs_and_attributes_are_refused_per_node():
    """The schema's required inputs and attributes (looked up once per operator) are checked
    for every node: two nodes of one operator, each lacking something else."""
    nodes = [h.make_node("Gemm", ["x", ""], ["g"], name="no_b"),
             h.make_node("Gemm", ["x", "w"], ["g2"], name="ok_gemm"),
             h.make_node("Concat", ["g", "g2"], ["y"], name="no_axis")]
    w = nh.from_array(np.ones((3, 3), np.float32), "w")
    with pytest.raises(UnsupportedModelError) as e:
        armnn_import.convert(model(nodes, [vi("x", [1, 3])], [vi("y", None)], [w]).SerializeToString())
    reasons = {p.node: p.reason for p in e.value.problems}
    assert reasons["no_b"] == "required input 'B' missing (the model is invalid)"
    assert reasons["no_axis"] == "required attribute 'axis' missing (the model is invalid)"
    assert "ok_gemm" not in reasons


def test_a_node_name_that_is_not_utf8_is_named_in_the_refusal():
    """protobuf hands out bytes for invalid UTF-8; the loader's one-pass name check says which
    kind of name it was."""
    m = model([h.make_node("Relu", ["x"], ["y"], name="abc")], [vi("x", [1, 3])], [vi("y", [1, 3])])
    data = m.SerializeToString().replace(b"abc", b"a\xffc")
    with pytest.raises(LoadError, match=r"node name b'a\\xffc' is not valid UTF-8"):
        armnn_import.convert(data)


def test_an_attribute_the_operator_does_not_have_is_refused():
    """ReduceMean-18 takes its axes as an input: an `axes` attribute (the opset-13 form, found by
    the fuzzer with the opset raised) is refused as an invalid model, as onnxruntime refuses it,
    not converted by guessing which form was meant."""
    node = h.make_node("ReduceMean", ["x"], ["y"], axes=[2], keepdims=0)
    graph = h.make_graph([node], "g", [h.make_tensor_value_info("x", TP.FLOAT, [1, 3, 4])],
                         [h.make_tensor_value_info("y", TP.FLOAT, None)])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])
    import onnxruntime as ort
    with pytest.raises(Exception, match="axes"):
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(UnsupportedModelError) as err:
        armnn_import.convert(model.SerializeToString())
    (p,) = err.value.problems
    assert p.op == "ReduceMean" and "has no attribute 'axes'" in p.reason and p.code == "bad-model"


def test_where_of_a_boolean_input_at_19_02_says_why_and_names_the_target():
    """A Boolean graph input cannot become a number in the 19.02 format (no Cast, no Dequantize);
    from 20.08 it is a uint8 input with a Dequantize after it (tests/onnx/test_onnx_bool_inputs.py)."""
    m = model([h.make_node("Where", ["c", "x", "y"], ["z"])],
              [vi("c", [2, 3], TP.BOOL), vi("x", [2, 3]), vi("y", [2, 3])], [vi("z", [2, 3])])
    with pytest.raises(UnsupportedModelError) as e:
        armnn_import.convert(m, target="19.02")
    (p,) = e.value.problems
    assert p.op == "Where" and "run-time boolean" in p.reason and "Arm NN has no Cast layer" in p.reason, p.reason
    assert "--target 20.08" in p.hint
    assert armnn_import.convert(m, target="23.08").network.input_layers[0].outputs[0].dtype.name == "QuantisedAsymm8"
