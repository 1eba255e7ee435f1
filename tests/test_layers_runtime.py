"""Every layer type, in every data type and layout, on the real Arm NN 20.08 runtime.

For each case of tests/layer_cases.py: the written file reads back to the same
IR, loads and runs on CpuRef, and its outputs equal the numpy executor's
(float32 within rtol 1e-5, float16 within rtol 1e-3, uint8 within 1, others
exactly). Combinations Arm NN does not run are listed in layer_cases.py with
the reason, and checked to fail the way the list says.
`python tests/layer_table.py` prints the resulting table.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

from armnn_import.errors import ExecutionError, GraphError
from armnn_import.executor import evaluate, run, run_all
from armnn_import.ir import LayerType, TensorInfo
from armnn_import.ir.graph import Graph, graph_differences
from armnn_import.ir.types import DataType
from armnn_import.ir.verify import verify
from armnn_import.serialize import read, write
from armnn_import.testing.armnn_runtime import ArmnnRuntimeError

sys.path.insert(0, str(Path(__file__).parent))   # pytest runs with --import-mode=importlib
from layer_cases import (F32, QA8, RANDOM_LAYERS, Case, all_cases, compare,  # noqa: E402
                         random_network, status, tie_network)

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_layer_on_armnn(case, armnn_runner):
    if case.target != "19.02" and case.target != "20.08":
        pytest.skip(f"a {case.target}-format case: it runs on the Arm NN {case.target} runtime")
    kind, why = status(case)
    graph, inputs = case.build()
    if kind == "not expressible":
        with pytest.raises(GraphError):
            verify(graph)
        return
    data = write(graph)
    assert graph_differences(graph, read(data)) == []
    if kind == "unsupported":
        with pytest.raises(ArmnnRuntimeError) as e:
            armnn_runner(data, inputs)
        assert why[1] in e.value.stderr, f"expected {why[0]!r}, got: {e.value.stderr.strip()}"
        return
    got = armnn_runner(data, inputs)          # divergent cases load and run too
    if kind == "divergent":
        with pytest.raises(ExecutionError):
            run(graph, inputs)
        return
    verify(graph)
    want = run(graph, inputs)
    assert compare(case, got, want) == []


@pytest.mark.parametrize("dtype", [F32, QA8], ids=lambda d: d.name)
@pytest.mark.parametrize("layer", RANDOM_LAYERS, ids=lambda t: t.name)
def test_random_configurations_on_armnn(layer, dtype, armnn_runner):
    """Windows, paddings, strides, masks, blocks and axes drawn at random (fixed seed):
    edge cases of the index arithmetic the hand-written cases may miss."""
    graph, inputs = random_network(layer, dtype, seed=int(layer) * 10 + int(dtype))
    assert len(graph.output_layers) >= 12
    verify(graph)
    data = write(graph)
    assert graph_differences(graph, read(data)) == []
    got = armnn_runner(data, inputs)
    assert compare(Case(layer, dtype), got, run(graph, inputs)) == []


def test_every_layer_type_runs_in_float32():
    """Only Gather (which the 20.08 deserializer cannot load) lacks a passing Float32 case, and
    Dequantize, whose input is quantized (its QuantisedAsymm8 case passes)."""
    passing = {c.layer for c in CASES if c.dtype == F32 and status(c)[0] == "pass"}
    assert set(LayerType) - passing == {LayerType.Gather, LayerType.Dequantize}
    assert any(c.layer == LayerType.Dequantize and c.dtype == DataType.QuantisedAsymm8 and status(c)[0] == "pass"
               for c in CASES)


# -- executor API (no runtime needed) ------------------------------------------------------

def _small_graph():
    g = Graph()
    a = g.add_input("a", TensorInfo((2, 3)))
    b = g.add_input("b", TensorInfo((1, 3)))
    s = g.add(LayerType.Addition, "sum", [a, b])
    g.add_output("out", s.out())
    return g, s


def test_run_accepts_list_or_dict_and_checks_inputs():
    g, s = _small_graph()
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([[10, 20, 30]], np.float32)
    want = a + b
    np.testing.assert_array_equal(run(g, [a, b])[0], want)
    np.testing.assert_array_equal(run(g, {"b": b, "a": a})[0], want)
    values = run_all(g, [a, b])
    np.testing.assert_array_equal(values[s.out()], want)
    np.testing.assert_array_equal(evaluate(s, [a, b])[0], want)
    with pytest.raises(ExecutionError, match="shape"):
        run(g, [a, b.reshape(3, 1)])
    with pytest.raises(ExecutionError, match="Float32"):
        run(g, [a.astype(np.float64), b])
    with pytest.raises(ExecutionError, match="2 inputs"):
        run(g, [a])
    with pytest.raises(ExecutionError, match="missing"):
        run(g, {"a": a})


def test_gather_index_out_of_range_is_an_error():
    g = Graph()
    p = g.add_input("p", TensorInfo((4, 2)))
    i = g.add_input("i", TensorInfo((3,), DataType.Signed32))
    g.add_output("out", g.add(LayerType.Gather, "gather", [p, i]).out())
    params = np.arange(8, dtype=np.float32).reshape(4, 2)
    np.testing.assert_array_equal(run(g, [params, np.array([3, 0, 3], np.int32)])[0], params[[3, 0, 3]])
    with pytest.raises(ExecutionError, match="out of range"):
        run(g, [params, np.array([0, 4, 1], np.int32)])


def test_rounding_ties_match_armnn(armnn_runner):
    graph, inputs = tie_network()
    got = armnn_runner(write(graph), inputs)
    for g, w in zip(got, run(graph, inputs)):
        np.testing.assert_array_equal(g, w)
