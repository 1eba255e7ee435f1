"""What is inside a network: a per-layer description and totals, as a dict
(for JSON and the API) and as a text table (`armnn-import inspect`)."""
from __future__ import annotations

from .errors import printable
from .ir.graph import Graph
from .ir.types import LayerType, TensorInfo
from .report import io_summary

_NAME_WIDTH = 40


def _tensor(info: TensorInfo) -> dict:
    return {"shape": list(info.shape), "dtype": info.dtype.name,
            "quantization": {"scale": info.scale, "offset": info.offset} if info.dtype.is_quantized else None}


def describe(graph: Graph, file_size: int | None = None) -> dict:
    """Layers (index, type, name, inputs, output tensor, parameter count),
    totals, and the network's inputs and outputs. Every layer type of the
    schema has at most one output; an Output layer shows the tensor it
    receives, i.e. the network output."""
    pos = {id(l): i for i, l in enumerate(graph.layers)}
    layers = []
    for i, l in enumerate(graph.layers):
        info = l.outputs[0] if l.outputs else (l.inputs[0].info if l.type == LayerType.Output and l.inputs else None)
        layers.append({
            "index": i, "type": l.type.name, "name": l.name,
            "inputs": [[pos.get(id(p.layer)), p.slot] for p in l.inputs],
            "output": _tensor(info) if info is not None else None,
            "params": l.param_count(),
        })
    by_type: dict[str, int] = {}
    for l in graph.layers:
        by_type[l.type.name] = by_type.get(l.type.name, 0) + 1
    inputs, outputs = io_summary(graph)
    from .target import RUNS_ON
    return {
        "target": graph.target.release,
        "runs_on": RUNS_ON[graph.target.release],
        "layers": layers,
        "totals": {"layers": len(layers),
                   "by_type": dict(sorted(by_type.items(), key=lambda kv: (-kv[1], kv[0]))),
                   "parameters": sum(l["params"] for l in layers),
                   "file_size": file_size},
        "inputs": inputs,
        "outputs": outputs,
    }


def _shape(shape) -> str:
    return "x".join(str(d) for d in shape) or "scalar"


def _quant(q) -> str:
    return f"({q['scale']:.6g}, {q['offset']})" if q else ""


def _size(n: int) -> str:
    for unit, k in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= k:
            return f"{n:,} bytes ({n / k:.1f} {unit})"
    return f"{n:,} bytes"


def _cut(name: str) -> str:
    name = printable(name)  # layer names come from the model: no raw control characters on the terminal
    return name if len(name) <= _NAME_WIDTH else name[:_NAME_WIDTH - 3] + "..."


def format_table(desc: dict) -> str:
    """The describe() dict as aligned text: one row per layer, then totals."""
    header = ("#", "type", "name", "output", "dtype", "quant (scale, offset)", "params")
    rows = []
    for l in desc["layers"]:
        out = l["output"]
        rows.append((str(l["index"]), l["type"], _cut(l["name"]),
                     _shape(out["shape"]) if out else "-", out["dtype"] if out else "-",
                     _quant(out["quantization"]) if out else "", f"{l['params']:,}" if l["params"] else ""))
    widths = [max(len(r[k]) for r in rows + [header]) for k in range(len(header))]
    right = {0, 6}  # numbers are right-aligned

    def line(r):
        return "  ".join(c.rjust(w) if k in right else c.ljust(w) for k, (c, w) in enumerate(zip(r, widths))).rstrip()

    lines = [line(header), line(tuple("-" * w for w in widths))] + [line(r) for r in rows]
    t = desc["totals"]
    lines += ["", f"format:     Arm NN {desc['target']} format (runs on {desc['runs_on']})",
              f"layers:     {t['layers']} (" + ", ".join(f"{k} {v}" for k, v in t["by_type"].items()) + ")",
              f"parameters: {t['parameters']:,}"]
    if t.get("file_size") is not None:
        lines.append(f"file size:  {_size(t['file_size'])}")
    for title, items in (("inputs", desc["inputs"]), ("outputs", desc["outputs"])):
        lines.append(f"{title}:")
        for io in items:
            q = io.get("quantization")
            lines.append(f"  [{io['binding_id']}] {printable(io['name'])}: {_shape(io['shape'])} {io['dtype']}"
                         + (f" quant {_quant(q)}" if q else ""))
        if not items:
            lines.append("  (none)")
    return "\n".join(lines)
