"""ONNX shape inference and function expansion (onnx's C++ code: convert.py runs analyse()
in a child process, see isolate.py)."""
from __future__ import annotations

import itertools

import numpy as np
import onnx
from onnx import helper

from armnn_import.ir.graph import Port

from .nodes import DEFAULT_DOMAINS, PASS_THROUGH, SHAPE_OPS, Node
from .ops import REGISTRY


def analyse(conv, nodes: list[Node]):
    """Shape inference and function expansion: onnx C++ code, run in a child process
    (see isolate.py). Returns (shapes, element types, expanded nodes or None)."""
    _infer_shapes(conv)
    expanded = _expand(conv, nodes)
    changed = len(expanded) != len(nodes) or any(a is not b for a, b in zip(expanded, nodes))
    return (conv.inferred, conv.inferred_types,
            [(n.proto.SerializeToString(), n.opset) for n in expanded] if changed else None)


def _expand(conv, nodes: list[Node]) -> list[Node]:
    """Replace operators that have no converter, but an ONNX function body, by the body."""
    from .expand import MAX_ROUNDS, body_opset, function_body, inline

    candidate: dict[tuple, bool] = {}  # (domain, op, opset) -> may have a body to inline
    for rnd in range(MAX_ROUNDS):
        out, changed = [], False
        for node in nodes:
            body = None
            key = (node.domain, node.op, node.opset)
            maybe = candidate.get(key)
            if maybe is None:  # (decided once per operator: a graph repeats a few of them)
                maybe = candidate[key] = (node.domain in DEFAULT_DOMAINS and REGISTRY.refusal(node.op) is None
                                          and node.op not in PASS_THROUGH + SHAPE_OPS + ("Constant",)
                                          and REGISTRY.lookup(node.op, node.opset) is None)
            if maybe and not all(not i or isinstance(conv.values.get(i), np.ndarray) for i in node.inputs):
                fp = function_body(node.proto, node.opset, [_type_proto(conv, i) for i in node.inputs])
                body = fp and inline(node.proto, fp, f"{node.name}__f{rnd}_")
            if body:
                opset = body_opset(fp, node.opset)
                out.extend(Node(p, 0, opset) for p in body)
                changed = True
            else:
                out.append(node)
        nodes = out
        if not changed:
            break
    return nodes


def _type_proto(conv, name: str):
    from onnx import TypeProto

    from .expand import type_proto

    v = conv.values.get(name)
    if isinstance(v, np.ndarray):
        try:
            return type_proto(helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
        except Exception:  # noqa: BLE001 - strings and other odd constants
            return TypeProto()
    if isinstance(v, Port):  # a graph input: its declared type (the first of its name, as before)
        if not hasattr(conv, "_input_types"):
            conv._input_types = {}
            for i in conv.model.graph.input:
                conv._input_types.setdefault(i.name, i.type)
        vi_type = conv._input_types.get(name)
        return vi_type if vi_type is not None else TypeProto()
    if name in conv.inferred_types:
        return type_proto(conv.inferred_types[name], conv.inferred.get(name))
    return TypeProto()


def _infer_shapes(conv) -> None:
    try:
        inferred = onnx.shape_inference.infer_shapes(_without_weights(conv.model, conv.mapped), strict_mode=False,
                                                     data_prop=True)
    except Exception:  # noqa: BLE001 - shape inference is advisory
        return
    g = inferred.graph
    types, shapes = conv.inferred_types, conv.inferred
    # A graph repeats a few shapes over and over: each is decoded once, found by its bytes
    decoded: dict[bytes, tuple] = {}
    for vi in itertools.chain(g.value_info, g.output):  # (one per tensor of the model)
        t = vi.type
        if not t.HasField("tensor_type"):
            continue
        tt, name = t.tensor_type, vi.name
        types[name] = tt.elem_type
        if tt.HasField("shape"):
            shape = tt.shape
            key = shape.SerializeToString()
            dims = decoded.get(key)
            if dims is None:
                dims = decoded[key] = tuple([int(d.dim_value) if d.HasField("dim_value") else None
                                             for d in shape.dim])
            shapes[name] = dims


def _typed_input(field, name: str, elem_type: int, dims, made: dict) -> None:
    """Append to `field` what onnx.helper.make_tensor_value_info(name, elem_type, list(dims)) makes,
    copied from one built per (type, dims) in `made` (there is one such input per weight)."""
    key = (elem_type, tuple(dims))
    template = made.get(key)
    if template is None:
        template = made[key] = onnx.ValueInfoProto()
        tt = template.type.tensor_type
        tt.elem_type = elem_type
        shape = tt.shape
        shape.dim.extend([])  # (an empty shape is still a shape, as make_tensor_type_proto makes it)
        for d in key[1]:
            shape.dim.add().dim_value = d
    vi = field.add()
    vi.CopyFrom(template)
    vi.name = name


def _without_weights(model: onnx.ModelProto, mapped=(), keep_bytes: int = 4096) -> onnx.ModelProto:
    """A copy of `model` for shape inference: large initializers become typed
    graph inputs, so their data is neither serialized nor copied (shape
    inference only needs small constants, such as Reshape shapes, by value)."""
    src = model.graph
    m = onnx.ModelProto(ir_version=model.ir_version, producer_name=model.producer_name)
    m.opset_import.extend(model.opset_import)
    m.functions.extend(model.functions)
    g = m.graph  # (filled in place: the nodes are copied once)
    g.name = src.name
    g.node.extend(src.node)
    g.input.extend(src.input)
    g.output.extend(src.output)
    g.value_info.extend(src.value_info)
    declared, made = {i.name for i in src.input}, {}
    for t in src.initializer:
        if t.ByteSize() <= keep_bytes and t.name not in mapped:
            g.initializer.append(t)
        elif t.name not in declared:
            _typed_input(g.input, t.name, t.data_type, t.dims, made)
    return m
