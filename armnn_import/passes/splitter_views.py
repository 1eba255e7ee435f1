"""Splitter layers keep only the views something reads. Arm NN 20.08 and 23.08 give a workload
the tensor handles of the connected output slots only, and Splitter.cpp indexes them by view
(outputs[viewIdx]): with an unread slot before a read one, a view's data lands in the next
output (measured on both runtimes). The views need not cover the input, so the unread ones go;
a single read view becomes the StridedSlice of its box."""
from __future__ import annotations

from ..ir import descriptors as D
from ..ir.graph import Graph, Port
from ..ir.types import LayerType
from ..report import Report


def drop_unread_views(graph: Graph, report: Report) -> int:
    changed = 0
    for s in [l for l in graph.layers if l.type == LayerType.Splitter]:
        readers = graph.consumers(s)  # [(reader, its input index)]
        read = sorted({r.inputs[i].slot for r, i in readers})
        if not read or len(read) == len(s.outputs):
            continue
        d = s.desc
        origins = [d.origins.view_origins[k] for k in read]
        sizes = [d.view_sizes[k] for k in read]
        new_slot = {k: j for j, k in enumerate(read)}
        old = {(id(r), i): r.inputs[i].slot for r, i in readers}
        if len(read) == 1:  # one box: StridedSlice [origin, origin + size) with stride 1
            s.type, s.outputs = LayerType.StridedSlice, [s.outputs[read[0]]]
            s.desc = D.StridedSliceDescriptor(origins[0], tuple(o + n for o, n in zip(origins[0], sizes[0])),
                                              (1,) * len(sizes[0]))
        else:
            s.desc = D.ViewsDescriptor(D.OriginsDescriptor(d.origins.concat_axis, len(read), d.origins.num_dimensions,
                                                           tuple(origins)), tuple(sizes))
            s.outputs = [s.outputs[k] for k in read]
        for r, i in readers:
            graph.set_input(r, i, Port(s, new_slot[old[(id(r), i)]]))
        changed += 1
    return changed
