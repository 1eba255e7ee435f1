"""The IR graph: layers connected through ports, each output with a TensorInfo.

Frontends build a Graph with `add_input`, `add` and `add_output`; output
TensorInfos are inferred (armnn_import.ir.shapes) unless given. The order of
`layers` is the order the writer emits; `toposort()` makes it valid.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, NamedTuple, Sequence

from .kinds import LAYER_KINDS
from .shapes import infer_outputs
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


@dataclass(eq=False, slots=True)  # (slots: one per layer of networks of 100,000s)
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
    """Layers in emit order plus use-lists: for every output port, the (layer, input
    index) pairs that read it, kept up to date by the methods that connect layers.
    So consumers(port), replace_uses and remove cost what they touch, not the graph.

    A layer's `inputs` must be changed only through add, set_input, set_inputs,
    replace_uses and remove (verify() checks the use-lists against the inputs).
    `layers` is the emit order; removed layers leave it lazily (one compaction at
    the next read, however many were removed)."""

    def __init__(self, target=None):
        from ..target import get
        self.target = get(target)  # the Arm NN release whose format this network is written in
        self._list: list[Layer] = []
        self._live: set[Layer] = set()
        self._dropped: set[Layer] = set()  # removed, still in _list until the next read
        self._names: set[str] = set()
        self._uses: dict[Port, dict[tuple[Layer, int], None]] = {}  # insertion-ordered sets
        self._io: dict[LayerType, dict[Layer, None]] = {LayerType.Input: {}, LayerType.Output: {}}
        self.watch = None  # callable(layer) told of every layer whose connections change (passes.layout)
        # False while `layers` is known to be in topological order: add() keeps it so
        # (inputs come first); rewiring or a new order may break it (toposort() checks)
        self._unsorted = False

    @property
    def layers(self) -> list[Layer]:
        if self._dropped:
            dropped = self._dropped
            self._list = [l for l in self._list if l not in dropped]
            self._dropped = set()
        return self._list

    @layers.setter
    def layers(self, layers) -> None:
        """A new order of the graph's layers (toposort)."""
        self._list = list(layers)
        self._dropped = set()
        self._unsorted = True

    def __contains__(self, layer) -> bool:
        return layer in self._live

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
        if type.__class__ is not LayerType:  # (the enum's call is slow; nearly every caller passes one)
            type = LayerType(type)
        kind = LAYER_KINDS[type]
        if desc is None and kind.descriptor is not None:
            desc = kind.descriptor()
        if name in self._names or not name:
            name = self.unique_name(name)
        layer = Layer(type, name, list(inputs), [], desc,
                      {k: v for k, v in tensors.items() if v is not None} if tensors else {})
        if outputs is None:
            outputs = infer_outputs(layer)
            if quant is not None:
                outputs = [o if o.dtype != DataType.QuantisedAsymm8 else
                           TensorInfo(o.shape, o.dtype, quant[0], quant[1]) for o in outputs]
        layer.outputs = list(outputs)
        return self.attach(layer)

    def attach(self, layer: Layer) -> Layer:
        """Append a built Layer (its inputs already set) to the graph (the reader's way in)."""
        self._names.add(layer.name)
        live = self._live
        if not self._unsorted:
            for p in layer.inputs:
                if p[0] not in live:
                    self._unsorted = True  # reads a layer that comes later, or none of this graph
                    break
        self._list.append(layer)
        live.add(layer)
        io = self._io.get(layer.type)
        if io is not None:
            io[layer] = None
        self._link(layer)
        if self.watch is not None:
            self.watch(layer)
        return layer

    def add_input(self, name: str, info: TensorInfo) -> Port:
        bid = len(self._io[LayerType.Input])
        layer = self.add(LayerType.Input, name, outputs=[info])
        layer.binding_id = bid
        return layer.out()

    def add_output(self, name: str, port: Port) -> Layer:
        bid = len(self._io[LayerType.Output])
        layer = self.add(LayerType.Output, name, [port], outputs=[])
        layer.binding_id = bid
        return layer

    # -- queries ------------------------------------------------------------
    @property
    def input_layers(self) -> list[Layer]:
        return sorted(self._ordered(self._io[LayerType.Input]), key=lambda l: l.binding_id)

    @property
    def output_layers(self) -> list[Layer]:
        return sorted(self._ordered(self._io[LayerType.Output]), key=lambda l: l.binding_id)

    def _ordered(self, layers) -> list[Layer]:
        # Distinct binding ids (any valid graph) sort the same from any order; equal ones
        # (a broken graph, which verify() reports) keep their emit order, as a scan gives.
        ids = [l.binding_id for l in layers]
        if len(set(ids)) == len(ids):
            return list(layers)
        return [l for l in self.layers if l in layers]

    def consumers(self, of: "Port | Layer | None" = None):
        """consumers(port): [(layer, input index)] reading that output, in the order they
        were connected. consumers(layer): the same over all of the layer's outputs.
        consumers(): {id(layer): [(consumer, input index)]} for every layer, in emit
        order (a whole-graph scan, as before the use-lists)."""
        if isinstance(of, Port):
            return list(self._uses.get(of, ()))
        if isinstance(of, Layer):
            return [u for slot in range(len(of.outputs)) for u in self._uses.get(Port(of, slot), ())]
        users: dict[int, list[tuple[Layer, int]]] = {id(l): [] for l in self.layers}
        for l in self.layers:
            for i, p in enumerate(l.inputs):
                users.setdefault(id(p.layer), []).append((l, i))
        return users

    def num_consumers(self, layer: Layer) -> int:
        return sum(len(self._uses.get(Port(layer, s), ())) for s in range(len(layer.outputs)))

    def layer_by_name(self, name: str) -> Layer:
        for l in self.layers:
            if l.name == name:
                return l
        raise KeyError(name)

    # -- editing (for passes) -----------------------------------------------
    def _link(self, layer: Layer) -> None:
        uses, watched = self._uses, self.watch is not None
        for i, p in enumerate(layer.inputs):
            d = uses.get(p)
            if d is None:
                uses[p] = {(layer, i): None}
            else:
                d[(layer, i)] = None
            if watched:
                self._notify(p.layer)

    def _unlink(self, layer: Layer) -> None:
        uses = self._uses
        for i, p in enumerate(layer.inputs):
            d = uses.get(p)
            if d is not None:
                d.pop((layer, i), None)
                if not d:
                    del uses[p]
            if self.watch is not None:
                self._notify(p.layer)

    def _notify(self, producer: Layer) -> None:
        """Tell the watcher of a producer whose consumers changed: the producer and
        every layer that reads it (their source's consumer count changed)."""
        watch, uses = self.watch, self._uses
        watch(producer)
        for slot in range(len(producer.outputs)):  # ((layer, slot) finds the Port key: a Port is that tuple)
            for u, _ in uses.get((producer, slot), ()):  # (a watcher only records: the dict stays as it is)
                watch(u)

    def set_inputs(self, layer: Layer, inputs: Sequence[Port]) -> None:
        """Replace all of `layer`'s inputs."""
        live = layer in self._live
        self._unsorted = True
        if live:
            self._unlink(layer)
        layer.inputs = list(inputs)
        if live:
            self._link(layer)
            if self.watch is not None:
                self.watch(layer)

    def set_input(self, layer: Layer, index: int, port: Port) -> None:
        """Connect input `index` of `layer` to `port`."""
        old = layer.inputs[index]
        layer.inputs[index] = port
        self._unsorted = True
        if layer not in self._live:
            return
        d = self._uses.get(old)
        if d is not None:
            d.pop((layer, index), None)
            if not d:
                del self._uses[old]
        self._uses.setdefault(port, {})[(layer, index)] = None
        if self.watch is not None:
            self._notify(old.layer)
            self._notify(port.layer)
            self.watch(layer)

    def replace_uses(self, old: Port, new: Port) -> None:
        """Every input reading `old` reads `new` instead."""
        old, new = Port(*old), Port(*new)
        if old == new:
            return
        users = self._uses.pop(old, None)
        if not users:
            return
        self._unsorted = True
        dest = self._uses.setdefault(new, {})
        for (l, i) in users:
            l.inputs[i] = new
            dest[(l, i)] = None
        if self.watch is not None:
            self._notify(old.layer)
            self._notify(new.layer)

    def remove(self, layers: Iterable[Layer]) -> None:
        """Drop layers from the graph. Their own inputs are disconnected; layers that
        still read them keep those inputs (verify() reports them) until rewired."""
        for l in layers:
            if l not in self._live:
                continue
            self._live.discard(l)
            self._dropped.add(l)
            self._names.discard(l.name)
            if l.type in self._io:
                self._io[l.type].pop(l, None)
            self._unlink(l)

    def rename(self, layer: Layer, name: str) -> None:
        """Give `layer` a new name (which must be free: see unique_name)."""
        self._names.discard(layer.name)
        self._names.add(name)
        layer.name = name

    def use_problems(self) -> list[str]:
        """Differences between the use-lists and the layers' inputs (an input changed
        without the graph's methods); empty when they agree."""
        uses, n = self._uses, 0
        for l in self.layers:  # every input listed under its port, and nothing else listed
            for i, p in enumerate(l.inputs):
                n += 1
                d = uses.get(p)
                if d is None or (l, i) not in d:
                    break
            else:
                continue
            break
        else:
            if n == sum(len(d) for d in uses.values()):
                return []
        want: dict[Port, set] = {}
        for l in self.layers:
            for i, p in enumerate(l.inputs):
                want.setdefault(Port(*p), set()).add((l, i))
        have = {p: set(d) for p, d in self._uses.items() if d}
        problems = []
        for p in sorted(want.keys() | have.keys(), key=lambda p: (p.layer.name, p.slot)):
            for l, i in sorted(want.get(p, set()) ^ have.get(p, set()), key=lambda u: (u[0].name, u[1])):
                problems.append(f"layer {l.name!r} input {i} and the graph's use-list of {p.layer.name!r}:"
                                f"{p.slot} disagree (an input changed without Graph.set_input)")
        return problems

    def toposort(self) -> None:
        """Stable topological order: a layer keeps its relative position
        unless an input comes later. Raises GraphError on a cycle."""
        if not self._unsorted:
            return  # nothing rewired since the last sort: the sort would keep the order
        from .order import topological_order
        order = topological_order(self.layers)
        if order is not None:
            self.layers = order
        self._unsorted = False

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
