"""The reference models of test_models/ (ONNX and TFLite manifests), for the
tests that run every one of them (test_verify_cmd.py, test_executor_models.py).

A model the frontends cannot convert yet is listed in NOT_CONVERTING_YET: its
test is a strict expected failure (UnsupportedModelError), so it starts
failing, as a reminder to take it off the list, once the model converts.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "test_models"

# Refused today with UnsupportedModelError (checked at 2026-11-29 by the strict xfails):
NOT_CONVERTING_YET = {
    "tflite/ops/exp.int8.tflite", "tflite/ops/exp.uint8io.tflite",
    "tflite/ops/reduce_prod.int8.tflite", "tflite/ops/reduce_prod.uint8io.tflite",
    # the default 19.02 target has no Gather, ArgMinMax, BatchMatMul or Cast it can use (they convert from
    # --target 20.08 or 23.08 on: tests/test_attention_models.py)
    "onnx/embedding_transformer.onnx", "onnx/argmax_classifier.onnx",
    "tflite/models/embedding_keras.float32.tflite", "tflite/models/batch_matmul.float32.tflite",
    "tflite/models/argmax_head.float32.tflite", "tflite/models/cast_roundtrip.float32.tflite",
    "tflite/ops/arg_min.float32.tflite", "onnx/log_softmax_op12.onnx",  # (ArgMinMax, LogSoftmax: 20.08)
    "tflite/ops/conv_3d.float32.tflite",  # (Convolution3d: 23.08)
    # a bool input used as numbers (a uint8 input + Dequantize) and a run-time GatherElements: 20.08 on
    "onnx/padded_encoder.onnx", "onnx/topk_pooling.onnx",
    # 16x8 mode: the 19.02 format has no QSymmS16 (from --target 20.08 on: tests/tflite/test_keras_layers.py)
    "tflite/models/keras_conv_big.16x8.tflite",
    "tflite/models/keras_gru_unroll_last.16x8.tflite",
    # (a run-time GATHER: from --target 20.08 on, tests/tflite/test_keras_layers.py)
    "tflite/models/keras_embedding.float32.tflite", "tflite/models/keras_embedding.int8floatio.tflite",
    # (a QUANTIZE/DEQUANTIZE island inside: from --target 20.08 on)
    "tflite/models/keras_bilstm_unroll_seq.int8.tflite",
    "tflite/models/keras_tf_argmax.float32.tflite",  # (ArgMinMax: 20.08)
}
# Operators of the 23.08 format only (LogicalBinary, LogicalNot; REVERSE_V2 is a constant-index
# selection before 23.08, so it converts everywhere): refused by the default
# target, converted by --target 23.08 (tests/test_targets.py runs them on Arm NN 23.08)
NEEDS_23_08 = {f"tflite/ops/{op}.{v}.tflite" for op in ("logical_and", "logical_or", "logical_not")
               for v in ("float32", "int8", "uint8", "uint8io")}
NOT_CONVERTING_YET |= NEEDS_23_08


def all_models() -> list[tuple[str, Path, Path]]:
    """(id, model path, .npz path) of every reference model, e.g. 'tflite/ops/abs.float32.tflite'."""
    out = []
    for e in json.loads((ROOT / "onnx" / "manifest.json").read_text())["models"]:
        out.append((f"onnx/{e['file']}", ROOT / "onnx" / e["file"], ROOT / "onnx" / e["data"]))
    for e in json.loads((ROOT / "tflite" / "manifest.json").read_text())["models"]:
        out.append((f"tflite/{e['file']}", ROOT / "tflite" / e["file"], ROOT / "tflite" / e["expected"]))
    return out


def params() -> list:
    """pytest parameters (id, path, npz) with the strict expected failures marked."""
    from armnn_import.errors import UnsupportedModelError

    xfail = pytest.mark.xfail(strict=True, raises=UnsupportedModelError, reason="does not convert yet")
    return [pytest.param(i, p, d, id=i, marks=[xfail] if i in NOT_CONVERTING_YET else [])
            for i, p, d in all_models()]


@lru_cache(maxsize=None)
def converted(path: Path):
    """armnn_import.convert(path), once per test session."""
    import armnn_import
    return armnn_import.convert(path)


def flip_weight(result, layer_type):
    """Make one weight of the middle layer of `layer_type` ten times larger, the other sign
    (a broken network that verify must fail). Returns that layer."""
    import numpy as np
    from armnn_import.ir.types import ConstTensor
    layers = [l for l in result.network.layers if l.type == layer_type]
    layer = layers[len(layers) // 2]
    w = layer.tensors["weights"]
    data = w.data.copy()
    flat = data.reshape(-1)
    k = int(np.argmax(np.abs(flat)))
    flat[k] = -10 * flat[k]
    layer.tensors["weights"] = ConstTensor(data, w.info)
    return layer
