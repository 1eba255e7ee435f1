"""Models of opsets 1 to 6 are upgraded to opset 7 with onnx.version_converter and
converted; run on the real Arm NN runtime.

The reference for each case is named beside it: onnxruntime on the original
model where it still runs that opset; else onnx.reference on the original model;
else (where neither runs it, or both get the old semantics wrong) onnxruntime on
the upgraded model or the operator's opset-6 definition written out in numpy."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import armnn_import
from armnn_import.errors import ConversionError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ort_check import check, ort_run  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RNG = np.random.default_rng(6)


def f(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def old_model(nodes, inputs, inits=None, opset=6, out_shape=None):
    """An IR-3 model as old exporters wrote them: initializers also listed as graph inputs."""
    inits = inits or {}
    ins = [h.make_tensor_value_info(n, TP.FLOAT, v.shape) for n, v in inputs.items()]
    ins += [h.make_tensor_value_info(n, TP.INT64 if v.dtype == np.int64 else TP.FLOAT, v.shape)
            for n, v in inits.items()]
    g = h.make_graph(nodes, "old", ins, [h.make_tensor_value_info("y", TP.FLOAT, out_shape)],
                     [nh.from_array(v, n) for n, v in inits.items()])
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)], ir_version=3)


def reference(m, feeds):
    from onnx.reference import ReferenceEvaluator
    return ReferenceEvaluator(m).run(None, feeds)


def upgraded(m):
    from onnx import version_converter
    return version_converter.convert_version(onnx.shape_inference.infer_shapes(m), 7)


X = f(1, 3, 6, 6)
BN = {"s": f(3), "bb": f(3), "m": f(3), "v": np.abs(f(3)) + 0.1}

# (id, nodes, initializers, references): the first reference that runs the model gives the expected
# values: "ort" onnxruntime on the original, "ref" onnx.reference on the original (both run only some
# operators of the older opsets), "ort-upgraded" onnxruntime on the version converter's output
CASES = [
    ("Conv", [h.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
     {"w": f(4, 3, 3, 3), "b": f(4)}, ("ort", "ref")),
    ("BatchNormalization-is_test-spatial", [h.make_node("BatchNormalization", ["x", "s", "bb", "m", "v"], ["y"],
                                                        is_test=1, spatial=1, epsilon=1e-3)], BN, ("ref", "ort-upgraded")),
    ("Mul-broadcast", [h.make_node("Mul", ["x", "c"], ["y"], broadcast=1)], {"c": f(6)}, ("ref",)),
    ("Reshape-input", [h.make_node("Reshape", ["x", "sh"], ["y"])], {"sh": np.array([1, 3, 36], np.int64)},
     ("ort", "ref")),
    ("PRelu-channel-slope", [h.make_node("PRelu", ["x", "s"], ["y"])], {"s": f(3)}, ("ref",)),
    # onnx.reference applies opset 13's Softmax to opset 6 (one axis, not the 2-D coercion): onnxruntime is right
    ("Softmax-axis1", [h.make_node("Softmax", ["x"], ["y"], axis=1)], {}, ("ort",)),
    ("Gemm-broadcast", [h.make_node("Flatten", ["x"], ["fx"]),
                        h.make_node("Gemm", ["fx", "w", "c"], ["y"], broadcast=1, transB=1)],
     {"w": f(5, 108), "c": f(5)}, ("ref", "ort-upgraded")),
    ("Sum-MaxPool-Clip", [h.make_node("Sum", ["x", "x"], ["s"]),
                          h.make_node("MaxPool", ["s"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                          h.make_node("Clip", ["p"], ["y"], min=-0.5, max=0.5)], {}, ("ort", "ref", "ort-upgraded")),
    ("Pad-Concat-LeakyRelu", [h.make_node("Pad", ["x"], ["p"], pads=[0, 0, 1, 1, 0, 0, 1, 1], mode="reflect"),
                              h.make_node("Concat", ["p", "p"], ["c"], axis=1),
                              h.make_node("LeakyRelu", ["c"], ["y"], alpha=0.1)], {}, ("ort", "ref")),
    # AveragePool-1 divides by the elements "exclude pad"; onnx.reference counts the padding,
    # onnxruntime has no kernel before opset 7: onnxruntime on the upgrade (count_include_pad=0)
    ("AveragePool-pads", [h.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])], {},
     ("ort-upgraded",)),
    ("Dropout-is_test", [h.make_node("Dropout", ["x"], ["d"], is_test=1, ratio=0.3),
                         h.make_node("Relu", ["d"], ["y"])], {}, ("ort-upgraded",)),
]
OPSETS = {"Reshape-input": (6, 5)}  # Reshape took its shape as an attribute before opset 5
CASES.append(("Reshape-attribute", [h.make_node("Reshape", ["x"], ["y"], shape=[1, 3, 36])], {}, ("ort",)))
OPSETS["Reshape-attribute"] = (1, 3, 4)
PARAMS = [pytest.param(c, o, id=f"{c[0]}-opset{o}") for c in CASES for o in OPSETS.get(c[0], (6, 5, 3))]


def expected(m, feeds, refs):
    for ref in refs:
        try:
            if ref == "ort":
                return ort_run(m, feeds)
            if ref == "ref":
                return reference(m, feeds)
            return ort_run(upgraded(m), feeds)
        except Exception:  # noqa: BLE001 - that reference does not run this opset: the next one
            continue
    pytest.fail(f"none of {refs} runs the model")


@pytest.mark.parametrize("case,opset", PARAMS)
def test_old_opset_models_are_upgraded_and_match(armnn_runner, case, opset):
    name, nodes, inits, refs = case
    x = X if name != "PRelu-channel-slope" else f(2, 3, 4)
    m = old_model(nodes, {"x": x}, inits, opset=opset)
    feeds = {"x": x}
    want = expected(m, feeds, refs)
    result = check(armnn_runner, m, feeds, want=want, constant_layers_ok=True)
    assert any(f"opset {opset}: upgraded to opset 7" in w for w in result.report.warnings)


def test_legacy_broadcast_with_axis(armnn_runner):
    """Add-6 with broadcast=1, axis=1: B (3,) aligns with A's axis 1. Neither onnxruntime nor
    onnx.reference runs it, and the version converter's own adapter unsqueezes B to (3, 1, 1, 1)
    (broadcasting to (3, 3, 6, 6)); the expected values are the opset-6 definition."""
    c = f(3)
    for op, fn in (("Add", np.add), ("Sub", np.subtract), ("Div", np.divide)):
        m = old_model([h.make_node(op, ["x", "c"], ["y"], broadcast=1, axis=1)], {"x": X}, {"c": c})
        check(armnn_runner, m, {"x": X}, want=[fn(X, c.reshape(1, 3, 1, 1))], constant_layers_ok=True)
    # a run-time B of rank 2 aligned at axis 1 of a 4-D A
    b = f(3, 6)
    g = h.make_graph([h.make_node("Mul", ["x", "b"], ["y"], broadcast=1, axis=1)], "rt",
                     [h.make_tensor_value_info("x", TP.FLOAT, X.shape), h.make_tensor_value_info("b", TP.FLOAT, b.shape)],
                     [h.make_tensor_value_info("y", TP.FLOAT, None)])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 6)], ir_version=3)
    check(armnn_runner, m, {"x": X, "b": b}, want=[X * b.reshape(1, 3, 6, 1)])


def test_prelu_slope_that_fits_no_axis_is_refused():
    m = old_model([h.make_node("PRelu", ["x", "s"], ["y"], name="p")], {"x": f(2, 3, 4)}, {"s": f(5)})
    with pytest.raises(ConversionError, match=r"PRelu 'p': slope \(5,\) does not broadcast to the input"):
        armnn_import.convert(m)


def test_prelu_slope_ambiguous_between_channels_and_last_axis_is_noted(armnn_runner):
    """(3,) against (1, 3, 3): numpy broadcasting works (over the last axis), as onnx.reference
    reads it; the report says which reading was taken."""
    x = f(1, 3, 3)
    m = old_model([h.make_node("PRelu", ["x", "s"], ["y"], name="p")], {"x": x}, {"s": f(3)})
    r = check(armnn_runner, m, {"x": x}, want=reference(m, {"x": x}), constant_layers_ok=True)
    assert any("PRelu 'p'" in w and "last axis" in w for w in r.report.warnings)


def test_an_upgrade_that_fails_is_refused_with_the_converters_message():
    """Upsample before opset 7 (an experimental operator) has no adapter the converter can apply."""
    m = old_model([h.make_node("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 2.0, 2.0], mode="nearest")], {"x": X})
    with pytest.raises(ConversionError) as info:
        armnn_import.convert(m)
    text = str(info.value)
    assert "opset 6" in text and "onnx.version_converter failed" in text and "upsample" in text.lower()


def test_cli_upgrades_an_old_model_with_large_weights(tmp_path, armnn_runner):
    """Large weights (memory-mapped from the file) stay out of the upgrade and come back."""
    w, b = f(64, 32, 3, 3), f(64)
    x = f(1, 32, 8, 8)
    m = old_model([h.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3]),
                   h.make_node("Relu", ["c"], ["y"])], {"x": x}, {"w": w, "b": b})
    path, out = tmp_path / "old.onnx", tmp_path / "old.armnn"
    onnx.save(m, str(path))
    proc = subprocess.run([sys.executable, "-m", "armnn_import", str(path), "-o", str(out)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "warning:" in proc.stderr and "opset 6: upgraded to opset 7" in proc.stderr
    (want,) = ort_run(m, {"x": x})
    (got,) = armnn_runner(str(out), [x])
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-4, atol=1e-4)


def test_concat_without_axis_before_opset_4(armnn_runner):
    """Concat-1's axis was optional (default 1); neither onnxruntime nor onnx.reference runs it:
    the expected values are that definition."""
    m = old_model([h.make_node("Concat", ["x", "x"], ["y"])], {"x": X}, opset=3)
    check(armnn_runner, m, {"x": X}, want=[np.concatenate([X, X], axis=1)], constant_layers_ok=True)


def test_an_old_cast_with_a_string_type_is_refused_with_the_converters_message():
    m = old_model([h.make_node("Cast", ["x"], ["y"], to="FLOAT")], {"x": X}, opset=3)
    with pytest.raises(ConversionError, match="opset 3; upgrading it to opset 7 with onnx.version_converter "
                                              "failed: .*Cast"):
        armnn_import.convert(m)
