"""float16 models (float16 inputs and outputs) become Float16 networks by default;
run on the real Arm NN runtime against onnxruntime on the float16 model."""
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
from armnn_import.errors import UnsupportedModelError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ort_check import check  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RNG = np.random.default_rng(16)


def f16(*shape):
    return RNG.standard_normal(shape).astype(np.float16)


def cnn16(extra_nodes=(), out="y", out_type=TP.FLOAT16, in_type=TP.FLOAT16):
    """Conv (float16 weights) -> Relu -> GlobalAveragePool -> Gemm -> Softmax, plus a
    Constant-of-float16 Add and a Cast to float16 of a float16 tensor."""
    nodes = [h.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             h.make_node("Relu", ["c"], ["r"]),
             h.make_node("Constant", [], ["k"], value=nh.from_array(np.float16(0.25).reshape(()), "k")),
             h.make_node("Add", ["r", "k"], ["ra"]),
             h.make_node("Cast", ["ra"], ["rc"], to=TP.FLOAT16),
             h.make_node("GlobalAveragePool", ["rc"], ["g"]), h.make_node("Flatten", ["g"], ["f"]),
             h.make_node("Gemm", ["f", "wg", "bg"], ["gm"], transB=1), h.make_node("Softmax", ["gm"], ["y"]),
             *extra_nodes]
    inits = [nh.from_array(f16(4, 3, 3, 3), "w"), nh.from_array(f16(4), "b"),
             nh.from_array(f16(5, 4), "wg"), nh.from_array(f16(5), "bg")]
    g = h.make_graph(nodes, "f16", [h.make_tensor_value_info("x", in_type, [1, 3, 8, 8])],
                     [h.make_tensor_value_info(out, out_type, None)], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


X = f16(1, 3, 8, 8)


def test_a_float16_model_becomes_a_float16_network(armnn_runner):
    m = cnn16()
    result = check(armnn_runner, m, {"x": X}, rtol=1e-2, atol=2e-3)
    net = result.network
    assert net.input_layers[0].outputs[0].dtype.name == "Float16"
    assert net.output_layers[0].inputs[0].info.dtype.name == "Float16"
    assert all(t.info.dtype.name == "Float16" for l in net.layers for t in l.tensors.values())
    assert any("float16" in w for w in result.report.warnings)
    assert result.report.float16_network


def test_float16_elementwise_model(armnn_runner):
    """Elementwise operators with a float16 initializer operand (the node-suite cases are single ops)."""
    nodes = [h.make_node("Max", ["a", "c"], ["m"]), h.make_node("Elu", ["m"], ["e"], alpha=2.0),
             h.make_node("Mul", ["e", "a"], ["y"])]
    g = h.make_graph(nodes, "ew", [h.make_tensor_value_info("a", TP.FLOAT16, [2, 3, 4])],
                     [h.make_tensor_value_info("y", TP.FLOAT16, None)], [nh.from_array(f16(3, 4), "c")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    check(armnn_runner, m, {"a": f16(2, 3, 4)}, rtol=1e-2, atol=2e-3)


def test_float32_outputs_beside_float16_inputs_are_refused():
    nodes = [h.make_node("Relu", ["x"], ["r"]), h.make_node("Cast", ["r"], ["y"], to=TP.FLOAT)]
    g = h.make_graph(nodes, "mixed", [h.make_tensor_value_info("x", TP.FLOAT16, [2, 3])],
                     [h.make_tensor_value_info("y", TP.FLOAT, None)])
    with pytest.raises(UnsupportedModelError) as info:
        armnn_import.convert(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]))
    (p,) = info.value.problems
    assert (p.op, p.node, p.code) == ("output", "y", "needs-target") and "float32" in p.reason
    assert "Cast layer" in p.reason and "--target 23.08" in p.hint


def test_float32_output_of_a_non_cast_beside_float16_inputs_is_refused():
    """A float32 output that is no Cast of a float16 tensor: no Float16 network can give it."""
    nodes = [h.make_node("Relu", ["x"], ["y"]), h.make_node("Relu", ["z"], ["w"])]
    g = h.make_graph(nodes, "mixed", [h.make_tensor_value_info("x", TP.FLOAT16, [2, 3]),
                                      h.make_tensor_value_info("z", TP.FLOAT, [2, 3])],
                     [h.make_tensor_value_info("y", TP.FLOAT16, None), h.make_tensor_value_info("w", TP.FLOAT, None)])
    with pytest.raises(UnsupportedModelError) as info:
        armnn_import.convert(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), target="23.08")
    assert [(p.op, p.node) for p in info.value.problems] == [("input", "z"), ("output", "w")]
    assert all("converting" in p.reason for p in info.value.problems)


def _cast_segment_model():
    """float16 in and out, with a float32 part in the middle (Cast, Softmax, Cast back)."""
    nodes = [h.make_node("Cast", ["x"], ["x32"], to=TP.FLOAT), h.make_node("Softmax", ["x32"], ["s"]),
             h.make_node("Cast", ["s"], ["y"], to=TP.FLOAT16)]
    g = h.make_graph(nodes, "seg", [h.make_tensor_value_info("x", TP.FLOAT16, [2, 6])],
                     [h.make_tensor_value_info("y", TP.FLOAT16, None)])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def test_a_float32_part_of_a_float16_model_is_refused_unless_fp16_is_asked(armnn_runner):
    m = _cast_segment_model()
    with pytest.raises(UnsupportedModelError) as info:
        armnn_import.convert(m)
    (p,) = info.value.problems
    assert p.op == "Cast" and "float32" in p.reason and "--fp16" in p.hint
    x = f16(2, 6)
    check(armnn_runner, m, {"x": x}, rtol=1e-2, atol=2e-3, fp16=True)


def test_cli_converts_a_float16_model(tmp_path, armnn_runner):
    path, out = tmp_path / "f16.onnx", tmp_path / "f16.armnn"
    m = cnn16()
    onnx.save(m, str(path))
    proc = subprocess.run([sys.executable, "-m", "armnn_import", str(path), "-o", str(out)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "warning:" in proc.stderr and "float16" in proc.stderr and "Traceback" not in proc.stderr
    from ort_check import ort_run
    (want,) = ort_run(m, {"x": X})
    (got,) = armnn_runner(str(out), [X])
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32).reshape(want.shape), want.astype(np.float32),
                               rtol=1e-2, atol=2e-3)


def test_large_float16_weights_read_from_the_file(tmp_path, armnn_runner):
    """Weights over 64 KiB are memory-mapped from the model file (wire.py): they are widened
    to float32 too, and stored back as Float16."""
    w = (RNG.standard_normal((64, 64, 3, 3)) * 0.1).astype(np.float16)
    nodes = [h.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c"], ["y"])]
    g = h.make_graph(nodes, "big16", [h.make_tensor_value_info("x", TP.FLOAT16, [1, 64, 6, 6])],
                     [h.make_tensor_value_info("y", TP.FLOAT16, None)], [nh.from_array(w, "w")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    path = tmp_path / "big16.onnx"
    onnx.save(m, str(path))
    from ort_check import ort_run
    x = f16(1, 64, 6, 6)
    (want,) = ort_run(m, {"x": x})
    result = armnn_import.convert(str(path))
    weights = [t for l in result.network.layers for t in l.tensors.values() if t.data.size == w.size]
    assert weights and weights[0].data.dtype == np.float16
    (got,) = armnn_runner(result.to_bytes(), [x])
    np.testing.assert_allclose(got.astype(np.float32).reshape(want.shape), want.astype(np.float32),
                               rtol=1e-2, atol=1e-2)


def keep_io_types_cnn():
    """cnn16 between float32 edges, as onnxconverter-common's keep_io_types writes a float16
    model: Cast to float16 after the input, Cast to float32 before the output."""
    m = cnn16(in_type=TP.FLOAT16)
    g = m.graph
    g.node.insert(0, h.make_node("Cast", ["x32"], ["x"], to=TP.FLOAT16, name="to_half"))
    g.node.append(h.make_node("Cast", ["y"], ["y32"], to=TP.FLOAT, name="to_float"))
    g.ClearField("input")
    g.ClearField("output")
    g.input.append(h.make_tensor_value_info("x32", TP.FLOAT, [1, 3, 8, 8]))
    g.output.append(h.make_tensor_value_info("y32", TP.FLOAT, [1, 5]))
    onnx.checker.check_model(m)
    return m


def test_a_float16_model_between_float32_edges_on_23_08(armnn_runner_for, tmp_path):
    """From the 23.08 format on (its Cast layer): a Float16 network with Float32 inputs and
    outputs, through the CLI, against onnxruntime on the model; the executor equals the runtime."""
    from armnn_import import cli
    from armnn_import.executor.run import run as execute
    from armnn_import.serialize.reader import read
    src, out, model = tmp_path / "m.onnx", tmp_path / "m.armnn", keep_io_types_cnn()
    onnx.save(model, str(src))
    assert cli.main([str(src), "-o", str(out), "--target", "23.08", "-q"]) == 0
    g = read(out.read_bytes())
    kinds = [(l.type.name, [o.dtype.name for o in l.outputs]) for l in g.layers]
    assert kinds[:2] == [("Input", ["Float32"]), ("Cast", ["Float16"])] and kinds[-2] == ("Cast", ["Float32"])
    inner = [l for l in g.layers if l.type.name not in ("Input", "Output", "Cast")]
    assert all(o.dtype.name == "Float16" for l in inner for o in l.outputs)
    assert all(t.info.dtype.name == "Float16" for l in g.layers for t in l.tensors.values())
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((1, 3, 8, 8)).astype(np.float32) * 3
        (want,) = onnx_run(model, {"x32": x})
        got, = armnn_runner_for("23.08")(str(out), [x])
        assert got.dtype == np.float32
        np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-2, atol=2e-3)
        mine, = execute(g, [x])
        np.testing.assert_array_equal(np.asarray(mine).reshape(want.shape), got.reshape(want.shape))


@pytest.mark.parametrize("target", ["19.02", "20.08"])
def test_float32_edges_around_float16_need_the_23_08_cast(target):
    with pytest.raises(UnsupportedModelError) as info:
        armnn_import.convert(keep_io_types_cnn(), target=target)
    assert [(p.op, p.node, p.code) for p in info.value.problems] == [("input", "x32", "needs-target"),
                                                                    ("output", "y32", "needs-target")]
    assert all("--target 23.08" in p.hint for p in info.value.problems)


def onnx_run(model, feeds):
    import onnxruntime as ort
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, feeds)
