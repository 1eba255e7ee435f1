"""Running a whole graph (or one layer) with the numpy layer functions."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ..errors import ExecutionError
from ..ir.graph import Graph, Layer, Port
from ..ir.types import LayerType, TensorInfo
from .common import GATHER_WRAPS, LAYER_FUNCTIONS
from .numeric import HALF_23


def evaluate(layer: Layer, input_arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run one layer on raw input arrays (typed like the input TensorInfos);
    returns one raw array per output slot."""
    if layer.type in (LayerType.Input, LayerType.Output):
        raise ExecutionError(f"{layer.name}: {layer.type.name} layers are not evaluated on their own")
    infos = [p.info for p in layer.inputs]
    if len(input_arrays) != len(infos):
        raise ExecutionError(f"{layer.name}: {layer.type.name} takes {len(infos)} inputs, "
                             f"got {len(input_arrays)}")
    arrays = [_check(np.asarray(a), info, f"{layer.name} input {i}")
              for i, (a, info) in enumerate(zip(input_arrays, infos))]
    outs = LAYER_FUNCTIONS[layer.type](layer, arrays, infos)
    for o, info in zip(outs, layer.outputs):
        if o.shape != info.shape or o.dtype != info.dtype.np_dtype:
            raise ExecutionError(f"{layer.name}: computed {o.shape} {o.dtype}, "
                                 f"the layer says {info}")  # a bug in a layer function
    return outs


def run_all(graph: Graph, inputs) -> dict[Port, np.ndarray]:
    """Every output slot's value, keyed by Port (inputs: list in Input binding-id
    order, or dict by Input layer name)."""
    at_23 = graph.target.at_least("23.08")
    token, half = GATHER_WRAPS.set(at_23), HALF_23.set(at_23)
    try:
        return _run_all(graph, inputs)
    finally:
        GATHER_WRAPS.reset(token)
        HALF_23.reset(half)


def _run_all(graph: Graph, inputs) -> dict[Port, np.ndarray]:
    values: dict[Port, np.ndarray] = {}
    for layer, arr in zip(graph.input_layers, _input_list(graph, inputs)):
        values[layer.out()] = arr
    for layer in _order(graph):
        if layer.type in (LayerType.Input, LayerType.Output):
            continue
        try:
            args = [values[p] for p in layer.inputs]
        except KeyError as e:
            raise ExecutionError(f"{layer.name}: an input comes from a layer not in the graph") from e
        for slot, out in enumerate(evaluate(layer, args)):
            values[Port(layer, slot)] = out
    return values


def run(graph: Graph, inputs) -> list[np.ndarray]:
    """The graph's outputs in Output binding-id order."""
    values = run_all(graph, inputs)
    outs = []
    for layer in graph.output_layers:
        if len(layer.inputs) != 1:
            raise ExecutionError(f"output {layer.name!r} is not connected")
        outs.append(values[layer.inputs[0]])
    return outs


def _check(arr: np.ndarray, info: TensorInfo, what: str) -> np.ndarray:
    if arr.dtype != info.dtype.np_dtype:
        raise ExecutionError(f"{what}: expected {info.dtype.name} ({info.dtype.np_dtype}) data, "
                             f"got {arr.dtype}")
    if tuple(arr.shape) != info.shape:
        raise ExecutionError(f"{what}: expected shape {info.shape}, got {tuple(arr.shape)}")
    return arr


def _input_list(graph: Graph, inputs) -> list[np.ndarray]:
    layers = graph.input_layers
    if isinstance(inputs, Mapping):
        names = {l.name for l in layers}
        unknown = sorted(set(inputs) - names)
        missing = [l.name for l in layers if l.name not in inputs]
        if unknown or missing:
            raise ExecutionError(f"inputs: unknown {unknown}, missing {missing} "
                                 f"(the network's inputs are {[l.name for l in layers]})")
        inputs = [inputs[l.name] for l in layers]
    inputs = list(inputs)
    if len(inputs) != len(layers):
        raise ExecutionError(f"the network has {len(layers)} inputs, got {len(inputs)} arrays")
    return [_check(np.asarray(a), l.outputs[0], f"input {l.name!r}") for a, l in zip(inputs, layers)]


def _order(graph: Graph) -> list[Layer]:
    """Layers in an order where every input is computed first (graph untouched)."""
    members = {id(l) for l in graph.layers}
    done: set[int] = set()
    active: set[int] = set()   # expanded, waiting for its inputs
    order: list[Layer] = []
    for root in graph.layers:
        stack = [(root, False)]
        while stack:
            layer, expanded = stack.pop()
            if id(layer) in done:
                continue
            if expanded:
                active.discard(id(layer))
                done.add(id(layer))
                order.append(layer)
                continue
            if id(layer) in active:
                raise ExecutionError(f"cycle through layer {layer.name!r}")
            active.add(id(layer))
            stack.append((layer, True))
            for p in reversed(layer.inputs):
                if id(p.layer) not in members:
                    raise ExecutionError(f"{layer.name}: an input comes from a layer not in the graph")
                if id(p.layer) not in done:
                    stack.append((p.layer, False))
    return order
