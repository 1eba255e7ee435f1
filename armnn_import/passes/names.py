"""Short layer names, for the releases whose workloads rebuild their name on every inference
(target.NAMES_COST_FROM). Input and Output layers keep theirs: they are the binding names."""
from __future__ import annotations

from ..ir.graph import Graph
from ..ir.kinds import LayerType
from ..report import Report

LAYER_NAMES = ("auto", "source", "short")
_IO = (LayerType.Input, LayerType.Output)


def check_policy(policy: str) -> None:
    if policy not in LAYER_NAMES:
        from ..errors import ConversionError
        raise ConversionError(f"layer_names must be one of {', '.join(LAYER_NAMES)}, not {policy!r}")


def wants_short_names(policy: str, target) -> bool:
    from ..target import NAMES_COST_FROM
    return policy == "short" or (policy == "auto" and target.at_least(NAMES_COST_FROM))


def short_names(graph: Graph, report: Report | None = None) -> int:
    """Every other layer named by its position in the emit order ("12"), after the passes, so
    the names are dense and deterministic; the report's layer names follow. Returns how many
    layers were renamed."""
    layers = graph.layers
    taken = {l.name for l in layers if l.type in _IO}
    mapping: dict[str, str] = {}
    for i, layer in enumerate(layers):
        if layer.type in _IO:
            continue
        new = str(i)
        while new in taken:  # an input or output named like a number
            new += "_"
        taken.add(new)
        mapping[layer.name] = new
    for layer in layers:  # two steps: a new name may still be another layer's old one
        if layer.name in mapping:
            graph.rename(layer, "\0" + mapping[layer.name])
    for layer in layers:
        if layer.name.startswith("\0"):
            graph.rename(layer, layer.name[1:])
    if report is not None:
        report.rename_layers(mapping)
    return len(mapping)
