"""float16 models: a model whose float inputs and outputs are float16 becomes a
Float16 network (as --fp16 writes one). The model is rewritten to float32 first,
which is exact (every float16 value is a float32 value), converted as usual, and
the whole network then stored and run as Float16 (passes.fp16.to_float16).

This format has no conversion layer, so the network cannot mix the two types:
a model with float32 inputs or outputs beside float16 ones is refused, and so is
a Cast to float32 of a run-time tensor (that part of the model would run in
Float16 too) unless --fp16 asks for everything in Float16."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from armnn_import.errors import Problem, UnsupportedModelError

F16, F32 = TensorProto.FLOAT16, TensorProto.FLOAT


def _elem(vi) -> int | None:
    return vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else None


def is_float16_model(model: onnx.ModelProto) -> bool:
    g = model.graph
    inits = {t.name for t in g.initializer}
    return any(_elem(vi) == F16 for vi in list(g.output) + [i for i in g.input if i.name not in inits])


def to_float32(model: onnx.ModelProto, mapped: dict, fp16_asked: bool) -> set[str]:
    """Rewrite a float16 model (in place) to float32. Returns the outputs of the Casts
    to float32 the model has (the Cast converter refuses them on run-time tensors
    unless `fp16_asked`). Raises UnsupportedModelError for float32 inputs/outputs."""
    g = model.graph
    inits = {t.name for t in g.initializer}
    edges = [("input", i) for i in g.input if i.name not in inits] + [("output", o) for o in g.output]
    mixed = [Problem(kind, vi.name, "is float32 while other inputs or outputs are float16; the Float16 "
                     "network this model becomes has no layer converting between the two",
                     "give every float input and output the same type", code="unsupported-type")
             for kind, vi in edges if _elem(vi) == F32]
    if mixed:
        raise UnsupportedModelError(mixed)
    casts: set[str] = set()
    _graph(g, mapped, casts)
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


NOTE = ("the model's inputs and outputs are float16: it is converted as float32 (exact) and the network "
        "stored and run as Float16, inputs and outputs included")
CAST_REFUSAL = ("a Cast to float32 inside a float16 model: the Float16 network of this format has no "
                "conversion layer, so this part would run in Float16 too")
CAST_HINT = "pass --fp16 to run the whole model in Float16 anyway, or convert the model to float32"
