"""ONNX nodes with decoded attributes, and graph helpers."""
from __future__ import annotations

import functools
import heapq

import numpy as np
import onnx
from onnx import AttributeProto, helper, numpy_helper

from armnn_import.errors import LoadError
from armnn_import.limits import check_shape

DEFAULT_DOMAINS = ("", "ai.onnx")
PASS_THROUGH = ("Identity", "Dropout")
# operators whose value depends on their input's static shape only: folded on any tensor
SHAPE_OPS = ("Shape", "Size", "EyeLike")


# attribute types read straight from their field (the others go through get_attribute_value)
_PLAIN = {AttributeProto.INT: "i", AttributeProto.FLOAT: "f", AttributeProto.INTS: "ints",
          AttributeProto.FLOATS: "floats"}


class Node:
    """One ONNX node with its attributes decoded (strings as str)."""
    __slots__ = ("proto", "index", "opset", "op", "domain", "name", "inputs", "outputs", "attrs", "implicit")

    def __init__(self, proto, index: int, opset: int):
        self.proto, self.index, self.opset = proto, index, opset
        self.op, self.domain = proto.op_type, proto.domain
        self.name = proto.name or f"{proto.op_type}_{index}"
        self.inputs, self.outputs = list(proto.input), list(proto.output)
        self.attrs = {}
        attributes = proto.attribute
        if not attributes:  # (most nodes: nothing to decode, no subgraph)
            self.implicit = []
            return
        want = _attribute_types(self.op, opset) if self.domain in ("", "ai.onnx") else {}
        subgraphs = False
        for a in attributes:
            name, atype, ref = a.name, a.type, a.ref_attr_name
            t = want.get(name)
            if t is not None and atype != t and not ref:
                raise LoadError(f"node {self.name!r}: attribute {name!r} is {_type_name(atype)}, but "
                                f"{self.op} takes {_type_name(t)} (the model is invalid)", code="bad-model")
            field = None if ref else _PLAIN.get(atype)
            if field is not None:  # what get_attribute_value gives for these, read directly
                v = getattr(a, field)
                if atype >= AttributeProto.FLOATS:
                    v = list(v)
            else:
                try:
                    v = helper.get_attribute_value(a)
                except Exception as e:  # noqa: BLE001 - malformed attribute
                    raise LoadError(f"node {self.name!r}: attribute {name!r} cannot be read: {e}") from None
                if isinstance(v, bytes):
                    v = v.decode("utf-8", "replace")
                elif isinstance(v, list) and v and isinstance(v[0], bytes):
                    v = [x.decode("utf-8", "replace") for x in v]
            self.attrs[name] = v
            subgraphs = subgraphs or a.HasField("g") or len(a.graphs) > 0
        self.implicit = _implicit_inputs(proto) if subgraphs else []

    def __repr__(self):
        return f"<{self.op} {self.name!r}>"


@functools.lru_cache(maxsize=None)
def _attribute_types(op: str, opset: int) -> dict:
    """Attribute name -> AttributeProto type, from the operator's ONNX schema."""
    try:
        schema = onnx.defs.get_schema(op, opset, "")
    except Exception:  # noqa: BLE001 - unknown operator: reported elsewhere
        return {}
    return {name: int(spec.type) for name, spec in schema.attributes.items()}


def _type_name(t: int) -> str:
    try:
        return AttributeProto.AttributeType.Name(t)
    except ValueError:
        return f"type {t}"


def _implicit_inputs(proto) -> list[str]:
    """Outer-scope names read inside the node's subgraphs."""
    graphs = [a.g for a in proto.attribute if a.HasField("g")] + [g for a in proto.attribute for g in a.graphs]
    used, defined = [], set()
    while graphs:
        g = graphs.pop()
        defined.update(i.name for i in g.input)
        defined.update(i.name for i in g.initializer)
        for n in g.node:
            defined.update(n.output)
            used.extend(n.input)
            for a in n.attribute:
                if a.HasField("g"):
                    graphs.append(a.g)
                graphs.extend(a.graphs)
        used.extend(o.name for o in g.output)
    return [u for u in dict.fromkeys(used) if u and u not in defined]


def sparse_to_dense(sp) -> np.ndarray:
    check_shape(sp.dims, f"sparse tensor {sp.values.name!r}")
    values = numpy_helper.to_array(sp.values)
    idx = numpy_helper.to_array(sp.indices).astype(np.int64)
    dense = np.zeros(tuple(sp.dims), values.dtype)
    if idx.ndim == 1:
        dense.reshape(-1)[idx] = values
    else:
        dense[tuple(idx.T)] = values
    return dense


def toposort(graph, known, nodes: list[Node]) -> list[Node]:
    """`nodes` in an order where each comes after the producers of what it reads (among the
    ready ones, the lowest index first: the file's order when it is one); LoadError for a
    tensor produced twice, an input nobody provides, or a cycle. `known`: initializers."""
    available = {i.name for i in graph.input} | set(known) | {""}
    producer: dict[str, int] = {}
    for n in nodes:
        for o in n.outputs:
            if o and (o in producer or o in available):
                raise LoadError(f"tensor {o!r} is produced twice (node {n.name!r})")
            if o:
                producer[o] = n.index
    if _in_order(nodes, producer, available):
        return list(nodes)  # what the heap below gives for an order that is already valid
    users: dict[int, list[int]] = {n.index: [] for n in nodes}
    missing = {}
    for n in nodes:
        deps = set()
        for name in n.inputs + n.implicit:
            if name in producer:
                deps.add(producer[name])
            elif name not in available:
                raise LoadError(f"node {n.name!r} reads {name!r}, which no node, input or initializer provides")
        missing[n.index] = len(deps)
        for d in deps:
            users[d].append(n.index)
    heap = [i for i, k in missing.items() if k == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        i = heapq.heappop(heap)
        order.append(nodes[i])
        for u in users[i]:
            missing[u] -= 1
            if missing[u] == 0:
                heapq.heappush(heap, u)
    if len(order) != len(nodes):
        raise LoadError("the graph has a cycle")
    return order


def _in_order(nodes: list[Node], producer: dict, available: set) -> bool:
    """True if every node reads only what is available or produced by an earlier node, and
    the indices are 0, 1, 2, ... (then toposort's lowest-index-first order is `nodes` itself).
    False sends toposort the long way, which also reports a missing input or a cycle."""
    done = available.copy()  # (names produced by the nodes seen so far, plus the inputs)
    for position, n in enumerate(nodes):
        if n.index != position:
            return False
        for name in (n.inputs + n.implicit if n.implicit else n.inputs):
            if name not in done:
                return False
        done.update(n.outputs)
    return True
