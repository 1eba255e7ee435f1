"""Float32 parts of a float16 model at --target 23.08 (what onnxconverter-common's op_block_list
keeps in float32): Float32 layers between a Cast to Float32 and one to Float16, judged on Arm NN
23.08 against onnxruntime; the 20.08 format, which has no Cast, refuses them."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

import armnn_import
from armnn_import import cli
from armnn_import.errors import UnsupportedModelError


def _layer_norm_island():
    """float16 MatMul -> Cast to float32 -> LayerNormalization, Softmax -> Cast to float16 -> Relu."""
    rng = np.random.default_rng(0)
    inits = [onnx.numpy_helper.from_array(np.linspace(0.5, 1.5, 8).astype(np.float32), "scale"),
             onnx.numpy_helper.from_array(np.linspace(-1, 1, 8).astype(np.float32), "bias"),
             onnx.numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float16), "w")]
    nodes = [h.make_node("MatMul", ["x", "w"], ["a"]), h.make_node("Cast", ["a"], ["b"], to=T.FLOAT),
             h.make_node("LayerNormalization", ["b", "scale", "bias"], ["c"], axis=-1),
             h.make_node("Softmax", ["c"], ["d"], axis=-1), h.make_node("Cast", ["d"], ["e"], to=T.FLOAT16),
             h.make_node("Relu", ["e"], ["y"])]
    g = h.make_graph(nodes, "island", [h.make_tensor_value_info("x", T.FLOAT16, [2, 3, 8])],
                     [h.make_tensor_value_info("y", T.FLOAT16, [2, 3, 8])], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def test_layer_norm_island_runs_in_float32(tmp_path, armnn_runner_for):
    import onnxruntime as ort
    m = _layer_norm_island()
    src, out = tmp_path / "m.onnx", tmp_path / "m.armnn"
    onnx.save(m, src)
    assert cli.main([str(src), "-o", str(out), "-q", "--target", "23.08"]) == 0
    net = armnn_import.convert(m, target="23.08").network
    types = {l.type.name: l.outputs[0].dtype.name for l in net.layers if l.outputs}
    assert types["Softmax"] == "Float32" and types["FullyConnected"] == "Float16"
    assert [l.type.name for l in net.layers].count("Cast") == 2
    x = np.random.default_rng(1).standard_normal((2, 3, 8)).astype(np.float16)
    want, = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got, = armnn_runner_for("23.08")(str(out), [x])
    assert got.dtype == np.float16
    # (the same float32 computation, both rounded to float16 once at the end: within one ulp)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-3, atol=1e-3)


def test_refused_at_20_08_with_the_hint():
    with pytest.raises(UnsupportedModelError) as info:
        armnn_import.convert(_layer_norm_island(), target="20.08")
    (p,) = info.value.problems
    assert p.op == "Cast" and "a Cast to float32 inside a float16 model" in p.reason


def test_fp16_still_runs_everything_in_float16():
    net = armnn_import.convert(_layer_norm_island(), target="23.08", fp16=True).network
    assert "Cast" not in [l.type.name for l in net.layers]
    assert all(l.outputs[0].dtype.name == "Float16" for l in net.layers if l.outputs and l.type.name != "Constant")
