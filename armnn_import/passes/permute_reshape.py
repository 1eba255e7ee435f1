"""Richer targets: a Permute that moves only axes of size 1 is a Reshape.

Such a Permute leaves every element where it is in memory (say [1, 1, 1, C] to
[1, C, 1, 1] after a global pooling in NHWC), so a Reshape computes the same bytes,
and merge_reshapes then joins it with the Reshape that usually follows (a flatten).
Only for the 20.08 format on, where convolutions take NHWC and Permutes are left at
such places alone; the 19.02 output is kept as it is.
"""
from __future__ import annotations

from ..ir.descriptors import ReshapeDescriptor
from ..ir.graph import Graph
from ..ir.types import LayerType
from ..report import Report
from .layout import perm_of


def _moves_only_unit_axes(layer) -> bool:
    shape = layer.inputs[0].info.shape
    kept = [a for a in perm_of(layer) if shape[a] != 1]
    return kept == sorted(kept)


def permutes_as_reshapes(graph: Graph, report: Report) -> int:
    if not graph.target.at_least("20.08"):
        return 0
    n = 0
    for layer in [l for l in graph.layers if l.type == LayerType.Permute]:
        out, src = layer.outputs[0], layer.inputs[0].info
        if not _moves_only_unit_axes(layer) or (out.scale, out.offset) != (src.scale, src.offset):
            continue  # (a Permute that relabels its bytes' quantization stays: a Reshape's output
            # quantization is not read by the 20.08 deserializer)
        r = graph.add(LayerType.Reshape, f"{layer.name}_reshape", [layer.inputs[0]],
                      ReshapeDescriptor(out.shape), outputs=[out])
        graph.replace_uses(layer.out(), r.out())
        graph.remove([layer])
        n += 1
    return n
