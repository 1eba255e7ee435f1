"""Operators without a converter but with an ONNX function body (Attention,
RMSNormalization, SoftmaxCrossEntropyLoss, ...) are replaced by that body, so
that its nodes are folded or lowered one by one."""
from __future__ import annotations

import onnx
from onnx import AttributeProto, FunctionProto, NodeProto, helper

MAX_ROUNDS = 8  # function bodies may use other function operators


def function_body(node: NodeProto, opset: int, input_types: list) -> FunctionProto | None:
    """The node's function body for this opset, or None."""
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, "")
    except Exception:  # noqa: BLE001 - unknown operator
        return None
    static = [v for v in schema.function_opset_versions if v <= opset]
    dependent = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
    try:
        if dependent and (not static or max(dependent) >= max(static)):
            data = schema.get_context_dependent_function_with_opset_version(
                max(dependent), node.SerializeToString(), [t.SerializeToString() for t in input_types])
        elif static:
            data = schema.get_function_with_opset_version(max(static))
        else:
            return None
    except Exception:  # noqa: BLE001 - the body builder rejects this node
        return None
    fp = FunctionProto()
    fp.ParseFromString(data)
    return fp if fp.node else None


def body_opset(fp: FunctionProto, default: int) -> int:
    for o in fp.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return default


def inline(node: NodeProto, fp: FunctionProto, prefix: str) -> list[NodeProto]:
    """The body's nodes with the function's inputs/outputs renamed to the node's,
    internal names prefixed, and attribute references resolved (defaults included)."""
    names = {}
    for i, n in enumerate(fp.input):
        names[n] = node.input[i] if i < len(node.input) else ""
    for i, n in enumerate(fp.output):
        if i < len(node.output) and node.output[i]:
            names[n] = node.output[i]
    attrs = {a.name: a for a in fp.attribute_proto}  # defaults
    attrs.update({a.name: a for a in node.attribute})

    def rename(n):
        return names.get(n, prefix + n if n else "")

    out = []
    for k, inner in enumerate(fp.node):
        new = NodeProto()
        new.CopyFrom(inner)
        new.name = f"{node.name or node.op_type}/{inner.name or inner.op_type + '_' + str(k)}"
        del new.input[:]
        del new.output[:]
        new.input.extend(rename(n) for n in inner.input)
        new.output.extend(rename(n) for n in inner.output)
        del new.attribute[:]
        for a in inner.attribute:
            if a.ref_attr_name:
                if a.ref_attr_name in attrs:
                    b = AttributeProto()
                    b.CopyFrom(attrs[a.ref_attr_name])
                    b.name = a.name
                    new.attribute.append(b)
            elif a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
                return []  # control flow inside a function body: leave the node as it is
            else:
                new.attribute.append(a)
        out.append(new)
    return out


def type_proto(elem_type: int, shape):
    return helper.make_tensor_type_proto(elem_type, None if shape is None else list(shape))
