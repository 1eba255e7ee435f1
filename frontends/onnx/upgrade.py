"""Models of opsets 1 to 6 are upgraded to opset 7 (the oldest the converters
take) with onnx.version_converter before conversion.

Opset 7 is the target, not a newer one, so that as few adapters as possible
run: semantics that later opsets changed (Softmax's 2-D coercion, Upsample,
Slice, ...) are kept as the converters of opsets 7 and later read them.
Two opset-6 semantics the version converter gets wrong are rewritten first:
- a binary operator's legacy `broadcast=1, axis=k` (B aligned with A's axis k)
  becomes numpy broadcasting by an Unsqueeze of B's trailing axes (the converter
  unsqueezes the wrong axes, so that (3,) against (1, 3, H, W) would broadcast to
  (3, 3, H, W));
- PRelu's slope: before opset 7 a 1-D slope that does not broadcast numpy-style
  applies along the one axis of X of its size (what onnx.reference does); it gets
  an Unsqueeze to say so. A slope that fits no axis, or several, is refused.
The version converter and shape inference are onnx C++ code, run in a child
process (isolate.py); large weights are not sent there."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from armnn_import.errors import ConversionError

from .isolate import isolated

TARGET = 7
LEGACY_BROADCAST = ("Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less")
KEEP_BYTES = 4096  # initializers larger than this stay in the parent (the converter needs no values)


def default_opset(model: onnx.ModelProto) -> int | None:
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    return int(versions[0]) if versions else None


def upgrade_if_old(model: onnx.ModelProto, mapped: dict, report) -> onnx.ModelProto:
    """`model`, or its upgrade to opset 7 when it imports opsets 1 to 6 (raises
    ConversionError with the version converter's message when that fails)."""
    v = default_opset(model)
    if v is None or v >= TARGET or v < 1:
        return model
    light, kept = _without_large_initializers(model, mapped)
    result = isolated(_upgrade, light.SerializeToString(), timeout=300.0)
    if result is None:
        raise ConversionError(f"the model uses opset {v}, and onnx.version_converter crashed upgrading it "
                              f"to opset {TARGET}; upgrade it by hand or re-export it at a newer opset")
    if isinstance(result, str):
        raise ConversionError(f"the model uses opset {v}; upgrading it to opset {TARGET} with "
                              f"onnx.version_converter failed: {result}")
    data, notes = result
    up = onnx.ModelProto.FromString(data)
    inputs = [i for i in up.graph.input if i.name not in kept or i.name in {j.name for j in model.graph.input}]
    del up.graph.input[:]
    up.graph.input.extend(inputs)
    up.graph.initializer.extend(kept.values())
    report.warn(f"the model uses opset {v}: upgraded to opset {TARGET} with onnx.version_converter "
                "before converting")
    for n in notes:
        report.warn(n)
    return up


def _without_large_initializers(model, mapped):
    """A copy of `model` whose large (or memory-mapped) initializers are typed graph inputs,
    and those initializers by name (their data is not copied)."""
    src = model.graph
    g = onnx.GraphProto(name=src.name)
    g.node.extend(src.node)
    g.input.extend(src.input)
    g.output.extend(src.output)
    g.value_info.extend(src.value_info)
    g.sparse_initializer.extend(src.sparse_initializer)
    declared = {i.name for i in src.input}
    kept = {}
    for t in src.initializer:
        if t.name in mapped or t.ByteSize() > KEEP_BYTES:
            kept[t.name] = t
            if t.name not in declared:
                g.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
        else:
            g.initializer.append(t)
    light = onnx.ModelProto(ir_version=model.ir_version, producer_name=model.producer_name,
                            producer_version=model.producer_version, domain=model.domain,
                            model_version=model.model_version)
    light.opset_import.extend(model.opset_import)
    light.functions.extend(model.functions)
    light.graph.CopyFrom(g)
    return light, kept


def _upgrade(data: bytes):
    """In the child: the legacy rewrites, then the version converter. Returns
    (model bytes, notes) or an error message."""
    from onnx import version_converter
    m = onnx.ModelProto.FromString(data)
    g = m.graph
    declared = {i.name for i in g.input}
    added = []
    for t in g.initializer:  # IR < 4: the converter wants every initializer declared as an input
        if t.name not in declared:
            g.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
            added.append(t.name)
    try:
        inferred = onnx.shape_inference.infer_shapes(m, strict_mode=False)
    except Exception as e:  # noqa: BLE001
        return f"shape inference failed ({type(e).__name__}: {str(e)[:300]})"
    shapes = _shapes(inferred.graph, g)
    notes: list[str] = []
    try:
        _rewrite_legacy(g, shapes, notes)
    except ValueError as e:
        return str(e)
    for o in g.output:  # the converter wants every output typed with a shape
        if o.type.tensor_type.elem_type == 0 or not o.type.tensor_type.HasField("shape"):
            for vi in inferred.graph.output:
                if vi.name == o.name:
                    o.type.CopyFrom(vi.type)
    try:
        up = version_converter.convert_version(m, TARGET)
    except Exception as e:  # noqa: BLE001 - its message is the answer
        return f"{type(e).__name__}: {str(e).strip()[:400]}"
    # the converter leaves value_info of undefined element type behind: shape inference redoes them
    keep = [vi for vi in up.graph.value_info if vi.type.tensor_type.elem_type != TensorProto.UNDEFINED]
    del up.graph.value_info[:]
    up.graph.value_info.extend(keep)
    inputs = [i for i in up.graph.input if i.name not in added]
    del up.graph.input[:]
    up.graph.input.extend(inputs)
    return up.SerializeToString(), notes


def _shapes(inferred, g) -> dict[str, tuple | None]:
    out = {}
    for vi in list(inferred.input) + list(inferred.value_info) + list(inferred.output):
        tt = vi.type.tensor_type
        out[vi.name] = (tuple(d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim)
                        if tt.HasField("shape") else None)
    for t in g.initializer:
        out[t.name] = tuple(t.dims)
    return out


def _unsqueeze(g, index, node, i, axes, suffix):
    """Feed input i of `node` through an opset-1 Unsqueeze (inserted just before it)."""
    name = f"{node.output[0]}__{suffix}"
    g.node.insert(index, helper.make_node("Unsqueeze", [node.input[i]], [name], axes=list(axes),
                                          name=f"{node.name or node.output[0]}__{suffix}"))
    node.input[i] = name


def _rewrite_legacy(g, shapes, notes) -> None:
    index = 0
    while index < len(g.node):
        node = g.node[index]
        attrs = {a.name: a for a in node.attribute}
        if node.op_type in LEGACY_BROADCAST and "axis" in attrs and attrs.get("broadcast") and \
                attrs["broadcast"].i and len(node.input) == 2:
            a, b = shapes.get(node.input[0]), shapes.get(node.input[1])
            if a is None or b is None:
                raise ValueError(f"{node.op_type} {node.name!r}: broadcast with axis, and the rank of an "
                                 "operand is unknown")
            axis = attrs["axis"].i % len(a) if a else 0
            node.attribute.remove(attrs["axis"])
            trailing = len(a) - axis - len(b)
            if trailing > 0:
                _unsqueeze(g, index, node, 1, range(len(b), len(b) + trailing), "bcast")
                index += 1
        elif node.op_type == "PRelu" and len(node.input) == 2:
            index += _prelu(g, index, node, shapes, notes)
        index += 1


def _prelu(g, index, node, shapes, notes) -> int:
    x, s = shapes.get(node.input[0]), shapes.get(node.input[1])
    if x is None or s is None or None in x:
        return 0  # left as it is: the converter refuses what does not broadcast
    try:
        np.broadcast_shapes(tuple(x), tuple(s))
        fits = np.broadcast_shapes(tuple(x), tuple(s)) == tuple(x)
    except ValueError:
        fits = False
    if fits:
        if len(s) == 1 and len(x) > 2 and x[1] == s[0] != 1 and x[-1] == s[0]:
            notes.append(f"PRelu {node.name!r} (opset < 7): slope {tuple(s)} is broadcast numpy-style, over the "
                         f"last axis of {tuple(x)} (as onnx.reference and opset 7 read it), not over the channels")
        return 0
    axes = [k for k, d in enumerate(x) if len(s) == 1 and d == s[0]]
    if len(axes) != 1:
        raise ValueError(f"PRelu {node.name!r}: slope {tuple(s)} does not broadcast to the input {tuple(x)}, and "
                         f"{'no' if not axes else 'more than one'} axis of the input has its size")
    trailing = len(x) - 1 - axes[0]
    _unsqueeze(g, index, node, 1, range(1, 1 + trailing), "slope")
    notes.append(f"PRelu {node.name!r} (opset < 7): slope {tuple(s)} applied along axis {axes[0]} of {tuple(x)}")
    return 1
