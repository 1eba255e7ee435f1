"""ReduceLogSumExp from --target 23.08: m + log(sum(exp(x - m))) with m the largest value
(Reduce Max, Subtraction, Exp, Reduce Sum, Log, Addition), as onnxruntime computes it, so that
values past exp's float32 range (88.7) do not overflow; judged on Arm NN 23.08 against onnxruntime."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

import armnn_import
from armnn_import import cli


def _model(shape, axes, keep, opset):
    inits = [onnx.numpy_helper.from_array(np.array(axes, np.int64), "a")] if opset >= 18 else []
    attrs = {} if opset >= 18 else {"axes": axes}
    node = h.make_node("ReduceLogSumExp", ["x", "a"] if opset >= 18 else ["x"], ["y"], keepdims=keep, **attrs)
    g = h.make_graph([node], "lse", [h.make_tensor_value_info("x", T.FLOAT, shape)],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


def _ort(m, x):
    import onnxruntime as ort
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


CASES = [((3, 4, 5), [1], 1, 18), ((3, 4, 5), [0, 2], 0, 18), ((2, 3, 4, 5), [-1], 0, 13), ((6,), [0], 1, 11)]


@pytest.mark.parametrize("scale", [1.0, 300.0], ids=["unit", "past_exp_range"])
@pytest.mark.parametrize("shape, axes, keep, opset", CASES)
def test_matches_onnxruntime_on_23_08(shape, axes, keep, opset, scale, armnn_runner_for, tmp_path):
    m = _model(shape, axes, keep, opset)
    x = (np.random.default_rng(len(shape)).standard_normal(shape) * scale).astype(np.float32)
    want = _ort(m, x)
    assert np.isfinite(want).all()
    src, out = tmp_path / "m.onnx", tmp_path / "m.armnn"
    onnx.save(m, src)
    assert cli.main([str(src), "-o", str(out), "-q", "--target", "23.08"]) == 0
    got, = armnn_runner_for("23.08")(str(out), [x])
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-5)


def test_infinities_as_onnxruntime(armnn_runner_for):
    """+inf gives inf (the max is clamped to FLT_MAX: inf - m stays inf); -inf adds nothing."""
    m = _model((3, 4), [1], 0, 18)
    x = np.array([[np.inf, 1, 2, 3], [-np.inf, 1, 2, 3], [5, np.inf, -np.inf, 0]], np.float32)
    want = _ort(m, x)
    got, = armnn_runner_for("23.08")(armnn_import.convert(m, target="23.08").to_bytes(), [x])
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-6)
    assert np.isinf(got).tolist() == [True, False, True]


@pytest.mark.parametrize("target", ["19.02", "20.08"])
def test_refused_before_23_08_with_the_hint(target, tmp_path, capsys):
    src = tmp_path / "m.onnx"
    onnx.save(_model((3, 4), [1], 0, 18), src)
    assert cli.main([str(src), "-o", str(tmp_path / "m.armnn"), "--target", target]) == 1
    err = capsys.readouterr().err
    assert "ReduceLogSumExp" in err and "23.08" in err and "Traceback" not in err
