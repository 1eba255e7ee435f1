"""The 23.08 format's Reduce, LogicalBinary, Tile and ReverseV2 layers beyond the layer table
(tests/layer_cases.py): edge values where the numpy executor must follow Arm NN 23.08's CpuRef
rather than numpy, what verify() refuses, and ONNX models through the CLI on Arm NN 23.08
against onnxruntime."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from armnn_import import cli
from armnn_import.errors import GraphError
from armnn_import.executor import run
from armnn_import.ir import ConstTensor, Graph, LayerType, TensorInfo
from armnn_import.ir.descriptors import LogicalBinaryDescriptor, ReduceDescriptor, TileDescriptor
from armnn_import.ir.graph import graph_differences
from armnn_import.ir.types import DataType, LogicalBinaryOperation, ReduceOperation
from armnn_import.ir.verify import verify
from armnn_import.serialize import read, write


def _reduce_graph():
    g = Graph("23.08")
    x = g.add_input("x", TensorInfo((2, 3, 4)))
    for op in (ReduceOperation.Max, ReduceOperation.Min, ReduceOperation.Sum, ReduceOperation.Prod,
               ReduceOperation.Mean):
        g.add_output(op.name, g.add(LayerType.Reduce, op.name, [x], ReduceDescriptor(False, (2,), op)).out())
    axes = g.add(LayerType.Constant, "axes", [], tensors={"input": ConstTensor(np.array([1, -1, 1], np.int32))})
    g.add_output("rev", g.add(LayerType.ReverseV2, "rev", [x, axes.out()]).out())
    return g


def test_reduce_and_reverse_edge_values_follow_armnn_23_08(armnn_runner_for):
    """Max/Min start at -/+FLT_MAX and never take a NaN (so all -inf gives -FLT_MAX, not -inf);
    a sum accumulates in float32 in input order; an axis given twice is reversed once."""
    runner = armnn_runner_for("23.08")
    g = _reduce_graph()
    verify(g)
    x = np.random.default_rng(5).standard_normal((2, 3, 4)).astype(np.float32)
    x[0, 0] = -np.inf
    x[0, 1, 1] = np.nan
    x[1, 0] = [1e8, 1.0, -1e8, 1.0]          # float32 order of summation matters
    x[1, 1] = [3.0, 1e-8, 2.0, 0.5]
    data = write(g)
    assert graph_differences(g, read(data)) == []
    got = runner(data, [x])
    want = run(g, [x])
    assert want[0][0, 0] == -np.finfo(np.float32).max and not np.isnan(want[0][0, 1])
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(a, b, err_msg=f"output {i}")


def test_verify_refuses_what_23_08_cannot_hold():
    g = Graph("23.08")
    x = g.add_input("x", TensorInfo((2, 3)))
    y = g.add_input("y", TensorInfo((2, 3)))
    g.add(LayerType.LogicalBinary, "and", [x, y], LogicalBinaryDescriptor(LogicalBinaryOperation.LogicalAnd),
          outputs=[TensorInfo((2, 3), DataType.Boolean)])
    with pytest.raises(GraphError, match="Boolean"):
        verify(g)
    g = Graph("23.08")
    x = g.add_input("x", TensorInfo((2, 3)))
    g.add(LayerType.Tile, "tile", [x], TileDescriptor((2,)), outputs=[TensorInfo((4, 3))])
    with pytest.raises(GraphError, match="multiples"):
        verify(g)
    g = Graph("20.08")
    x = g.add_input("x", TensorInfo((2, 3)))
    g.add_output("y", g.add(LayerType.Reduce, "sum", [x], ReduceDescriptor(True, (1,))).out())
    with pytest.raises(GraphError, match="23.08"):
        verify(g)


def _onnx(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("case", ["prod64", "and_or_xor_not", "tile", "concat_const_inf"])
def test_onnx_on_armnn_23_08_through_the_cli(case, armnn_runner_for, tmp_path):
    """Operators the 23.08 target takes that the seed refuses (a product of 64 elements, logical
    operators on Boolean inputs) or lowers to more layers (Tile), as the CLI writes them."""
    runner = armnn_runner_for("23.08")
    rng = np.random.default_rng(3)
    V = helper.make_tensor_value_info
    if case == "prod64":
        m = _onnx([helper.make_node("ReduceProd", ["x"], ["y"], axes=[1, 2], keepdims=0)],
                  [V("x", TensorProto.FLOAT, [2, 8, 8])], [V("y", TensorProto.FLOAT, [2])])
        feeds = {"x": (1 + 0.05 * rng.standard_normal((2, 8, 8))).astype(np.float32)}
        layer = LayerType.Reduce
    elif case == "and_or_xor_not":
        nodes = [helper.make_node("And", ["a", "b"], ["t"]), helper.make_node("Or", ["t", "c"], ["u"]),
                 helper.make_node("Xor", ["u", "a"], ["v"]), helper.make_node("Not", ["v"], ["y"])]
        m = _onnx(nodes, [V("a", TensorProto.BOOL, [2, 3, 4]), V("b", TensorProto.BOOL, [3, 1]),
                          V("c", TensorProto.BOOL, [2, 1, 4])], [V("y", TensorProto.BOOL, [2, 3, 4])])
        feeds = {"a": rng.random((2, 3, 4)) < 0.5, "b": rng.random((3, 1)) < 0.5, "c": rng.random((2, 1, 4)) < 0.5}
        layer = LayerType.LogicalBinary
    elif case == "concat_const_inf":
        # at 19.02 the constant is a FullyConnected of x's first element (0 * inf = NaN leaks in);
        # from 23.08 on it is a Constant layer
        c = helper.make_tensor("c", TensorProto.FLOAT, [2, 2], [1.5, -2.0, 3.0, 0.25])
        m = _onnx([helper.make_node("Concat", ["x", "c"], ["y"], axis=0)], [V("x", TensorProto.FLOAT, [3, 2])],
                  [V("y", TensorProto.FLOAT, [5, 2])], [c])
        feeds = {"x": np.array([[np.inf, 1.0], [2.0, -np.inf], [0.5, 4.0]], np.float32)}
        layer = LayerType.Constant
    else:
        reps = helper.make_tensor("reps", TensorProto.INT64, [3], [2, 1, 3])
        m = _onnx([helper.make_node("Tile", ["x", "reps"], ["y"])], [V("x", TensorProto.FLOAT, [2, 3, 4])],
                  [V("y", TensorProto.FLOAT, [4, 3, 12])], [reps])
        feeds = {"x": rng.standard_normal((2, 3, 4)).astype(np.float32)}
        layer = LayerType.Tile
    src, out = tmp_path / "m.onnx", tmp_path / "m.armnn"
    onnx.save(m, src)
    assert cli.main([str(src), "-o", str(out), "-q"]) != 0 or case in ("tile", "concat_const_inf")  # refused or decomposed
    assert cli.main([str(src), "-o", str(out), "-q", "--target", "23.08"]) == 0
    graph = read(out.read_bytes())
    assert any(l.type == layer for l in graph.layers)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    arrays = [feeds[l.name] for l in graph.input_layers]
    got = runner(str(out), arrays)[0].reshape(want.shape)
    if want.dtype == bool:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(run(graph, arrays)[0].reshape(want.shape), got)


@pytest.mark.parametrize("dtype", [DataType.Float32, DataType.QuantisedAsymm8], ids=lambda d: d.name)
@pytest.mark.parametrize("layer", ["Reduce", "Tile", "ReverseV2"])
def test_random_configurations_on_armnn_23_08(layer, dtype, armnn_runner_for):
    """Ranks 1-4, random axes (ReverseV2: some negative), keep_dims, operations and multiples
    (fixed seed): the executor follows Arm NN 23.08 on every one."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parent))
    from layer_cases import Case, compare, random_network
    runner = armnn_runner_for("23.08")
    lt = LayerType[layer]
    graph, inputs = random_network(lt, dtype, seed=int(lt) * 10 + int(dtype), target="23.08")
    assert len(graph.output_layers) >= 12
    verify(graph)
    data = write(graph)
    assert graph_differences(graph, read(data)) == []
    got = runner(data, inputs)
    assert compare(Case(lt, dtype, target="23.08"), got, run(graph, inputs)) == []
