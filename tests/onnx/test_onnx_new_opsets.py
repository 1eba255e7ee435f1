"""Operator versions the dynamo exporter and today's quantizers write (opset 18 and later) whose
semantics differ from the versions before: built with onnx.helper at the new version, converted by
the CLI at every target, and run on every real Arm NN runtime that reads the file, against
onnxruntime (docs/dynamo-sweep.md).

- QuantizeLinear-21 / DequantizeLinear-21 without a zero point: the zero point's type is
  QuantizeLinear's output_dtype (uint8 when unset) and DequantizeLinear's input type. An int8 QDQ
  pair without zero points was refused ("read with (s, 0), written with (s, 128)"), and an int16
  output_dtype was quantized as uint8.
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from armnn_import import cli
from armnn_import.serialize import read

#: (file target, runtime release): every release that reads the file
PAIRS = [("19.02", "20.08"), ("19.02", "23.08"), ("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]
SCALE = 0.05


def qdq_model(dtype: int = TensorProto.INT8) -> onnx.ModelProto:
    """x -> Q -> DQ -> Relu -> Q -> DQ -> y at opset 21, no zero points, Q's output_dtype = dtype."""
    s = numpy_helper.from_array(np.array(SCALE, np.float32), "s")
    nodes = [helper.make_node("QuantizeLinear", ["x", "s"], ["q"], output_dtype=dtype),
             helper.make_node("DequantizeLinear", ["q", "s"], ["d"]),
             helper.make_node("Relu", ["d"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "s"], ["q2"], output_dtype=dtype),
             helper.make_node("DequantizeLinear", ["q2", "s"], ["y"])]
    g = helper.make_graph(nodes, "qdq21", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 5])], [s])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    onnx.checker.check_model(m, full_check=True)
    return m


def _convert(tmp_path, model, target) -> tuple[int, str, object]:
    src, out = tmp_path / "m.onnx", tmp_path / f"m.{target}.armnn"
    onnx.save(model, src)
    return cli.main([str(src), "-o", str(out), "--target", target, "-q"]), src, out


@pytest.mark.parametrize("target, release", PAIRS, ids=[f"{t}-on-{r}" for t, r in PAIRS])
def test_int8_qdq_without_zero_points_matches_onnxruntime(armnn_runner_for, tmp_path, target, release):
    model = qdq_model()
    x = (np.random.default_rng(21).standard_normal((1, 3, 4, 5)) * 3).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    code, _, out = _convert(tmp_path, model, target)
    assert code == 0
    g = read(out.read_bytes())
    (inp,), (outp,) = [l.outputs[0] for l in g.input_layers], [l.inputs[0] for l in g.output_layers]
    if inp.dtype.is_quantized:  # the 19.02 format: uint8 I/O, the int8 values + 128
        assert (inp.scale, inp.offset) == (pytest.approx(SCALE), 128)
        feed = np.clip(np.round(x / SCALE) + 128, 0, 255).astype(np.uint8)
    else:  # the 20.08 format on: float I/O, Quantize/Dequantize at the edges
        feed = x
    (got,) = armnn_runner_for(release)(out, [feed])
    if got.dtype == np.uint8:
        got = (got.astype(np.float32) - outp.info.offset) * outp.info.scale
    # one level at most: Arm NN rounds ties away from zero, onnxruntime to even
    assert np.max(np.abs(got - want)) <= SCALE * 1.001
    assert np.mean(np.abs(got - want) > 1e-6) < 0.05


@pytest.mark.parametrize("target", ["19.02", "23.08"])
def test_int16_output_dtype_is_refused(tmp_path, capsys, target):
    code, _, out = _convert(tmp_path, qdq_model(TensorProto.INT16), target)
    assert code == 1 and not out.exists()
    err = capsys.readouterr().err
    assert "INT16 quantization; Arm NN's format has only 8-bit quantization" in err
    assert "Traceback" not in err
