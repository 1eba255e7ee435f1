"""GridSample (armnn_import/lowering/grid_sample.py) on Arm NN 23.08 against onnxruntime: linear,
nearest and cubic, zeros, border and reflection padding, both align_corners, 2-D and 3-D, batches,
positions outside the image (reflected over several periods), on pixel centres and on rounding
ties; the numpy executor beside the runtime.
onnxruntime's generic kernel is matched bit for bit; its 2-D linear/zeros/align 0 fast path sums
the four weighted corners in another order (within float rounding)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h

import armnn_import
from armnn_import.executor.run import run as execute

ort = pytest.importorskip("onnxruntime")


def _model(xshape, gshape, opset=20, **attrs):
    g = h.make_graph([h.make_node("GridSample", ["x", "grid"], ["y"], **attrs)], "gs",
                     [h.make_tensor_value_info("x", TP.FLOAT, xshape), h.make_tensor_value_info("grid", TP.FLOAT, gshape)],
                     [h.make_tensor_value_info("y", TP.FLOAT, None)])
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


def _grid(rng, shape, r):
    g = rng.uniform(-1.3, 1.3, shape).astype(np.float32)
    flat = g.reshape(-1, r)
    flat[:4] = [[-1.0] * r, [1.0] * r, [0.0] * r, [-1.2] * r]  # corners, centre, outside
    return g


def _check(model, x, grid, runner, tmp_path, exact):
    from armnn_import.cli import main

    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x, "grid": grid})[0]
    src, dst = tmp_path / "m.onnx", tmp_path / "m.armnn"
    src.write_bytes(model.SerializeToString())
    assert main(["convert", str(src), "-o", str(dst), "--target", "23.08"]) == 0
    got = runner(dst.read_bytes(), [x, grid])[0].reshape(want.shape)
    mine = execute(armnn_import.convert(model, target="23.08").network, [x, grid])[0].reshape(want.shape)
    for out in (got, mine):
        if exact:
            np.testing.assert_array_equal(out, want)
        else:
            np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_2d(mode, padding, align, armnn_runner_for, tmp_path):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    grid = _grid(rng, (2, 4, 6, 2), 2) * (2.5 if padding == "reflection" else 1)  # (up to 3 widths out)
    fast = mode == "linear" and padding == "zeros" and not align
    _check(_model(x.shape, grid.shape, mode=mode, padding_mode=padding, align_corners=align), x, grid,
           armnn_runner_for("23.08"), tmp_path, exact=not fast)


@pytest.mark.parametrize("mode", ["linear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
def test_3d(mode, padding, armnn_runner_for, tmp_path):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 2, 3, 4, 5)).astype(np.float32)
    grid = _grid(rng, (1, 2, 3, 4, 3), 3) * (2.5 if padding == "reflection" else 1)
    _check(_model(x.shape, grid.shape, mode=mode, padding_mode=padding, align_corners=0), x, grid,
           armnn_runner_for("23.08"), tmp_path, exact=True)


def test_nearest_ties_round_half_to_even(armnn_runner_for, tmp_path):
    """Positions exactly between two pixels (align_corners 1: x = (g + 1) / 2 * (W - 1)) round to
    the even one, as std::nearbyint does."""
    x = np.arange(1 * 1 * 3 * 9, dtype=np.float32).reshape(1, 1, 3, 9)
    g = np.stack(np.meshgrid(np.linspace(-1, 1, 17), [-1.0, 0.0, 1.0]), -1)[None].astype(np.float32)
    _check(_model(x.shape, g.shape, mode="nearest", align_corners=1), x, g, armnn_runner_for("23.08"), tmp_path,
           exact=True)


def test_opset16_bilinear_and_an_infinite_pixel_at_the_edge(armnn_runner_for, tmp_path):
    """Opset 16 names the mode 'bilinear'. A corner outside the image reads a zero pad, so an
    infinite pixel next to the edge does not leak a NaN (no 0 * inf)."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 1, 4, 4)).astype(np.float32)
    x[0, 0, 0, 0] = np.inf
    grid = np.array([[[[-1.0, -1.0], [-1.0, 0.3], [0.2, -0.2], [0.9, 0.9]]]], np.float32)  # (-0.5, -0.5): inf / 4
    model = _model(x.shape, grid.shape, opset=16, mode="bilinear", align_corners=0)
    _check(model, x, grid, armnn_runner_for("23.08"), tmp_path, exact=False)
    got = execute(armnn_import.convert(model, target="23.08").network, [x, grid])[0].reshape(-1)
    assert got[0] == np.inf and np.isfinite(got[2:]).all(), got


def test_refusals_name_the_reason():
    m = _model((1, 1, 4, 4), (1, 2, 2, 2))
    with pytest.raises(armnn_import.UnsupportedModelError, match="--target 23.08"):
        armnn_import.convert(m, target="20.08")
    for shapes, attrs, why in ((((1, 1, 2, 3, 4), (1, 2, 2, 2, 3)), {"mode": "cubic"}, "cubic sampling of a 3-D"),
                               (((1, 1, 1, 4), (1, 2, 2, 2)), {"padding_mode": "reflection", "align_corners": 1},
                                "divides by zero"),
                               (((1, 1, 4, 4), (1, 2, 2, 2)), {"mode": "lanczos"}, "not an ONNX GridSample mode")):
        with pytest.raises(armnn_import.UnsupportedModelError, match=why):
            armnn_import.convert(_model(*shapes, **attrs), target="23.08")
