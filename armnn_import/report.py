"""The conversion report: what became what, and every decision worth knowing."""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field


@dataclass
class Report:
    source: str = ""
    format: str = ""
    nodes: list[dict] = field(default_factory=list)          # {node, op, layers: [...]}
    decompositions: dict[str, str] = field(default_factory=dict)  # op -> how it was lowered
    folded: list[str] = field(default_factory=list)          # source nodes folded to constants
    quantization: list[dict] = field(default_factory=list)   # {layer, decision, error, ...}
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # phase -> seconds
    inputs: list[dict] = field(default_factory=list)
    outputs: list[dict] = field(default_factory=list)
    passes: dict[str, int] = field(default_factory=dict)     # pass -> layers changed

    def warn(self, msg: str) -> None:
        if msg not in self.warnings:
            self.warnings.append(msg)

    def record(self, node: str, op: str, layers) -> None:
        self.nodes.append({"node": node, "op": op, "layers": [l.name for l in layers]})

    def decomposition(self, op: str, how: str) -> None:
        self.decompositions.setdefault(op, how)

    @contextmanager
    def phase(self, name: str):
        t = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - t

    def to_dict(self) -> dict:
        return asdict(self)


def io_summary(graph) -> tuple[list[dict], list[dict]]:
    """Names, binding ids, shapes, dtypes and quantization of the network's inputs and outputs."""
    def one(layer, info):
        d = {"name": layer.name, "binding_id": layer.binding_id, "shape": list(info.shape),
             "dtype": info.dtype.name}
        if info.dtype.is_quantized:
            d["quantization"] = {"scale": info.scale, "offset": info.offset}
        return d
    return ([one(l, l.outputs[0]) for l in graph.input_layers],
            [one(l, l.inputs[0].info) for l in graph.output_layers])
