"""The lowering recipes the two frontends share (armnn_import/lowering/padding.py, matrix.py),
tested once: the geometry against its definition, the layers on real Arm NN (CpuRef) against
numpy."""
import numpy as np
import pytest

from armnn_import.ir import LayerType, TensorInfo
from armnn_import.ir.verify import verify
from armnn_import.lowering import NetBuilder
from armnn_import.lowering.matrix import fc_along_axis, fc_last
from armnn_import.lowering.padding import same_pads
from armnn_import.serialize import write


@pytest.mark.parametrize("size", [1, 2, 5, 7, 8, 13])
@pytest.mark.parametrize("kernel,stride,dilation", [(1, 1, 1), (3, 1, 1), (3, 2, 1), (4, 2, 1), (3, 3, 2),
                                                    (5, 1, 3), (2, 4, 1)])
def test_same_pads_give_ceil_size_over_stride_outputs(size, kernel, stride, dilation):
    before, after = same_pads(size, kernel, stride, dilation)
    span = (kernel - 1) * dilation + 1
    out = (size + before + after - span) // stride + 1
    assert out == -(-size // stride)  # SAME: ceil(size / stride) windows
    assert after - before in (0, 1)   # the odd one after (TensorFlow's SAME, ONNX's SAME_UPPER)
    # and no more padding than the last window needs
    assert before + after == max((out - 1) * stride + span - size, 0)


def test_same_pads_of_tensorflow_examples():
    assert same_pads(5, 3, 2) == (1, 1)
    assert same_pads(4, 3, 2) == (0, 1)
    assert same_pads(6, 1, 2) == (0, 0)


def test_fc_last_names_and_numbers(armnn_runner):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    nb = NetBuilder()
    x = nb.g.add_input("x", TensorInfo((2, 5, 4)))
    nb.g.add_output("y", fc_last(nb, x, w, b, "m", names=("_rows", "_unrows")))
    verify(nb.g)
    assert [(l.type, l.name) for l in nb.g.layers[1:-1]] == [
        (LayerType.Reshape, "m_rows"), (LayerType.FullyConnected, "m"), (LayerType.Reshape, "m_unrows")]
    xin = rng.standard_normal((2, 5, 4)).astype(np.float32)
    got = armnn_runner(write(nb.g), [xin])[0]
    np.testing.assert_allclose(got, xin @ w.T + b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axis", [0, 1, 2, 3])
def test_fc_along_axis_applies_the_matrix_on_that_axis(axis, armnn_runner):
    rng = np.random.default_rng(axis)
    shape = (2, 3, 4, 5)
    m = rng.standard_normal((6, shape[axis])).astype(np.float32)
    nb = NetBuilder()
    x = nb.g.add_input("x", TensorInfo(shape))
    nb.g.add_output("y", fc_along_axis(nb, x, axis, m, None, "r"))
    verify(nb.g)
    kinds = [l.type for l in nb.g.layers[1:-1]]
    assert kinds.count(LayerType.FullyConnected) == 1
    assert kinds.count(LayerType.Permute) == (0 if axis == 3 else 2)  # the last axis needs none
    xin = rng.standard_normal(shape).astype(np.float32)
    want = np.moveaxis(np.tensordot(xin, m, axes=([axis], [1])), -1, axis)
    got = armnn_runner(write(nb.g), [xin])[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
