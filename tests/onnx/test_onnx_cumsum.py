"""CumSum (armnn_import/lowering/cumsum.py) on the real runtimes against onnxruntime: float32 in
onnxruntime's order of sums (bit-exact, NaN, infinities and -0 included), every exclusive/reverse
combination and axis; int64 ids (int32 in Arm NN) from 23.08, as the position ids of a
RoBERTa-style model (cumsum of the padding mask)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import armnn_import

ort = pytest.importorskip("onnxruntime")
RUNS = [("19.02", "20.08"), ("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]


def _model(shape, axis, exclusive=0, reverse=0, dtype=TP.FLOAT):
    g = h.make_graph([h.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)], "t",
                     [h.make_tensor_value_info("x", dtype, shape)], [h.make_tensor_value_info("y", dtype, None)],
                     [nh.from_array(np.array(axis, np.int64), "axis")])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 14)])


def _check(m, x, target, release, runner_for, tmp_path):
    from armnn_import.cli import main

    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    src, dst = tmp_path / "m.onnx", tmp_path / "m.armnn"
    src.write_bytes(m.SerializeToString())
    assert main(["convert", str(src), "-o", str(dst), "--target", target]) == 0
    got = runner_for(release)(dst.read_bytes(), [x.astype(np.int32) if x.dtype == np.int64 else x])[0]
    np.testing.assert_array_equal(got.reshape(want.shape), want.astype(got.dtype))


@pytest.mark.parametrize("target, release", RUNS)
@pytest.mark.parametrize("exclusive, reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("axis", [1, -1, 0])
def test_float_cumsum_is_bit_exact(axis, exclusive, reverse, target, release, armnn_runner_for, tmp_path):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((3, 7, 5)) * 10 ** rng.uniform(-3, 3, (3, 7, 5))).astype(np.float32)
    x[0, 0, 0], x[1, 3, 2], x[2, 6, 4], x[1, 0, 1] = np.nan, np.inf, -np.inf, -0.0
    _check(_model((3, 7, 5), axis, exclusive, reverse), x, target, release, armnn_runner_for, tmp_path)


@pytest.mark.parametrize("exclusive, reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_int64_position_ids_at_23_08(exclusive, reverse, armnn_runner_for, tmp_path):
    mask = np.array([[1, 1, 1, 1, 1, 0, 0, 0, 0], [1] * 9, [1, 1, 0, 1, 0, 0, 1, 1, 0]], np.int64) * 3 - 1
    _check(_model((3, 9), 1, exclusive, reverse, TP.INT64), mask, "23.08", "23.08", armnn_runner_for, tmp_path)


def test_refusals_name_the_reason():
    with pytest.raises(armnn_import.UnsupportedModelError, match="--target 23.08"):
        armnn_import.convert(_model((2, 4), 1, dtype=TP.INT64), target="20.08")
    with pytest.raises(armnn_import.UnsupportedModelError, match="at most 1024"):
        armnn_import.convert(_model((1, 2000), 1), target="23.08")
