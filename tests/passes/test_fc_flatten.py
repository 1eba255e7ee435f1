"""passes/fc_flatten.py: a Reshape that flattens a 2-D or 4-D tensor to [dim 0, rest] for
FullyConnecteds only goes (the FC flattens its input itself), and a Gather's index-merging
Reshape moves onto the indices. Each model is converted by the CLI, its written file runs on
the real Arm NN runtimes (19.02 and 20.08 files on 20.08 and 23.08, 23.08 files on 23.08) and
matches onnxruntime; the numpy executor matches too. The negative cases keep their Reshape."""
from __future__ import annotations

import collections
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from armnn_import import cli
from armnn_import.ir.types import LayerType as L
from armnn_import.passes.fc_flatten import is_fc_flatten
from armnn_import.serialize import read
from armnn_import.verify_cmd import Tolerance, verify

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from reference_models import ROOT  # noqa: E402
from test_targets import RICH_NETWORK_LSB  # noqa: E402
from test_verify_cmd import PER_CHANNEL_REQUANTIZED_LSB  # noqa: E402

TARGETS = {"20.08": ("19.02", "20.08"), "23.08": ("19.02", "20.08", "23.08")}


def _init(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def _gemm_model(tmp_path, x_shape, nodes, flat_out, n_in, extra_outputs=(), extra_nodes=()):
    rng = np.random.default_rng(len(nodes) + n_in)
    w, b = rng.standard_normal((n_in, 5)).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    nodes = list(nodes) + [helper.make_node("Gemm", [flat_out, "w", "b"], ["y"])] + list(extra_nodes)
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    outs += [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in extra_outputs]
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)], outs,
                          [_init("w", w), _init("b", b), _init("shape", np.array([0, -1], np.int64))])
    path = tmp_path / "model.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


CASES = {  # name -> (x shape, nodes, Gemm input, Gemm inputs, extra outputs, extra nodes, Reshapes left)
    "flatten_4d": ((2, 3, 4, 5), [helper.make_node("Flatten", ["x"], ["f"], axis=1)], "f", 60, (), (), 0),
    "reshape_4d": ((2, 3, 4, 5), [helper.make_node("Reshape", ["x", "shape"], ["f"])], "f", 60, (), (), 0),
    "flatten_not_dim0": ((2, 3, 4, 5), [helper.make_node("Flatten", ["x"], ["f"], axis=2)], "f", 20, (), (), 1),
    "flatten_3d": ((2, 3, 4), [helper.make_node("Flatten", ["x"], ["f"], axis=1)], "f", 12, (), (), 1),
    "second_reader": ((2, 3, 4, 5), [helper.make_node("Flatten", ["x"], ["f"], axis=1)], "f", 60, ("r",),
                      [helper.make_node("Relu", ["f"], ["r"])], 1),
    "graph_output": ((2, 3, 4, 5), [helper.make_node("Flatten", ["x"], ["f"], axis=1)], "f", 60, ("f",), (), 1),
}


def _convert(path, out, target):
    assert cli.main([str(path), "-o", str(out), "-q", "--target", target]) == 0
    return collections.Counter(l.type for l in read(out.read_bytes()).layers)


def _check(path, out, runner):
    for runtime in (runner.path, None):  # the release's CpuRef, then the numpy executor
        result = verify(path, str(out), tolerance=Tolerance(rtol=1e-4, atol=1e-4), armnn_runtime=runtime)
        assert result.ok, result.format()


@pytest.mark.parametrize("case", sorted(CASES))
def test_flatten_before_gemm(case, armnn_release_runner, tmp_path):
    x_shape, nodes, flat, n_in, extra_out, extra_nodes, left = CASES[case]
    path = _gemm_model(tmp_path, x_shape, nodes, flat, n_in, extra_out, extra_nodes)
    for target in TARGETS[armnn_release_runner.release]:
        out = tmp_path / f"m_{target}.armnn"
        types = _convert(path, out, target)
        assert types[L.Reshape] == left, (target, types)
        assert types[L.FullyConnected] == 1
        _check(path, out, armnn_release_runner)


def _embedding_model(tmp_path, idx_shape, merged, also_output=False):
    """Gather(table [10, 16], ids) -> Reshape to `merged` -> Gemm -> Reshape back (the Gather's
    output also a graph output if `also_output`)."""
    rng = np.random.default_rng(3)
    n_in = merged[-1]
    table = rng.standard_normal((10, 16)).astype(np.float32)
    w, b = rng.standard_normal((n_in, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    back = list(idx_shape) + [4] if n_in == 16 else [merged[0], 4]
    nodes = [helper.make_node("Gather", ["table", "ids"], ["e"], axis=0),
             helper.make_node("Reshape", ["e", "merged"], ["f"]),
             helper.make_node("Gemm", ["f", "w", "b"], ["g"]),
             helper.make_node("Reshape", ["g", "back"], ["y"])]
    inits = [_init("table", table), _init("w", w), _init("b", b),
             _init("merged", np.array(merged, np.int64)), _init("back", np.array(back, np.int64))]
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("ids", TensorProto.INT64, idx_shape)],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                           for o in ["y"] + (["e"] if also_output else [])], inits)
    path = tmp_path / "embedding.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


@pytest.mark.parametrize("idx_shape", [(2, 6), (3, 2, 2)])
def test_gather_reshape_moves_onto_the_indices(idx_shape, armnn_release_runner, tmp_path):
    path = _embedding_model(tmp_path, idx_shape, [int(np.prod(idx_shape)), 16])
    for target in TARGETS[armnn_release_runner.release][1:]:  # (19.02 has no Gather of run-time indices)
        out = tmp_path / f"m_{target}.armnn"
        _convert(path, out, target)
        net = read(out.read_bytes())
        gather = next(l for l in net.layers if l.type == L.Gather)
        if target == "23.08":  # (23.08's CpuRef drops the rows' Reshape itself, not one of an Input)
            assert gather.inputs[1].layer.type == L.Input and gather.outputs[0].rank == len(idx_shape) + 1
        else:
            assert gather.inputs[1].layer.type == L.Reshape  # the indices are reshaped, not the rows
            assert gather.outputs[0].shape == (int(np.prod(idx_shape)), 16)
            assert net.consumers(gather.out())[0][0].type == L.FullyConnected
        _check(path, out, armnn_release_runner)


def _mean_gemm_model(tmp_path, keepdims_then):
    """ReduceMean(keepdims=0) over H, W -> Reshape back to [N, C, 1, 1] -> a 1x1 Conv (what a
    per-channel FullyConnected becomes), or -> Reshape to [N, C, 2, 1] (not the keep_dims shape)."""
    rng = np.random.default_rng(4)
    w = rng.standard_normal((5, 6, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[2, 3], keepdims=0),
             helper.make_node("Reshape", ["m", "s"], ["r"]),
             helper.make_node("Conv", ["r", "w"], ["y"])]
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (2, 6, 4, 3))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [_init("w", w if keepdims_then else w[:, :3]), _init("s", np.array(
                              [2, 6, 1, 1] if keepdims_then else [2, 3, 2, 1], np.int64))])
    path = tmp_path / "mean.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


@pytest.mark.parametrize("keepdims_then", [True, False], ids=["keep_dims_shape", "other_shape"])
def test_mean_then_reshape_to_its_keep_dims_shape(keepdims_then, armnn_release_runner, tmp_path):
    path = _mean_gemm_model(tmp_path, keepdims_then)
    for target in TARGETS[armnn_release_runner.release]:
        out = tmp_path / f"m_{target}.armnn"
        types = _convert(path, out, target)
        assert types[L.Reshape] == (0 if keepdims_then else 1), (target, types)
        _check(path, out, armnn_release_runner)


# reference model, target -> Reshapes left (main's files had more: the report lists them)
REFERENCE = {
    ("tflite/models/mobilenet_v1_mini.int8.tflite", "20.08"): 1,  # (was 2: Mean keeps its dims)
    ("tflite/models/mobilenet_v1_mini.int8.tflite", "23.08"): 1,
    ("tflite/models/densenet_mini.float32.tflite", "23.08"): 0,  # (was 1: Pooling2d -> FC directly)
    ("tflite/models/resnet_mini.float32.tflite", "23.08"): 0,
    ("tflite/models/embedding_keras.float32.tflite", "20.08"): 3,  # (the indices', the output's and
    # the table's: 20.08 Constants are [1, 1, rows, last] + a Reshape, NetBuilder.constant_layer)
    ("tflite/models/embedding_keras.float32.tflite", "23.08"): 2,
    ("onnx/resnet_small.onnx", "19.02"): None,  # (was 1 more: Flatten -> Gemm)
    ("onnx/yolo_head_op17.onnx", "20.08"): None,
    ("tflite/ops/conv_fc.uint8.tflite", "19.02"): None,
}


@pytest.mark.parametrize("model_id, target", sorted(REFERENCE))
def test_reference_models_lose_the_reshapes(model_id, target, armnn_release_runner, tmp_path):
    if target not in TARGETS[armnn_release_runner.release]:
        pytest.skip(f"a {target} file does not run on Arm NN {armnn_release_runner.release}")
    path = ROOT / model_id
    out = tmp_path / "model.armnn"
    types = _convert(path, out, target)
    if REFERENCE[model_id, target] is not None:
        assert types[L.Reshape] == REFERENCE[model_id, target], types
    net = read(out.read_bytes())
    assert not [r for r in net.layers if r.type == L.Reshape and is_fc_flatten(net, r)]
    tol = Tolerance(atol=1e-4, lsb=RICH_NETWORK_LSB.get(model_id, 1) if target != "19.02" else
                    PER_CHANNEL_REQUANTIZED_LSB.get(model_id, 1))
    result = verify(path, str(out), tolerance=tol, armnn_runtime=armnn_release_runner.path)
    assert result.ok, result.format()


@pytest.mark.parametrize("case", ["rows_split", "gather_is_an_output"])
def test_gather_reshape_stays(case, armnn_release_runner, tmp_path):
    """[2, 6, 16] -> [2, 96] splits the rows (and is a 3-D flatten the FC cannot take); a Gather
    that is also a graph output keeps its shape (moving the Reshape would add one)."""
    merged = [2, 96] if case == "rows_split" else [12, 16]
    path = _embedding_model(tmp_path, (2, 6), merged, also_output=case == "gather_is_an_output")
    for target in TARGETS[armnn_release_runner.release][1:]:
        out = tmp_path / f"m_{target}.armnn"
        _convert(path, out, target)
        net = read(out.read_bytes())
        gather = next(l for l in net.layers if l.type == L.Gather)
        assert gather.outputs[0].shape == (2, 6, 16) and gather.inputs[1].layer.type == L.Input
        _check(path, out, armnn_release_runner)
