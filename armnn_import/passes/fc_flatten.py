"""Reshapes that a FullyConnected makes redundant, on every target.

Arm NN's FullyConnected takes a 2-D or a 4-D input and reads it as
[input[0], product of the other dims] (FullyConnectedQueueDescriptor::Validate,
FullyConnectedLayer::InferOutputShapes `batches = inputShape[0]`, RefFullyConnectedWorkload's
m_NumActivations, 20.08 and 23.08). A Reshape that flattens a 2-D or 4-D tensor to
[dim 0, rest] for FullyConnecteds only is therefore the FC's own flatten done twice: a copy
of the tensor and a workload for nothing (the MEAN + Reshape before a classifier, Flatten ->
Dense, ONNX Flatten -> Gemm).

A Gather on axis 0 whose only reader is a Reshape merging the leading index dims
([2, 6, 16] -> [12, 16]: an embedding before a Dense) gathers the same rows in the same order
from the indices reshaped to [12]: the Reshape moves to the indices (12 int32 instead of 192
values), and where the indices come from a Reshape already, that one takes the new shape. Not for
the 23.08 format where the indices are a graph input or a Constant: Arm NN 23.08's RefBackend
removes a Reshape itself (OptimizeSubgraphView, RemoveReshapeLayer) but not one fed by an Input or
a Constant, so there the moved Reshape would cost a workload the old one did not (embedding_keras:
+1,020 instructions per inference on 23.08, -144 on 20.08).

A Mean or Reduce without keep_dims whose only reader is a Reshape back to the keep_dims shape
(the [1, 32] -> [1, 1, 1, 32] before a per-channel FullyConnected's 1x1 convolution) keeps
its dims instead: the same values in the same order, one Reshape fewer.
"""
from __future__ import annotations

import dataclasses
import math

from ..ir.descriptors import ReshapeDescriptor
from ..ir.graph import Graph, Layer
from ..ir.types import LayerType
from ..report import Report
from .cleanup import bypass


def _only_fc_reads(graph: Graph, layer: Layer) -> bool:
    users = graph.consumers(layer.out())
    return bool(users) and all(u.type == LayerType.FullyConnected and i == 0 for u, i in users)


def is_fc_flatten(graph: Graph, r: Layer) -> bool:
    x, y = r.inputs[0].info, r.outputs[0]
    if x.rank not in (2, 4) or y.rank != 2 or y.shape[0] != x.shape[0]:
        return False  # (a 3-D or 5-D input is refused by the FC; another split is not its flatten)
    return x.with_shape(y.shape) == y and _only_fc_reads(graph, r)  # (same type and quantization)


def _gather_reshape(graph: Graph, g: Layer) -> Layer | None:
    """The Reshape that alone reads `g` (a Gather on axis 0) and only merges or splits its
    index dims, keeping the table's row shape; None otherwise."""
    if (g.desc is not None and g.desc.axis != 0) or len(g.inputs) != 2:
        return None
    users = graph.consumers(g.out())
    if len(users) != 1 or users[0][0].type != LayerType.Reshape:
        return None
    r, row = users[0][0], tuple(g.inputs[0].info.shape[1:])
    y = tuple(r.outputs[0].shape)
    if len(y) <= len(row) or y[len(y) - len(row):] != row or len(y) - len(row) > 4:
        return None
    if r.outputs[0] != g.outputs[0].with_shape(y):
        return None
    return r


def _move_reshape_to_indices(graph: Graph, g: Layer, r: Layer) -> None:
    idx, out = g.inputs[1], r.outputs[0]
    new_shape = tuple(out.shape[:out.rank - (g.inputs[0].info.rank - 1)])
    assert math.prod(new_shape) == idx.info.num_elements
    src = idx.layer
    if src.type == LayerType.Reshape and graph.num_consumers(src) == 1:
        src.desc = ReshapeDescriptor(new_shape)  # (the indices' own Reshape takes the new shape)
        src.outputs = [src.outputs[0].with_shape(new_shape)]
        new_idx = src.out()
        if tuple(src.inputs[0].info.shape) == new_shape:
            new_idx = src.inputs[0]  # (now a Reshape to its own input's shape)
    else:
        new_idx = graph.add(LayerType.Reshape, f"{g.name}_indices", [idx], ReshapeDescriptor(new_shape),
                            outputs=[idx.info.with_shape(new_shape)]).out()
    graph.set_input(g, 1, new_idx)
    g.outputs = [out]
    graph.replace_uses(r.out(), g.out())
    graph.remove([r])
    if new_idx.layer is not src and src.type == LayerType.Reshape and not graph.num_consumers(src):
        graph.remove([src])


def _keep_dims_reshape(graph: Graph, m: Layer) -> Layer | None:
    """The Reshape that alone reads `m` (Mean/Reduce, keep_dims false) and restores its reduced
    dims as 1s; None otherwise."""
    users = graph.consumers(m.out())
    if m.desc.keep_dims or len(users) != 1 or users[0][0].type != LayerType.Reshape:
        return None
    r, x = users[0][0], m.inputs[0].info.shape
    axes = set(a % len(x) for a in m.desc.axis) if m.desc.axis else set(range(len(x)))
    kept = tuple(1 if i in axes else n for i, n in enumerate(x))
    return r if r.outputs[0] == m.outputs[0].with_shape(kept) else None


def _keep_dims(graph: Graph) -> int:
    n = 0
    for m in [l for l in graph.layers if l.type in (LayerType.Mean, LayerType.Reduce)]:
        r = _keep_dims_reshape(graph, m)
        if r is not None:
            m.desc = dataclasses.replace(m.desc, keep_dims=True)
            m.outputs = [r.outputs[0]]
            graph.replace_uses(r.out(), m.out())
            graph.remove([r])
            n += 1
    return n


def reshapes_into_fc(graph: Graph, report: Report) -> int:
    n = 0
    for g in [l for l in graph.layers if l.type == LayerType.Gather]:
        r = _gather_reshape(graph, g)
        kept_by_23_08 = g.inputs[1].layer.type in (LayerType.Input, LayerType.Constant)
        if r is not None and not (kept_by_23_08 and graph.target.at_least("23.08")):
            _move_reshape_to_indices(graph, g, r)
            n += 1
    for r in [l for l in graph.layers if l.type == LayerType.Reshape]:
        if r in graph and is_fc_flatten(graph, r) and bypass(graph, r):
            n += 1
    return n + _keep_dims(graph)
