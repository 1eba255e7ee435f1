"""NetBuilder lowerings on the real Arm NN runtime, against numpy."""
import numpy as np
import pytest

from armnn_import.ir import LayerType, TensorInfo
from armnn_import.ir.verify import verify
from armnn_import.lowering import NetBuilder
from armnn_import.serialize import write

NUMPY = {LayerType.Addition: np.add, LayerType.Subtraction: np.subtract, LayerType.Multiplication: np.multiply,
         LayerType.Division: np.divide, LayerType.Maximum: np.maximum, LayerType.Minimum: np.minimum}


# Maximum and Minimum are commutative: const_first changes nothing there
OPS = [(t, False) for t in NUMPY] + [(t, True) for t in NUMPY if t not in (LayerType.Maximum, LayerType.Minimum)]


@pytest.mark.parametrize("ltype,const_first", OPS, ids=lambda v: v.name if isinstance(v, LayerType) else
                         ("const_first" if v else "x_first"))
@pytest.mark.parametrize("xshape,cshape", [((1, 4, 1, 1), (1, 4, 3, 5)), ((2, 1, 3), (2, 4, 3)),
                                           ((3, 1), (1, 2, 3, 6))])
def test_uniform_constant_that_widens_the_input(ltype, const_first, xshape, cshape, armnn_runner):
    """A constant of one repeated value whose shape broadcasts x to a larger shape."""
    rng = np.random.default_rng(3)
    c = np.full(cshape, 1.75, np.float32)
    nb = NetBuilder()
    x = nb.g.add_input("x", TensorInfo(xshape))
    y = nb.binary_const(ltype, x, c, "op", const_first=const_first)
    nb.g.add_output("y", y)
    verify(nb.g)
    xin = rng.uniform(0.5, 2.0, xshape).astype(np.float32)
    want = NUMPY[ltype](c, xin) if const_first else NUMPY[ltype](xin, c)
    got = armnn_runner(write(nb.g), [xin])[0]
    assert got.size == want.size
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-6)


def test_dilation_on_a_kernel_axis_of_size_one_is_ignored(armnn_runner):
    """A 1x1 (or 1xk) kernel reads one tap per axis of size 1: a huge dilation
    there changes nothing and must not become a SpaceToBatchNd block of 2^62."""
    rng = np.random.default_rng(4)
    w = rng.standard_normal((5, 3, 1, 2)).astype(np.float32)
    nb = NetBuilder()
    x = nb.g.add_input("x", TensorInfo((1, 3, 6, 7)))
    nb.g.add_output("y", nb.conv2d(x, w, None, "conv", dilations=(1 << 62, 2)))
    verify(nb.g)
    assert nb.g.layers[1].desc.block_shape == (1, 2)  # SpaceToBatchNd for the real dilation only
    xin = rng.standard_normal((1, 3, 6, 7)).astype(np.float32)
    # kernel width 2, dilation 2: taps at columns j and j + 2
    want = np.einsum("nchw,oc->nohw", xin[..., :-2], w[:, :, 0, 0]) + \
        np.einsum("nchw,oc->nohw", xin[..., 2:], w[:, :, 0, 1])
    got = armnn_runner(write(nb.g), [xin])[0]
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-5)
