"""TFLite SPLIT / SPLIT_V / UNPACK and ONNX Split as one Splitter layer from the 20.08 format on
(float, uint8 and int8: RefLayerSupport::IsSplitterSupported's types); 19.02 keeps one
StridedSlice a part. Splitter.cpp decodes each view to float and encodes it with the output's
(equal) quantization, an exact copy, so the file gives LiteRT's / onnxruntime's numbers bit for
bit. Checked through the CLI's file on every runtime that reads the target.
"""
from __future__ import annotations

import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from armnn_import import cli
from armnn_import.serialize import read

PAIRS = [("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPE = [4, 6, 5, 7]


def _convert(src, out, target):
    assert cli.main([str(src), "-o", str(out), "--target", target, "-q"]) == 0
    return [l.type.name for l in read(out.read_bytes()).layers]


@pytest.mark.parametrize("target, release", PAIRS)
@pytest.mark.parametrize("model", [f"{op}.{t}" for op in ("split", "split_v", "unpack")
                                   for t in ("float32", "int8", "uint8", "uint8io")])
def test_tflite_split_is_one_splitter_layer(tmp_path, model, target, release, armnn_runner_for):
    base = os.path.join(ROOT, "test_models", "tflite", "ops", model)
    ref = np.load(base + ".npz")  # LiteRT's outputs (test_models/tflite/manifest.json)
    types = _convert(base + ".tflite", tmp_path / "m.armnn", target)
    assert types.count("Splitter") == 1 and "StridedSlice" not in types
    x = ref["input_0"]
    dt = read((tmp_path / "m.armnn").read_bytes()).input_layers[0].outputs[0].dtype.np_dtype
    shift = 128 if x.dtype == np.int8 and dt == np.uint8 else 0  # (an int8 model's file as uint8 + 128)
    got = armnn_runner_for(release)(tmp_path / "m.armnn", [(x.astype(np.int16) + shift).astype(dt) if shift else x])
    want = [ref[k] for k in sorted(k for k in ref.files if k.startswith("output_"))]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.astype(np.int32).reshape(w.shape) - shift if shift else g.reshape(w.shape), w)


def _onnx_split(axis: int, sizes, opset: int, unused=()) -> onnx.ModelProto:
    """Split of a 4-D tensor along `axis`: sizes as the opset-11 attribute, the opset-13 input or
    (None) opset 18's num_outputs; the outputs numbered in `unused` are not graph outputs."""
    n = 3 if sizes is None else len(sizes)
    names = [f"y{i}" for i in range(n)]
    attrs, inputs, inits = {"axis": axis}, ["x"], []
    if sizes is None:
        attrs["num_outputs"] = n
    elif opset < 13:
        attrs["split"] = list(sizes)
    else:
        inputs.append("s")
        inits.append(helper.make_tensor("s", TensorProto.INT64, [n], list(sizes)))
    node = helper.make_node("Split", inputs, names, **attrs)
    outs = [helper.make_tensor_value_info(y, TensorProto.FLOAT, None) for i, y in enumerate(names)
            if i not in unused]
    graph = helper.make_graph([node], "split", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              outs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


# (unread outputs: the Splitter keeps the read views, passes/splitter_views.py; one read view is a
# StridedSlice)
ONNX_CASES = [(0, (1, 3), 11, ()), (1, (1, 2, 3), 13, ()), (2, None, 18, ()), (3, (2, 5), 13, ()),
              (1, (3, 1, 2), 11, (1,)), (-1, None, 18, (1,)), (2, (1, 2, 2), 13, (0, 2)), (1, (2, 1, 1, 2), 11, (0, 2))]


@pytest.mark.parametrize("target, release", PAIRS)
@pytest.mark.parametrize("axis, sizes, opset, unused", ONNX_CASES)
def test_onnx_split_is_one_splitter_layer(tmp_path, axis, sizes, opset, unused, target, release,
                                          armnn_runner_for):
    model = _onnx_split(axis, sizes, opset, unused)
    src = tmp_path / "m.onnx"
    onnx.save(model, str(src))
    types = _convert(src, tmp_path / "m.armnn", target)
    one_read = len(model.graph.output) == 1
    assert types.count("Splitter") == (0 if one_read else 1) and types.count("StridedSlice") == one_read
    x = np.random.default_rng(5).standard_normal(SHAPE).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = armnn_runner_for(release)(tmp_path / "m.armnn", [x])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.reshape(w.shape), w)


def test_split_at_19_02_keeps_the_strided_slices(tmp_path):
    src = tmp_path / "m.onnx"
    onnx.save(_onnx_split(1, (1, 2, 3), 13), str(src))
    types = _convert(src, tmp_path / "m.armnn", "19.02")
    assert "Splitter" not in types and types.count("StridedSlice") == 3


@pytest.mark.parametrize("dtype, target, most", [("float32", "20.08", 142), ("float32", "23.08", 141),
                                                 ("int8", "20.08", 175), ("int8", "23.08", 164)])
def test_bilstm_layer_count(tmp_path, dtype, target, most):
    """keras_bilstm_unroll_seq.float32: 205 layers at 23.08 with a StridedSlice a part (52 of them);
    with one Splitter a split, 172 (20.08) / 173 (23.08); with each gate bias one Addition of a
    shared Constant (passes/shifts.py), 147 / 146; with the UNPACK's Reshapes moved into its
    Splitter (passes/reshape_moves.py), 142 / 141. Arm NN's own TfLite parser: 158.
    int8: 191 at 23.08; a shared Constant for the quantized gate bias, 177; the Reshapes after
    each step's two Convolution2d products moved past their sum, 164 (the anchor's 164)."""
    src = os.path.join(ROOT, "test_models", "tflite", "models", f"keras_bilstm_unroll_seq.{dtype}.tflite")
    types = _convert(src, tmp_path / "m.armnn", target)
    assert types.count("Splitter") > 0 and len(types) <= most
