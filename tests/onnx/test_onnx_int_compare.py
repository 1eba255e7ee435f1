"""Comparisons of an integer tensor (an int64 input: token ids, a sample rate) with an integer
constant: the constant as an int32 Constant layer and one comparison of Signed32 (CpuRef compares
Signed32 in 20.08 and 23.08, in the 19.02 format's Greater / Equal layers too), checked on the real
runtimes against onnxruntime. (silero VAD compares its int64 sample-rate input with 16000.)
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from armnn_import import cli

OPS = ("Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual")
PAIRS = [("19.02", "20.08"), ("19.02", "23.08"), ("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]


def _model(op: str, value: int, const_first: bool = False) -> onnx.ModelProto:
    ins = ["k", "ids"] if const_first else ["ids", "k"]
    k = onnx.numpy_helper.from_array(np.array([value], np.int64), "k")
    graph = helper.make_graph([helper.make_node(op, ins, ["m"])], "int_compare",
                              [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 4])],
                              [helper.make_tensor_value_info("m", TensorProto.BOOL, [2, 4])], initializer=[k])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model, full_check=True)
    return model


def _convert(tmp_path, model, target):
    src, out = tmp_path / "m.onnx", tmp_path / f"m-{target}.armnn"
    onnx.save(model, str(src))
    return cli.main([str(src), "-o", str(out), "--target", target, "-q"]), out


@pytest.mark.parametrize("target, release", PAIRS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("const_first", [False, True], ids=["ids-k", "k-ids"])
def test_int_comparison_with_a_constant_on_the_runtime(tmp_path, op, const_first, target, release, armnn_runner_for):
    model = _model(op, 16000, const_first)
    ids = np.array([[8000, 16000, 16001, -16000], [0, 16000, 2 ** 31 - 1, -2 ** 31]], np.int64)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"ids": ids})[0]
    code, out = _convert(tmp_path, model, target)
    assert code == 0
    (got,) = armnn_runner_for(release)(out, [ids.astype(np.int32)])  # int64 inputs are Signed32 in Arm NN
    np.testing.assert_array_equal(got.reshape(want.shape).astype(bool), want)


def test_constant_beyond_int32_is_refused(tmp_path, capsys):
    code, _ = _convert(tmp_path, _model("Equal", 2 ** 40), "23.08")
    assert code == 1
    assert "Traceback" not in capsys.readouterr().err
