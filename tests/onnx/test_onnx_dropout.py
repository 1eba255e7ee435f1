"""Dropout at inference (opset 12+ with ratio and training_mode inputs and a mask
output): the identity, its mask all true; run on Arm NN against onnxruntime."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import armnn_import
from armnn_import.errors import UnsupportedModelError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ort_check import check  # noqa: E402

X = np.random.default_rng(7).standard_normal((2, 3, 4)).astype(np.float32)


def dropout_model(inits, graph_inputs=(), mask=None, opset=13):
    """y = Dropout(x, ratio, training_mode); mask None (no mask output), 'out' (a graph
    output) or 'used' (a Cast of it is added to y)."""
    ins = ["x", "ratio" if "ratio" in inits or "ratio" in graph_inputs else "",
           "t" if "t" in inits or "t" in graph_inputs else ""]
    while ins and not ins[-1]:
        ins.pop()
    outs = ["d"] + (["m"] if mask else [])
    nodes = [h.make_node("Dropout", ins, outs, name="drop")]
    outputs = [h.make_tensor_value_info("y", TP.FLOAT, None)]
    if mask == "used":
        nodes += [h.make_node("Cast", ["m"], ["mf"], to=TP.FLOAT), h.make_node("Add", ["d", "mf"], ["y"])]
    else:
        nodes.append(h.make_node("Identity", ["d"], ["y"]))
        if mask == "out":
            outputs.append(h.make_tensor_value_info("m", TP.BOOL, None))
    types = {"x": (TP.FLOAT, X.shape), "ratio": (TP.FLOAT, []), "t": (TP.BOOL, [])}
    g = h.make_graph(nodes, "dropout", [h.make_tensor_value_info(n, *types[n]) for n in ("x",) + tuple(graph_inputs)],
                     outputs, [nh.from_array(np.asarray(v), n) for n, v in inits.items()])
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


@pytest.mark.parametrize("inits,mask", [
    ({"ratio": np.float32(0.3)}, "out"),
    ({"ratio": np.float32(0.3), "t": np.bool_(False)}, "used"),
    ({"ratio": np.float32(0.0), "t": np.bool_(True)}, "used"),
    ({}, None),
], ids=["ratio-mask-out", "mask-used", "training-ratio-0", "defaults"])
def test_dropout_is_the_identity_with_an_all_true_mask(armnn_runner, inits, mask):
    check(armnn_runner, dropout_model(inits, mask=mask), {"x": X}, constant_layers_ok=False)


def test_dropout_with_a_one_element_ratio(armnn_runner):
    """onnxruntime refuses a ratio of shape (1,) ("must be a scalar"); the converter reads
    its one value (the TypeError of issue 17), so the expected values are the identity's."""
    m = dropout_model({"ratio": np.array([0.0], np.float32), "t": np.array([True])}, mask="out")
    check(armnn_runner, m, {"x": X}, want=[X, np.ones(X.shape, bool)])


def test_dropout_ratio_fed_at_run_time(armnn_runner):
    """A ratio computed at run time does not matter while training_mode is false."""
    m = dropout_model({"t": np.bool_(False)}, graph_inputs=("ratio",), mask="out")
    result = armnn_import.convert(m)
    assert [l.name for l in result.network.input_layers] == ["x"]  # ratio feeds nothing
    got = armnn_runner(result.to_bytes(), [X])
    np.testing.assert_array_equal(got[0].reshape(X.shape), X)
    assert got[1].astype(bool).all() and got[1].size == X.size


@pytest.mark.parametrize("inits,graph_inputs,reason", [
    ({"ratio": np.float32(0.5), "t": np.bool_(True)}, (), "training mode is random"),
    ({"ratio": np.float32(0.5)}, ("t",), "training_mode is computed at run time"),
    ({"ratio": np.array([0.1, 0.2], np.float32)}, (), "ratio has 2 elements"),
], ids=["training", "runtime-training", "ratio-not-scalar"])
def test_dropout_refusals_are_refusals_not_internal_errors(inits, graph_inputs, reason):
    with pytest.raises(UnsupportedModelError) as info:
        armnn_import.convert(dropout_model(inits, graph_inputs=graph_inputs))
    (p,) = info.value.problems
    assert p.op == "Dropout" and reason in p.reason and "internal" not in p.reason, p
