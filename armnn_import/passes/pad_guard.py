"""An identity Reshape between a Pad and the Convolution2d layers that read it (formats before 23.08).

Arm NN 20.08's Optimize() runs FoldPadIntoConvolution2d (src/armnn/optimizations/
FoldPadIntoConvolution2d.hpp) on every Pad -> Convolution2d connection, unchecked: it drops the
Pad's value, overwrites (does not add to) the convolution's own padding and ignores pads on N
and C. fold_pads has already folded every zero Pad the convolution can take exactly; a Pad still
read by a Convolution2d is one 20.08 would misfold, and files of the 19.02 and 20.08 formats
meet 20.08. So those readers read the Pad through one identity Reshape (shared by them), and
20.08's pattern never matches. 20.08 folds no other layer (its Optimize() list in Network.cpp:
not DepthwiseConvolution2d, not Pooling2d), and removes a Reshape only together with a second
one it reads (OptimizeConsecutiveReshapes), never one read by a convolution. 23.08's
FoldPadIntoLayer2d checks the value, the N/C pads and adds the padding, and 23.08-format files
meet only 23.08: they get no guard.

It runs after every pass that drops identity Reshapes (remove_identities, merge_reshapes).
"""
from __future__ import annotations

from ..ir.descriptors import ReshapeDescriptor
from ..ir.graph import Graph
from ..ir.types import LayerType
from ..report import Report


def guard_pad_convs(graph: Graph, report: Report) -> int:
    if graph.target.at_least("23.08"):
        return 0
    n = 0
    for pad in [l for l in graph.layers if l.type == LayerType.Pad]:
        convs = [(c, i) for c, i in graph.consumers(pad.out()) if c.type == LayerType.Convolution2d]
        if not convs:
            continue
        info = pad.outputs[0]
        guard = graph.add(LayerType.Reshape, graph.unique_name(f"{pad.name}_guard"), [pad.out()],
                          ReshapeDescriptor(tuple(info.shape)), outputs=[info])
        for c, i in convs:
            graph.set_input(c, i, guard.out())
        n += 1
    if n:
        report.decomposition("a Pad read by a convolution (Arm NN 20.08 would fold it wrongly)",
                             "read through an identity Reshape, which 20.08's optimizer leaves")
    return n
