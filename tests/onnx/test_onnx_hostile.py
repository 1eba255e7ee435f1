"""Hostile inputs of issue 17 that used to slip through, each through the CLI:
empty kernels taken from the weights, control characters in names, invalid
BatchNormalization statistics, and negative pads larger than the axis."""
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

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "armnn_import", *map(str, args)], capture_output=True,
                          text=True, cwd=REPO, timeout=timeout, env={**os.environ, "PYTHONWARNINGS": "default"})


def save(tmp_path, nodes, inputs, inits=(), name="m.onnx", opset=17, outputs=None):
    g = h.make_graph(nodes, "hostile", inputs, outputs or [h.make_tensor_value_info("y", TP.FLOAT, None)],
                     list(inits))
    path = tmp_path / name
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", opset)]), str(path))
    return path


def no_control_characters(text: str) -> bool:
    return all(c.isprintable() or c == "\n" for c in text)


@pytest.mark.parametrize("kernel", [(0, 0), (0, 3), (3, 0)], ids=str)
def test_a_conv_with_an_empty_kernel_in_its_weights_is_refused(tmp_path, kernel):
    w = np.zeros((2, 3) + kernel, np.float32)
    path = save(tmp_path, [h.make_node("Conv", ["x", "w"], ["y"], name="empty_conv")],
                [h.make_tensor_value_info("x", TP.FLOAT, [1, 3, 8, 8])], [nh.from_array(w, "w")])
    out = tmp_path / "m.armnn"
    proc = cli(path, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "empty_conv" in proc.stderr and "empty weights" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()


HOSTILE = "x\n\x1b[31mred\u202eevil"


def test_control_characters_in_an_input_name_stay_escaped_in_the_hint(tmp_path):
    path = save(tmp_path, [h.make_node("Relu", [HOSTILE], ["y"])],
                [h.make_tensor_value_info(HOSTILE, TP.FLOAT, [1, "channels", 4])])
    proc = cli(path, "-o", tmp_path / "m.armnn")
    assert proc.returncode == 1, proc.stderr
    assert no_control_characters(proc.stderr), repr(proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--input-shape x\\n\\x1b[31mred\\u202eevil=" in lines[0], lines


def test_control_characters_in_names_are_escaped_by_convert_and_inspect(tmp_path, armnn_runner):
    """A symbolic batch dimension (a warning naming the input), layer names from the nodes,
    an output name: none reaches the terminal raw."""
    nodes = [h.make_node("Relu", [HOSTILE], ["r\u202e"], name="relu\n\x1b[2J"),
             h.make_node("Sigmoid", ["r\u202e"], ["y\x07"], name="sig\u202e")]
    path = save(tmp_path, nodes, [h.make_tensor_value_info(HOSTILE, TP.FLOAT, ["batch", 3, 4])],
                outputs=[h.make_tensor_value_info("y\x07", TP.FLOAT, None)])
    out = tmp_path / "m.armnn"
    proc = cli(path, "-o", out, "--report", tmp_path / "r.json")
    assert proc.returncode == 0, proc.stderr
    assert no_control_characters(proc.stdout + proc.stderr), repr(proc.stdout + proc.stderr)
    assert "x\\n\\x1b[31mred" in proc.stderr  # the batch-dimension warning names the input, escaped
    x = np.random.default_rng(0).standard_normal((1, 3, 4)).astype(np.float32)
    (got,) = armnn_runner(str(out), [x])
    np.testing.assert_allclose(got.reshape(x.shape), 1 / (1 + np.exp(-np.maximum(x, 0))), rtol=1e-5)
    proc = cli("inspect", out)
    assert proc.returncode == 0, proc.stderr
    assert no_control_characters(proc.stdout), repr(proc.stdout)
    assert "relu\\n\\x1b[2J" in proc.stdout and "y\\x07" in proc.stdout
    proc = cli("inspect", out, "--json")
    assert proc.returncode == 0 and no_control_characters(proc.stdout)


def _bn_model(tmp_path, var):
    c = len(var)
    inits = [nh.from_array(np.ones(c, np.float32), "s"), nh.from_array(np.full(c, 0.5, np.float32), "b"),
             nh.from_array(np.zeros(c, np.float32), "m"), nh.from_array(np.asarray(var, np.float32), "v")]
    return save(tmp_path, [h.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bad_bn",
                                       epsilon=1e-5)],
                [h.make_tensor_value_info("x", TP.FLOAT, [1, c, 2, 2])], inits)


def test_batchnorm_with_negative_variance_warns_in_the_tools_format(tmp_path, armnn_runner):
    path = _bn_model(tmp_path, [1.0, -2.0, 0.25])
    out = tmp_path / "m.armnn"
    proc = cli(path, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "RuntimeWarning" not in proc.stderr and "invalid value" not in proc.stderr, proc.stderr
    warn = [l for l in proc.stderr.splitlines() if "bad_bn" in l]
    assert len(warn) == 1 and warn[0].startswith("armnn-import: warning: ") and "1 of 3 channels" in warn[0]
    result = armnn_import.convert(str(path))
    assert any("variance + epsilon" in w for w in result.report.warnings)
    # the runtime gives what onnxruntime gives: NaN in the bad channel, numbers elsewhere
    import onnxruntime as ort
    x = np.random.default_rng(1).standard_normal((1, 3, 2, 2)).astype(np.float32)
    (want,) = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    (got,) = armnn_runner(str(out), [x])
    assert np.isnan(want[:, 1]).all() and not np.isnan(want[:, [0, 2]]).any()
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_a_negative_pad_larger_than_the_axis_is_a_bad_model(tmp_path):
    pads = nh.from_array(np.array([0, 0, 0, -4, 0, 0, 0, -3], np.int64), "pads")
    path = save(tmp_path, [h.make_node("Pad", ["x", "pads"], ["y"], name="crop_too_much")],
                [h.make_tensor_value_info("x", TP.FLOAT, [1, 1, 3, 1])], [pads])
    proc = cli(path, "-o", tmp_path / "m.armnn")
    assert proc.returncode == 1, proc.stderr
    assert "crop_too_much" in proc.stderr and "the model is invalid" in proc.stderr, proc.stderr
    assert "internal" not in proc.stderr and "Traceback" not in proc.stderr


def test_a_declared_shape_the_operator_does_not_compute_is_a_bad_model(tmp_path):
    """value_info claiming a shape the node cannot give (here a Conv turned into an Add)."""
    w = nh.from_array(np.ones((4, 3, 1, 1), np.float32), "w")
    path = save(tmp_path, [h.make_node("Add", ["x", "w"], ["y"], name="was_conv")],
                [h.make_tensor_value_info("x", TP.FLOAT, [1, 3, 2, 2])], [w],
                outputs=[h.make_tensor_value_info("y", TP.FLOAT, [1, 4, 2, 2])])
    proc = cli(path, "-o", tmp_path / "m.armnn")
    assert proc.returncode == 1, proc.stderr
    assert "the model declares 'y' of shape (1, 4, 2, 2), but Add computes (4, 3, 2, 2)" in proc.stderr


def test_a_shape_our_lowering_gets_wrong_is_an_internal_error(tmp_path, monkeypatch, capsys):
    """Not a refusal: exit code 4 and the tool's internal-error line."""
    import dataclasses

    from armnn_import import cli as cli_module
    from armnn_import_frontends.onnx.ops import REGISTRY

    real = REGISTRY.lookup

    def lookup(op, opset):
        e = real(op, opset)
        if op != "Relu":
            return e
        return dataclasses.replace(e, fn=lambda ctx, node: ctx.b.reshape(ctx.port(node, 0), (12,), "wrong"))

    monkeypatch.setattr(REGISTRY, "lookup", lookup)
    path = save(tmp_path, [h.make_node("Relu", ["x"], ["y"])], [h.make_tensor_value_info("x", TP.FLOAT, [3, 4])])
    assert cli_module.main([str(path), "-o", str(tmp_path / "m.armnn")]) == 4
    err = capsys.readouterr().err
    assert "internal error" in err and "LoweringBug" in err and "ONNX shape inference says (3, 4)" in err
