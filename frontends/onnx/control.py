"""If with a constant condition: the branch it takes, lowered in place of the If.

torch.onnx.export writes an If for every shape test of the Python code (silero VAD's decoder
checks ``x.dim() == 3`` before its LSTM, and so on). With the input shapes pinned, Shape folds, so
the condition is a constant and only one branch can run: its nodes are exactly the If. They are
checked as the pre-scan checks the model's own nodes (same refusals, same reasons), then lowered
one by one; a nested If of theirs comes back here. An If whose condition is computed from data at
run time stays refused (Arm NN has no control flow).
"""
from __future__ import annotations

import numpy as np

from armnn_import.errors import Problem
from armnn_import.ir.graph import Port
from armnn_import.lowering import Unsupported

from .nodes import Node, sparse_to_dense
from .scan import ScanView, scan_node


def constant_condition(conv, node) -> bool:
    """Whether `node` is an If of the default domain whose condition is a constant."""
    return (node.op == "If" and node.domain in ("", "ai.onnx") and bool(node.inputs) and node.inputs[0] != ""
            and node.inputs[0] in conv.values and not isinstance(conv.values[node.inputs[0]], Port))


def inline_if(conv, node) -> None:
    """Lower the branch that the If's constant condition selects, and bind its outputs."""
    cond = np.asarray(conv.values[node.inputs[0]])
    if cond.size != 1:
        raise Unsupported(f"the condition has {cond.size} elements; If takes one (the model is invalid)",
                          code="bad-model")
    key = "then_branch" if bool(cond.reshape(-1)[0]) else "else_branch"
    branch = node.attrs.get(key)
    if branch is None or not hasattr(branch, "node"):
        raise Unsupported(f"the If has no {key} (the model is invalid)", code="bad-model")
    if len(branch.output) != len(node.outputs):
        raise Unsupported(f"its {key} gives {len(branch.output)} outputs for {len(node.outputs)} "
                          "(the model is invalid)", code="bad-model")
    values = conv.values
    defined = [t.name for t in branch.initializer] + [sp.values.name for sp in branch.sparse_initializer]
    defined += [o for n in branch.node for o in n.output if o]
    shadowed = [name for name in defined if name in values]
    if shadowed:  # (its values would replace the outer ones for everything lowered after it)
        raise Unsupported(f"its {key} redefines the outer name {shadowed[0]!r}", code="bad-model")
    for t in branch.initializer:
        values[t.name] = conv._tensor(t)
    for sp in branch.sparse_initializer:
        values[sp.values.name] = sparse_to_dense(sp)
    reported = len(conv.problems)
    for i, proto in enumerate(branch.node):
        _branch_node(conv, Node(proto, i, node.opset))
    conv.opset = node.opset
    for name, out in zip(node.outputs, branch.output):
        if out.name not in values:
            if len(conv.problems) > reported:
                return  # a node of the branch was refused: already reported
            raise Unsupported(f"its {key} output {out.name!r} is never computed (a node reads a name that "
                              "is defined after it, or nowhere: the model is invalid)", code="bad-model")
        if name:
            values[name] = values[out.name]
    conv.report.folded.append(node.name)


def _branch_node(conv, node) -> None:
    """The pre-scan's checks of one node, on what is known now, then its lowering."""
    values = conv.values
    ins = [i for i in (node.inputs + node.implicit if node.implicit else node.inputs) if i]
    if any(i not in values for i in ins):
        return  # downstream of a refused node
    const = {i for i in ins if not isinstance(values[i], Port)} | {""}
    arrays = {i: values[i] for i in const if isinstance(values.get(i), np.ndarray)}
    conv.opset = node.opset
    problem = None if constant_condition(conv, node) else \
        scan_node(conv, node, ScanView(conv, const, arrays), all(i in const for i in ins))
    if problem:
        conv.problems.append(Problem(node.op, node.name, *problem))
        return
    conv._node(node)
