"""Operator versions whose semantics changed at opset 18 or later (the dynamo exporter writes
opset 18-23): one small model each, built by onnx.helper at the new version, converted by the CLI
at 19.02 and 23.08 and run on real Arm NN 23.08 (which reads both), against onnxruntime (or
onnx.reference where onnxruntime has no kernel: LSTM layout=1). The audit is docs/dynamo-sweep.md.
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from armnn_import import cli

R = np.random.RandomState(18)


def _c(name, a):
    return nh.from_array(np.asarray(a), name)


def _i64(name, values):
    return _c(name, np.array(values, np.int64))


def _model(nodes, shape, opset, inits=(), outputs=("y",)):
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, shape)],
                     [h.make_tensor_value_info(o, T.FLOAT, None) for o in outputs], list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 10
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    known = {v.name: v for v in inferred.graph.output}
    for o in m.graph.output:  # (no shape inferred through a function body: the input's)
        inferred_type = known[o.name].type
        o.type.CopyFrom(inferred_type if inferred_type.tensor_type.HasField("shape")
                        else h.make_tensor_type_proto(T.FLOAT, shape))
    onnx.checker.check_model(m, full_check=True)
    return m


def _n(op, inputs, outputs=("y",), **attrs):
    return h.make_node(op, list(inputs), list(outputs), **attrs)


X4 = [1, 2, 6, 7]
CASES = {
    "AveragePool-19 dilations": _model([_n("AveragePool", ["x"], kernel_shape=[3, 3], dilations=[2, 2],
                                           strides=[2, 2])], [1, 2, 9, 9], 19),
    "Pad-18 axes": _model([_n("Pad", ["x", "p", "", "a"])], X4, 18, [_i64("p", [1, 2, 0, 1]), _i64("a", [2, 3])]),
    "Pad-18 negative axes, value": _model([_n("Pad", ["x", "p", "v", "a"])], X4, 18,
                                          [_i64("p", [1, 2]), _c("v", np.float32(0.5)), _i64("a", [-1])]),
    "Pad-19 wrap": _model([_n("Pad", ["x", "p"], mode="wrap")], X4, 19, [_i64("p", [0, 0, 1, 2, 0, 0, 1, 1])]),
    "ReduceMean-18 axes input": _model([_n("ReduceMean", ["x", "a"], keepdims=0)], [2, 3, 4], 18, [_i64("a", [1])]),
    "ReduceMax-18 no axes": _model([_n("ReduceMax", ["x"])], [2, 3, 4], 18),
    "ReduceMax-18 noop_with_empty_axes": _model([_n("ReduceMax", ["x"], noop_with_empty_axes=1)], [2, 3, 4], 18),
    "ReduceL2-18 negative axis": _model([_n("ReduceL2", ["x", "a"])], [2, 3, 4], 18, [_i64("a", [-1])]),
    "Split-18 num_outputs uneven": _model([_n("Split", ["x"], ["y", "z", "w"], axis=1, num_outputs=3)],
                                          [1, 7, 2], 18, outputs=("y", "z", "w")),
    "Resize-19 half_pixel_symmetric": _model([_n("Resize", ["x", "", "s"], mode="linear",
                                                 coordinate_transformation_mode="half_pixel_symmetric")],
                                             [1, 2, 4, 5], 19, [_c("s", np.array([1, 1, 1.5, 2.5], np.float32))]),
    "Resize-18 antialias": _model([_n("Resize", ["x", "", "s"], mode="linear", antialias=1)], [1, 2, 8, 8], 18,
                                  [_c("s", np.array([1, 1, 0.5, 0.5], np.float32))]),
    "Resize-18 axes, sizes": _model([_n("Resize", ["x", "", "", "sz"], mode="nearest", axes=[2, 3])],
                                    [1, 2, 4, 5], 18, [_i64("sz", [8, 10])]),
    "GroupNormalization-21 per channel": _model([_n("GroupNormalization", ["x", "s", "b"], num_groups=2)],
                                                [1, 4, 3, 3], 21, [_c("s", np.float32([0.5, 2, 3, -1])),
                                                                   _c("b", np.float32([0.1, -1, 2, 3]))]),
    "Shape-15 start, end": _model([_n("Shape", ["x"], ["s"], start=1, end=-1),
                                   _n("Concat", ["m", "s"], ["s2"], axis=0), _n("Reshape", ["x", "s2"])],
                                  [2, 3, 4], 19, [_i64("m", [-1])]),
    "Squeeze-23 axes input": _model([_n("Squeeze", ["x", "a"])], [2, 1, 4], 23, [_i64("a", [1])]),
    "LpPool-18 dilations": _model([_n("LpPool", ["x"], kernel_shape=[2, 2], dilations=[2, 2])], [1, 2, 6, 6], 18),
    "Gelu-20 tanh": _model([_n("Gelu", ["x"], approximate="tanh")], [2, 3], 20),
    "RMSNormalization-23": _model([_n("RMSNormalization", ["x", "s"])], [2, 3, 4], 23,
                                  [_c("s", R.randn(4).astype(np.float32))]),
    "LSTM-14 layout=1": _model([_n("LSTM", ["x", "W", "R", "B"], ["y", "yh", "yc"], hidden_size=3, layout=1)],
                               [2, 5, 4], 14, [_c("W", R.randn(1, 12, 4).astype(np.float32)),
                                               _c("R", R.randn(1, 12, 3).astype(np.float32)),
                                               _c("B", R.randn(1, 24).astype(np.float32))], outputs=("y", "yh", "yc")),
}
REFUSED = {
    "Resize-18 keep_aspect_ratio_policy": (_model([_n("Resize", ["x", "", "", "sz"], mode="nearest", axes=[2, 3],
                                                      keep_aspect_ratio_policy="not_larger")],
                                                  [1, 2, 4, 5], 18, [_i64("sz", [8, 20])]),
                                           "keep_aspect_ratio_policy other than 'stretch'"),
    "BatchNormalization-15 training_mode": (_model([_n("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"],
                                                       training_mode=1)],
                                                   [2, 3, 4, 4], 15, [_c(k, np.ones(3, np.float32)) for k in "sbmv"],
                                                   outputs=("y", "rm", "rv")),
                                            "training_mode=1 (batch statistics) is not an inference operation"),
}
ORT_LACKS = {"LSTM-14 layout=1"}  # onnxruntime: "Batchwise recurrent operations (layout == 1) are not supported"


def _reference(name, model, x):
    if name in ORT_LACKS:
        from onnx.reference import ReferenceEvaluator
        return ReferenceEvaluator(model).run(None, {"x": x})
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})


@pytest.mark.parametrize("target", ["19.02", "23.08"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_new_version_matches_reference_on_armnn_23_08(armnn_runner_for, tmp_path, name, target):
    model = CASES[name]
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(sorted(CASES).index(name)).standard_normal(shape).astype(np.float32)
    want = _reference(name, model, x)
    src, out = tmp_path / "m.onnx", tmp_path / "m.armnn"
    onnx.save(model, src)
    assert cli.main([str(src), "-o", str(out), "--target", target, "-q"]) == 0
    got = armnn_runner_for("23.08")(out, [x])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.reshape(w.shape), w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_changed_semantics_without_exact_lowering_refused(tmp_path, capsys, name):
    model, reason = REFUSED[name]
    src = tmp_path / "m.onnx"
    onnx.save(model, src)
    assert cli.main([str(src), "-o", str(tmp_path / "m.armnn"), "--target", "23.08", "-q"]) == 1
    err = capsys.readouterr().err
    assert reason in err and "Traceback" not in err
