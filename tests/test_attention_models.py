"""Embedding lookups and attention on the richer targets (issue 16): Gather with an axis and
run-time indices (the 20.08 format on), Cast and BatchMatMul (23.08), ArgMax heads.

Every model is converted by the CLI (the file users get), run on the real Arm NN runtime of each
release that reads its format, and compared with its source runtime (onnxruntime or LiteRT, the
stored outputs of scripts/gen_attention_models.py); the numpy executor is checked the same way.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from armnn_import import cli
from armnn_import.errors import ExecutionError
from armnn_import.ir.types import DataType, LayerType
from armnn_import.serialize import read
from armnn_import.verify_cmd import Tolerance, VerifyError, verify

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # pytest runs with --import-mode=importlib
from reference_models import ROOT  # noqa: E402

T = LayerType
# (model, target, releases that read it, a layer type the target's file must have)
CASES = [
    ("onnx/embedding_transformer.onnx", "20.08", ("20.08", "23.08"), T.Gather),
    ("onnx/embedding_transformer.onnx", "23.08", ("23.08",), T.BatchMatMul),
    ("onnx/attention_block.onnx", "23.08", ("23.08",), T.BatchMatMul),
    ("onnx/argmax_classifier.onnx", "20.08", ("20.08", "23.08"), T.ArgMinMax),
    ("tflite/models/embedding_keras.float32.tflite", "20.08", ("20.08", "23.08"), T.Gather),
    ("tflite/models/embedding_keras.float32.tflite", "23.08", ("23.08",), T.Gather),
    ("tflite/models/argmax_head.float32.tflite", "20.08", ("20.08", "23.08"), T.ArgMinMax),
    ("tflite/models/batch_matmul.float32.tflite", "23.08", ("23.08",), T.BatchMatMul),
    ("tflite/models/cast_roundtrip.float32.tflite", "23.08", ("23.08",), T.Cast),
    ("tflite/ops/arg_min.float32.tflite", "20.08", ("20.08", "23.08"), T.ArgMinMax),
    ("onnx/log_softmax_op12.onnx", "20.08", ("20.08", "23.08"), T.LogSoftmax),
    ("tflite/ops/conv_3d.float32.tflite", "23.08", ("23.08",), T.Convolution3d),
]
RUNS = [pytest.param(m, t, r, lt, id=f"{m.split('/')[-1]}-target{t}-on{r}") for m, t, rs, lt in CASES for r in rs]


def _npz(model: str):
    return ROOT / (model.rsplit(".", 1)[0] + ".npz" if model.startswith("onnx/") else
                   model.replace(".tflite", ".npz"))


def _convert(model: str, target: str, out) -> None:
    assert cli.main([str(ROOT / model), "-o", str(out), "-q", "--target", target]) == 0


def _stored_inputs(model: str):
    data = np.load(_npz(model))
    return [data[k] for k in sorted(k for k in data.files if k.startswith("input_"))]


@pytest.mark.parametrize("model, target, release, layer", RUNS)
def test_model_on_the_runtime_matches_its_source(model, target, release, layer, armnn_runner_for, tmp_path):
    out = tmp_path / "model.armnn"
    _convert(model, target, out)
    graph = read(out.read_bytes())
    assert graph.target.release == target
    assert any(l.type == layer for l in graph.layers)
    runner = armnn_runner_for(release)
    tol = Tolerance(atol=1e-4)
    check = verify(ROOT / model, str(out), inputs=_stored_inputs(model), tolerance=tol, armnn_runtime=runner.path)
    assert check.ok, check.format()
    check = verify(ROOT / model, str(out), inputs=_stored_inputs(model), tolerance=tol)  # the numpy executor
    assert check.ok, check.format()


def test_int64_token_ids_become_a_signed32_input(tmp_path, capsys):
    """The ONNX model's int64 ids are a Signed32 input of the network (Arm NN has no int64): the
    conversion says so, and verify refuses ids outside int32 instead of wrapping them; ids past
    the vocabulary are refused by the executor (Arm NN 20.08 would read out of bounds)."""
    out = tmp_path / "e.armnn"
    assert cli.main([str(ROOT / "onnx/embedding_transformer.onnx"), "-o", str(out), "--target", "20.08"]) == 0
    assert "int64 in ONNX; it becomes a Signed32 (int32) input" in capsys.readouterr().err
    graph = read(out.read_bytes())
    assert [l.outputs[0].dtype for l in graph.input_layers] == [DataType.Signed32]
    ids = _stored_inputs("onnx/embedding_transformer.onnx")[0]
    assert ids.dtype == np.int64
    with pytest.raises(VerifyError, match="does not fit the .armnn input's int32"):
        verify(ROOT / "onnx/embedding_transformer.onnx", str(out), inputs=[ids + 2 ** 31])
    with pytest.raises(ExecutionError, match="Gather index out of range"):
        from armnn_import.executor import run
        run(graph, [np.full(ids.shape, 50, np.int32)])


@pytest.mark.parametrize("model, target, needs", [
    ("onnx/embedding_transformer.onnx", "19.02", "20.08"),
    ("tflite/models/embedding_keras.float32.tflite", "19.02", "20.08"),
    ("tflite/models/batch_matmul.float32.tflite", "20.08", "23.08"),
    ("tflite/models/cast_roundtrip.float32.tflite", "20.08", "23.08"),
    ("tflite/models/argmax_head.float32.tflite", "19.02", "20.08"),
])
def test_older_targets_refuse_with_the_target_to_use(model, target, needs, tmp_path, capsys):
    assert cli.main([str(ROOT / model), "-o", str(tmp_path / "m.armnn"), "--target", target]) == 1
    assert f"--target {needs}" in capsys.readouterr().err


def test_attention_below_23_08_keeps_the_exact_decomposition(tmp_path):
    """MatMul of two run-time tensors: BatchMatMul on 23.08, today's Multiplication + Mean below
    (the 19.02 and 20.08 files are the same network)."""
    layers = {}
    for target in ("19.02", "20.08", "23.08"):
        _convert("onnx/attention_block.onnx", target, tmp_path / f"{target}.armnn")
        layers[target] = [l.type for l in read((tmp_path / f"{target}.armnn").read_bytes()).layers]
    # (the 20.08 format writes the 19.02 Permute and Merger as Transpose and Concat: passes/direct.py)
    as_20_08 = {T.Permute: T.Transpose, T.Merger: T.Concat}
    assert T.BatchMatMul not in layers["20.08"] and [as_20_08.get(t, t) for t in layers["19.02"]] == layers["20.08"]
    assert layers["23.08"].count(T.BatchMatMul) == 2 and T.Mean not in layers["23.08"]
    assert len(layers["23.08"]) < len(layers["20.08"])


# -- single operators, built with onnx.helper: the direct layers against onnxruntime -------------

def _onnx(tmp_path, nodes, inputs, outputs, inits=(), opset=13):
    import onnx
    from onnx import helper as h
    g = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    path = tmp_path / "m.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", opset)]), path)
    return path


def _run_both(tmp_path, path, inputs, targets, armnn_runner_for, tol=Tolerance(atol=1e-6)):
    graphs = {}
    for target, releases in targets:
        out = tmp_path / f"{target}.armnn"
        assert cli.main([str(path), "-o", str(out), "-q", "--target", target]) == 0
        graphs[target] = read(out.read_bytes())
        for release in releases:
            check = verify(path, str(out), inputs=inputs, tolerance=tol,
                           armnn_runtime=armnn_runner_for(release).path)
            assert check.ok, check.format()
        assert verify(path, str(out), inputs=inputs, tolerance=tol).ok
    return graphs


def test_onnx_gather_on_axis_1_with_run_time_indices(tmp_path, armnn_runner_for):
    """20.08's CpuRef gathers on axis 0 only: Transpose, Gather, Transpose; 23.08 takes the axis."""
    from onnx import TensorProto as TP
    from onnx import helper as h
    path = _onnx(tmp_path, [h.make_node("Gather", ["x", "i"], ["y"], axis=1)],
                 [h.make_tensor_value_info("x", TP.FLOAT, [2, 7, 3]), h.make_tensor_value_info("i", TP.INT64, [2, 2])],
                 [h.make_tensor_value_info("y", TP.FLOAT, [2, 2, 2, 3])])
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((2, 7, 3)).astype(np.float32), np.array([[6, 0], [3, 3]], np.int64)]
    g = _run_both(tmp_path, path, inputs, [("20.08", ("20.08", "23.08")), ("23.08", ("23.08",))], armnn_runner_for)
    gathers = [l for l in g["20.08"].layers if l.type == T.Gather]
    assert [l.desc.axis for l in gathers] == [0] and sum(l.type in (T.Permute, T.Transpose) for l in g["20.08"].layers) == 2
    assert [l.desc.axis for l in g["23.08"].layers if l.type == T.Gather] == [1]


def test_onnx_gather_of_many_constant_indices_is_one_gather_from_20_08(tmp_path, armnn_runner_for):
    """Constant indices too scattered for StridedSlices: a one-hot FullyConnected in 19.02
    (0 * inf is NaN there), one Gather with constant indices from 20.08 on (exact for inf)."""
    from onnx import TensorProto as TP
    from onnx import helper as h
    from onnx import numpy_helper
    idx = np.random.default_rng(3).permutation(64)[:48].astype(np.int64)  # 30+ runs: past StridedSlices
    path = _onnx(tmp_path, [h.make_node("Gather", ["x", "i"], ["y"], axis=1)],
                 [h.make_tensor_value_info("x", TP.FLOAT, [3, 64])], [h.make_tensor_value_info("y", TP.FLOAT, [3, 48])],
                 [numpy_helper.from_array(idx, "i")])
    x = np.random.default_rng(1).standard_normal((3, 64)).astype(np.float32)
    x[1, idx[5]] = np.inf
    g = _run_both(tmp_path, path, [x], [("20.08", ("20.08", "23.08")), ("23.08", ("23.08",))], armnn_runner_for,
                  tol=Tolerance(atol=0))
    assert sum(l.type == T.Gather for l in g["20.08"].layers) == 1
    assert not any(l.type == T.FullyConnected for l in g["20.08"].layers)


def test_onnx_cast_between_float_and_int64_on_23_08(tmp_path, armnn_runner_for):
    """float -> int64 truncates toward zero (as onnxruntime), int64 -> float rounds; both one Cast
    layer on 23.08 (int64 tensors are Signed32 in the network); refused below 23.08."""
    from onnx import TensorProto as TP
    from onnx import helper as h
    nodes = [h.make_node("Cast", ["x"], ["xi"], to=TP.INT64), h.make_node("Cast", ["i"], ["f"], to=TP.FLOAT),
             h.make_node("Add", ["f", "x"], ["s"]), h.make_node("Cast", ["s"], ["y"], to=TP.INT32)]
    path = _onnx(tmp_path, nodes, [h.make_tensor_value_info("x", TP.FLOAT, [2, 6]),
                                   h.make_tensor_value_info("i", TP.INT64, [2, 6])],
                 [h.make_tensor_value_info("xi", TP.INT64, [2, 6]), h.make_tensor_value_info("y", TP.INT32, [2, 6])])
    rng = np.random.default_rng(2)
    inputs = [(rng.standard_normal((2, 6)) * 5).astype(np.float32), rng.integers(-1000, 1000, (2, 6)).astype(np.int64)]
    g = _run_both(tmp_path, path, inputs, [("23.08", ("23.08",))], armnn_runner_for, tol=Tolerance(atol=0))
    assert sum(l.type == T.Cast for l in g["23.08"].layers) == 3
    assert cli.main([str(path), "-o", str(tmp_path / "old.armnn"), "-q", "--target", "20.08"]) == 1


def test_onnx_matmul_with_a_large_constant_batch_on_23_08(tmp_path, armnn_runner_for):
    """A constant right operand of more matrices than separate FullyConnected layers are made for:
    refused below 23.08, one Constant and one BatchMatMul on 23.08."""
    from onnx import TensorProto as TP
    from onnx import helper as h
    from onnx import numpy_helper
    w = np.random.default_rng(4).standard_normal((70, 3, 4)).astype(np.float32)
    path = _onnx(tmp_path, [h.make_node("MatMul", ["x", "w"], ["y"])],
                 [h.make_tensor_value_info("x", TP.FLOAT, [70, 2, 3])], [h.make_tensor_value_info("y", TP.FLOAT, [70, 2, 4])],
                 [numpy_helper.from_array(w, "w")])
    x = np.random.default_rng(5).standard_normal((70, 2, 3)).astype(np.float32)
    g = _run_both(tmp_path, path, [x], [("23.08", ("23.08",))], armnn_runner_for, tol=Tolerance(atol=1e-5))
    assert [l.type for l in g["23.08"].layers].count(T.BatchMatMul) == 1
    assert cli.main([str(path), "-o", str(tmp_path / "old.armnn"), "-q", "--target", "20.08"]) == 1


@pytest.mark.parametrize("dtype", ["float32", "uint8", "int8"])
def test_tflite_gather_of_a_quantized_or_float_table(dtype, armnn_runner_for):
    """GATHER from a constant table with run-time int32 ids, in float and in both 8-bit types
    (the table keeps its levels: an exact lookup), against LiteRT on Arm NN 20.08 and 23.08."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tflite"))
    from tfl_builder import ModelBuilder, run_litert

    import armnn_import
    from armnn_import.serialize import write
    rng = np.random.default_rng(6)
    mb = ModelBuilder()
    ids = mb.input("ids", [2, 5], np.int32)
    if dtype == "float32":
        table, q = rng.standard_normal((20, 4)).astype(np.float32), None
    else:
        lo, hi = (0, 256) if dtype == "uint8" else (-128, 128)
        table, q = rng.integers(lo, hi, (20, 4)).astype(dtype), (0.05, 3 if dtype == "uint8" else -7)
    t = mb.const("table", table, quant=q)
    mb.output(mb.op("GATHER", [t, ids], "GatherOptions", out_quant=q, axis=0))
    data = mb.build()
    x = rng.integers(0, 20, (2, 5)).astype(np.int32)
    want = run_litert(data, [x])[0]
    for target, releases in (("20.08", ("20.08", "23.08")), ("23.08", ("23.08",))):
        graph = armnn_import.convert(data, target=target).network
        assert [l.type for l in graph.layers].count(T.Gather) == 1
        for release in releases:
            got = armnn_runner_for(release)(write(graph), [x])[0]
            if dtype == "int8":  # (int8 is uint8 with the zero point moved up by 128 where it is not QAsymmS8)
                got = got.astype(np.int16) - (128 if got.dtype == np.uint8 else 0)
            np.testing.assert_array_equal(got.reshape(want.shape).astype(np.float64), want.astype(np.float64))


def test_tflite_gather_of_scattered_constant_indices_is_one_gather_from_20_08(armnn_runner_for):
    """Constant indices in many runs: StridedSlices and a Merger (or a selection matrix) in 19.02,
    one Gather with constant indices from 20.08 on; exact (inf included) against LiteRT."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tflite"))
    from tfl_builder import ModelBuilder, run_litert

    import armnn_import
    from armnn_import.serialize import write
    idx = np.random.default_rng(7).permutation(64)[:48].astype(np.int32)
    mb = ModelBuilder()
    x = mb.input("x", [3, 64])
    mb.output(mb.op("GATHER", [x, mb.const("idx", idx)], "GatherOptions", axis=1))
    data = mb.build()
    xv = np.random.default_rng(8).standard_normal((3, 64)).astype(np.float32)
    xv[2, idx[3]] = np.inf
    want = run_litert(data, [xv])[0]
    seed = armnn_import.convert(data).network
    graph = armnn_import.convert(data, target="20.08").network
    assert len(graph.layers) < len(seed.layers)
    assert [l.type for l in graph.layers].count(T.Gather) == 1
    assert not any(l.type == T.FullyConnected for l in graph.layers)
    for release in ("20.08", "23.08"):
        np.testing.assert_array_equal(armnn_runner_for(release)(write(graph), [xv])[0].reshape(want.shape), want)


def test_onnx_gather_of_run_time_data_with_negative_indices(tmp_path, armnn_runner_for):
    """ONNX indices count from the end when negative: 23.08's CpuRef wraps them, 20.08's fails
    ("bad numeric conversion"), so the 20.08 file gathers index + dim from the data concatenated
    twice (exact for [-dim, dim)); the ONNX node case test_gather_negative_indices, on both."""
    from onnx import TensorProto as TP
    from onnx import helper as h
    path = _onnx(tmp_path, [h.make_node("Gather", ["x", "i"], ["y"], axis=0)],
                 [h.make_tensor_value_info("x", TP.FLOAT, [10, 3]), h.make_tensor_value_info("i", TP.INT64, [4])],
                 [h.make_tensor_value_info("y", TP.FLOAT, [4, 3])])
    inputs = [np.random.default_rng(9).standard_normal((10, 3)).astype(np.float32), np.array([0, -9, -10, 9], np.int64)]
    out = tmp_path / "g.armnn"
    for target, releases in (("20.08", ("20.08", "23.08")), ("23.08", ("23.08",))):
        assert cli.main([str(path), "-o", str(out), "-q", "--target", target]) == 0
        for release in releases:
            check = verify(path, str(out), inputs=inputs, tolerance=Tolerance(atol=0),
                           armnn_runtime=armnn_runner_for(release).path)
            assert check.ok, check.format()
    assert [l.type for l in read(out.read_bytes()).layers].count(T.Merger) == 0  # (23.08: the Gather alone)
