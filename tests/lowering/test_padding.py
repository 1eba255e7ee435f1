"""armnn_import/lowering/padding.border_pad (ONNX Pad reflect/edge/wrap, TFLite MIRROR_PAD) and
copies.repeat, on real Arm NN (CpuRef) against numpy.pad and numpy.concatenate."""
import numpy as np
import pytest

from armnn_import.ir import DataType, Graph, LayerType as L, TensorInfo
from armnn_import.ir.verify import verify
from armnn_import.lowering import NetBuilder, Unsupported
from armnn_import.lowering.copies import repeat
from armnn_import.lowering.padding import PadNames, border_pad
from armnn_import.serialize import write

SHAPE = (1, 4, 5, 3)
PADS = [(0, 0), (3, 2), (1, 4), (0, 1)]  # reflect reaches at most dimension - 1: 3 of 4, 4 of 5


def _graph(target, build, dtype=DataType.Float32, shape=SHAPE):
    nb = NetBuilder(Graph(target))
    q = (0.25, 7) if dtype.is_quantized else (1.0, 0)
    x = nb.g.add_input("x", TensorInfo(shape, dtype, *q))
    nb.g.add_output("y", build(nb, x))
    verify(nb.g)
    return nb.g


def _input(dtype, shape=SHAPE):
    rng = np.random.default_rng(3)
    if dtype == DataType.Float32:
        return rng.standard_normal(shape).astype(np.float32)
    return rng.integers(0, 256, shape).astype(np.uint8)


def _kinds(g):
    return {layer.type for layer in g.layers} - {L.Input, L.Output}


@pytest.mark.parametrize("dtype", [DataType.Float32, DataType.QuantisedAsymm8], ids=["float32", "uint8"])
@pytest.mark.parametrize("mode", ["reflect", "symmetric", "edge", "wrap"])
@pytest.mark.parametrize("target", ["19.02", "23.08"])
def test_border_pad_is_numpy_pad(target, mode, dtype, armnn_runner_for):
    pads = PADS if mode != "edge" else [(0, 0), (9, 2), (1, 12), (0, 1)]  # (edge: any amount)
    g = _graph(target, lambda nb, x: border_pad(nb, x, pads, mode, "p"), dtype)
    one_pad = target == "23.08" and mode in ("reflect", "symmetric")
    assert _kinds(g) == ({L.Pad} if one_pad else {L.StridedSlice, L.Merger})
    x = _input(dtype)
    want = np.pad(x, pads, mode)
    got = armnn_runner_for("23.08" if target == "23.08" else "20.08")(write(g), [x])[0]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_names_are_the_callers():
    names = PadNames("_ax{a}_lo", "_ax{a}_hi", "_ax{a}", "_ax{a}_first", "_ax{a}_last")
    g = _graph("19.02", lambda nb, x: border_pad(nb, x, [(0, 0), (1, 0), (0, 2), (0, 0)], "edge", "p",
                                                 names=names))
    assert [layer.name for layer in g.layers[1:-1]] == ["p_ax1_first", "p_ax1", "p_ax2_last", "p_ax2_hi", "p_ax2"]
    g = _graph("19.02", lambda nb, x: border_pad(nb, x, [(0, 0), (1, 1), (0, 0), (0, 0)], "reflect", "m"))
    assert [layer.name for layer in g.layers[1:-1]] == ["m_l1", "m_r1", "m_1"]


def test_no_padding_adds_no_layer():
    for mode in ("reflect", "symmetric", "edge", "wrap"):
        g = _graph("19.02", lambda nb, x: border_pad(nb, x, [(0, 0)] * 4, mode, "p"))
        assert _kinds(g) == set()


@pytest.mark.parametrize("mode,pads", [("reflect", [(0, 0), (4, 0), (0, 0), (0, 0)]),
                                       ("symmetric", [(0, 0), (0, 5), (0, 0), (0, 0)]),
                                       ("wrap", [(0, 0), (0, 0), (6, 0), (0, 0)])])
def test_padding_past_what_the_mode_reads_is_refused(mode, pads):
    for target in ("19.02", "23.08"):
        with pytest.raises(Unsupported, match=f"{mode} padding"):
            _graph(target, lambda nb, x: border_pad(nb, x, pads, mode, "p"))


@pytest.mark.parametrize("n", [1, 3, 8, 13])
def test_repeat_is_concatenate(n, armnn_runner):
    g = _graph("19.02", lambda nb, x: repeat(nb, x, 2, n, "r"), shape=(1, 2, 3, 2))
    mergers = [layer for layer in g.layers if layer.type == L.Merger]
    assert len(mergers) == (0 if n == 1 else 1 if n <= 8 else 4)  # 13 = 8 + 4 + 1: x2, x4, x8, the join
    assert all(len(m.inputs) <= 8 for m in mergers)
    x = _input(DataType.Float32, (1, 2, 3, 2))
    np.testing.assert_array_equal(armnn_runner(write(g), [x])[0], np.concatenate([x] * n, axis=2))
