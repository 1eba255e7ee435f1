"""The order of the layers in a file. Ours: the graph's (topological), but last layer first for
23.08 when that makes the network cheaper to run (file_order); the reader puts them back (forwards)."""
from __future__ import annotations

from ..ir.graph import Graph
from ..ir.types import LayerType

#: the layers whose weights Arm NN 23.08 reads from a file as Constant layers (file_order)
_WEIGHTS_AS_CONSTANTS = frozenset({LayerType.Convolution2d, LayerType.DepthwiseConvolution2d, LayerType.FullyConnected})


def file_order(graph: Graph) -> list:
    """The order the layers are written in: the graph's (topological), last layer first from
    23.08 on. Arm NN 23.08 turns the weights of a Convolution2d / DepthwiseConvolution2d /
    FullyConnected written inside the layer (constantTensorsAsInputs 0) into Constant layers,
    created in file order; its topological sort puts every Constant first, in that order, and
    CpuRef copies each one into its tensor at every inference. Last first, the copies end with the
    first layers' weights, which are then still in the cache when the network starts (cachegrind,
    a 2 MiB L2: efficientnet_mini and mobilenet_v2_035 10 % fewer L2 misses per inference than
    Arm NN 23.08's own files, mobilenet_v3_small 3 %; first first, 1.5 % more: benchmarks/README.md,
    "Lean networks: the same work"). The deserializer connects the layers after reading them all,
    so their order in the file is free; 20.08 reads the weights in place. With fewer than two
    such layers there is no order to choose and the file stays first first."""
    layers = graph.layers
    if graph.target.at_least("23.08") and sum(l.type in _WEIGHTS_AS_CONSTANTS and "weights" in l.tensors
                                              for l in layers) > 1:
        return layers[::-1]
    return layers


def forwards(entries: list) -> list:
    """The layers first first: our 23.08 files list them last first (file_order), every
    connection then comes from a layer further on; files in topological order stay as they are."""
    pos = {index: k for k, (index, _, _) in enumerate(entries)}
    conns = [(pos.get(src, -1), pos[index]) for index, _, cs in entries for src, _ in cs]
    return entries[::-1] if conns and all(s > c for s, c in conns) else entries
