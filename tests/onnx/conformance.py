"""Runs the ONNX backend node test cases (onnx.backend.test.case.node) through
armnn-import and the real Arm NN 20.08 runtime.

Each case is converted as it is. If the converter says a node needs a
constant input that the case feeds as a graph input (Conv weights, Reshape
shapes, Slice starts, ...), the case is converted again with every graph input
but the first frozen into an initializer holding the case's own input value,
and run with the first input only. Results are compared with the case's
expected outputs (rtol 1e-3, atol 1e-4).

`python tests/onnx/conformance.py [--json out.json]` prints pass/total per operator.
"""
from __future__ import annotations

import collections
import json
import os
import re
import sys
import warnings

import numpy as np

# The operators issue 3 lists; every case of these must pass or be an expected failure.
LISTED_OPS = """Abs Add Sub Mul Div Max Min Sum Mean Neg Reciprocal Floor Ceil Sqrt Relu LeakyRelu PRelu Sigmoid
Tanh HardSigmoid HardSwish Softplus Softsign Elu Selu Celu Mish Exp Clip Equal Greater Less Conv ConvTranspose MaxPool
AveragePool GlobalAveragePool GlobalMaxPool LpPool BatchNormalization InstanceNormalization LayerNormalization
GroupNormalization LpNormalization LRN MeanVarianceNormalization Gemm MatMul Softmax Flatten Reshape Squeeze Unsqueeze
Transpose Concat Split Slice Pad Tile Expand Gather DepthToSpace SpaceToDepth Resize Upsample ReduceMean ReduceSum
ReduceMax ReduceMin ReduceL1 ReduceL2 ReduceSumSquare ReduceProd LSTM GRU RNN GreaterOrEqual LessOrEqual
Not""".split()

RTOL, ATOL = 1e-3, 1e-4


def node_cases():
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases("")
    return [c for c in cases if c.model is not None and c.kind == "node"]


_BASE_OPS: dict[str, str] = {}


def case_op(case) -> str:
    """The operator a case tests: its single node's, or for an `_expanded`
    case (the function body of an operator), the operator of the unexpanded case."""
    ops = [n.op_type for n in case.model.graph.node]
    if len(ops) == 1:
        _BASE_OPS[case.name] = ops[0]
        return ops[0]
    base = case.name.split("_expanded")[0]
    if base in _BASE_OPS:
        return _BASE_OPS[base] + "(expanded)"
    return ops[-1] if ops[-1] in LISTED_OPS else ops[0]


def freeze_inputs(model, inputs):
    """A copy of `model` whose graph inputs after the first are initializers
    holding `inputs[1:]`."""
    import onnx
    from onnx import numpy_helper

    m = onnx.ModelProto()
    m.CopyFrom(model)
    graph_inputs = [i for i in m.graph.input if i.name not in {t.name for t in m.graph.initializer}]
    for gi, value in zip(graph_inputs[1:], inputs[1:]):
        if value is None:
            continue
        m.graph.initializer.append(numpy_helper.from_array(np.asarray(value), gi.name))
    keep = graph_inputs[0].name if graph_inputs else None
    kept = [i for i in m.graph.input if i.name == keep]
    del m.graph.input[:]
    m.graph.input.extend(kept)
    return m


def _needs_constant(err) -> bool:
    text = " ".join(getattr(err, "lines", lambda: [str(err)])()).lower()
    return "constant" in text


def run_case(case, run_armnn, target: str = "19.02") -> tuple[str, str]:
    """(status, detail): status is pass, fail, refused (ArmnnImportError),
    crash (any other exception from the converter) or load_error (Arm NN
    rejected a file we wrote)."""
    import armnn_import
    from armnn_import.errors import ArmnnImportError
    from armnn_import.testing.armnn_runtime import ArmnnRuntimeError

    from onnx import TensorProto, numpy_helper
    # (the cases of special float values store their data as TensorProtos)
    inputs, expected = ([numpy_helper.to_array(a) if isinstance(a, TensorProto) else a for a in arrays]
                        for arrays in case.data_sets[0])
    model, feed, frozen = case.model, list(inputs), False
    try:
        try:
            result = armnn_import.convert(model, target=target)
        except ArmnnImportError as e:
            if not (_needs_constant(e) and len(inputs) > 1):
                raise
            model, feed, frozen = freeze_inputs(case.model, inputs), list(inputs[:1]), True
            result = armnn_import.convert(model, target=target)
        data = result.to_bytes()
    except ArmnnImportError as e:
        return "refused", "; ".join(e.lines())[:300]
    except Exception as e:  # a converter bug: must never happen
        return "crash", f"{type(e).__name__}: {e}"[:300]
    net = result.network
    names = [l.name for l in net.input_layers]
    graph_inputs = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    by_name = dict(zip(graph_inputs, feed))
    try:
        arrays = [np.ascontiguousarray(np.asarray(by_name[n]).astype(l.outputs[0].dtype.np_dtype))
                  for n, l in zip(names, net.input_layers)]
    except KeyError as e:
        return "fail", f"network input {e} is not a graph input"
    try:
        outs = run_armnn(data, arrays)
    except ArmnnRuntimeError as e:
        status = "load_error" if e.returncode == 3 else "fail"
        return status, str(e).splitlines()[-1][:300]
    if len(outs) != len(expected):
        return "fail", f"{len(outs)} outputs, expected {len(expected)}"
    for i, (got, want) in enumerate(zip(outs, expected)):
        want = np.asarray(want)
        if got.shape != want.shape and got.size == want.size:
            got = got.reshape(want.shape)
        if got.shape != want.shape:
            return "fail", f"output {i}: shape {got.shape}, expected {want.shape}"
        if want.dtype == bool or got.dtype == bool:
            ok = np.array_equal(got.astype(bool), want.astype(bool))
        else:
            ok = np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=RTOL, atol=ATOL, equal_nan=True)
        if not ok:
            err = np.nanmax(np.abs(got.astype(np.float64) - want.astype(np.float64)))
            return "fail", f"output {i}: max abs error {err:.3g}"
    return "pass", "frozen weight inputs" if frozen else ""


def run_all(run_armnn, cases=None, target: str = "19.02") -> dict[str, tuple[str, str, str]]:
    """case name -> (op, status, detail), converting for `target` (an Arm NN release)."""
    cases = sorted(cases or node_cases(), key=lambda c: ("_expanded" in c.name, c.name))
    return {c.name: (case_op(c), *run_case(c, run_armnn, target)) for c in cases}


def per_op_table(results) -> dict[str, dict[str, int]]:
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for op, status, _ in results.values():
        table[op][status] += 1
    return {op: dict(c) for op, c in sorted(table.items())}


def main(argv=None):
    import argparse

    from armnn_import.testing.armnn_runtime import build_harness, run_armnn

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", help="write every case's result here")
    ap.add_argument("--all", action="store_true", help="print every operator, not only the listed ones")
    ap.add_argument("--target", default="19.02", help="the Arm NN release whose format to write")
    ap.add_argument("--release", default="20.08", help="the Arm NN release to run on (20.08 or 23.08)")
    ap.add_argument("--filter", help="only the cases whose name matches this regular expression")
    args = ap.parse_args(argv)
    runner = build_harness(args.release)
    cases = [c for c in node_cases() if re.search(args.filter, c.name)] if args.filter else None
    results = run_all(lambda data, xs: run_armnn(data, xs, runner=runner), cases, target=args.target)
    table = per_op_table(results)
    for op in sorted(table) if args.all else LISTED_OPS:
        counts = table.get(op, {})
        total = sum(counts.values())
        print(f"{op:28s} {counts.get('pass', 0):3d}/{total:<3d} {json.dumps({k: v for k, v in counts.items() if k != 'pass'})}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({k: list(v) for k, v in results.items()}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    sys.exit(main())
