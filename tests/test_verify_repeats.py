"""verify() on networks of repeated blocks: a layer whose checked values equal those of a layer
that passed is not checked again (ir/verify.py _layer_problems), so these make sure that a
broken layer among many equal good ones, or equal broken ones, are all still reported, and that
values that cannot be compared are checked on their own."""
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from armnn_import.errors import GraphError
from armnn_import.ir import (ActivationDescriptor, ActivationFunction, ConstTensor, Convolution2dDescriptor,
                             LayerType, ReshapeDescriptor, TensorInfo)
from armnn_import.ir.graph import Graph
from armnn_import.ir.verify import verify

X = TensorInfo((1, 2, 4, 4))


def chain(n: int) -> tuple[Graph, list]:
    """input -> n x (Convolution2d 2->2 3x3 pad 1, Relu) -> output: blocks of equal values."""
    g = Graph()
    y = g.add_input("x", X)
    blocks = []
    for k in range(n):
        conv = g.add(LayerType.Convolution2d, f"conv{k}", [y],
                     Convolution2dDescriptor(1, 1, 1, 1, 1, 1),
                     tensors={"weights": ConstTensor(np.full((2, 2, 3, 3), 0.1, np.float32))})
        relu = g.add(LayerType.Activation, f"relu{k}", [conv.out()], ActivationDescriptor(ActivationFunction.ReLu))
        blocks.append((conv, relu))
        y = relu.out()
    g.add_output("y", y)
    return g, blocks


def named(err: GraphError) -> set[str]:
    return set(re.findall(r"layer '([^']+)'", str(err)))


def test_equal_good_blocks_pass():
    g, _ = chain(50)
    verify(g)


@settings(max_examples=30, deadline=None)
@given(st.sets(st.integers(0, 19), min_size=1, max_size=5), st.sampled_from(["stride", "shape", "weights"]))
def test_broken_layers_among_equal_ones_are_all_reported(broken, how):
    g, blocks = chain(20)
    for k in broken:
        conv, relu = blocks[k]
        if how == "stride":
            conv.desc.stride_x = 0  # (every broken layer equal to the others broken so)
        elif how == "shape":
            relu.outputs = [TensorInfo((1, 2, 4, 5))]
        else:
            conv.tensors["weights"] = ConstTensor(np.zeros((2, 3, 3, 3), np.float32))
    with pytest.raises(GraphError) as e:
        verify(g)
    want = {f"conv{k}" for k in broken} if how != "shape" else {f"relu{k}" for k in broken}
    if how == "shape":  # the next conv reads a 4x5 input: its own output no longer matches its inputs
        assert want <= named(e.value)
    else:
        assert named(e.value) == want


def test_a_changed_or_unhashable_value_is_checked_on_its_own():
    """Two equal Reshapes pass; one given a list (unhashable) still passes, checked on its own;
    one given a shape of other values is reported, though its twin passed before."""
    g = Graph()
    x = g.add_input("x", TensorInfo((2, 3)))
    a = g.add(LayerType.Reshape, "a", [x], ReshapeDescriptor((3, 2)))
    b = g.add(LayerType.Reshape, "b", [x], ReshapeDescriptor((3, 2)))
    g.add_output("ya", a.out())
    g.add_output("yb", b.out())
    verify(g)
    b.desc.target_shape = [3, 2]  # a list: unhashable, so b is checked on its own, and passes
    verify(g)
    b.desc.target_shape = (3, 2.5)
    with pytest.raises(GraphError, match="'b'"):
        verify(g)
