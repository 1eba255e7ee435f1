"""ONNX GatherElements (torch.gather) with indices computed at run time, from the 20.08 format:
one Gather of the flattened data by int32 flat positions, negative indices wrapped. Files written
by the CLI, run on the real runtimes, against onnxruntime."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from armnn_import import cli

PAIRS = [("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]
CASES = [((3, 4), (3, 4), 1), ((3, 4), (2, 4), 0), ((2, 3, 5), (2, 3, 7), 2), ((2, 3, 4, 5), (2, 1, 4, 3), 1),
         ((2, 3, 4, 5), (2, 3, 4, 2), -1), ((5,), (9,), 0)]


def _ort(m, feeds):
    import onnxruntime as ort
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def _model(dshape, ishape, axis, dtype=T.FLOAT):
    g = h.make_graph([h.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)], "ge",
                     [h.make_tensor_value_info("x", dtype, dshape), h.make_tensor_value_info("i", T.INT64, ishape)],
                     [h.make_tensor_value_info("y", dtype, ishape)])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 13)])


def _convert(tmp_path, model, target):
    src, out = tmp_path / "m.onnx", tmp_path / f"m-{target}.armnn"
    onnx.save(model, src)
    assert cli.main([str(src), "-o", str(out), "-q", "--target", target]) == 0
    return out


@pytest.mark.parametrize("target, release", PAIRS)
@pytest.mark.parametrize("dshape, ishape, axis", CASES)
def test_gather_elements_of_run_time_indices(dshape, ishape, axis, target, release, tmp_path, armnn_runner_for):
    rng = np.random.default_rng(len(dshape) * 10 + axis)
    n = dshape[axis]
    x = rng.standard_normal(dshape).astype(np.float32)
    i = rng.integers(-n, n, ishape).astype(np.int64)  # negative indices count from the end
    i.reshape(-1)[:2] = (-n, n - 1)
    model = _model(dshape, ishape, axis)
    (want,) = _ort(model, {"x": x, "i": i})
    (got,) = armnn_runner_for(release)(str(_convert(tmp_path, model, target)), [x, i.astype(np.int32)])
    np.testing.assert_array_equal(got.reshape(want.shape), want)


@pytest.mark.parametrize("target, release", PAIRS)
def test_gather_by_top_k_indices(target, release, tmp_path, armnn_runner_for):
    """torch.gather(v, 1, x.topk(3).indices): indices that the network computes."""
    nodes = [h.make_node("TopK", ["x", "k"], ["vals", "idx"], axis=1),
             h.make_node("GatherElements", ["v", "idx"], ["y"], axis=1)]
    g = h.make_graph(nodes, "topk_gather", [h.make_tensor_value_info("x", T.FLOAT, [2, 6]),
                                            h.make_tensor_value_info("v", T.FLOAT, [2, 6])],
                     [h.make_tensor_value_info("y", T.FLOAT, [2, 3])],
                     [onnx.numpy_helper.from_array(np.array([3], np.int64), "k")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    rng = np.random.default_rng(3)
    x, v = (rng.permutation(12).reshape(2, 6).astype(np.float32) for _ in range(2))
    (want,) = _ort(model, {"x": x, "v": v})
    (got,) = armnn_runner_for(release)(str(_convert(tmp_path, model, target)), [x, v])
    np.testing.assert_array_equal(got.reshape(want.shape), want)


def test_run_time_indices_at_19_02_name_the_target(tmp_path, capsys):
    src = tmp_path / "m.onnx"
    onnx.save(_model((3, 4), (3, 4), 1), src)
    assert cli.main([str(src), "-o", str(tmp_path / "m.armnn")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "GatherElements" in err[0] and "--target 20.08" in err[0], err
