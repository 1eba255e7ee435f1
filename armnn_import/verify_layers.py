"""`verify --per-layer`: each source node's output against the .armnn tensor that
holds it, to name the first layer that diverges.

The conversion report maps each source node to its layers and to the Port holding
its output (report.nodes[i]["outputs"]). Nodes whose output is one tensor form a
fused group (report.record): a QDQ Conv computes straight into the quantization of
the QuantizeLinear after it, which (with its DequantizeLinear) becomes an identity.
The Conv's own source output is the float value before that quantization (and the
Relu or Clip the quantizer folded into it), a different quantity: the group is
compared once, at its last node, in levels of the quantized tensor. Every other
source node without a counterpart is counted under its reason (VerifyResult.skipped).
"""
from __future__ import annotations

import numpy as np

from .ir.graph import Port
from .ir.types import LayerType

FOLDED = "folded to constants (no run-time tensor)"
FUSED = "fused into the node after them (compared at the group's last node)"
NOT_RECORDED = "not in the conversion report's node map"
REMOVED = "whose .armnn tensor a pass removed"
NO_VALUE = "whose value the source runtime does not give"
SHAPES = "whose shape differs from the .armnn tensor's"


def _port(rec: dict, live: dict, recs: dict):
    """The Port holding a node's (first) output in the written network, or None."""
    outs = rec.get("outputs") or []
    if outs and outs[0]:
        name, slot = outs[0].rsplit(":", 1)
        if name in live:
            return Port(live[name], int(slot))
    # a pass removed that layer (e.g. a Permute back to the model's layout): the last
    # layer of the node, or of the nodes fused into it, still in the file
    for r in [rec] + [recs[n] for n in reversed(rec.get("fused", [])) if n in recs]:
        layer = next((live[x] for x in reversed(r["layers"]) if x in live), None)
        if layer is not None:
            return Port(layer, 0)
    return None


def _live(graph) -> dict:
    live = {l.name: l for l in graph.layers if l.outputs and l.type != LayerType.Input}
    live.update({l.name: l for l in graph.input_layers})
    return live


def probed_ports(graph, nodes: list[dict]) -> list:
    """The Ports per_layer compares, for a run on the Arm NN runtime (non-Input layers)."""
    live, recs = _live(graph), {n["node"]: n for n in nodes}
    ports = {_port(r, live, recs) for r in nodes if not r.get("fused_into")}
    return [p for p in ports if p is not None and p.layer.type != LayerType.Input]


def runtime_values(run, graph, ports: list, feed: list) -> dict:
    """Port -> value on the Arm NN runtime: `run(bytes)` of the network with `ports` as extra
    outputs (removed again), its own outputs, and its inputs (`feed`, in binding-id order)."""
    from .serialize import write
    outs = list(graph.output_layers)
    added = [graph.add_output(f"verify_probe_{k}", p) for k, p in enumerate(ports)]
    try:
        got = run(write(graph))
    finally:
        graph.remove(added)
    values = {l.inputs[0]: g.reshape(l.inputs[0].info.shape) for l, g in zip(outs, got)}
    values.update({p: g.reshape(p.layer.outputs[p.slot].shape) for p, g in zip(ports, got[len(outs):])})
    values.update({l.out(): np.asarray(f) for l, f in zip(graph.input_layers, feed)})
    return values


def per_layer(result, src, arrays, graph, values: dict, nodes: list[dict], tol, folded=()) -> None:
    """Fill result.layers, .skipped, .uncompared and .first_divergence (see the module)."""
    from .verify_compare import compare, inverse, reshapings
    inter = src.intermediates(arrays)
    live = _live(graph)
    recs = {n["node"]: n for n in nodes}
    folded = set(folded)
    skipped: dict[str, list[str]] = {}
    comps = {}
    for node in src.nodes:
        rec = recs.get(node.name)
        reason = None
        if rec is None:
            reason = FOLDED if node.name in folded else NOT_RECORDED
        elif rec.get("fused_into"):
            reason = FUSED
        else:
            port = _port(rec, live, recs) if "outputs" in rec or node.n_outputs == 1 else None
            if port is None or port not in values:
                reason = REMOVED
            elif node.output not in inter:
                reason = NO_VALUE
            else:
                ref, quant = inter[node.output]
                got = values[port]
                ways = reshapings(got.shape, np.shape(ref))
                if not ways:
                    reason = SHAPES
                else:  # `ways` maps .armnn -> source here; compare() wants source -> .armnn
                    info = port.layer.outputs[port.slot]
                    c = compare(port.layer.name, ref, quant, got, info, tol, [inverse(w) for w in ways])
                    c.node, c.op, c.layer_type = node.name, node.op, port.layer.type.name
                    c.fused = list(rec.get("fused", []))
                    comps[node.name] = c
        if reason is not None:
            skipped.setdefault(reason, []).append(node.name)
    result.layers = [comps[n.name] for n in src.nodes if n.name in comps]
    result.uncompared = len(src.nodes) - len(comps)
    result.skipped = skipped
    by_name = {n.name: n for n in src.nodes}
    for node in src.nodes:
        c = comps.get(node.name)
        if c is None or c.ok:
            continue
        after = _next_compared(node, by_name, comps)
        if after and all(comps[n].ok for n in after):
            # the error is gone one step later: a pass rewrote this layer together with the
            # next (e.g. a BatchNormalization's scale folded into the convolution's weights)
            continue
        result.first_divergence = c
        break


def _next_compared(node, by_name: dict, comps: dict) -> set[str]:
    """The nearest compared nodes downstream of `node`."""
    found, seen, stack = set(), set(), list(node.consumers)
    while stack:
        n = stack.pop()
        if n in seen or n not in by_name:
            continue
        seen.add(n)
        if n in comps:
            found.add(n)
        else:
            stack.extend(by_name[n].consumers)
    return found
