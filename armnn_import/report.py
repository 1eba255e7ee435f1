"""The conversion report: what became what, and every decision worth knowing."""
from __future__ import annotations

import copy
from collections import Counter
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import Callable

from .errors import printable


@dataclass
class Report:
    source: str = ""
    format: str = ""
    target: str = "19.02"  # the Arm NN release whose format was written
    # {node, op, layers: [...], outputs: ["layer:slot" or None per output], fused_into / fused}
    nodes: list[dict] = field(default_factory=list)
    decompositions: dict[str, str] = field(default_factory=dict)  # op -> how it was lowered
    folded: list[str] = field(default_factory=list)          # source nodes folded to constants
    quantization: list[dict] = field(default_factory=list)   # {layer, decision, error, ...}
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # phase -> seconds
    inputs: list[dict] = field(default_factory=list)
    # inputs fixed to a value (--input-value): name -> {value, shape, dtype}; constants, not inputs
    input_values: dict[str, dict] = field(default_factory=dict)
    outputs: list[dict] = field(default_factory=list)
    passes: dict[str, int] = field(default_factory=dict)     # pass -> layers changed
    # --fp16: the range check's inputs, bound and per-layer max |value| (fp16_range.RangeCheck)
    fp16_range: dict = field(default_factory=dict)
    # "source" (the model's names) or "short" (numbers, for a runtime that pays for names:
    # passes/names.py); with "short", nodes[...]["layers"] and "outputs" give the new names
    layer_names: str = "source"
    float16_network: bool = False  # the frontend asks for a Float16 network (a float16 model)
    float32_edges: list = field(default_factory=list)  # ... and these Float32 inputs/outputs (Casts, 23.08)
    # ... and Float32 parts inside, between these Cast layers (23.08): (the starts, the ends)
    float32_islands: tuple = field(default_factory=lambda: ([], []))
    # why the conversion was refused: {op, node, code (errors.REASON_CODES), reason, hint} per problem
    problems: list[dict] = field(default_factory=list)
    # Called with each phase name as the phase starts (the CLI's progress bar); not reported.
    listener: Callable[[str], None] | None = field(default=None, repr=False, compare=False)
    _groups: dict = field(default_factory=dict, repr=False, compare=False)  # output -> node entries

    def warn(self, msg: str) -> None:
        if msg not in self.warnings:
            self.warnings.append(msg)

    def record(self, node: str, op: str, layers, outputs=None) -> None:
        """A source node and the layers made for it. `outputs`: the Ports (or None) holding its
        outputs. A node whose first output is a tensor an earlier node already computed (a
        converter that returns its input, e.g. a QuantizeLinear absorbed into the layer before
        it, which computes straight into its quantization) is fused with that node: the earlier
        members get "fused_into" (this node, the group's last), this one "fused" (the earlier)."""
        entry = {"node": node, "op": op, "layers": [l.name for l in layers]}
        if outputs is not None:
            entry["outputs"] = [f"{p.layer.name}:{p.slot}" if p is not None else None for p in outputs]
            key = entry["outputs"][0] if entry["outputs"] else None
            group = self._groups.setdefault(key, []) if key is not None else []
            if group:
                for earlier in group:
                    earlier["fused_into"] = node
                entry["fused"] = [e["node"] for e in group]
            group.append(entry)
        self.nodes.append(entry)

    def rename_layers(self, mapping: dict[str, str]) -> None:
        """Layer names recorded so far, renamed by `mapping` (old -> new; others kept)."""
        def slot(ref):  # "layer:slot" (a layer's name may hold ':' itself)
            if ref is None or ref in mapping:
                return mapping.get(ref, ref)
            name, _, k = ref.rpartition(":")
            return f"{mapping[name]}:{k}" if name in mapping else ref
        for entry in self.nodes:
            entry["layers"] = [mapping.get(n, n) for n in entry["layers"]]
            if "outputs" in entry:
                entry["outputs"] = [slot(r) for r in entry["outputs"]]
        for q in self.quantization:
            if isinstance(q.get("layer"), str):
                q["layer"] = mapping.get(q["layer"], q["layer"])
        ranges = {id(r): r for r in [*self.fp16_range.get("layers", ()), self.fp16_range.get("over")] if r}
        for r in ranges.values():  # ("over" is one of the layers)
            r["layer"] = slot(r["layer"])
        self.layer_names = "short"

    def decomposition(self, op: str, how: str) -> None:
        self.decompositions.setdefault(op, how)

    @contextmanager
    def phase(self, name: str):
        if self.listener is not None:
            self.listener(name)
        t = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - t

    def to_dict(self) -> dict:
        """Everything reported, as plain JSON-ready data."""
        return {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self)
                if f.name not in ("listener", "_groups")}


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


PHASES = ("load", "frontend", "passes", "write", "verify")  # the top-level phases, in order


def _io_line(d: dict) -> str:
    dims = "x".join(str(n) for n in d["shape"]) or "scalar"
    q = d.get("quantization")
    return (f"{printable(d['name'])} {dims} {d['dtype']}" + (f" ({d['layout']})" if d.get("layout") else "")
            + (f" q=({q['scale']:.6g},{q['offset']})" if q else ""))


def _value_text(value) -> str:
    flat = value if isinstance(value, list) else [value]
    while flat and isinstance(flat[0], list):
        flat = [x for row in flat for x in row]
    text = ",".join(str(x) for x in flat[:8])
    return text + (f",... ({len(flat)} values)" if len(flat) > 8 else "")


def fp16_range_line(r: dict) -> str:
    """One line on the --fp16 range check: the largest value, where, and on what inputs."""
    if r.get("skipped"):
        return f"fp16 range: not checked ({r['skipped']})"
    top = max(r["layers"], key=lambda d: d["max_abs"], default=None)
    where = f"{top['max_abs']:.4g} at layer {top['layer']!r}" if top else "no float tensors"
    line = f"fp16 range: largest |value| {where} (bound {r['bound']:g}), on {r['inputs']}"
    return line + ("; give real inputs with --inputs for a reliable check" if r.get("random") else "")


def format_summary(report: Report, layers: int | None = None) -> str:
    """A few lines for people: what was converted into what, the decisions
    worth a look, and where the time went."""
    head = f"{printable(report.source or 'model')} ({report.format}): {len(report.nodes)} nodes"
    if report.target != "19.02":
        head += f", Arm NN {report.target} format"
    lines = [head + (f" -> {layers} layers" if layers is not None else "")]
    if report.problems:
        codes = Counter(p["code"] for p in report.problems)
        lines.append(f"  refused: {len(report.problems)} problem{'s' if len(report.problems) != 1 else ''} ("
                     + ", ".join(f"{code} {n}" for code, n in sorted(codes.items())) + ")")
    if report.decompositions:
        lines.append("  decomposed: " + ", ".join(sorted(report.decompositions)))
    if report.folded:
        lines.append(f"  folded to constants: {len(report.folded)}")
    if report.quantization:
        errors = [q["worst_error"] for q in report.quantization if q.get("worst_error") is not None]
        worst = f" (worst weight error {max(errors):.2%} of a channel's range)" if errors else ""
        lines.append(f"  quantization decisions: {len(report.quantization)}{worst}")
    if report.fp16_range:
        lines.append("  " + fp16_range_line(report.fp16_range))
    if report.warnings:
        lines.append(f"  warnings: {len(report.warnings)}")
    for title, items in (("inputs", report.inputs), ("outputs", report.outputs)):
        if items:
            lines.append(f"  {title}: " + "; ".join(_io_line(d) for d in items))
    if report.input_values:
        lines.append("  fixed inputs: " + "; ".join(f"{printable(k)}={_value_text(v['value'])}"
                                                   for k, v in report.input_values.items()))
    times = [f"{p} {report.timings[p]:.2f} s" for p in PHASES if p in report.timings]
    if times:
        lines.append("  time: " + ", ".join(times))
    return "\n".join(lines)
