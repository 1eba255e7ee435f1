"""From --target 23.08 an ONNX GlobalAveragePool or ReduceMean over a trailing run of the spatial
axes (from axis 2) of a 3-D [N,C,L] or 5-D [N,C,D,H,W] tensor is an Average Pooling2d of a 4-D view
(lowering/pooling.py view4): Reshape, pool, Reshape, where it was a Mean (5-D: between two Reshapes)
or a Reduce. The view's H and W hold the reduced elements in raster order, the order in which
Reduce.cpp sums them, so on Arm NN 23.08's CpuRef the outputs are the same bit for bit, at 0.06-0.14
of the instructions (benchmarks/mean_pool_costs.py --views). Judged on the real runtime, the files
as the CLI writes them, against onnxruntime and against the form they had before."""
from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h

from armnn_import import cli
from armnn_import.ir.types import LayerType
from armnn_import.serialize import read
from armnn_import.testing.armnn_runtime import harness_dir, run_armnn
from armnn_import.verify_cmd import Tolerance, verify

RUNNER = os.environ.get("ARMNN_RUNNER_23_08", str(harness_dir("23.08") / "armnn-run"))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOL = Tolerance(atol=1e-6, rtol=1e-5)
POOLED = {  # name: (op, axes, keepdims, input shape)
    "gap_3d": ("GlobalAveragePool", None, 1, (1, 16, 20)),
    "gap_3d_batch2": ("GlobalAveragePool", None, 1, (2, 5, 33)),
    "gap_5d": ("GlobalAveragePool", None, 1, (1, 4, 3, 5, 6)),
    "gap_5d_batch2": ("GlobalAveragePool", None, 1, (2, 3, 2, 4, 4)),
    "mean_3d_last": ("ReduceMean", [2], 1, (1, 8, 40)),
    "mean_3d_last_drop": ("ReduceMean", [-1], 0, (2, 6, 17)),
    "mean_5d_dhw": ("ReduceMean", [2, 3, 4], 0, (1, 6, 3, 4, 5)),
    "mean_5d_hw": ("ReduceMean", [3, 4], 1, (1, 6, 3, 4, 5)),
    "mean_5d_w": ("ReduceMean", [4], 0, (1, 2, 3, 4, 9)),
}
KEPT = {  # not a trailing run of the spatial axes: the layer they had
    "mean_5d_dh": ([2, 3], 1, (1, 6, 3, 4, 5)),
    "mean_5d_cdhw": ([1, 2, 3, 4], 1, (1, 6, 3, 4, 5)),
    "mean_3d_cl": ([1, 2], 0, (2, 6, 17)),
}


def _model(op, axes, keep, shape):
    attrs = {} if op == "GlobalAveragePool" else {"axes": axes, "keepdims": keep}
    g = h.make_graph([h.make_node(op, ["x"], ["y"], **attrs)], "m", [h.make_tensor_value_info("x", TP.FLOAT, shape)],
                     [h.make_tensor_value_info("y", TP.FLOAT, None)])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def _convert(src, out):
    assert cli.main([str(src), "-o", str(out), "-q", "--target", "23.08"]) == 0
    return [l.type for l in read(out.read_bytes()).layers]


def _old_form(src, out, monkeypatch):
    """The file before the view: the same conversion with the pool recipe switched off."""
    from armnn_import_frontends.onnx.ops import conv as onnx_conv
    from armnn_import_frontends.onnx.ops import reduce as onnx_reduce
    with monkeypatch.context() as m:
        for mod in (onnx_conv, onnx_reduce):
            m.setattr(mod, "mean_as_pool", lambda *a, **k: None)
        types = _convert(src, out)
    assert LayerType.Mean in types or LayerType.Reduce in types
    return out, types


def _judge(src, out, old, data):
    if not os.access(RUNNER, os.X_OK):
        pytest.skip(f"no Arm NN 23.08 runner at {RUNNER}")
    check = verify(str(src), str(out), inputs=[data], tolerance=TOL, armnn_runtime=RUNNER)
    assert check.ok, check.format()
    ours, theirs = (run_armnn(p, [data], runner=RUNNER)[0] for p in (out, old))
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape and ours.tobytes() == theirs.tobytes()


@pytest.mark.parametrize("name", sorted(POOLED))
def test_trailing_spatial_mean_pools_through_a_4d_view(name, tmp_path, monkeypatch):
    op, axes, keep, shape = POOLED[name]
    src, out = tmp_path / "m.onnx", tmp_path / "m.armnn"
    onnx.save(_model(op, axes, keep, shape), src)
    assert _convert(src, out) == [LayerType.Input, LayerType.Reshape, LayerType.Pooling2d, LayerType.Reshape,
                                  LayerType.Output]
    data = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    old, old_types = _old_form(src, tmp_path / "old.armnn", monkeypatch)
    assert LayerType.Pooling2d not in old_types
    _judge(src, out, old, data)


@pytest.mark.parametrize("name", sorted(KEPT))
def test_other_means_keep_their_layer(name, tmp_path):
    axes, keep, shape = KEPT[name]
    src, out = tmp_path / "m.onnx", tmp_path / "m.armnn"
    onnx.save(_model("ReduceMean", axes, keep, shape), src)
    types = _convert(src, out)
    assert LayerType.Pooling2d not in types and (LayerType.Mean in types or LayerType.Reduce in types)
    if not os.access(RUNNER, os.X_OK):
        pytest.skip(f"no Arm NN 23.08 runner at {RUNNER}")
    data = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    check = verify(str(src), str(out), inputs=[data], tolerance=TOL, armnn_runtime=RUNNER)
    assert check.ok, check.format()


@pytest.mark.parametrize("name, pools", [("torch_encoder_layer_op13", 4), ("cnn_dynamic_batch", 3)])
def test_reference_models_with_3d_means(name, pools, tmp_path, monkeypatch):
    """The encoder layer's decomposed LayerNorms (ReduceMean over the last axis of [1, 8, 32]) and
    the CNN's ReduceMean over a flattened map ([N, 32, 30], right after a Reshape, which the view's
    Reshape merges into): the reference outputs, bit for bit the Reduce form's."""
    src = os.path.join(REPO, "test_models", "onnx", f"{name}.onnx")
    ref = np.load(os.path.join(REPO, "test_models", "onnx", f"{name}.npz"))
    out = tmp_path / "m.armnn"
    types = _convert(src, out)
    assert types.count(LayerType.Pooling2d) == pools and LayerType.Reduce not in types
    old, old_types = _old_form(src, tmp_path / "old.armnn", monkeypatch)
    if name == "cnn_dynamic_batch":  # no Reshape added: the view merged into the flattening one
        assert len(types) == len(old_types)
    data = ref["input_0"]
    _judge(src, out, old, data)
    np.testing.assert_allclose(run_armnn(out, [data], runner=RUNNER)[0].reshape(ref["output_0"].shape),
                               ref["output_0"], rtol=1e-4, atol=1e-5)
