"""A constant matrix applied along one axis of a tensor with a FullyConnected (interpolation
matrices of Resize, one-hot selections of Gather, MatMul by a constant). Arm NN's
FullyConnected takes a 2-D input, so the other axes are folded into its batch and back."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Port
from .builder import NetBuilder, inverse_perm


def fc_last(nb: NetBuilder, x: Port, weights, bias, name: str, *, fc_name: str | None = None,
            names=("_2d", "_nd"), quant=None) -> Port:
    """y[..., o] = sum_i weights[o, i] x[..., i] (+ bias[o]): x reshaped to 2-D, one
    FullyConnected (named `fc_name`, default `name`), reshaped back; `names` are the suffixes of
    the two Reshape layers. `weights` is a [O, I] array or ConstTensor."""
    shape = x.info.shape
    flat = nb.reshape(x, (int(np.prod(shape[:-1], dtype=np.int64)), shape[-1]), f"{name}{names[0]}")
    y = nb.fully_connected(flat, weights, bias, fc_name or name, quant=quant)
    return nb.reshape(y, shape[:-1] + (int(weights.shape[0]),), f"{name}{names[1]}")


def fc_along_axis(nb: NetBuilder, x: Port, axis: int, weights, bias, name: str, *,
                  back_name: str | None = None, fc_name: str | None = None, names=("_2d", "_nd"),
                  quant=None) -> Port:
    """fc_last along `axis`: a Permute brings the axis last ("{name}_last"), the FullyConnected
    is `fc_name` (default "{name}_fc"), and a Permute (`back_name`, default `name`) puts the
    axis back. `names` and `quant` are fc_last's."""
    rank = x.info.rank
    perm = [i for i in range(rank) if i != axis] + [axis]
    xt = nb.permute(x, perm, f"{name}_last")
    y = fc_last(nb, xt, weights, bias, name, fc_name=fc_name or f"{name}_fc", names=names, quant=quant)
    return nb.permute(y, list(inverse_perm(perm)), back_name or name)
