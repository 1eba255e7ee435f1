"""float16 models: a model whose float inputs and outputs are float16 becomes a
Float16 network (as --fp16 writes one). The model is rewritten to float32 first,
which is exact (every float16 value is a float32 value), converted as usual, and
the whole network then stored and run as Float16 (passes.fp16.to_float16).

The 19.02 and 20.08 formats have no conversion layer, so the network cannot mix the
two types (from the 23.08 format on, every float32 part between a Cast to float32 and one to
float16 is Float32 between Cast layers: island_mark, passes.fp16.float32_islands): a model with float32 inputs or outputs beside float16 ones is refused, and
so is a Cast to float32 of a run-time tensor (that part of the model would run in
Float16 too) unless --fp16 asks for everything in Float16. From the 23.08 format on, a
float32 input read only by Casts to float16, and a float32 output that is a Cast to
float32 (onnxconverter-common's keep_io_types), are Cast layers at the network's edges
(float16_inside; passes.fp16.float32_edges)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from armnn_import.errors import Problem, UnsupportedModelError
from armnn_import.ir.graph import Graph
from armnn_import.ir.types import LayerType

F16, F32 = TensorProto.FLOAT16, TensorProto.FLOAT


def _elem(vi) -> int | None:
    return vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else None


def is_float16_model(model: onnx.ModelProto) -> bool:
    g = model.graph
    inits = {t.name for t in g.initializer}
    return any(_elem(vi) == F16 for vi in list(g.output) + [i for i in g.input if i.name not in inits])


def _cast_targets(g) -> dict[str, int]:
    """Each Cast node's output -> the element type it casts to."""
    return {n.output[0]: a.i for n in g.node if n.op_type == "Cast" for a in n.attribute if a.name == "to"}


def float16_inside(model: onnx.ModelProto) -> list[tuple[str, str]]:
    """The float32 edges, as ("input" | "output", name), of a float16 model with float32 inputs
    or outputs (onnxconverter-common's keep_io_types writes one), or []: every float32 input is
    read by Casts to float16 only, every float32 output is a Cast to float32 of a computed
    tensor, and the model has a float16 input or output or a float32 input cast to float16."""
    g = model.graph
    inits = {t.name for t in g.initializer}
    edges = [("input", i) for i in g.input if i.name not in inits] + [("output", o) for o in g.output]
    f32 = {vi.name: kind for kind, vi in edges if _elem(vi) == F32}
    ins = {n for n, kind in f32.items() if kind == "input"}
    to = _cast_targets(g)
    cast_in = {n.output[0]: n.input[0] for n in g.node if n.op_type == "Cast"}
    readers = [n for n in g.node if any(i in ins for i in n.input)]
    if not f32 or not all(n.op_type == "Cast" and to.get(n.output[0]) == F16 for n in readers) or \
            not all(to.get(o) == F32 and cast_in[o] not in ins for o, kind in f32.items() if kind == "output"):
        return []
    # (a float16 edge or a float32 input cast to float16 says it is a float16 model: float16
    # initializers cast to float32 may be a float32 model's storage)
    if not readers and not any(_elem(vi) == F16 for _, vi in edges):
        return []
    return [(kind, n) for n, kind in f32.items()]


# Operators a float16 model may keep in float32 between a Cast to float32 and Casts back to
# float16 (onnxconverter-common's default op_block_list has them): in Float16 the network gives
# the same numbers. CpuRef computes a Resize, Maximum or Minimum in float32 from Float16 inputs
# and rounds once; a float32 constant operand of Max/Min rounded to float16 first changes no
# result (rounding is monotone: max(x, c) rounded is max(x, round(c)) for a float16 x).
ISLAND_OPS = frozenset({"Resize", "Upsample", "Max", "Min"})
# (the layers they may be: a Max/Min of a constant is an Activation, its bound a float32 parameter)
ISLAND_LAYERS = frozenset({"Resize", "Maximum", "Minimum", "Activation", "Reshape", "Constant"})


def half_casts(model: onnx.ModelProto) -> set[str]:
    """The outputs of the main graph's Casts to float16 (the ends of its float32 parts)."""
    return {o for o, t in _cast_targets(model.graph).items() if t == F16}


def island_mark(ctx, v, name: str, end: bool):
    """A Cast layer (Float32 -> Float32 until passes.fp16.float32_islands types it) at the start
    or the end of a float32 part of a float16 model (the 23.08 format)."""
    y = ctx.g.add(LayerType.Cast, name, [v], outputs=[v.info]).out()
    ctx.report.float32_islands[1 if end else 0].append(name)
    return y


def exact_islands(model: onnx.ModelProto) -> tuple[set[str], set[str]]:
    """(the Cast-to-float32 outputs, the nodes) of every one-node float32 island of ISLAND_OPS:
    its run-time float inputs are Casts to float32, its outputs read by Casts to float16 only."""
    g = model.graph
    to = _cast_targets(g)
    readers: dict[str, list] = {}
    for n in g.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    outputs = {o.name for o in g.output}
    casts, nodes = set(), set()
    for k, n in enumerate(g.node):
        if n.op_type not in ISLAND_OPS or any(o in outputs for o in n.output):
            continue
        fed = [i for i in n.input if to.get(i) == F32]
        if not fed or not all(to.get(r.output[0]) == F16 for o in n.output for r in readers.get(o, [])) or \
                not all(len(readers[i]) == 1 for i in fed):
            continue
        casts.update(fed)
        nodes.add(n.name or f"{n.op_type}_{k}")  # (the node's name in the report: nodes.py Node)
    return casts, nodes


def to_float32(model: onnx.ModelProto, mapped: dict, fp16_asked: bool, float32_edges: bool = False) -> set[str]:
    """Rewrite a float16 model (in place) to float32. Returns the outputs of the Casts
    to float32 the model has (the Cast converter refuses them on run-time tensors
    unless `fp16_asked`). Raises UnsupportedModelError for float32 inputs/outputs, unless
    `float32_edges` (float16_inside: the network gets Cast layers at its edges)."""
    g = model.graph
    inits = {t.name for t in g.initializer}
    edges = [("input", i) for i in g.input if i.name not in inits] + [("output", o) for o in g.output]
    mixed = [Problem(kind, vi.name, "is float32 while other inputs or outputs are float16; the Float16 "
                     "network this model becomes has no layer converting between the two",
                     "give every float input and output the same type", code="unsupported-type")
             for kind, vi in edges if _elem(vi) == F32 and not float32_edges]
    if mixed:
        raise UnsupportedModelError(mixed)
    casts: set[str] = set()
    _graph(g, mapped, casts)
    casts -= {o.name for o in g.output}  # (float32_edges: the output Casts are the edge layers)
    return set() if fp16_asked else casts


def _graph(g, mapped: dict, casts: set) -> None:
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if _elem(vi) == F16:
            vi.type.tensor_type.elem_type = F32
    for i, t in enumerate(g.initializer):
        if t.data_type != F16:
            continue
        if t.name in mapped and not t.HasField("raw_data"):  # data left out of the proto (wire.py)
            mapped[t.name] = np.asarray(mapped[t.name], np.float32)
            t.data_type = F32
        else:
            g.initializer[i].CopyFrom(_tensor32(t))
    for sp in g.sparse_initializer:
        if sp.values.data_type == F16:
            sp.values.CopyFrom(_tensor32(sp.values))
    for node in g.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == F16:
                a.t.CopyFrom(_tensor32(a.t))
            elif a.type == onnx.AttributeProto.SPARSE_TENSOR and a.sparse_tensor.values.data_type == F16:
                a.sparse_tensor.values.CopyFrom(_tensor32(a.sparse_tensor.values))
            elif a.name in ("to", "dtype") and a.type == onnx.AttributeProto.INT and a.i == F16:
                a.i = F32
            elif node.op_type == "Cast" and a.name == "to" and a.i == F32:
                casts.update(o for o in node.output if o)
            elif a.type == onnx.AttributeProto.GRAPH:
                _graph(a.g, mapped, casts)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sub in a.graphs:
                    _graph(sub, mapped, casts)


def _tensor32(t) -> TensorProto:
    return numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name)


EDGES_NOTE = ("the model computes in float16 between float32 inputs and outputs: a Float16 network with "
              "Cast layers at its edges (Arm NN 23.08 saturates inputs beyond +-65504, where onnxruntime "
              "gives inf)")
NOTE = ("the model's inputs and outputs are float16: it is converted as float32 (exact) and the network "
        "stored and run as Float16, inputs and outputs included")
CAST_REFUSAL = ("a Cast to float32 inside a float16 model: the Float16 network of this format has no "
                "conversion layer, so this part would run in Float16 too")
CAST_HINT = ("convert with --target 23.08 (its Cast layers keep that part in Float32), pass --fp16 to run the whole "
             "model in Float16 anyway, or convert the model to float32")


def check_islands(graph, report, islands) -> None:
    """A float32 island of a float16 model runs in Float16 only as one of ISLAND_LAYERS (a Resize
    lowered otherwise, e.g. by an interpolation matrix, would round its weights to Float16)."""
    kinds = {layer.name: layer.type.name for layer in graph.layers}
    bad = [e["node"] for e in report.nodes if e["node"] in islands and
           any(kinds.get(n, "Constant") not in ISLAND_LAYERS for n in e["layers"])]
    if bad:
        ops = {e["node"]: e["op"] for e in report.nodes}
        why = ("kept in float32 inside a float16 model (Casts around it), it becomes other layers than one "
               "Resize, Maximum, Minimum or Activation, which would run in Float16 here")
        raise UnsupportedModelError([Problem(ops[n], n, why, CAST_HINT, code="inexpressible") for n in bad])


def float32_edges(model, mapped, options, report, edges) -> set[str]:
    """A float16 model with float32 inputs or outputs: a Float16 network with Cast layers at
    those edges (passes.fp16.float32_edges), in a format that has the Cast layer."""
    if not Graph(options.target).target.has(LayerType.Cast):
        raise UnsupportedModelError([Problem(kind, name, "is float32 while the model computes in float16: the "
                                             "Float16 network needs a Cast layer at this edge",
                                             "convert with --target 23.08 (Cast)", code="needs-target")
                                     for kind, name in edges])
    casts = to_float32(model, mapped, options.fp16, float32_edges=True)
    report.float16_network = True
    report.float32_edges = [name for _, name in edges]
    report.warn(EDGES_NOTE)
    return casts
