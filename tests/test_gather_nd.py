"""GatherND (ONNX) and GATHER_ND (TFLite): constant index tuples on every target (a gather of
rows of the flattened data), run-time ones as a GatherNd layer at --target 23.08, judged on the
real Arm NN runtime of each target against onnxruntime and LiteRT."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

import armnn_import
from armnn_import import cli
from armnn_import.errors import ArmnnImportError, ExecutionError
from armnn_import.executor import run

sys.path.insert(0, str(Path(__file__).resolve().parent / "tflite"))
from tfl_builder import ModelBuilder, run_litert  # noqa: E402

READS = [("19.02", "20.08"), ("19.02", "23.08"), ("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]
# (data shape, indices shape, batch_dims)
SHAPES = [((5, 3, 4), (2, 2), 0), ((5, 3, 4), (3, 1), 0), ((5, 3, 4), (2, 2, 3), 0), ((4, 6), (2,), 0),
          ((2, 3, 4), (2, 2, 1), 1), ((2, 3, 4, 2), (2, 3, 2), 1)]


def _indices(rng, dshape, ishape, b, negative):
    dims = dshape[b:b + ishape[-1]]
    return np.stack([rng.integers(-d if negative else 0, d, size=ishape[:-1]) for d in dims], -1)


def _onnx(dshape, ishape, b, const_idx=None, dtype=T.FLOAT):
    inputs, inits = [h.make_tensor_value_info("x", dtype, dshape)], []
    if const_idx is None:
        inputs.append(h.make_tensor_value_info("i", T.INT64, ishape))
    else:
        inits.append(onnx.numpy_helper.from_array(const_idx.astype(np.int64), "i"))
    node = h.make_node("GatherND", ["x", "i"], ["y"], batch_dims=b)
    g = h.make_graph([node], "gather_nd", inputs, [h.make_tensor_value_info("y", dtype, None)], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 13)])


def _ort(model, feeds):
    import onnxruntime as ort
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]


@pytest.mark.parametrize("target, release", READS)
@pytest.mark.parametrize("dshape, ishape, b", SHAPES)
def test_onnx_constant_indices_on_every_target(dshape, ishape, b, target, release, armnn_runner_for):
    """Constant tuples (negative components too) need no GatherNd layer: the 19.02 format takes them."""
    rng = np.random.default_rng(len(ishape) * 10 + b)
    idx = _indices(rng, dshape, ishape, b, negative=True)
    x = rng.standard_normal(dshape).astype(np.float32)
    m = _onnx(dshape, ishape, b, idx)
    result = armnn_import.convert(m, target=target)
    assert "GatherNd" not in {layer.type.name for layer in result.network.layers}
    got, = armnn_runner_for(release)(result.to_bytes(), [x])
    want = _ort(m, {"x": x})
    np.testing.assert_array_equal(got.reshape(want.shape), want)


@pytest.mark.parametrize("dtype, np_dtype", [(T.FLOAT, np.float32), (T.INT32, np.int32)])
@pytest.mark.parametrize("dshape, ishape, b", SHAPES)
def test_onnx_runtime_indices_at_23_08(dshape, ishape, b, dtype, np_dtype, armnn_runner_for):
    rng = np.random.default_rng(7 + b)
    idx = _indices(rng, dshape, ishape, b, negative=False)
    x = (rng.standard_normal(dshape) * 100).astype(np_dtype)
    m = _onnx(dshape, ishape, b, dtype=dtype)
    result = armnn_import.convert(m, target="23.08")
    assert "GatherNd" in {layer.type.name for layer in result.network.layers}
    got, = armnn_runner_for("23.08")(result.to_bytes(), [x, idx.astype(np.int32)])
    want = _ort(m, {"x": x, "i": idx})
    np.testing.assert_array_equal(got.reshape(want.shape), want)


@pytest.mark.parametrize("target, release", [r for r in READS if r[0] != "19.02"])
def test_onnx_constant_indices_into_int32_data(target, release, armnn_runner_for):
    """CpuRef slices no Signed32 tensor: int32 data takes a Gather layer of the flat row numbers."""
    x = np.arange(60, dtype=np.int32).reshape(5, 3, 4) * 1000
    m = _onnx((5, 3, 4), (3, 2), 0, np.array([[4, 2], [0, -1], [1, 1]]), dtype=T.INT32)
    got, = armnn_runner_for(release)(armnn_import.convert(m, target=target).to_bytes(), [x])
    np.testing.assert_array_equal(got, _ort(m, {"x": x}))


def test_int32_data_refused_at_19_02():
    m = _onnx((5, 3, 4), (3, 2), 0, np.array([[4, 2], [0, 1], [1, 1]]), dtype=T.INT32)
    with pytest.raises(ArmnnImportError, match="needs a Gather layer"):
        armnn_import.convert(m, target="19.02")


def test_cli_written_file_runs(tmp_path, armnn_runner_for):
    rng = np.random.default_rng(3)
    m = _onnx((5, 3, 4), (2, 2), 0)
    src, out = tmp_path / "g.onnx", tmp_path / "g.armnn"
    onnx.save(m, src)
    assert cli.main([str(src), "-o", str(out), "-q", "--target", "23.08"]) == 0
    x, idx = rng.standard_normal((5, 3, 4)).astype(np.float32), np.array([[4, 2], [0, 1]])
    got, = armnn_runner_for("23.08")(str(out), [x, idx.astype(np.int32)])
    np.testing.assert_array_equal(got, _ort(m, {"x": x, "i": idx}))


@pytest.mark.parametrize("target", ["19.02", "20.08"])
def test_runtime_indices_refused_before_23_08(target, tmp_path, capsys):
    src = tmp_path / "g.onnx"
    onnx.save(_onnx((5, 3, 4), (2, 2), 0), src)
    assert cli.main([str(src), "-o", str(tmp_path / "g.armnn"), "--target", target]) == 1
    err = capsys.readouterr().err
    assert "GatherND" in err and "--target 23.08" in err and "Traceback" not in err
    assert not (tmp_path / "g.armnn").exists()


def test_constant_index_out_of_range_refused():
    with pytest.raises(ArmnnImportError, match="outside the input's dimensions"):
        armnn_import.convert(_onnx((5, 3, 4), (1, 2), 0, np.array([[5, 0]])))


def test_executor_refuses_a_component_out_of_range():
    """Arm NN flattens the tuple unchecked ((0, -1) reads another row's element): the executor refuses."""
    result = armnn_import.convert(_onnx((5, 3, 4), (1, 2), 0), target="23.08")
    x = np.zeros((5, 3, 4), np.float32)
    with pytest.raises(ExecutionError, match="GatherNd index outside"):
        run(result.network, [x, np.array([[0, -1]], np.int32)])


def _tflite(pshape, idx, const, quant):
    mb = ModelBuilder()
    x = mb.input("x", pshape, np.int8 if quant else np.float32, quant=(0.05, 3) if quant else None)
    i = mb.const("i", idx.astype(np.int32)) if const else mb.input("i", idx.shape, np.int32)
    # (another output quantization than the input's: LiteRT copies the bytes)
    mb.output(mb.op("GATHER_ND", [x, i], "GatherNdOptions", out_quant=(0.1, -2) if quant else None))
    return mb.build()


TFLITE_CASES = [((5, 3, 4), (2, 2)), ((5, 3, 4), (3, 1)), ((5, 3, 4), (2, 2, 3)), ((4, 6), (2,))]


@pytest.mark.parametrize("quant", [False, True], ids=["float32", "int8"])
@pytest.mark.parametrize("pshape, ishape", TFLITE_CASES)
@pytest.mark.parametrize("target, release, const", [(t, r, True) for t, r in READS] + [("23.08", "23.08", False)])
def test_tflite_gather_nd(pshape, ishape, quant, target, release, const, armnn_runner_for):
    rng = np.random.default_rng(len(ishape))
    idx = _indices(rng, pshape, ishape, 0, negative=False)
    data = _tflite(pshape, idx, const, quant)
    x = rng.integers(-128, 128, pshape).astype(np.int8) if quant else rng.standard_normal(pshape).astype(np.float32)
    ins = [x] if const else [x, idx.astype(np.int32)]
    want = run_litert(data, ins)[0]
    shift = quant and target == "19.02"  # (19.02: int8 I/O becomes uint8, value + 128)
    feed = [(a.astype(np.int16) + 128).astype(np.uint8) if shift and a.dtype == np.int8 else a for a in ins]
    got, = armnn_runner_for(release)(armnn_import.convert(data, target=target).to_bytes(), feed)
    if shift:
        got = (got.astype(np.int16) - 128).astype(np.int8)
    np.testing.assert_array_equal(got.reshape(want.shape), want)
