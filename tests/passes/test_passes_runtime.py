"""The pass pipeline keeps results identical on the real Arm NN runtime and
removes what it promises to remove."""
import numpy as np
import pytest

from armnn_import.ir import ActivationFunction, DataLayout, LayerType, PoolingAlgorithm, TensorInfo
from armnn_import.lowering import NetBuilder
from armnn_import.passes import run_pipeline
from armnn_import.serialize import write


def _nhwc_cnn(rng):
    nb = NetBuilder()
    x = nb.g.add_input("x", TensorInfo((1, 7, 9, 5)))
    y = nb.conv2d(x, rng.standard_normal((6, 5, 3, 3)).astype(np.float32), rng.standard_normal(6), "c1",
                  pads=(1, 1, 1, 1), layout=DataLayout.NHWC)
    y = nb.activation(y, ActivationFunction.ReLu, "r1")
    z = nb.conv2d(y, rng.standard_normal((6, 6, 1, 1)).astype(np.float32), rng.standard_normal(6), "c2",
                  layout=DataLayout.NHWC)
    z = nb.binary(LayerType.Addition, z, y, "add")
    z = nb.pool2d(z, PoolingAlgorithm.Max, (2, 2), "pool", strides=(2, 2), layout=DataLayout.NHWC)
    z = nb.concat([z, nb.pad(z, [(0, 0), (0, 0), (0, 0), (1, 2)], "pad")], 3, "cat")
    z = nb.take(z, 2, 1, 4, "slice")
    z = nb.mean(z, [1, 2], True, "gap")
    nb.g.add_output("out", z)
    return nb.g


def test_permutes_sink_and_cancel_with_identical_results(armnn_runner):
    rng = np.random.default_rng(1)
    g = _nhwc_cnn(rng)
    x = rng.standard_normal((1, 7, 9, 5)).astype(np.float32)
    before = armnn_runner(write(g), [x])[0]
    assert g.summary()["Permute"] == 4
    run_pipeline(g)
    counts = g.summary()
    # one Permute into the NCHW convolutions, one back to NHWC for the output
    assert counts["Permute"] == 2, counts
    after = armnn_runner(write(g), [x])[0]
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)


def test_batchnorms_merge_and_scale_folds_into_conv(armnn_runner):
    rng = np.random.default_rng(2)
    nb = NetBuilder()
    x = nb.g.add_input("x", TensorInfo((1, 3, 8, 10)))
    y = nb.conv2d(x, rng.standard_normal((4, 3, 3, 3)).astype(np.float32), rng.standard_normal(4), "c")
    y = nb.batchnorm(y, rng.uniform(0.5, 2, 4), rng.standard_normal(4), 1, "bn")
    nb.g.add_output("y", y)
    xin = rng.standard_normal((1, 3, 8, 10)).astype(np.float32)
    before = armnn_runner(write(nb.g), [xin])[0]
    run_pipeline(nb.g)
    # both merge into one shift (the scale went into the weights), which becomes an Addition
    kinds = nb.g.summary()
    assert "BatchNormalization" not in kinds and kinds["Addition"] == 1 and kinds["Convolution2d"] == 1
    np.testing.assert_allclose(armnn_runner(write(nb.g), [xin])[0], before, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("perm", [(0, 2, 3, 1), (0, 3, 1, 2), (1, 0, 2, 3)])
def test_permute_pairs_cancel(perm):
    nb = NetBuilder()
    x = nb.g.add_input("x", TensorInfo((2, 3, 4, 5)))
    y = nb.permute(x, perm, "p")
    y = nb.activation(y, ActivationFunction.Sigmoid, "s")
    inv = tuple(int(i) for i in np.argsort(perm))
    y = nb.permute(y, inv, "q")
    nb.g.add_output("y", y)
    run_pipeline(nb.g)
    assert "Permute" not in nb.g.summary()
