"""The ONNX frontend's node order (frontends/onnx/nodes.py toposort): among the ready nodes the
lowest index first, whether the file's order is already valid (one pass) or not (the heap)."""
import random

import pytest
from onnx import helper

from armnn_import.errors import LoadError
from armnn_import_frontends.onnx.nodes import Node, toposort

pytestmark = pytest.mark.unit


def _graph(rng, n):
    """n nodes in a valid order, each reading the input or earlier outputs."""
    protos = []
    for i in range(n):
        reads = rng.sample(["x"] + [f"t{j}" for j in range(i)], k=min(i + 1, rng.randint(1, 3)))
        protos.append(helper.make_node("Add" if len(reads) > 1 else "Relu", reads[:2], [f"t{i}"], name=f"n{i}"))
    return helper.make_graph(protos, "g", [helper.make_tensor_value_info("x", 1, [1])], [])


def _reference(nodes, available):
    """Lowest ready index first, by rescanning (quadratic, independent of toposort)."""
    done, left, order = set(available), list(nodes), []
    while left:
        ready = [n for n in left if all(i in done for i in n.inputs)]
        first = min(ready, key=lambda n: n.index)
        order.append(first.index)
        done.update(first.outputs)
        left.remove(first)
    return order


@pytest.mark.parametrize("seed", range(20))
def test_order_is_the_lowest_ready_index_first(seed):
    rng = random.Random(seed)
    g = _graph(rng, rng.randint(1, 40))
    protos = list(g.node)
    if seed % 2:
        rng.shuffle(protos)  # a file out of order: the heap's way
    nodes = [Node(p, i, 13) for i, p in enumerate(protos)]
    order = [n.index for n in toposort(g, {}, nodes)]
    assert order == _reference(nodes, {"x", ""})
    if seed % 2 == 0:
        assert order == list(range(len(nodes)))


def test_missing_input_and_cycle_are_still_refused():
    x = [helper.make_tensor_value_info("x", 1, [1])]
    missing = helper.make_graph([helper.make_node("Relu", ["nope"], ["y"], name="a")], "g", x, [])
    with pytest.raises(LoadError, match="which no node, input or initializer provides"):
        toposort(missing, {}, [Node(p, i, 13) for i, p in enumerate(missing.node)])
    cycle = helper.make_graph([helper.make_node("Add", ["x", "b"], ["a"], name="p"),
                               helper.make_node("Relu", ["a"], ["b"], name="q")], "g", x, [])
    with pytest.raises(LoadError, match="cycle"):
        toposort(cycle, {}, [Node(p, i, 13) for i, p in enumerate(cycle.node)])
