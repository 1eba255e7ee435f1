"""HardSwish from the 20.08 format on: one Activation(HardSwish) layer, Arm NN's
x * min(max(x + 3, 0), 6) / 6 (TFLite's own formula), instead of Linear -> BoundedReLu ->
Multiplication; judged on the real runtime against onnxruntime and LiteRT's stored outputs."""
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from armnn_import import cli
from armnn_import.executor import run
from armnn_import.ir.types import ActivationFunction, LayerType
from armnn_import.serialize import read

ROOT = Path(__file__).resolve().parent.parent / "test_models" / "tflite" / "ops"


def _convert(src, out, target):
    assert cli.main([str(src), "-o", str(out), "--target", target, "-q"]) == 0
    return read(out.read_bytes())


def _targets(runner):
    return ("20.08", "23.08") if runner.release == "23.08" else ("20.08",)


def _hard_swishes(g):
    return [l for l in g.layers if l.type == LayerType.Activation and l.desc.function == ActivationFunction.HardSwish]


def test_onnx_hard_swish_is_one_activation(armnn_release_runner, tmp_path):
    node = helper.make_node("HardSwish", ["x"], ["y"])
    graph = helper.make_graph([node], "hs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 5, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 5, 7])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    src = tmp_path / "hs.onnx"
    src.write_bytes(model.SerializeToString())
    x = (np.random.default_rng(3).standard_normal((2, 3, 5, 7)) * 4).astype(np.float32)
    x.flat[:6] = [-3.0, 3.0, 0.0, -0.0, 1e30, -1e30]
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for target in _targets(armnn_release_runner):
        g = _convert(src, tmp_path / f"hs_{target}.armnn", target)
        assert len(_hard_swishes(g)) == 1 and not [l for l in g.layers if l.type == LayerType.Multiplication]
        got, = armnn_release_runner(tmp_path / f"hs_{target}.armnn", [x])
        np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-6, atol=1e-6)
    g = _convert(src, tmp_path / "hs_19.armnn", "19.02")   # the seed format keeps the decomposition
    assert not _hard_swishes(g)


@pytest.mark.parametrize("name", ["hard_swish.float32", "hard_swish.uint8", "hard_swish.int8"])
def test_tflite_hard_swish_is_one_activation(name, armnn_release_runner, tmp_path):
    data = np.load(ROOT / f"{name}.npz")
    x, want = data["input_0"], data["output_0"]
    for target in _targets(armnn_release_runner):
        g = _convert(ROOT / f"{name}.tflite", tmp_path / f"{name}_{target}.armnn", target)
        assert len(_hard_swishes(g)) == 1 and len(g.layers) == 3, [l.type.name for l in g.layers]
        dt = g.input_layers[0].outputs[0].dtype.np_dtype
        xin = (x.astype(np.int16) + 128).astype(np.uint8) if x.dtype == np.int8 and dt == np.uint8 else x
        got, = armnn_release_runner(tmp_path / f"{name}_{target}.armnn", [xin])
        mine, = run(g, [xin])   # the numpy executor follows the runtime exactly
        np.testing.assert_array_equal(np.asarray(mine).reshape(got.shape), got)
        got = got.reshape(want.shape)
        if want.dtype == np.float32:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        else:   # one rounding: within one level of LiteRT
            shift = 128 if want.dtype == np.int8 and got.dtype == np.uint8 else 0
            assert np.abs(got.astype(np.int32) - shift - want.astype(np.int32)).max() <= 1
