"""ScatterND, ScatterElements and GatherElements with constant indices (armnn_import/lowering/
scatter.py) on the real runtimes against onnxruntime: run-time updates (PyTorch's in-place
assignment x[:, 0] = y exports as a ScatterND of constant indices), duplicate indices with and
without a reduction, negative indices, and NaN and infinities in the data."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import armnn_import

ort = pytest.importorskip("onnxruntime")
RUNS = [("19.02", "20.08"), ("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]


def _model(op, data_shape, idx, upd_shape=None, opset=18, **attrs):
    ins = [h.make_tensor_value_info("x", TP.FLOAT, data_shape)]
    names = ["x", "i"]
    if upd_shape is not None:
        ins.append(h.make_tensor_value_info("u", TP.FLOAT, upd_shape))
        names.append("u")
    g = h.make_graph([h.make_node(op, names, ["y"], **attrs)], "t", ins,
                     [h.make_tensor_value_info("y", TP.FLOAT, None)], [nh.from_array(np.asarray(idx, np.int64), "i")])
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


def _check(m, feeds, target, release, runner_for, tmp_path):
    from armnn_import.cli import main

    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    src, dst = tmp_path / "m.onnx", tmp_path / "m.armnn"
    src.write_bytes(m.SerializeToString())
    assert main(["convert", str(src), "-o", str(dst), "--target", target]) == 0
    got = runner_for(release)(dst.read_bytes(), list(feeds.values()))[0]
    np.testing.assert_array_equal(got.reshape(want.shape), want)


def _data(shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    x.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
    return x


CASES = {
    # x[:, 0] = u (an in-place assignment of a row per batch)
    "assign_rows": ("ScatterND", (2, 4, 3), [[[0, 0]], [[1, 0]]], (2, 1, 3), {}),
    "assign_elements": ("ScatterND", (3, 4), [[0, 1], [2, 3], [1, -1]], (3,), {}),
    "duplicates_last_wins": ("ScatterND", (5, 2), [[1], [3], [1]], (3, 2), {}),
    "add_duplicates": ("ScatterND", (5, 2), [[1], [3], [1], [1]], (4, 2), {"reduction": "add"}),
    "mul": ("ScatterND", (5, 2), [[4], [0]], (2, 2), {"reduction": "mul"}),
    "max": ("ScatterND", (5, 2), [[4], [0], [4]], (3, 2), {"reduction": "max"}),
    "min": ("ScatterND", (5, 2), [[0], [4], [0]], (3, 2), {"reduction": "min"}),
    "elements_max": ("ScatterElements", (2, 3), [[0, 0, 1], [0, 2, 1]], (2, 3), {"axis": 1, "reduction": "max"}),
    "elements_axis1": ("ScatterElements", (3, 5), [[1, 3], [0, -1], [4, 4]], (3, 2), {"axis": 1}),
    "elements_add": ("ScatterElements", (3, 5), [[1, 1], [0, 2]], (2, 2), {"axis": 0, "reduction": "add"}),
    "gather_axis1": ("GatherElements", (3, 4), [[0, 3, 3], [1, -1, 0], [2, 2, 2]], None, {"axis": 1}),
    "gather_axis0": ("GatherElements", (3, 4, 2), [[[2, 0], [1, 1]], [[0, -3], [2, 2]]], None, {"axis": 0}),
}


@pytest.mark.parametrize("target, release", RUNS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_scatter_and_gather_elements(case, target, release, armnn_runner_for, tmp_path):
    op, shape, idx, ushape, attrs = CASES[case]
    feeds = {"x": _data(shape)}
    if ushape is not None:
        feeds["u"] = np.random.default_rng(1).standard_normal(ushape).astype(np.float32)
        feeds["u"].reshape(-1)[-1] = np.nan
    _check(_model(op, shape, idx, ushape, **attrs), feeds, target, release, armnn_runner_for, tmp_path)


def test_runtime_indices_are_refused_with_the_reason():
    g = h.make_graph([h.make_node("ScatterND", ["x", "i", "u"], ["y"])], "t",
                     [h.make_tensor_value_info("x", TP.FLOAT, [4, 2]), h.make_tensor_value_info("i", TP.INT64, [1, 1]),
                      h.make_tensor_value_info("u", TP.FLOAT, [1, 2])], [h.make_tensor_value_info("y", TP.FLOAT, None)])
    with pytest.raises(armnn_import.UnsupportedModelError, match="must be a constant"):
        armnn_import.convert(h.make_model(g, opset_imports=[h.make_opsetid("", 18)]), target="23.08")
