"""WHILE loops with a trip count fixed at conversion time, unrolled into subgraph 0.

Keras 3's GRU, LSTM and SimpleRNN reach TFLite as a WHILE loop: the cond compares scalar counters
(the step, an iteration bound) with constants; the body steps them by constants and computes the
cell. Running the cond and the counters' arithmetic in numpy on the loop's constant inputs gives
the trip count N and every counter's value per step, so the loop is its body N times over: each
copy reads the previous copy's outputs, with the counters as constants (so the step's GATHER,
SLICE and CONCATENATION indices become constants too). A loop whose cond reads a run-time value
stays a WHILE, refused by the registry."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .model import Operator, Tensor, TFModel

MAX_TRIPS = 4096  # beyond this an unrolled network is no longer a reasonable file
_NUMPY = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply, "LESS": np.less, "LESS_EQUAL": np.less_equal,
          "GREATER": np.greater, "GREATER_EQUAL": np.greater_equal, "EQUAL": np.equal, "NOT_EQUAL": np.not_equal,
          "LOGICAL_AND": np.logical_and, "LOGICAL_OR": np.logical_or}


def _known(sub: TFModel, values: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    """The tensors of `sub` that numpy computes from its constants and `values` (scalar and
    small integer arithmetic and comparisons only: the counters, not the cell)."""
    known = {t.index: t.data for t in sub.tensors if t.data is not None}
    known.update(values)
    for op in sub.operators:
        fn = _NUMPY.get(op.op)
        if fn is None or op.options.get("fused_activation_function", 0) or len(op.outputs) != 1 \
                or not all(i in known for i in op.inputs):
            continue
        args = [np.asarray(known[i]) for i in op.inputs]
        if any(a.size > 16 or a.dtype.kind == "f" for a in args):
            continue
        out = fn(*args)
        known[op.outputs[0]] = out.astype(args[0].dtype) if out.dtype.kind != "b" else out
    return known


def trips(model: TFModel, op: Operator) -> list[dict[int, np.ndarray]] | None:
    """The integer body tensors known in each iteration ({body tensor: value}: the counters and
    what is computed from them), one entry per iteration, or None when the trip count is not
    fixed (or over MAX_TRIPS)."""
    cond = model.subgraphs.get(op.options.get("cond_subgraph_index"))
    body = model.subgraphs.get(op.options.get("body_subgraph_index"))
    if cond is None or body is None or not (len(op.inputs) == len(cond.inputs) == len(body.inputs)
                                            == len(body.outputs) == len(op.outputs)):
        return None
    state = {k: model.tensors[i].data for k, i in enumerate(op.inputs)
             if i >= 0 and model.tensors[i].data is not None}
    steps = []
    while True:
        c = _known(cond, {cond.inputs[k]: v for k, v in state.items()}).get(cond.outputs[0])
        if c is None or np.size(c) != 1:
            return None
        if not bool(np.asarray(c).reshape(-1)[0]):
            return steps
        if len(steps) == MAX_TRIPS:
            return None
        got = _known(body, {body.inputs[k]: v for k, v in state.items()})
        steps.append({i: v for i, v in got.items() if body.tensors[i].data is None and np.asarray(v).dtype.kind in "iub"})
        state = {k: got[o] for k, o in enumerate(body.outputs) if o in got}


def unroll(model: TFModel, report=None) -> TFModel:
    """`model` with every WHILE loop of fixed trip count replaced by copies of its body."""
    if not any(op.op == "WHILE" for op in model.operators):
        return model
    tensors, ops, remap, as_layers = list(model.tensors), [], {}, set(model.as_layers)
    output_names = {model.tensors[i].name: i for i in model.outputs}

    def add_tensor(t: Tensor, name: str, data=None) -> int:
        tensors.append(replace(t, index=len(tensors), name=name, data=t.data if data is None else data))
        return len(tensors) - 1

    for op in model.operators:
        op = replace(op, inputs=tuple(remap.get(i, i) for i in op.inputs))
        steps = trips(model, op) if op.op == "WHILE" else None
        if steps is None or any(model.tensors[o].name in output_names for o in op.outputs):
            ops.append(replace(op, index=len(ops)))
            continue
        body = model.subgraphs[op.options["body_subgraph_index"]]
        current = list(op.inputs)
        for j, known in enumerate(steps):
            here = {bi: current[k] for k, bi in enumerate(body.inputs) if bi not in known}
            for t in body.tensors:  # (a loop variable passed through keeps its tensor)
                if t.index not in here:
                    value = known.get(t.index)
                    here[t.index] = add_tensor(t, f"{t.name}/step{j}",
                                               None if value is None else np.asarray(value, t.data.dtype if
                                                                                     t.data is not None else None))
            for bop in body.operators:
                if bop.outputs and all(o in known for o in bop.outputs):
                    continue  # counter arithmetic: its results are the constants above
                ops.append(replace(bop, index=len(ops), inputs=tuple(here[i] if i >= 0 else -1 for i in bop.inputs),
                                   outputs=tuple(here[o] for o in bop.outputs),
                                   intermediates=tuple(here[i] for i in bop.intermediates if i >= 0)))
            current = [here[o] for o in body.outputs]
        remap.update(zip(op.outputs, current))
        if report is not None:
            report.decomposition("WHILE", f"a loop of fixed trip count unrolled: the body {len(steps)} times "
                                 "over, its counters constants per step")
        # a loop variable that starts as a constant (a zero state) is computed in later steps: the
        # first step reads it as a Constant layer (also when the state is folded, e.g. the DEQUANTIZE of
        # a float16 zero in a float16-weights model; port() consults as_layers for constants only)
        as_layers.update(i for i in op.inputs if i >= 0)
    left = any(op.op == "WHILE" for op in ops)  # (else no operator calls another subgraph: no warning)
    return replace(model, tensors=tensors, operators=ops, outputs=tuple(remap.get(o, o) for o in model.outputs),
                   as_layers=as_layers, num_subgraphs=model.num_subgraphs if left else 1)
