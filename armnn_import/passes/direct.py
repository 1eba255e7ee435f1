"""Richer targets: the 19.02 Merger and Permute under the layer types of the 20.08 format.

The passes reason about Merger and Permute (the layout pass sinks and cancels Permutes,
merge_permutes composes them, ...); once they are done, the 20.08 format on writes each
Merger as a Concat (the deserializers of 20.08 and 23.08 parse both with ParseConcat) and
each Permute as the Transpose with the inverse mapping (dim_mappings in numpy.transpose's
sense), the layers Arm NN's own parsers of those releases write. The 19.02 output is kept
as it is.
"""
from __future__ import annotations

from ..ir.descriptors import TransposeDescriptor
from ..ir.graph import Graph
from ..ir.types import LayerType
from ..lowering.builder import inverse_perm
from ..report import Report


def direct_layers(graph: Graph, report: Report) -> int:
    t = graph.target
    if not (t.has(LayerType.Concat) or t.has(LayerType.Transpose)):
        return 0  # (19.02: nothing to rename, no scan)
    n = 0
    for layer in graph.layers:
        if layer.type == LayerType.Merger and t.has(LayerType.Concat):
            layer.type = LayerType.Concat  # (same descriptor, OriginsDescriptor)
            n += 1
        elif layer.type == LayerType.Permute and t.has(LayerType.Transpose):
            out, src = layer.outputs[0], layer.inputs[0].info
            if (out.scale, out.offset, out.scales) != (src.scale, src.offset, src.scales):
                continue  # a Permute that relabels its bytes' quantization (lowering/qround.py) stays
            layer.type = LayerType.Transpose
            layer.desc = TransposeDescriptor(inverse_perm(layer.desc.dim_mappings))
            n += 1
    return n
