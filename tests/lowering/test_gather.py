"""armnn_import/lowering/gather.py, the gather by constant indices both frontends call (ONNX
Gather, TFLite GATHER and nearest RESIZE): every way it lowers, on real Arm NN (CpuRef) against
numpy.take, and index_runs against its definition."""
import numpy as np
import pytest

from armnn_import.ir import DataType, Graph, LayerType as L, TensorInfo
from armnn_import.ir.verify import verify
from armnn_import.lowering import NetBuilder, Unsupported
from armnn_import.lowering.gather import GatherNames, gather_const, index_runs
from armnn_import.serialize import write

SHAPE = (2, 5, 3)


def _expand(runs):
    return [start + step * i for start, step, count in runs for i in range(count)]


@pytest.mark.parametrize("repeats", [True, False])
@pytest.mark.parametrize("seed", range(40))
def test_index_runs_give_back_the_indices_in_maximal_runs(seed, repeats):
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, 6, rng.integers(1, 12)).tolist()
    if seed % 3 == 0:
        idx = sorted(idx)
    runs = index_runs(idx, repeats=repeats)
    assert _expand(runs) == idx
    assert all(count >= 1 for _, _, count in runs)
    if not repeats:
        assert all(step != 0 for _, step, count in runs if count > 1)
    for (s1, st1, c1), (s2, st2, c2) in zip(runs, runs[1:]):  # greedy: the next index never continues a run
        if c1 > 1:
            assert s2 != s1 + st1 * c1


def test_index_runs_examples():
    assert index_runs([0, 1, 2, 4, 6, 3]) == [(0, 1, 3), (4, 2, 2), (3, 1, 1)]
    assert index_runs([2, 2, 2, 1]) == [(2, 0, 3), (1, 1, 1)]
    assert index_runs([2, 2, 2, 1], repeats=False) == [(2, 1, 1), (2, 1, 1), (2, -1, 2)]
    assert index_runs([4, 3, 2, 1, 0]) == [(4, -1, 5)]
    assert index_runs([0, 5, 1, 6, 2], limit=2) is None
    assert index_runs([0, 5, 1, 6, 2], limit=3) == [(0, 5, 2), (1, 5, 2), (2, 1, 1)]


def _graph(target, idx, axis, dtype=DataType.Float32, **kw):
    nb = NetBuilder(Graph(target))
    q = (0.5, 3) if dtype.is_quantized else (1.0, 0)
    x = nb.g.add_input("x", TensorInfo(SHAPE, dtype, *q))
    nb.g.add_output("y", gather_const(nb, x, axis, np.asarray(idx), "g", **kw))
    verify(nb.g)
    return nb.g


def _kinds(g):
    return sorted({layer.type.name for layer in g.layers} - {"Input", "Output"})


def _input(dtype):
    rng = np.random.default_rng(7)
    if dtype == DataType.Float32:
        return rng.standard_normal(SHAPE).astype(np.float32)
    if dtype == DataType.Signed32:
        return rng.integers(-1000, 1000, SHAPE).astype(np.int32)
    return rng.integers(0, 256, SHAPE).astype(np.uint8)


SCATTERED = np.random.default_rng(5).integers(0, 5, 40).tolist()  # 19 runs (any two indices make one)
#: (indices, axis, target, dtype, max_slices, the layer kinds it takes)
CASES = {
    "identity": ([0, 1, 2, 3, 4], 1, "19.02", DataType.Float32, 32, []),
    "upsample": ([0, 0, 1, 1, 2, 2], 2, "19.02", DataType.Float32, 32, ["Merger", "Reshape"]),
    "one-run": ([3, 2, 1], 1, "19.02", DataType.Float32, 32, ["StridedSlice"]),
    "runs": ([4, 0, 1, 2, 2, 2, -1], 1, "19.02", DataType.Float32, 32, ["Merger", "StridedSlice"]),
    "runs-uint8": ([1, 0, 0, 3], 1, "19.02", DataType.QuantisedAsymm8, 32, ["Merger", "StridedSlice"]),
    "selection": (SCATTERED, 1, "19.02", DataType.Float32, 16, ["FullyConnected", "Permute", "Reshape"]),
    "selection-last-axis": ([i % 3 for i in SCATTERED], 2, "19.02", DataType.Float32, 16,
                            ["FullyConnected", "Reshape"]),
    "selection-uint8": (SCATTERED, 1, "19.02", DataType.QuantisedAsymm8, 16, ["FullyConnected", "Permute", "Reshape"]),
    # (and a Reshape, or none, as the format's Constant form wants: NetBuilder.constant_layer)
    "gather-layer": (SCATTERED, 1, "20.08", DataType.Float32, 32, ["Constant", "Gather", "Permute"]),
    "gather-layer-23.08": (SCATTERED, 1, "23.08", DataType.Float32, 32, ["Constant", "Gather"]),
}


@pytest.mark.parametrize("case", CASES)
def test_gather_const_is_numpy_take(case, armnn_runner_for):
    idx, axis, target, dtype, max_slices, kinds = CASES[case]
    g = _graph(target, idx, axis, dtype, max_slices=max_slices)
    assert [k for k in _kinds(g) if k != "Reshape" or "Gather" not in kinds] == kinds
    x = _input(dtype)
    want = np.take(x, idx, axis=axis)
    got = armnn_runner_for("23.08" if target == "23.08" else "20.08")(write(g), [x])[0]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.reshape(want.shape), want)


def test_names_are_the_callers():
    g = _graph("19.02", [4, 0, 1, 2], 1, names=GatherNames("_run{k}", "_cat", "_fc", ("_2d", "_nd")))
    assert [layer.name for layer in g.layers if layer.type in (L.StridedSlice, L.Merger)] == \
        ["g_run0", "g_run1", "g_cat"]
    g = _graph("19.02", SCATTERED, 1, max_slices=16, names=GatherNames("_run{k}", "_cat", "_fc", ("_2d", "_nd")))
    assert [layer.name for layer in g.layers[1:-1]] == ["g_last", "g_2d", "g_fc", "g_nd", "g_back"]


def test_scattered_is_more_runs_than_slices_take():
    assert 16 < len(index_runs(SCATTERED)) <= 32 and len(index_runs([i % 3 for i in SCATTERED])) > 16


def test_a_tensor_no_selection_matrix_carries_takes_up_to_64_slices():
    # (int32: CpuRef 20.08 slices and joins no Signed32, so this is the layers, not the numbers)
    g = _graph("19.02", SCATTERED, 1, DataType.Signed32, max_slices=16)
    assert _kinds(g) == ["Merger", "StridedSlice"]
    assert g.output_layers[0].inputs[0].info.shape == (2, len(SCATTERED), 3)


def test_refusals():
    with pytest.raises(Unsupported, match="out of range"):
        _graph("19.02", [5], 1)
    with pytest.raises(Unsupported, match="out of range"):
        _graph("19.02", [-6], 1)
    with pytest.raises(Unsupported, match="empty"):
        _graph("19.02", [], 1)
    many = SCATTERED * 4  # more than MAX_RUNS (64) runs of a tensor no selection matrix carries
    assert len(index_runs(many)) > 64
    with pytest.raises(Unsupported, match="scattered indices of a non-float tensor"):
        _graph("19.02", many, 1, DataType.Signed32)
