"""passes/fc_bias.py: the scale-1 shift after a bias-free Float32 FullyConnected becomes its
bias. Each file runs on the real Arm NN runtimes (19.02 and 20.08 files on 20.08 and 23.08,
23.08 files on 23.08): its outputs are byte-identical to the same conversion without the pass
(the same float addition, FullyConnected.cpp vs the Addition) and match LiteRT / onnxruntime.
A FullyConnected with a bias of its own, one whose output has another reader, and a Float16
network keep the shift."""
from __future__ import annotations

import collections
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import armnn_import
import armnn_import.passes as passes
from armnn_import.ir.types import LayerType as L
from armnn_import.verify_cmd import Tolerance, verify

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from reference_models import ROOT  # noqa: E402

TARGETS = {"20.08": ("19.02", "20.08"), "23.08": ("19.02", "20.08", "23.08")}
KERAS = "tflite/models/keras_reshape_permute_flatten.float32.tflite"
# reference models the pass changes (scripts/output_hashes.py): their dense layers are
# MatMul + Add (ONNX) or a bias-free FULLY_CONNECTED + ADD (TFLite)
CHANGED = [KERAS, "tflite/models/keras_layernorm.float32.tflite", "onnx/attention_block.onnx",
           "onnx/dynamo_encoder.onnx", "onnx/dynamo_encoder_op23.onnx", "onnx/embedding_transformer.onnx",
           "onnx/torch_encoder_layer_dynamic.onnx", "onnx/torch_encoder_layer_op13.onnx",
           "onnx/torch_encoder_layer_op17.onnx", "onnx/transformer_encoder.onnx"]
NEEDS_20_08 = {"onnx/embedding_transformer.onnx"}  # (Gather: not in the 19.02 format)


def _without_pass(monkeypatch):
    monkeypatch.setattr(passes, "PIPELINE", tuple(p for p in passes.PIPELINE if p[0] != "shifts_into_fc"))


def _both(model, target, monkeypatch, **kw):
    """(with the pass, without it) ConversionResults."""
    new = armnn_import.convert(model, target=target, **kw)
    with monkeypatch.context() as m:
        _without_pass(m)
        old = armnn_import.convert(model, target=target, **kw)
    return new, old


def _inputs(result, npz, rng):
    """The model's reference inputs, then seeded random ones (NaN and infinity among them)."""
    infos = [l.outputs[0] for l in result.network.input_layers]
    ref = np.load(npz)
    sets = [[ref[f"input_{i}"].astype(info.dtype.np_dtype) for i, info in enumerate(infos)]]
    if all(info.dtype.np_dtype == np.float32 for info in infos):
        for scale in (1e-3, 1.0, 1e3):
            sets.append([(rng.standard_normal(info.shape) * scale).astype(np.float32) for info in infos])
        special = [rng.standard_normal(info.shape).astype(np.float32) for info in infos]
        special[0].flat[0], special[0].flat[-1] = np.nan, np.inf
        sets.append(special)
    return sets


def _assert_same_outputs(runner, new, old, sets):
    for xs in sets:
        got, want = runner(new.to_bytes(), xs), runner(old.to_bytes(), xs)
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert a.tobytes() == b.tobytes()


def _npz(model_id):
    path = ROOT / model_id
    return path.with_suffix(".npz")


def test_keras_dense_on_a_3d_input(armnn_release_runner, monkeypatch):
    """16 (19.02), 11 or 10 (20.08, 23.08: the shift as an Addition of a Constant) -> 8 layers: Reshape,
    Transpose, Reshape, FullyConnected (the bias in), Reshape, FullyConnected."""
    path = ROOT / KERAS
    for target in TARGETS[armnn_release_runner.release]:
        new, old = _both(path, target, monkeypatch)
        kinds = collections.Counter(l.type for l in new.network.layers)
        before = {"19.02": 16, "20.08": 11, "23.08": 10}[target]
        assert len(new.network.layers) == 8 and len(old.network.layers) == before, (target, kinds)
        assert kinds[L.FullyConnected] == 2 and kinds[L.Reshape] == 3
        assert not {L.Addition, L.BatchNormalization, L.StridedSlice} & set(kinds)
        fc = next(l for l in new.network.layers if l.type == L.FullyConnected)
        assert fc.desc.bias_enabled and fc.tensors["biases"].data.shape == (3,)
        _assert_same_outputs(armnn_release_runner, new, old, _inputs(new, _npz(KERAS), np.random.default_rng(0)))
        result = verify(path, new.to_bytes(), inputs=[str(_npz(KERAS))], tolerance=Tolerance(rtol=1e-5, atol=1e-6),
                        armnn_runtime=armnn_release_runner.path)
        assert result.ok, result.format()


@pytest.mark.parametrize("model_id", CHANGED[1:])
def test_changed_reference_models_give_the_same_bytes(model_id, armnn_release_runner, monkeypatch):
    rng = np.random.default_rng(1)
    for target in TARGETS[armnn_release_runner.release]:
        if target == "19.02" and model_id in NEEDS_20_08:
            continue
        new, old = _both(ROOT / model_id, target, monkeypatch)
        assert len(new.network.layers) < len(old.network.layers), target
        assert new.report.passes.get("shifts_into_fc", 0) > 0
        _assert_same_outputs(armnn_release_runner, new, old, _inputs(new, _npz(model_id), rng))


def _dense_model(tmp_path, kind):
    """x -> MatMul (or Gemm with a bias) -> Add of a [6] constant; 'second_reader': the MatMul's
    output also feeds a Relu graph output."""
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
             for n, s in (("w", (8, 6)), ("b", (6,)), ("c", (6,)))]
    mm = helper.make_node("Gemm", ["x", "w", "b"], ["m"]) if kind == "gemm_bias" else \
        helper.make_node("MatMul", ["x", "w"], ["m"])
    nodes, outs = [mm, helper.make_node("Add", ["m", "c"], ["y"])], ["y"]
    if kind == "second_reader":
        nodes.append(helper.make_node("Relu", ["m"], ["r"]))
        outs.append("r")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, (2, 4, 8) if kind == "matmul_3d" else (4, 8))
    g = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
                          inits)
    path = tmp_path / f"{kind}.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


# kind -> layers with the pass (Input, [Reshape,] FullyConnected, [Reshape,] Output), or None: kept
DENSE = {"matmul": 3, "matmul_3d": 5, "gemm_bias": None, "second_reader": None}


@pytest.mark.parametrize("kind", sorted(DENSE))
def test_onnx_matmul_add(kind, armnn_release_runner, monkeypatch, tmp_path):
    path = _dense_model(tmp_path, kind)
    for target in TARGETS[armnn_release_runner.release]:
        new, old = _both(path, target, monkeypatch)
        if DENSE[kind] is None:
            assert new.to_bytes() == old.to_bytes()
        else:
            assert len(new.network.layers) == DENSE[kind], new.network.summary()
        result = verify(path, new.to_bytes(), tolerance=Tolerance(rtol=1e-5, atol=1e-5),
                        armnn_runtime=armnn_release_runner.path)
        assert result.ok, result.format()


def test_a_float16_network_keeps_the_shift(monkeypatch, tmp_path):
    """Float16: the FullyConnected's output rounds to Float16 before the shift is added."""
    path = _dense_model(tmp_path, "matmul")
    new, old = _both(path, "23.08", monkeypatch, fp16=True)
    assert new.to_bytes() == old.to_bytes()
    assert "shifts_into_fc" not in new.report.passes
