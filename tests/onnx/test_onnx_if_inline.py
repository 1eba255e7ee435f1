"""If with a constant condition (frontends/onnx/control.py): torch.onnx.export writes one for each
shape test of the Python code (silero VAD, shipped in the silero-vad wheel, has seven). With the
input shapes pinned the condition folds and the branch it takes is lowered in place of the If:
checked on the real runtimes against onnxruntime. A condition computed from data stays refused.
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from armnn_import import cli

PAIRS = [("19.02", "20.08"), ("20.08", "20.08"), ("23.08", "23.08")]


def _const(name, value, dtype=np.int64):
    return helper.make_node("Constant", [], [name], value=onnx.numpy_helper.from_array(np.array(value, dtype), name))


def _branch(name, nodes, out, inits=()):
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)],
                             initializer=list(inits))


def _model(dim_test: int, taken_inner: bool = True) -> onnx.ModelProto:
    """y = If(x.shape[1] == dim_test) then If(inner) ... else ...: a nested If in the then branch,
    an initializer inside a branch, and both branches reading the outer x."""
    w = onnx.numpy_helper.from_array(np.linspace(-1, 1, 4, dtype=np.float32).reshape(1, 1, 4), "w")
    inner_then = _branch("inner_then", [helper.make_node("Mul", ["x", "w"], ["t_mul"]),
                                        helper.make_node("Relu", ["t_mul"], ["t_out"])], "t_out", [w])
    inner_else = _branch("inner_else", [helper.make_node("Sigmoid", ["x"], ["e_out"])], "e_out")
    outer_then = _branch("outer_then", [
        _const("inner_cond", taken_inner, np.bool_),
        helper.make_node("If", ["inner_cond"], ["inner_y"], then_branch=inner_then, else_branch=inner_else),
        helper.make_node("Add", ["inner_y", "x"], ["then_out"])], "then_out")
    outer_else = _branch("outer_else", [helper.make_node("Neg", ["x"], ["else_out"])], "else_out")
    nodes = [helper.make_node("Shape", ["x"], ["shape"]), _const("one", 1), _const("dim", dim_test),
             helper.make_node("Gather", ["shape", "one"], ["d1"], axis=0),
             helper.make_node("Equal", ["d1", "dim"], ["cond"]),
             helper.make_node("If", ["cond"], ["y"], then_branch=outer_then, else_branch=outer_else)]
    graph = helper.make_graph(nodes, "if_inline", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


def _convert(tmp_path, model, target):
    src, out = tmp_path / "m.onnx", tmp_path / f"m-{target}.armnn"
    onnx.save(model, str(src))
    code = cli.main([str(src), "-o", str(out), "--target", target, "-q"])
    return code, out


@pytest.mark.parametrize("target, release", PAIRS)
@pytest.mark.parametrize("dim_test, inner", [(3, True), (3, False), (5, True)], ids=["then-then", "then-else", "else"])
def test_constant_if_takes_its_branch_on_the_runtime(tmp_path, target, release, dim_test, inner, armnn_runner_for):
    model = _model(dim_test, inner)
    x = np.random.default_rng(0).standard_normal((1, 3, 4)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    code, out = _convert(tmp_path, model, target)
    assert code == 0
    (got,) = armnn_runner_for(release)(out, [x])
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-6)


def test_if_on_data_stays_refused(tmp_path, capsys):
    model = _model(3)
    g = model.graph
    # the condition now comes from the data: x[0, 0, 0] > 0
    g.node[3].CopyFrom(helper.make_node("ReduceMax", ["x"], ["d1"], keepdims=0))
    g.node[4].CopyFrom(helper.make_node("Greater", ["d1", "zero"], ["cond"]))
    g.node[2].CopyFrom(helper.make_node("Constant", [], ["zero"], value_float=0.0))
    code, _ = _convert(tmp_path, model, "23.08")
    err = capsys.readouterr().err
    assert code == 1
    assert "If (node" in err and "its condition is computed at run time, and Arm NN has no control flow" in err


def test_refused_node_inside_the_taken_branch_gives_its_own_reason(tmp_path, capsys):
    model = _model(5)  # the else branch: Neg becomes Erf, which no target has
    (else_branch,) = [a.g for a in model.graph.node[5].attribute if a.name == "else_branch"]
    else_branch.node[0].op_type = "Erf"
    code, _ = _convert(tmp_path, model, "23.08")
    err = capsys.readouterr().err
    assert code == 1
    assert "Erf (node" in err and "no error function" in err and "If (node" not in err


def test_branch_out_of_order_is_a_bad_model(tmp_path, capsys):
    model = _model(5)  # the else branch: y = Neg(t) where t = Neg(x) comes after it
    (else_branch,) = [a.g for a in model.graph.node[5].attribute if a.name == "else_branch"]
    nodes = [helper.make_node("Neg", ["t"], ["else_out"]), helper.make_node("Neg", ["x"], ["t"])]
    del else_branch.node[:]
    else_branch.node.extend(nodes)
    code, _ = _convert(tmp_path, model, "23.08")
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert "its else_branch output 'else_out' is never computed" in err and "[bad-model]" in err
