"""The pre-scan: every node checked statically before anything is lowered, so that all the
problems of a model are reported at once (unknown operators, attribute values without an
exact lowering, run-time tensors where Arm NN needs constants, invalid nodes)."""
from __future__ import annotations

import functools

import numpy as np
import onnx
from onnx import numpy_helper

from armnn_import.errors import Problem
from armnn_import.ir.graph import Port
from armnn_import.registry import Refusal

from .nodes import DEFAULT_DOMAINS, PASS_THROUGH, SHAPE_OPS
from .ops import REGISTRY
from .registry import RANDOM_OPS


@functools.lru_cache(maxsize=None)
def _schema_facts(op: str, opset: int):
    """(required single inputs as (index, name), required attributes, most inputs, every
    attribute's name) of an operator's ONNX schema, or None when there is none (worked out once
    per operator: the pre-scan asks for every node)."""
    try:
        schema = onnx.defs.get_schema(op, opset, "")
    except Exception:  # noqa: BLE001 - unknown operator: reported elsewhere
        return None
    single = onnx.defs.OpSchema.FormalParameterOption.Single
    inputs = tuple((i, p.name) for i, p in enumerate(schema.inputs) if p.option == single)
    attrs = tuple(a for a, spec in schema.attributes.items() if spec.required)
    return inputs, attrs, schema.max_input, frozenset(schema.attributes)


def _missing(node) -> list[str]:
    """Required inputs and attributes (per the ONNX schema) that the node lacks."""
    facts = _schema_facts(node.op, node.opset)
    if facts is None:
        return []
    inputs = [f"input {name!r}" for i, name in facts[0] if i >= len(node.inputs) or not node.inputs[i]]
    return inputs + [f"attribute {a!r}" for a in facts[1] if a not in node.attrs]


def _too_many_inputs(node) -> str | None:
    """Why a node has more inputs than its ONNX schema allows (the extra ones would be ignored)."""
    if node.domain not in DEFAULT_DOMAINS:
        return None
    facts = _schema_facts(node.op, node.opset)
    if facts is None:
        return None
    if len(node.inputs) > facts[2]:
        return f"{len(node.inputs)} inputs, but {node.op} takes at most {facts[2]} (the model is invalid)"
    unknown = sorted(a for a in node.attrs if a not in facts[3])
    if unknown:  # onnxruntime refuses these too; the operator of an older opset may have meant them
        return (f"{node.op} at opset {node.opset} has no attribute {', '.join(map(repr, unknown))} "
                "(the model is invalid)")
    return None


class ScanView:
    """What the pre-scan knows, with the interface checks use."""

    def __init__(self, conv, const: set, values: dict):
        self.opset, self._const, self._values, self._inferred = conv.opset, const, values, conv.inferred
        self.target = conv.g.target  # the format written (armnn_import.target.Target)
        self._nodes, self._outputs, self._readers = conv.nodes, {o.name for o in conv.model.graph.output}, None

    def has(self, node, i):
        return i < len(node.inputs) and node.inputs[i] != ""

    def is_const(self, node, i):
        return node.inputs[i] in self._const

    def attr(self, node, key, default=None):
        return node.attrs.get(key, default)

    def readers(self, name: str) -> list:
        """The nodes that read tensor `name`, and None for a graph output."""
        if self._readers is None:
            self._readers = {}
            for n in self._nodes:
                for i in set(n.inputs):
                    self._readers.setdefault(i, []).append(n)
        return self._readers.get(name, []) + ([None] if name in self._outputs else [])

    def value(self, node, i):
        return self._values.get(node.inputs[i]) if self.has(node, i) else None

    def shape(self, node, i):
        """Inferred shape (a tuple with None for unknown dimensions), or None."""
        if not self.has(node, i):
            return None
        v = self._values.get(node.inputs[i])
        return v.shape if isinstance(v, np.ndarray) else self._inferred.get(node.inputs[i])


def scan(conv) -> set[int]:
    """Check every node statically; record problems, return the indices of the failing nodes."""
    const = {n for n, v in conv.values.items() if not isinstance(v, Port)} | {""}
    values = {n: v for n, v in conv.values.items() if isinstance(v, np.ndarray)}
    view = ScanView(conv, const, values)
    flagged = set()
    for node in conv.nodes:
        ins = [i for i in (node.inputs + node.implicit if node.implicit else node.inputs) if i]
        conv.opset = view.opset = node.opset
        folds = all(i in const for i in ins)  # every input constant: folded, not lowered
        problem = scan_node(conv, node, view, folds)
        if problem:
            conv.problems.append(Problem(node.op, node.name, *problem))  # (reason, hint, code)
            flagged.add(node.index)
        elif node.op == "Constant" and "value" in node.attrs and node.outputs:
            try:
                values[node.outputs[0]] = numpy_helper.to_array(node.attrs["value"])
            except Exception:  # noqa: BLE001 - reported when folded
                pass
        if problem is None and (folds or node.op in SHAPE_OPS or
                                (node.op in PASS_THROUGH + ("CastLike",) and node.inputs
                                 and node.inputs[0] in const)):
            const.update(node.outputs)
        elif node.op == "Dropout" and len(node.outputs) > 1:
            const.add(node.outputs[1])  # the mask is all true at inference
    conv.opset = conv.model_opset
    return flagged


def scan_node(conv, node, view, folds: bool):
    if node.domain not in DEFAULT_DOMAINS and not conv.quant.allows_domain(node):
        return Refusal(f"operator domain {node.domain!r} is not supported",
                       "only operators of the default ONNX domain can be converted", "unsupported-op")
    if node.op in RANDOM_OPS:
        return REGISTRY.refusal(node.op)
    missing = _missing(node)
    if missing:
        return Refusal(f"required {', '.join(missing)} missing (the model is invalid)", code="bad-model")
    too_many = _too_many_inputs(node)
    if too_many:
        return Refusal(too_many, code="bad-model")
    if node.op in PASS_THROUGH or node.op in SHAPE_OPS or folds:
        return None
    if node.op == "If" and node.inputs and node.inputs[0] and view.is_const(node, 0):
        return None  # the branch it takes is checked and lowered in its place (control.py)
    if node.op == "CastLike" and node.inputs and view.is_const(node, 0):
        return None
    entry = conv.registry_entry(node.op, conv.opset)  # (REGISTRY.lookup, once per operator and opset)
    if entry is None:
        if node.op in REGISTRY.ops():
            have = ", ".join(e.version_range for e in REGISTRY.entries() if e.op == node.op)
            return Refusal(f"not supported at opset {conv.opset} (supported opsets: {have})",
                           code="unsupported-op")
        return REGISTRY.refusal(node.op) or Refusal("no exact lowering onto Arm NN's layers",
                                                    code="unsupported-op")
    beyond = entry.target_problem(conv.g.target)
    if beyond:
        return beyond
    if entry.check is not None:
        try:
            r = entry.check(node, view)
        except MemoryError:  # never a refusal: convert() reports it
            raise
        except Exception as e:  # noqa: BLE001 - e.g. an attribute of the wrong type
            r = Refusal(f"invalid node ({type(e).__name__}: {str(e)[:200]})", code="bad-attribute")
        if r:
            return Refusal(r) if isinstance(r, str) else Refusal(*r)
    return None
