"""ONNX Round and TFLite ROUND: round half to even from Floor (lowering/round.py), on every target
and every Arm NN runtime that reads it, bit for bit against numpy's np.round (half to even), onnxruntime
and LiteRT, on ties, numbers near them, huge and tiny values, infinities and NaN."""
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h

from armnn_import import cli

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tflite"))
from tfl_builder import ModelBuilder, run_litert  # noqa: E402

X = np.concatenate([np.arange(-6, 6.01, 0.25), [0.5 - 2 ** -25, -0.5 + 2 ** -26, -2 ** -30, 2 ** -30, 2 ** 23 + 1,
                    -(2 ** 23) - 1, 8388607.5, -8388607.5, 3.4e38, -3.4e38, np.inf, -np.inf, np.nan, -0.0,
                    1e-45, -1e-45, 2.5000002, -2.4999998]]).astype(np.float32)
READS = [("19.02", "20.08"), ("19.02", "23.08"), ("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]


def _same(got, want):
    got = got.reshape(want.shape)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~np.isnan(want)], want[~np.isnan(want)])  # (+0 for IEEE's -0: equal)


def _onnx(tmp_path):
    m = h.make_model(h.make_graph([h.make_node("Round", ["x"], ["y"])], "r",
                                  [h.make_tensor_value_info("x", TP.FLOAT, [X.size])],
                                  [h.make_tensor_value_info("y", TP.FLOAT, [X.size])]),
                     opset_imports=[h.make_opsetid("", 13)])
    path = tmp_path / "round.onnx"
    onnx.save(m, str(path))
    return m, path


@pytest.mark.parametrize("target, release", READS)
def test_onnx_round_on_the_runtime(target, release, armnn_runner_for, tmp_path):
    import onnxruntime as ort
    from armnn_import.executor.run import run as execute
    from armnn_import.serialize.reader import read
    m, src = _onnx(tmp_path)
    out = tmp_path / "round.armnn"
    assert cli.main([str(src), "-o", str(out), "--target", target, "-q"]) == 0
    (ref,) = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": X})
    _same(ref, np.round(X))  # the references agree
    got, = armnn_runner_for(release)(str(out), [X])
    _same(got, np.round(X))
    if release == ("23.08" if target == "23.08" else "20.08"):  # the executor beside the runtime
        np.testing.assert_array_equal(execute(read(out.read_bytes()), [X])[0].reshape(got.shape), got)


@pytest.mark.parametrize("target, release", READS)
def test_tflite_round_on_the_runtime(target, release, armnn_runner_for, tmp_path):
    mb = ModelBuilder()
    mb.output(mb.op("ROUND", [mb.input("x", [X.size])]))
    data = mb.build()
    src, out = tmp_path / "round.tflite", tmp_path / "round.armnn"
    src.write_bytes(data)
    assert cli.main([str(src), "-o", str(out), "--target", target, "-q"]) == 0
    (ref,) = run_litert(data, [X])
    _same(ref, np.round(X))
    got, = armnn_runner_for(release)(str(out), [X])
    _same(got, ref)


def test_quantized_tflite_round_stays_refused(capsys, tmp_path):
    mb = ModelBuilder()
    q = (0.05, 0)
    mb.output(mb.op("ROUND", [mb.input("x", [4], np.int8, q)], out_quant=q, out_shape=(4,)))
    src = tmp_path / "q.tflite"
    src.write_bytes(mb.build(infer_shapes=False))  # (LiteRT has no int8 ROUND kernel to infer it with)
    assert cli.main([str(src), "-o", str(tmp_path / "q.armnn")]) == 1
    err = capsys.readouterr().err
    assert "ROUND" in err and "Traceback" not in err
