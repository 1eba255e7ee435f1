"""23.08 format: a batch-major UnidirectionalSequenceLstm without its two Permutes.

lowering/lstm.sequence writes the layer time-major between Permute(1, 0, 2)s, because
RefUnidirectionalSequenceLstmWorkload (23.08) turns a batch-major input time-major in place,
in the input tensor's own buffer, as float32 words. That is harmless where the layer is the
only reader of that tensor and the tensor is Float32, and nothing reads the layer's final
states (CpuRef never writes them): then the Permutes go and the layer runs batch-major
(timeMajor false), as Arm NN's own TfLite parser writes it.
"""
from __future__ import annotations

import dataclasses

from ..ir.graph import Graph
from ..ir.shapes import infer_outputs
from ..ir.types import DataType, LayerType
from ..report import Report

_SWAP = (1, 0, 2)  # (its own inverse: the Permute and the Transpose sense agree)


def _swap(layer) -> bool:
    return layer.type == LayerType.Permute and tuple(layer.desc.dim_mappings) == _SWAP


def batch_major_lstm(graph: Graph, report: Report) -> int:
    n = 0
    for lstm in [l for l in graph.layers if l.type == LayerType.UnidirectionalSequenceLstm]:
        before = lstm.inputs[0].layer
        if not lstm.desc.time_major or not _swap(before):
            continue
        x = before.inputs[0]
        users = graph.consumers(lstm.out(2))
        if x.info.dtype != DataType.Float32 or graph.consumers(before.out()) != [(lstm, 0)] \
                or len(graph.consumers(x)) != 1 or len(users) != 1 or not _swap(users[0][0]) \
                or graph.consumers(lstm.out(0)) or graph.consumers(lstm.out(1)):
            continue
        after = users[0][0]
        lstm.desc = dataclasses.replace(lstm.desc, time_major=False)
        graph.set_input(lstm, 0, x)
        lstm.outputs = infer_outputs(lstm)
        graph.replace_uses(after.out(), lstm.out(2))
        graph.remove([before, after])
        n += 1
    return n
