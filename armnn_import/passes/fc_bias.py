"""A bias-free float FullyConnected takes the per-channel shift that follows it as its bias.

A model's dense layer on a 3-D input (Keras Tensordot: Reshape, MatMul, BiasAdd) or an ONNX
MatMul + Add reaches the IR as a FullyConnected without bias, a Reshape of its [N, C] output
to [N, C, 1, 1] (or [N, 1, 1, C] for NHWC) and a scale-1 BatchNormalization with mean 0
(NetBuilder.batchnorm), which shifts_to_additions would make an Addition of a generated
constant (keras_reshape_permute_flatten: 16 layers, 8 with this pass; the anchor writes 33).

Bit for bit: CpuRef's FullyConnected (FullyConnected.cpp, 20.08 and 23.08) sums weight *
input in float from 0.0f, then adds the bias in float, once: outval + bias. The
BatchNormalization computes mult * x + (beta - mult * mean) with mult = 1 and mean = 0
(BatchNormImpl.cpp), i.e. x + beta, and the Addition x + beta: the same single float
addition of the same two float32 values. Only where the FullyConnected has no bias of its
own (a + b + c is not a + (b + c)) and only in Float32: a Float16 network rounds the
FullyConnected's output to Float16 before the shift, which the fused layer would not
(passes.pipeline drops this pass for it).
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Graph, Layer
from ..ir.types import ConstTensor, DataLayout, DataType, LayerType
from ..report import Report
from .cleanup import bn_affine, float_bn, single_consumer


def _shift_of(graph: Graph, fc: Layer) -> tuple[Layer, np.ndarray] | None:
    """(the BatchNormalization, its shift) that alone reads, through one Reshape to 4-D, a
    bias-free Float32 FullyConnected's [N, C] output on its channel axis; None otherwise."""
    y = fc.outputs[0]
    if fc.desc.bias_enabled or y.dtype != DataType.Float32 or y.rank != 2 or not single_consumer(graph, fc):
        return None
    reshape = graph.consumers(fc.out())[0][0]
    if reshape.type != LayerType.Reshape or not single_consumer(graph, reshape):
        return None
    bn = graph.consumers(reshape.out())[0][0]
    if not float_bn(bn):
        return None
    n, c = y.shape
    want = (n, c, 1, 1) if bn.desc.data_layout == DataLayout.NCHW else (n, 1, 1, c)
    if reshape.outputs[0].shape != want or np.any(bn.tensors["mean"].data != 0):
        return None
    a, b = bn_affine(bn)
    return (bn, b.astype(np.float32)) if np.all(a == 1.0) else None


def shifts_into_fc(graph: Graph, report: Report) -> int:
    n = 0
    for fc in [l for l in graph.layers if l.type == LayerType.FullyConnected]:
        found = _shift_of(graph, fc)
        if found is None:
            continue
        bn, shift = found
        fc.tensors["biases"] = ConstTensor(shift)
        fc.desc.bias_enabled = True
        # the Reshape stays for the BatchNormalization's readers; merge_reshapes and
        # remove_identities drop it where they only reshape again
        graph.replace_uses(bn.out(), bn.inputs[0])
        graph.remove([bn])
        n += 1
    if n:
        report.decomposition("per-channel shift after a bias-free fully connected layer",
                             "the FullyConnected's bias (the same float addition, bit for bit)")
    return n
