"""The graph's stable topological sort (Graph.toposort)."""
from __future__ import annotations

from ..errors import GraphError


def topological_order(layers: list) -> list | None:
    """`layers` in a stable topological order: a layer keeps its relative position unless an
    input comes later (a DFS over inputs, from each layer in turn); None when `layers` is in
    that order already (the DFS would return it unchanged: every layer's inputs come before
    it). Raises GraphError on a cycle or an input from a layer not in `layers`."""
    pos = {l: i for i, l in enumerate(layers)}  # (a Layer hashes by identity: no id() calls)
    if _in_order(layers, pos):
        return None
    done: set = set()
    order: list = []
    visiting: set = set()
    for root in layers:
        if root in done:
            continue
        for src, _ in root.inputs:  # every input placed already (nearly every layer): the DFS
            if src not in done:  # below would only append it
                break
        else:
            done.add(root)
            order.append(root)
            continue
        stack = [(root, 0)]
        while stack:
            layer, i = stack.pop()
            if layer in done:
                continue
            if i == 0:
                if layer in visiting:
                    raise GraphError(f"cycle through layer {layer.name!r}")
                visiting.add(layer)
            if i < len(layer.inputs):
                stack.append((layer, i + 1))
                src = layer.inputs[i].layer
                if src not in pos:
                    raise GraphError(f"layer {layer.name!r} input {i} comes from a layer not in the graph")
                if src not in done:
                    if src in visiting:
                        raise GraphError(f"cycle through layer {layer.name!r}")
                    stack.append((src, 0))
            else:
                visiting.discard(layer)
                done.add(layer)
                order.append(layer)
    return order


def _in_order(layers, pos) -> bool:
    """Whether every layer's inputs are layers of `layers` placed before it."""
    get = pos.get
    for i, l in enumerate(layers):
        for src, _ in l.inputs:
            k = get(src)
            if k is None or k >= i:
                return False
    return True
