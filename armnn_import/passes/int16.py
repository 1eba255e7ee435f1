"""Float layers between QSymmS16 roundings run on the int16 tensors themselves.

A 16x8 network (int16 activations) arrives as float32 layers, each result put back on its int16
grid by Quantize (QSymmS16) + Dequantize. Arm NN's CpuRef computes a QSymmS16 Addition,
Multiplication, Activation or BatchNormalization as decode -> the float32 function -> encode
(RefElementwiseWorkload, RefActivationWorkload, BatchNormImpl over Decoders.hpp / Encoders.hpp, in
20.08 and 23.08), which is exactly Dequantize -> the float layer -> Quantize: such a layer may read
the int16 tensors and write the rounded one, and the Quantize after it goes. Layers that only
move values (Reshape, Splitter, StridedSlice, ...) keep the grid they read.

Which layers change is a greatest fixpoint: every candidate, less those with an input that is
not int16, less the movers with a reader that stays float, until none drops out. So the pass
only ever removes layers: a mover is changed only when all its readers read int16, and a
computing layer only removes its Quantize (the Dequantizes it read die with their last reader).
FullyConnected and convolutions stay float: CpuRef's QSymmS16 decoder has one scale, and their
int8 weights have one per channel.
"""
from __future__ import annotations

from collections import deque

from ..ir.graph import Graph, Layer, Port
from ..ir.types import ActivationFunction as AF
from ..ir.types import DataType, LayerType, TensorInfo
from ..report import Report
from .cleanup import fold_constants, remove_dead_layers

S16 = DataType.QSymmS16
# computing layers whose QSymmS16 reference workload is decode -> float32 -> encode
COMPUTING = frozenset({LayerType.Addition, LayerType.Subtraction, LayerType.Multiplication,
                       LayerType.Maximum, LayerType.Minimum, LayerType.Activation,
                       LayerType.BatchNormalization})
# RefLayerSupport::IsActivationSupported of 20.08 and 23.08 (the same list; Elu is not in the IR)
FUNCTIONS = frozenset({AF.Abs, AF.BoundedReLu, AF.HardSwish, AF.LeakyReLu, AF.Linear, AF.ReLu,
                       AF.Sigmoid, AF.SoftReLu, AF.Sqrt, AF.Square, AF.TanH})
# one input, values moved or selected, never computed (QSymmS16 in their IsSupported of both)
MOVERS = frozenset({LayerType.Reshape, LayerType.Splitter, LayerType.StridedSlice,
                    LayerType.Permute, LayerType.Transpose})


def _grid_source(p: Port) -> Port | None:
    """The QSymmS16 port a Float32 port p is the Dequantize of."""
    l = p.layer
    if l.type == LayerType.Dequantize and l.inputs[0].info.dtype == S16 and not l.inputs[0].info.scales:
        return l.inputs[0]
    return None


def _rounding(graph: Graph, layer: Layer) -> list[Layer] | None:
    """[movers..., Quantize]: the single-reader path from a computing layer's output to the
    QSymmS16 Quantize that rounds it, or None."""
    path, l = [], layer
    while True:
        readers = graph.consumers(l.out())
        if len(readers) != 1 or len(l.outputs) != 1:
            return None
        l = readers[0][0]
        if l.type == LayerType.Quantize:
            info = l.outputs[0]
            return path + [l] if info.dtype == S16 and not info.scales else None
        if l.type not in MOVERS or len(l.outputs) != 1 or l.type == LayerType.Splitter:
            return None
        path.append(l)


def _candidate(graph: Graph, l: Layer) -> bool:
    if any(p.info.dtype != DataType.Float32 for p in l.inputs) or \
            any(o.dtype != DataType.Float32 for o in l.outputs):
        return False
    if l.type in MOVERS:
        return len(l.inputs) == 1
    if l.type not in COMPUTING or (l.type == LayerType.Activation and l.desc.function not in FUNCTIONS):
        return False
    return _rounding(graph, l) is not None


def int16_layers(graph: Graph, report: Report) -> int:
    if not graph.target.has(S16):
        return 0
    S = {l for l in graph.layers if _candidate(graph, l)}
    n = _change(graph, S, report) if S else 0
    # the int16 constants no layer reads as int16 become float32 Constants again
    fold_constants(graph, report, keep_int16=False, only=LayerType.Dequantize)
    return n


def _change(graph: Graph, S: set, report: Report) -> int:
    def fits(l: Layer) -> bool:
        if not all(_grid_source(p) is not None or (p.layer in S and p.layer.type in MOVERS) for p in l.inputs):
            return False
        return l.type not in MOVERS or all(r in S for k in range(len(l.outputs))
                                           for r, _ in graph.consumers(l.out(k)))

    work = deque(S)
    while work:
        l = work.popleft()
        if l not in S or fits(l):
            continue
        S.discard(l)  # its readers may lose an int16 input, its movers a reader
        work.extend(r for k in range(len(l.outputs)) for r, _ in graph.consumers(l.out(k)) if r in S)
        work.extend(p.layer for p in l.inputs if p.layer in S)
    if not S:
        return 0
    graph.toposort()
    for l in list(graph.layers):
        if l not in S:
            continue
        sources = [_grid_source(p) or p for p in l.inputs]
        graph.set_inputs(l, sources)
        if l.type in MOVERS:  # the grid it reads
            src = sources[0].info
            l.outputs = [TensorInfo(o.shape, S16, src.scale, 0) for o in l.outputs]
            continue
        *movers, q = _rounding(graph, l)
        grid = q.outputs[0]
        for m in [l] + movers:
            m.outputs = [TensorInfo(m.outputs[0].shape, S16, grid.scale, 0)]
        graph.replace_uses(q.out(), (movers[-1] if movers else l).out())
        graph.remove([q])
    report.decomposition("16x8 mode", "layers between int16 roundings computed on the QSymmS16 tensors "
                         "(CpuRef decodes, computes in float32 and rounds once, as Dequantize + float + Quantize)")
    remove_dead_layers(graph, report)
    return len(S)
