"""The IR graph: layers connected through ports, each output with a TensorInfo.

Frontends build a Graph with `add_input`, `add` and `add_output`; output
TensorInfos are inferred (armnn_import.ir.shapes) unless given. The order of
`layers` is the order the writer emits; `toposort()` makes it valid.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, NamedTuple, Sequence

from .descriptors import LAYER_KINDS
from .types import ConstTensor, DataType, LayerType, TensorInfo


class Port(NamedTuple):
    """Output slot `slot` of `layer`."""
    layer: "Layer"
    slot: int = 0

    @property
    def info(self) -> TensorInfo:
        return self.layer.outputs[self.slot]

    def __repr__(self):
        return f"Port({self.layer.name!r}:{self.slot})"


@dataclass(eq=False)
class Layer:
    type: LayerType
    name: str
    inputs: list[Port] = field(default_factory=list)
    outputs: list[TensorInfo] = field(default_factory=list)
    desc: object | None = None
    tensors: dict[str, ConstTensor] = field(default_factory=dict)
    binding_id: int | None = None  # Input and Output layers only

    def out(self, slot: int = 0) -> Port:
        return Port(self, slot)

    @property
    def kind(self):
        return LAYER_KINDS[self.type]

    def param_count(self) -> int:
        return sum(t.info.num_elements for t in self.tensors.values())

    def __repr__(self):
        return f"<{self.type.name} {self.name!r}>"


class Graph:
    def __init__(self, target=None):
        from ..target import get
        self.layers: list[Layer] = []
        self._names: set[str] = set()
        self.target = get(target)  # the Arm NN release whose format this network is written in

    # -- building -----------------------------------------------------------
    def unique_name(self, name: str) -> str:
        base, n = name or "layer", 1
        while name in self._names or not name:
            name = f"{base}_{n}"
            n += 1
        return name

    def add(self, type: LayerType, name: str, inputs: Sequence[Port] = (), desc=None, *,
            tensors: dict[str, ConstTensor] | None = None,
            outputs: Sequence[TensorInfo] | None = None,
            quant: tuple[float, int] | None = None) -> Layer:
        """Add a layer. Output infos are inferred unless `outputs` is given;
        `quant` sets (scale, offset) of a QuantisedAsymm8 output whose
        quantization is not implied by the inputs."""
        from .shapes import infer_outputs  # late: shapes imports graph types

        type = LayerType(type)
        kind = LAYER_KINDS[type]
        if desc is None and kind.descriptor is not None:
            desc = kind.descriptor()
        layer = Layer(type, self.unique_name(name), list(inputs), [], desc,
                      {k: v for k, v in (tensors or {}).items() if v is not None})
        if outputs is None:
            outputs = infer_outputs(layer)
            if quant is not None:
                outputs = [o if o.dtype != DataType.QuantisedAsymm8 else
                           TensorInfo(o.shape, o.dtype, quant[0], quant[1]) for o in outputs]
        layer.outputs = list(outputs)
        self._names.add(layer.name)
        self.layers.append(layer)
        return layer

    def add_input(self, name: str, info: TensorInfo) -> Port:
        bid = sum(1 for l in self.layers if l.type == LayerType.Input)
        layer = self.add(LayerType.Input, name, outputs=[info])
        layer.binding_id = bid
        return layer.out()

    def add_output(self, name: str, port: Port) -> Layer:
        bid = sum(1 for l in self.layers if l.type == LayerType.Output)
        layer = self.add(LayerType.Output, name, [port], outputs=[])
        layer.binding_id = bid
        return layer

    # -- queries ------------------------------------------------------------
    @property
    def input_layers(self) -> list[Layer]:
        return sorted((l for l in self.layers if l.type == LayerType.Input), key=lambda l: l.binding_id)

    @property
    def output_layers(self) -> list[Layer]:
        return sorted((l for l in self.layers if l.type == LayerType.Output), key=lambda l: l.binding_id)

    def consumers(self) -> dict[int, list[tuple[Layer, int]]]:
        """id(layer) -> [(consumer, input index)] over all of the layer's outputs."""
        users: dict[int, list[tuple[Layer, int]]] = {id(l): [] for l in self.layers}
        for l in self.layers:
            for i, p in enumerate(l.inputs):
                users.setdefault(id(p.layer), []).append((l, i))
        return users

    def layer_by_name(self, name: str) -> Layer:
        for l in self.layers:
            if l.name == name:
                return l
        raise KeyError(name)

    # -- editing (for passes) -----------------------------------------------
    def replace_uses(self, old: Port, new: Port) -> None:
        for l in self.layers:
            l.inputs = [new if (p.layer is old.layer and p.slot == old.slot) else p for p in l.inputs]

    def remove(self, layers: Iterable[Layer]) -> None:
        dead = {id(l) for l in layers}
        self.layers = [l for l in self.layers if id(l) not in dead]
        self._names = {l.name for l in self.layers}

    def toposort(self) -> None:
        """Stable topological order: a layer keeps its relative position
        unless an input comes later. Raises GraphError on a cycle."""
        from ..errors import GraphError

        pos = {id(l): i for i, l in enumerate(self.layers)}
        done: set[int] = set()
        order: list[Layer] = []
        visiting: set[int] = set()
        for root in self.layers:
            stack = [(root, 0)]
            while stack:
                layer, i = stack.pop()
                lid = id(layer)
                if lid in done:
                    continue
                if i == 0:
                    if lid in visiting:
                        raise GraphError(f"cycle through layer {layer.name!r}")
                    visiting.add(lid)
                if i < len(layer.inputs):
                    stack.append((layer, i + 1))
                    src = layer.inputs[i].layer
                    if id(src) not in pos:
                        raise GraphError(f"layer {layer.name!r} input {i} comes from a layer not in the graph")
                    if id(src) not in done:
                        if id(src) in visiting:
                            raise GraphError(f"cycle through layer {layer.name!r}")
                        stack.append((src, 0))
                else:
                    visiting.discard(lid)
                    done.add(lid)
                    order.append(layer)
        self.layers = order

    def summary(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for l in self.layers:
            counts[l.type.name] = counts.get(l.type.name, 0) + 1
        return counts

    def __len__(self):
        return len(self.layers)

    def __repr__(self):
        return f"<Graph {len(self.layers)} layers>"


def graph_differences(a: Graph, b: Graph) -> list[str]:
    """Structural differences between two graphs, layer by layer in order
    (empty when equal). Used by round-trip tests."""
    if len(a.layers) != len(b.layers):
        return [f"{len(a.layers)} layers vs {len(b.layers)}"]
    pa = {id(l): i for i, l in enumerate(a.layers)}
    pb = {id(l): i for i, l in enumerate(b.layers)}
    diffs = []
    for i, (x, y) in enumerate(zip(a.layers, b.layers)):
        for attr in ("type", "name", "outputs", "desc", "binding_id"):
            if getattr(x, attr) != getattr(y, attr):
                diffs.append(f"layer {i} {attr}: {getattr(x, attr)!r} != {getattr(y, attr)!r}")
        ix = [(pa[id(p.layer)], p.slot) for p in x.inputs]
        iy = [(pb[id(p.layer)], p.slot) for p in y.inputs]
        if ix != iy:
            diffs.append(f"layer {i} inputs: {ix} != {iy}")
        if x.tensors.keys() != y.tensors.keys() or any(x.tensors[k] != y.tensors[k] for k in x.tensors):
            diffs.append(f"layer {i} constant tensors differ")
    return diffs
