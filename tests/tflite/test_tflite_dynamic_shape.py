"""SHAPE of a dynamic-batch input (test_models/tflite/models/shape_flatten_head, made by
scripts/gen_catalogue_models.py: tf.reshape(x, [tf.shape(x)[0], -1]) + Dense). SHAPE is evaluated
at conversion, so --input-shape chooses the batch the RESHAPE flattens; TensorFlow stores that
RESHAPE's output as [1, 1] with the signature [-1, -1], a placeholder the computed shape replaces
where it fits the signature's static dimensions (and only there)."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfl_builder import ModelBuilder, run_litert  # noqa: E402

import armnn_import  # noqa: E402
from armnn_import import cli  # noqa: E402
from armnn_import.errors import ConversionError  # noqa: E402
from armnn_import.ir.types import LayerType  # noqa: E402
from armnn_import.serialize import read  # noqa: E402

MODEL = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                     "test_models", "tflite", "models", "shape_flatten_head.float32.tflite")


@pytest.mark.parametrize("batch", [1, 3])
def test_shape_follows_the_chosen_batch_on_the_runtime(batch, armnn_runner, tmp_path):
    out = tmp_path / "m.armnn"
    assert cli.main([MODEL, "-o", str(out), "-q", "--input-shape", f"x={batch},4,6"]) == 0
    graph = read(out.read_bytes())
    assert [l.outputs[0].shape for l in graph.layers if l.type == LayerType.Reshape] == [(batch, 24)]
    x = np.random.default_rng(batch).standard_normal((batch, 4, 6)).astype(np.float32)
    with open(MODEL, "rb") as f:
        want, = run_litert(f.read(), [x])  # (LiteRT resized to the batch)
    assert want.shape == (batch, 10)
    got, = armnn_runner(str(out), [x])
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-5)


def _reshape_model(signature):
    mb = ModelBuilder()
    x = mb.input("x", [1, 4, 6], signature=[-1, 4, 6])
    y = mb.op("RESHAPE", [x, mb.const("shape", np.array([1, 24], np.int32))], out_shape=[1, 1])
    mb.tensors[y]["signature"] = signature
    mb.output(mb.op("RELU", [y], out_shape=[1, 1]))
    mb.tensors[mb.outputs[0]]["signature"] = signature
    return mb.build(infer_shapes=False)


def test_a_placeholder_shape_is_replaced_where_the_signature_is_dynamic():
    graph = armnn_import.convert(_reshape_model([-1, -1])).network
    assert [l.outputs[0].shape for l in graph.layers if l.type == LayerType.Reshape] == [(1, 24)]


def test_a_static_dimension_that_disagrees_is_still_an_error():
    with pytest.raises(ConversionError, match=r"\(1, 24\) differs from TFLite's \(1, 1\)"):
        armnn_import.convert(_reshape_model([-1, 5]))
