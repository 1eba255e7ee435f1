"""From --target 23.08 an ONNX ReduceMean over H and/or W of a 4-D tensor is an Average Pooling2d
whose window is the reduced extent (armnn_import/lowering/pooling.py, shared with TFLite's MEAN):
on Arm NN 23.08's CpuRef both sum in raster order and divide by the count once, so the outputs
are the same bit for bit, at a fraction of the instructions. Judged on the real 23.08 runtime
(the files as the CLI writes them) against onnxruntime, and against the Reduce form the same
ReduceMean had before (converted with the pool recipe switched off)."""
from __future__ import annotations

import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h

from armnn_import import cli
from armnn_import.ir.types import LayerType, PoolingAlgorithm
from armnn_import.serialize import read
from armnn_import.testing.armnn_runtime import harness_dir, run_armnn
from armnn_import.verify_cmd import Tolerance, verify

RUNNER = os.environ.get("ARMNN_RUNNER_23_08", str(harness_dir("23.08") / "armnn-run"))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = {  # name: (axes, keepdims, input shape, opset, element type)
    "hw_keep_op13": ([2, 3], 1, (1, 6, 5, 8), 13, TP.FLOAT),
    "hw_op13": ([2, 3], 0, (2, 3, 7, 9), 13, TP.FLOAT),
    "h_keep_op13": ([2], 1, (1, 4, 3, 2), 13, TP.FLOAT),
    "w_op13": ([3], 0, (1, 3, 5, 6), 13, TP.FLOAT),
    "negative_hw_op13": ([-1, -2], 1, (1, 5, 7, 9), 13, TP.FLOAT),
    "hw_keep_op18": ([2, 3], 1, (1, 6, 5, 8), 18, TP.FLOAT),
    "hw_op18": ([2, 3], 0, (2, 3, 7, 9), 18, TP.FLOAT),
    "h_op18": ([2], 0, (1, 4, 3, 2), 18, TP.FLOAT),
    "w_keep_op18": ([3], 1, (1, 3, 5, 6), 18, TP.FLOAT),
    "large_hw_op18": ([2, 3], 1, (1, 2, 96, 130), 18, TP.FLOAT),  # 12480 elements per sum
    "hw_float16_op13": ([2, 3], 1, (1, 4, 11, 13), 13, TP.FLOAT16),
}
#: ReduceMeans that are not over H/W of a 4-D tensor: they keep the Reduce layer
NOT_SPATIAL = {
    "c_op13": ([1], 1, (1, 4, 3, 5), 13),
    "chw_op18": ([1, 2, 3], 0, (2, 4, 3, 5), 18),
    "nh_op13": ([0, 2], 1, (2, 4, 3, 5), 13),
    "hw_of_3d_op13": ([1, 2], 1, (4, 3, 5), 13),
}


def _model(axes, keep, shape, opset, elem=TP.FLOAT):
    inits, ins = [], ["x"]
    attrs = {"keepdims": keep}
    if opset >= 18:
        inits.append(onnx.numpy_helper.from_array(np.array(axes, np.int64), "axes"))
        ins.append("axes")
    else:
        attrs["axes"] = axes
    g = h.make_graph([h.make_node("ReduceMean", ins, ["y"], **attrs)], "mean",
                     [h.make_tensor_value_info("x", elem, shape)], [h.make_tensor_value_info("y", elem, None)], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    data = np.random.default_rng(11).uniform(-1, 1, shape).astype(np.float16 if elem == TP.FLOAT16 else np.float32)
    return m, data


def _need_runner():
    if not os.access(RUNNER, os.X_OK):
        pytest.skip(f"no Arm NN 23.08 runner at {RUNNER}")


def _convert(src, out, *extra):
    assert cli.main([str(src), "-o", str(out), "-q", "--target", "23.08", *extra]) == 0
    return [l.type for l in read(out.read_bytes()).layers]


def _reduce_form(src, out, monkeypatch):
    """The file this ReduceMean gave before the pool recipe: the same conversion without it."""
    from armnn_import_frontends.onnx.ops import reduce as onnx_reduce
    with monkeypatch.context() as m:
        m.setattr(onnx_reduce, "mean_as_pool", lambda *a, **k: None)
        types = _convert(src, out)
    assert LayerType.Pooling2d not in types and LayerType.Reduce in types
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_reduce_mean_is_an_average_pool_on_23_08(name, tmp_path, monkeypatch):
    axes, keep, shape, opset, elem = CASES[name]
    model, data = _model(axes, keep, shape, opset, elem)
    src, out = tmp_path / "m.onnx", tmp_path / "m.armnn"
    onnx.save(model, src)
    types = _convert(src, out)
    assert LayerType.Reduce not in types and LayerType.Mean not in types
    pool = next(l for l in read(out.read_bytes()).layers if l.type == LayerType.Pooling2d)
    assert pool.desc.pool_type == PoolingAlgorithm.Average
    _need_runner()
    tol = Tolerance(atol=2e-3, rtol=1e-2) if elem == TP.FLOAT16 else Tolerance(atol=1e-6, rtol=1e-5)
    check = verify(str(src), str(out), inputs=[data], tolerance=tol, armnn_runtime=RUNNER)
    assert check.ok, check.format()
    ours = run_armnn(out, [data], runner=RUNNER)[0]
    theirs = run_armnn(_reduce_form(src, tmp_path / "reduce.armnn", monkeypatch), [data], runner=RUNNER)[0]
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert ours.tobytes() == theirs.tobytes()  # bit for bit


@pytest.mark.parametrize("name", sorted(NOT_SPATIAL))
def test_other_reduce_means_keep_the_reduce_layer(name, tmp_path):
    model, data = _model(*NOT_SPATIAL[name])
    src, out = tmp_path / "m.onnx", tmp_path / "m.armnn"
    onnx.save(model, src)
    types = _convert(src, out)
    assert LayerType.Reduce in types and LayerType.Pooling2d not in types
    _need_runner()
    check = verify(str(src), str(out), inputs=[data], tolerance=Tolerance(atol=1e-6, rtol=1e-5), armnn_runtime=RUNNER)
    assert check.ok, check.format()


def test_19_02_and_20_08_keep_mean(tmp_path):
    """20.08's Mean costs less than its Pooling2d on 20.08's CpuRef; 19.02 output is unchanged."""
    model, _ = _model([2, 3], 1, (1, 6, 5, 8), 13)
    src = tmp_path / "m.onnx"
    onnx.save(model, src)
    for target in ("19.02", "20.08"):
        out = tmp_path / f"{target}.armnn"
        assert cli.main([str(src), "-o", str(out), "-q", "--target", target]) == 0
        types = [l.type for l in read(out.read_bytes()).layers]
        assert LayerType.Mean in types and LayerType.Pooling2d not in types


@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("layout", ["keep", "nhwc"])
def test_se_block_on_23_08(opset, layout, tmp_path, monkeypatch):
    """The torch SE-block reference model (scripts/gen_se_block_models.py): every ReduceMean is a
    pool, the file matches onnxruntime's reference outputs on Arm NN 23.08, and under
    --layout nhwc the pools run NHWC with no Permute inside."""
    src = os.path.join(REPO, "test_models", "onnx", f"se_block_op{opset}.onnx")
    ref = np.load(os.path.join(REPO, "test_models", "onnx", f"se_block_op{opset}.npz"))
    out, report = tmp_path / "m.armnn", tmp_path / "report.json"
    types = _convert(src, out, "--layout", layout, "--report", str(report))
    assert types.count(LayerType.Pooling2d) == 3 and LayerType.Reduce not in types and LayerType.Mean not in types
    if layout == "nhwc":
        assert LayerType.Permute not in types
    _need_runner()
    check = verify(src, str(out), inputs=[ref["input_0"]], report=str(report),
                   tolerance=Tolerance(atol=1e-5, rtol=1e-4), armnn_runtime=RUNNER)
    assert check.ok, check.format()
    if layout == "keep":
        got = run_armnn(out, [ref["input_0"]], runner=RUNNER)[0]
        np.testing.assert_allclose(got, ref["output_0"], rtol=1e-4, atol=1e-5)
        theirs = run_armnn(_reduce_form(src, tmp_path / "reduce.armnn", monkeypatch), [ref["input_0"]],
                           runner=RUNNER)[0]
        assert got.tobytes() == theirs.tobytes()


@pytest.mark.parametrize("shape", [(1, 6, 5, 8), (2, 3, 7, 9), (1, 2, 40, 52)])
def test_global_average_pool_is_an_average_pool_on_23_08(shape, tmp_path, monkeypatch):
    """GlobalAveragePool of a 4-D tensor (Mean before 23.08) is the same pool over the whole map;
    bit-identical to the Mean form it had (the recipe switched off) on Arm NN 23.08."""
    from armnn_import_frontends.onnx.ops import conv as onnx_conv
    g = h.make_graph([h.make_node("GlobalAveragePool", ["x"], ["y"])], "gap",
                     [h.make_tensor_value_info("x", TP.FLOAT, shape)], [h.make_tensor_value_info("y", TP.FLOAT, None)])
    src, out, old = tmp_path / "m.onnx", tmp_path / "m.armnn", tmp_path / "mean.armnn"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), src)
    assert _convert(src, out) == [LayerType.Input, LayerType.Pooling2d, LayerType.Output]
    with monkeypatch.context() as m:
        m.setattr(onnx_conv, "mean_as_pool", lambda *a, **k: None)
        assert LayerType.Mean in _convert(src, old)
    _need_runner()
    data = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    check = verify(str(src), str(out), inputs=[data], tolerance=Tolerance(atol=1e-6, rtol=1e-5), armnn_runtime=RUNNER)
    assert check.ok, check.format()
    ours, theirs = (run_armnn(p, [data], runner=RUNNER)[0] for p in (out, old))
    assert ours.tobytes() == theirs.tobytes()
