"""verify(graph): the invariants the writer and Arm NN 20.08 rely on.

Checked before writing and after every pass, so a bug is caught where it is
made instead of as a crash or wrong numbers inside Arm NN. The per-layer
rules follow the Validate methods in Arm NN 20.08's
src/backends/backendsCommon/WorkloadData.cpp. Raises GraphError with one
line per problem, each naming the layer.
"""
from __future__ import annotations

import dataclasses
import operator
from collections import Counter

from ..errors import GraphError
from .types import LayerType
from .verify_layer import beyond_target, check_layer

MAX_REPORTED = 20


def verify(graph) -> None:
    """Raise GraphError listing what is wrong with `graph`; return None if nothing is."""
    problems = _structure(graph)
    if not problems:
        problems = _layer_problems(graph)
        problems += _bindings(graph)
    if not problems and hasattr(graph, "use_problems"):
        problems = graph.use_problems()  # last: an input changed by hand shows as what it breaks first
    if problems:
        more = len(problems) - MAX_REPORTED
        lines = problems[:MAX_REPORTED] + ([f"... and {more} more problems"] if more > 0 else [])
        raise GraphError("\n".join(lines))


def _layer_problems(graph) -> list[str]:
    """Every layer's checks (verify_layer.py). The checks read only values (the layer's type,
    descriptor, constants' TensorInfos, its inputs' and outputs' TensorInfos; names only in
    messages), so a layer whose values equal those of one that passed in this call passes
    too: its checks are not run again (the repeated blocks of a deep network). A layer with
    a problem, or values that cannot be compared, is checked on its own."""
    target, passed, problems = graph.target, set(), []
    for layer in graph.layers:
        key = _signature(layer)
        try:
            if key is not None and key in passed:
                continue
        except TypeError:  # (an unhashable descriptor value: a broken graph, checked below)
            key = None
        found = beyond_target(layer, target) or check_layer(layer)
        if found:
            problems += [f"layer {layer.name!r} ({layer.type.name}): {p}" for p in found]
        elif key is not None:
            passed.add(key)
    return problems


def _signature(layer):
    """Everything a layer's checks read, as a hashable key (None: a descriptor that is no
    dataclass). Descriptor values come with their types (True == 1 == 1.0 as keys)."""
    desc = layer.desc
    if desc is None:
        d = None
    else:
        get = _GETTERS.get(type(desc))
        if get is None:
            get = _GETTERS[type(desc)] = _getter(type(desc))
        if get is False:
            return None
        v = get(desc)
        d = (type(desc), v, tuple(map(type, v)))
    tensors = layer.tensors
    t = tuple([(k, ct.info) for k, ct in tensors.items()]) if tensors else ()
    return (layer.type, d, tuple([l.outputs[s] for l, s in layer.inputs]), tuple(layer.outputs), t)


_GETTERS: dict = {}


def _getter(cls):
    """desc -> the tuple of its field values (False for a class that is no dataclass)."""
    if not dataclasses.is_dataclass(cls):
        return False
    names = [f.name for f in dataclasses.fields(cls)]
    if not names:
        return lambda desc: ()
    if len(names) == 1:
        name = names[0]
        return lambda desc: (getattr(desc, name),)
    return operator.attrgetter(*names)


# -- graph structure ---------------------------------------------------------

def _structure(graph) -> list[str]:
    layers = graph.layers
    names = [l.name for l in layers]
    problems = [] if len(set(names)) == len(names) else \
        [f"layer name {name!r} is used by {n} layers" for name, n in Counter(names).items() if n > 1]
    pos = {l: i for i, l in enumerate(layers)}  # (a Layer hashes by identity: no id() calls)
    late = []  # (layer, position, the first input defined after it, its position)
    for i, layer in enumerate(layers):
        first_late = None
        for j, p in enumerate(layer.inputs):
            src = p.layer
            k = pos.get(src)
            if k is None:
                problems.append(f"layer {layer.name!r} input {j} comes from layer {src.name!r}, "
                                "which is not in the graph")
            elif not 0 <= p.slot < len(src.outputs):
                problems.append(f"layer {layer.name!r} input {j} uses output {p.slot} of {src.name!r}, "
                                f"which has {len(src.outputs)} outputs")
            elif k > i and first_late is None:
                first_late = (layer, i, src, k)
        if first_late is not None:
            late.append(first_late)
    if problems:
        return problems
    for layer, i, src, k in late:
        problems.append(f"layer {layer.name!r} (position {i}) uses {src.name!r} "
                        f"(position {k}) before it is defined; the layers are "
                        "not in topological order (graph.toposort())")
    # A cycle is reported instead of the order; layers in topological order (no problem
    # above) have none, so the search runs only when the order is broken.
    cycle = _find_cycle(graph) if problems else None
    if cycle:
        return ["cycle: " + " -> ".join(repr(l.name) for l in cycle)]
    io = {LayerType.Input: [], LayerType.Output: []}
    bound = []  # layers other than Input and Output with a binding id
    for l in layers:
        group = io.get(l.type)
        if group is not None:
            group.append(l)
        elif l.binding_id is not None:
            bound.append(l)
    for t in (LayerType.Input, LayerType.Output):
        ids = [l.binding_id for l in io[t]]
        if any(not isinstance(b, int) for b in ids) or sorted(ids) != list(range(len(ids))):
            problems.append(f"{t.name} binding ids are {ids}; expected 0..{len(ids) - 1}, each once "
                            f"(layers {[l.name for l in io[t]]})")
    for l in bound:
        problems.append(f"layer {l.name!r} ({l.type.name}) has a binding id but is not an Input or Output")
    return problems


def _bindings(graph) -> list[str]:
    """Arm NN 20.08 cannot load a network without outputs, nor bind an input
    that feeds nothing ("No input layer is associated with id N")."""
    problems = [] if any(l.type == LayerType.Output for l in graph.layers) else ["the network has no Output layer"]
    used = {p[0] for l in graph.layers for p in l.inputs}
    return problems + [f"Input layer {l.name!r} feeds no layer (passes.cleanup.drop_unused_inputs removes it)"
                       for l in graph.layers if l.type == LayerType.Input and l not in used]


def _find_cycle(graph):
    """One cycle as a list of layers (first == last), or None. Iterative DFS."""
    state: dict[int, int] = {}  # 1 = on the stack, 2 = done
    for root in graph.layers:
        if id(root) in state:
            continue
        path, stack = [], [(root, 0)]
        while stack:
            layer, i = stack.pop()
            if i == 0:
                state[id(layer)] = 1
                path.append(layer)
            if i < len(layer.inputs):
                stack.append((layer, i + 1))
                src = layer.inputs[i].layer
                if state.get(id(src)) == 1:
                    start = next(k for k, l in enumerate(path) if l is src)
                    return list(reversed(path[start:] + [src]))
                if id(src) not in state:
                    stack.append((src, 0))
            else:
                state[id(layer)] = 2
                path.pop()
    return None
