"""The graph's use-lists (armnn_import/ir/graph.py) against the whole-graph scans they
replace: random graphs edited at random (hypothesis), each answer compared with a plain
reference that keeps only the layers' inputs and recomputes everything by scanning."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from armnn_import.errors import GraphError
from armnn_import.ir.graph import Graph, Port
from armnn_import.ir.types import LayerType, TensorInfo
from armnn_import.ir.verify import verify

INFO = TensorInfo((1, 4))


class Reference:
    """What the graph held before use-lists: a list of layers and their inputs, and scans."""

    def __init__(self):
        self.layers = []
        self.inputs = {}  # layer -> list of Port

    def consumers(self, port):
        return sorted(((l.name, i) for l in self.layers for i, p in enumerate(self.inputs[l])
                       if p.layer is port.layer and p.slot == port.slot))

    def consumer_map(self):
        users = {id(l): [] for l in self.layers}
        for l in self.layers:
            for i, p in enumerate(self.inputs[l]):
                users.setdefault(id(p.layer), []).append((l, i))
        return users

    def replace_uses(self, old, new):
        for l in self.layers:
            self.inputs[l] = [new if (p.layer is old.layer and p.slot == old.slot) else p for p in self.inputs[l]]

    def remove(self, dead):
        self.layers = [l for l in self.layers if l not in dead]


def _same(g: Graph, ref: Reference):
    assert g.layers == ref.layers
    assert len(g) == len(ref.layers)
    for l in ref.layers:
        assert l.inputs == ref.inputs[l], l
        assert l in g
        for slot in range(len(l.outputs)):
            port = Port(l, slot)
            assert sorted((u.name, i) for u, i in g.consumers(port)) == ref.consumers(port)
        assert sorted((u.name, i) for u, i in g.consumers(l)) == sorted(
            x for s in range(len(l.outputs)) for x in ref.consumers(Port(l, s)))
        assert g.num_consumers(l) == len(g.consumers(l))
    got = {k: [(u.name, i) for u, i in v] for k, v in g.consumers().items()}
    want = {k: [(u.name, i) for u, i in v] for k, v in ref.consumer_map().items()}
    assert got == want
    assert g.use_problems() == []


# An edit: (kind, a, b, c) with small integers picking layers, slots and inputs.
EDITS = st.lists(st.tuples(st.sampled_from(["add", "add", "connect", "rewire", "replace", "remove"]),
                           st.integers(0, 50), st.integers(0, 50), st.integers(0, 3)),
                 min_size=1, max_size=40)


def _port(live, k, slot):
    layer = live[k % len(live)]
    return Port(layer, slot % len(layer.outputs))


@settings(max_examples=150, deadline=None)
@given(EDITS)
def test_use_lists_match_the_whole_graph_scans(edits):
    g, ref = Graph(), Reference()
    for n in range(3):
        port = g.add_input(f"in{n}", INFO)
        ref.layers.append(port.layer)
        ref.inputs[port.layer] = []
    removed = []
    for step, (kind, a, b, c) in enumerate(edits):
        live = ref.layers
        if not live:
            port = g.add_input(f"in{step}", INFO)
            ref.layers.append(port.layer)
            ref.inputs[port.layer] = []
        if kind == "add":  # connect: a new layer reading 1-3 ports, with 1 or 2 outputs
            ins = [_port(live, a + j * b, c + j) for j in range(1 + c % 3)]
            layer = g.add(LayerType.Addition, f"l{step}", ins, outputs=[INFO] * (1 + a % 2))
            ref.layers.append(layer)
            ref.inputs[layer] = list(ins)
        elif kind == "connect":  # one input to another port
            with_inputs = [l for l in live if l.inputs]
            if not with_inputs:
                continue
            layer = with_inputs[a % len(with_inputs)]
            i = b % len(layer.inputs)
            port = _port(live, c + b, a)
            g.set_input(layer, i, port)
            ref.inputs[layer][i] = port
        elif kind == "rewire":  # all inputs at once (disconnect: none)
            layer = live[a % len(live)]
            ins = [_port(live, b + j, c) for j in range(c % 3)]
            g.set_inputs(layer, ins)
            ref.inputs[layer] = list(ins)
        elif kind == "replace":
            old, new = _port(live, a, c), _port(live, b, c + 1)
            g.replace_uses(old, new)
            ref.replace_uses(old, new)
        elif kind == "remove" and len(live) > 1:
            dead = {live[a % len(live)], live[b % len(live)]}
            g.remove(dead)
            ref.remove(dead)
            removed += dead
        _same(g, ref)
    for l in removed:  # removed layers are gone from the graph and its use-lists
        assert l not in g
        assert all(u is not l for p in list(g._uses) for u, _ in g.consumers(p))


def test_remove_keeps_readers_of_the_removed_layer_until_rewired():
    g = Graph()
    x = g.add_input("x", INFO)
    a = g.add(LayerType.Activation, "a", [x])
    b = g.add(LayerType.Activation, "b", [a.out()])
    g.remove([a])
    assert g.consumers(a.out()) == [(b, 0)]  # b still reads a: verify() reports it
    assert g.consumers(x) == []
    g.replace_uses(a.out(), x)
    assert g.consumers(x) == [(b, 0)] and b.inputs == [x]
    assert g.consumers(a.out()) == []


def test_a_name_is_free_again_once_its_layer_is_removed():
    g = Graph()
    x = g.add_input("x", INFO)
    a = g.add(LayerType.Activation, "a", [x])
    assert g.unique_name("a") == "a_1"
    g.remove([a])
    assert g.unique_name("a") == "a"
    b = g.add(LayerType.Activation, "b", [x])
    g.rename(b, "c")
    assert g.unique_name("c") == "c_1" and g.unique_name("b") == "b"


def test_an_input_changed_by_hand_is_reported_by_verify():
    g = Graph()
    x = g.add_input("x", INFO)
    y = g.add_input("y", INFO)
    a = g.add(LayerType.Addition, "a", [x, y])
    g.add_output("out", a.out())
    verify(g)
    a.inputs[1] = x  # not through Graph.set_input: y's use-list still names a
    with pytest.raises(GraphError, match="Input layer 'y' feeds no layer"):
        verify(g)  # what the hand edit breaks comes first
    assert g.use_problems()


def test_stale_use_list_alone_is_reported():
    g = Graph()
    x = g.add_input("x", INFO)
    a = g.add(LayerType.Activation, "a", [x])
    b = g.add(LayerType.Activation, "b", [x])
    g.add_output("out", a.out())
    g.add_output("out2", b.out())
    verify(g)
    b.inputs = [a.out()]  # by hand: the graph still lists b under x
    with pytest.raises(GraphError, match=r"layer 'b' input 0 and the graph's use-list of 'x':0 disagree"):
        verify(g)


# -- sink_permutes: the worklist version against the rescanning loop it replaced ----------

def _rescanning_sink_permutes(graph, report):
    """sink_permutes as first written: a full rescan after every change."""
    from armnn_import.passes.cleanup import merge_permutes, remove_dead_layers, remove_identities
    from armnn_import.passes.layout import _sink_one

    moved = 0
    for _ in range(4 * len(graph.layers) + 1):
        graph.toposort()
        step = 0
        for layer in list(graph.layers):
            if _sink_one(graph, layer):
                step += 1
                break
        if not step:
            break
        moved += step
        merge_permutes(graph, report)
        remove_identities(graph, report)
    remove_dead_layers(graph, report)
    graph.toposort()
    return moved


PERMS = [(0, 2, 3, 1), (0, 3, 1, 2), (0, 1, 2, 3), (0, 2, 1, 3), (3, 2, 1, 0)]
OPS = st.lists(st.tuples(st.sampled_from(["permute", "permute", "relu", "add", "softmax", "output"]),
                         st.integers(0, 30), st.integers(0, 30)), min_size=1, max_size=30)


def _permute_net(ops):
    """A graph of Permutes, ReLUs, Additions and Softmaxes on 4-D tensors, built from `ops`."""
    from armnn_import.ir.descriptors import ActivationDescriptor, PermuteDescriptor
    from armnn_import.ir.types import ActivationFunction
    from armnn_import.lowering.builder import inverse_perm

    g = Graph()
    ports = [g.add_input("x", TensorInfo((1, 2, 3, 4))), g.add_input("y", TensorInfo((1, 4, 2, 3)))]
    for k, (op, a, b) in enumerate(ops):
        x = ports[a % len(ports)]
        if op == "permute":
            desc = PermuteDescriptor(inverse_perm(PERMS[b % len(PERMS)]))
            ports.append(g.add(LayerType.Permute, f"p{k}", [x], desc).out())
        elif op == "relu":
            ports.append(g.add(LayerType.Activation, f"r{k}", [x], ActivationDescriptor(ActivationFunction.ReLu)).out())
        elif op == "softmax":
            ports.append(g.add(LayerType.Softmax, f"s{k}", [x]).out())
        elif op == "add":
            same = [p for p in ports if p.info.shape == x.info.shape]
            ports.append(g.add(LayerType.Addition, f"a{k}", [x, same[b % len(same)]]).out())
        else:
            g.add_output(f"o{k}", x)
    g.add_output("last", ports[-1])
    return g


@settings(max_examples=200, deadline=None)
@given(OPS)
def test_worklist_sink_permutes_makes_the_rescanning_loops_graph(ops):
    from armnn_import.ir.graph import graph_differences
    from armnn_import.passes.layout import sink_permutes
    from armnn_import.report import Report

    a, b = _permute_net(ops), _permute_net(ops)
    assert _rescanning_sink_permutes(a, Report()) == sink_permutes(b, Report())
    b.toposort()
    names = lambda g: [l.name for l in g.layers]  # noqa: E731
    assert names(a) == names(b)
    assert graph_differences(a, b) == []
    assert b.use_problems() == []
