"""AffineGrid (armnn_import/lowering/affine_grid.py) on the real runtimes against onnxruntime, bit
for bit: 2-D and 3-D, both align_corners, batches, axes of size 1; and the spatial transformer's
AffineGrid -> GridSample at 23.08. Files as the CLI writes them."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import armnn_import
from armnn_import.cli import main
from armnn_import.executor.run import run as execute

ort = pytest.importorskip("onnxruntime")
READS = [("19.02", "20.08"), ("19.02", "23.08"), ("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]


def _model(size, align, sample=None):
    r = len(size) - 2
    nodes = [h.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=align)]
    ins = [h.make_tensor_value_info("theta", TP.FLOAT, [size[0], r, r + 1])]
    out = "grid"
    if sample is not None:
        nodes.append(h.make_node("GridSample", ["x", "grid"], ["y"], mode=sample, align_corners=align))
        ins.append(h.make_tensor_value_info("x", TP.FLOAT, list(size)))
        out = "y"
    g = h.make_graph(nodes, "ag", ins, [h.make_tensor_value_info(out, TP.FLOAT, None)],
                     [nh.from_array(np.array(size, np.int64), "size")])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 20)])


def _run(model, feeds, target, runner, tmp_path):
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    src, dst = tmp_path / "m.onnx", tmp_path / "m.armnn"
    src.write_bytes(model.SerializeToString())
    assert main([str(src), "-o", str(dst), "-q", "--target", target]) == 0
    got = runner(str(dst), list(feeds.values()))[0].reshape(want.shape)
    mine = execute(armnn_import.convert(model, target=target).network, list(feeds.values()))[0]
    return want, got, mine.reshape(want.shape)


@pytest.mark.parametrize("target, release", READS)
@pytest.mark.parametrize("size", [(2, 3, 5, 7), (1, 1, 1, 4), (3, 2, 2, 3, 4)])
@pytest.mark.parametrize("align", [0, 1])
def test_affine_grid(size, align, target, release, armnn_runner_for, tmp_path):
    theta = np.random.default_rng(len(size) + align).standard_normal((size[0], len(size) - 2, len(size) - 1))
    want, got, mine = _run(_model(size, align), {"theta": theta.astype(np.float32)}, target,
                           armnn_runner_for(release), tmp_path)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(mine, want)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_spatial_transformer(mode, armnn_runner_for, tmp_path):
    """A rotation and zoom of a batch of images: AffineGrid then GridSample (--target 23.08)."""
    rng = np.random.default_rng(4)
    a = 0.3
    theta = np.array([[[np.cos(a), -np.sin(a), 0.1], [np.sin(a), np.cos(a), -0.2]],
                      [[1.3, 0.0, 0.0], [0.0, 0.7, 0.05]]], np.float32)
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    want, got, mine = _run(_model((2, 3, 6, 5), 0, mode), {"theta": theta, "x": x}, "23.08",
                           armnn_runner_for("23.08"), tmp_path)
    if mode == "cubic":
        np.testing.assert_array_equal(got, want)
    else:  # (onnxruntime's linear/zeros fast path sums the corners in another order)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(mine, got)
