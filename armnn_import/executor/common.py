"""What the layer functions share: their table, NCHW views of a layer's tensors, constants,
and the C++ forms of max, min and a sequential sum."""
from __future__ import annotations

import contextvars

import numpy as np

from ..errors import ExecutionError
from ..ir.types import DataLayout
from .numeric import F32, decode

LAYER_FUNCTIONS = {}
# Whether a Gather wraps a negative index, as Arm NN 23.08's CpuRef does (20.08's fails): set by
# run_all from the graph's format, as a 23.08 file is only read by 23.08 and later
GATHER_WRAPS = contextvars.ContextVar("gather_wraps", default=False)


def layer_fn(*types):
    def register(fn):
        for t in types:
            LAYER_FUNCTIONS[t] = fn
        return fn
    return register


def to_nchw(x, layout):
    return x if layout == DataLayout.NCHW else x.transpose(0, 3, 1, 2)


def input_nchw(layer, ins, infos):
    """The decoded 4-D input of a layer with a data_layout, as NCHW."""
    if ins[0].ndim != 4:
        raise ExecutionError(f"{layer.name}: {layer.type.name} needs a 4-D input, got {ins[0].shape}")
    return to_nchw(decode(ins[0], infos[0]), layer.desc.data_layout)


def from_nchw(x, layout):
    return x if layout == DataLayout.NCHW else x.transpose(0, 2, 3, 1)


def seq_sum(x, axis):
    """Sum along `axis` accumulating left to right in float32, like a C++ loop
    (numpy's sum is pairwise); add.accumulate is strictly sequential."""
    x = np.moveaxis(x, axis, -1)
    if x.shape[-1] == 0:
        return np.zeros(x.shape[:-1], F32)
    return np.add.accumulate(x, axis=-1, dtype=F32)[..., -1]


def const_of(layer, name):
    t = layer.tensors[name]
    return decode(t.data, t.info)


def cpp_max(a, b):
    return np.where(a < b, b, a)   # std::max(a, b)


def cpp_min(a, b):
    return np.where(b < a, b, a)   # std::min(a, b)
