"""Every layer type, in every data type and layout, on the real Arm NN 20.08 and 23.08 runtimes.

For each case of tests/layer_cases.py: the written file reads back to the same
IR, loads and runs on CpuRef, and its outputs equal the numpy executor's
(float32 within rtol 1e-5, float16 within rtol 1e-3, uint8 within 1, others
exactly). Combinations Arm NN does not run are listed in layer_cases.py with
the reason and the releases they hold on, and checked to fail the way the list
says. `python tests/layer_table.py [--release 23.08]` prints the resulting table.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

from armnn_import.errors import ExecutionError, GraphError
from armnn_import.executor import evaluate, run, run_all
from armnn_import.ir import LayerType, TensorInfo
from armnn_import.ir.compat import release_problems
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
def test_layer_on_armnn(case, armnn_release_runner):
    armnn_runner = armnn_release_runner
    if tuple(map(int, case.target.split("."))) > tuple(map(int, armnn_runner.release.split("."))):
        pytest.skip(f"a {case.target}-format case: Arm NN {armnn_runner.release} does not read that format")
    kind, why = status(case, armnn_runner.release)
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
def test_random_configurations_on_armnn(layer, dtype, armnn_release_runner):
    """Windows, paddings, strides, masks, blocks and axes drawn at random (fixed seed):
    edge cases of the index arithmetic the hand-written cases may miss."""
    armnn_runner = armnn_release_runner
    graph, inputs = random_network(layer, dtype, seed=int(layer) * 10 + int(dtype))
    assert len(graph.output_layers) >= 12
    verify(graph)
    data = write(graph)
    assert graph_differences(graph, read(data)) == []
    got = armnn_runner(data, inputs)
    assert compare(Case(layer, dtype), got, run(graph, inputs)) == []


@pytest.mark.parametrize("release, failing", [
    # (Gather passes in the 20.08 format, which has its descriptor; Constant in files of the
    # 23.08 target, weightsLayoutScheme 1, see ON_23_08); Dequantize: its input is quantized
    # (its QuantisedAsymm8 case passes)
    ("20.08", {LayerType.Dequantize}),
    ("23.08", {LayerType.Dequantize}),
])
def test_every_layer_type_runs_in_float32(release, failing):
    """Only these layer types lack a passing Float32 case."""
    passing = {c.layer for c in CASES if c.dtype == F32 and status(c, release)[0] == "pass"}
    assert set(LayerType) - passing == failing


@pytest.mark.parametrize("release", ["20.08", "23.08"])
def test_compat_names_the_layers_each_release_cannot_run(release):
    """armnn_import/ir/compat.py agrees with the table: every Float32 case it names fails on that
    release, and it names each layer type or variant whose Float32 cases all fail there
    (per target: a 23.08-format file can run what a 19.02 one cannot)."""
    named = set()
    for case in (c for c in CASES if c.dtype == F32):
        graph, _ = case.build()
        if release_problems(graph, release):
            named.add((case.layer, case.variant, case.target))
            assert status(case, release)[0] != "pass", case.id
    failing = {(c.layer, c.variant, c.target) for c in CASES if c.dtype == F32 and status(c, release)[0] != "pass"
               and not (c.layer == LayerType.FullyConnected and c.variant == "rank3")  # lowered by the frontends
               and c.layer != LayerType.Dequantize}  # (a Float32 input is nothing to dequantize)
    failing -= {(c.layer, c.variant, c.target) for c in CASES if c.dtype == F32 and status(c, release)[0] == "pass"}
    failing -= {(c.layer, c.variant, c.target) for c in CASES if status(c, release)[0] == "not expressible"}
    assert named == failing


def test_compat_names_the_axis_0_stack_of_types_narrower_than_float32():
    """20.08's RefStackWorkload copies an axis-0 Stack as float32 words: compat names the Float16
    8-bit and Boolean cases the table has failing on 20.08, and no Float32 one (passes/fp16.py lowers a
    Float16 one around it)."""
    # (Signed32 is as wide, and fails for another reason: 20.08's CpuRef stacks no Signed32)
    stacks = [c for c in CASES if c.layer == LayerType.Stack and c.target == "20.08" and c.dtype != DataType.Signed32]
    assert {c.dtype for c in stacks} >= {F32, QA8, DataType.Float16}
    for case in stacks:
        graph, _ = case.build()
        named = [p for p in release_problems(graph, "20.08") if "axis-0 Stack" in p]
        assert bool(named) == (case.dtype != F32) == (status(case, "20.08")[0] != "pass"), case.id


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


def test_rounding_ties_match_armnn(armnn_release_runner):
    """uint8 ties as the executor rounds them on both releases; float16 ties away from zero on
    20.08 (as the executor), to even on 23.08 (IEEE, as numpy's float16)."""
    armnn_runner = armnn_release_runner
    graph, inputs = tie_network()
    got = armnn_runner(write(graph), inputs)
    want = run(graph, inputs)
    if armnn_runner.release != "20.08":
        ieee = (inputs[2].astype(np.float32) + inputs[3].astype(np.float32)).astype(np.float16)
        assert not np.array_equal(ieee, want[2])
        want[2] = ieee
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
