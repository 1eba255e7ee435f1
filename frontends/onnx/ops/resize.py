"""Resize and Upsample with static sizes.

Resizing is separable and linear in the input, so each resized axis is a
constant [out, in] interpolation matrix (plus a bias for the extrapolation
value of tf_crop_and_resize). The matrices are computed by running the ONNX
reference Resize on an identity matrix, so every mode and coordinate
transformation follows the ONNX definition. Each axis then becomes:
  nothing (identity), a repetition (Merger of copies; nearest with an
  integer factor), one ResizeBilinear for both H and W when the matrices
  equal Arm NN's (align_corners=false, half_pixel=false), or a
  FullyConnected along the axis (exact up to the summation order).
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from armnn_import.ir import descriptors as D
from armnn_import.executor.structural import resize_matrix
from armnn_import.ir.types import DataLayout, DataType, ResizeMethod
from armnn_import.ir.types import LayerType as L
from armnn_import.lowering import Unsupported
from armnn_import.lowering.copies import repeat
from armnn_import.lowering.matrix import fc_along_axis

from ..registry import needs_const, register
from .common import norm_axes

MAX_AXIS = 1 << 16  # the interpolation matrices are [out, in]
ATTRS = ("mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
         "extrapolation_value", "antialias")


def axis_matrix(in_size: int, attrs: dict, scale=None, size=None, roi=None):
    """(M [out, in], bias [out]) of a 1-D ONNX Resize along one axis."""
    from onnx.reference import ReferenceEvaluator

    out = size if size is not None else in_size * float(scale) * (abs(roi[1] - roi[0]) if roi else 1.0)
    if not np.isfinite(out) or out > MAX_AXIS:
        raise Unsupported(f"a resized axis of {out} elements (at most {MAX_AXIS})")

    names, inits = ["X", "", "", ""], []
    if roi is not None:
        names[1] = "roi"
        inits.append(helper.make_tensor("roi", TensorProto.FLOAT, [4], [0.0, roi[0], 1.0, roi[1]]))
    if size is not None:
        names[3] = "sizes"
        inits.append(helper.make_tensor("sizes", TensorProto.INT64, [2], [in_size, int(size)]))
    else:
        names[2] = "scales"
        inits.append(helper.make_tensor("scales", TensorProto.FLOAT, [2], [1.0, float(scale)]))
    while names[-1] == "":
        names.pop()
    node = helper.make_node("Resize", names, ["Y"], **attrs)
    graph = helper.make_graph([node], "axis", [helper.make_tensor_value_info("X", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], inits)
    try:
        ev = ReferenceEvaluator(graph, opsets={"": 19})
        y = np.asarray(ev.run(None, {"X": np.eye(in_size, dtype=np.float32)})[0], np.float64)
        bias = np.asarray(ev.run(None, {"X": np.zeros((1, in_size), np.float32)})[0], np.float64)[0]
    except Exception as e:  # noqa: BLE001 - modes the reference rejects
        raise Unsupported(f"the ONNX reference cannot evaluate this resize ({type(e).__name__}: {e})") from None
    if y.ndim != 2 or y.shape[1] == 0:
        raise Unsupported("the resized axis is empty")
    return y.T - bias[:, None], bias


def armnn_bilinear_matrix(in_size: int, out_size: int) -> np.ndarray:
    """Arm NN 20.08 ResizeBilinear along one axis (Resize.cpp, no align_corners, no half pixel)."""
    scale = np.float32(in_size) / np.float32(out_size)
    m = np.zeros((out_size, in_size))
    for y in range(out_size):
        iy = np.float32(y) * scale
        y0 = int(np.floor(iy))
        w = float(iy - np.float32(y0))
        m[y, y0] += 1.0 - w
        m[y, min(y0 + 1, in_size - 1)] += w
    return m


# CpuRef's Resize takes no Signed32 or Boolean (RefLayerSupport::IsResizeSupported)
RESIZE_TYPES = (DataType.Float32, DataType.Float16, DataType.QuantisedAsymm8, DataType.QAsymmS8)


def _direct(ctx, mats):
    """(method, align_corners, half_pixel_centers) of the one Arm NN Resize layer (the 20.08 format
    on) whose interpolation along H and W (Resize.cpp, executor/structural.py) is the ONNX
    reference's, index for index (nearest) or weight for weight within 1e-6 (linear); else None.
    Nothing is assumed about the coordinate modes: each candidate is checked on the matrices."""
    if not ctx.b.target.has(L.Resize):
        return None
    nearest = all(np.isin(m, (0.0, 1.0)).all() for m in mats)
    methods = (ResizeMethod.NearestNeighbor, ResizeMethod.Bilinear) if nearest else (ResizeMethod.Bilinear,)
    for method in methods:
        for align, half in ((False, False), (True, False), (False, True)):
            if all(np.allclose(m, resize_matrix(m.shape[1], m.shape[0], method, align, half), atol=1e-6,
                               rtol=0) for m in mats):
                return method, align, half
    return None


def _repeat_factor(m: np.ndarray):
    """r if m is nearest upsampling by the integer r (out[i] = in[i // r]), else None."""
    o, i = m.shape
    if o % i:
        return None
    r = o // i
    want = np.zeros_like(m)
    want[np.arange(o), np.arange(o) // r] = 1.0
    return r if np.array_equal(m, want) else None


def _apply_fc(ctx, x, axis, m, bias, name):
    return fc_along_axis(ctx.b, x, axis, m.astype(np.float32),
                         None if not bias.any() else bias.astype(np.float32), name)


def _apply_repeat(ctx, x, axis, r, name):
    shape = x.info.shape
    before = int(np.prod(shape[:axis], dtype=np.int64))
    after = int(np.prod(shape[axis + 1:], dtype=np.int64))
    y = ctx.b.reshape(x, (before, shape[axis], 1, after), f"{name}_split")
    y = repeat(ctx.b, y, 2, r, f"{name}_rep")
    return ctx.b.reshape(y, shape[:axis] + (shape[axis] * r,) + shape[axis + 1:], name)


def resize(ctx, node, x, per_axis: dict, attrs: dict):
    """per_axis: axis -> dict(scale=..., size=..., roi=...) for every axis that may change."""
    n = ctx.name(node)
    shape = x.info.shape
    mats = {}
    for a in sorted(per_axis, reverse=True):  # inner axes first (matters for extrapolation biases)
        m, bias = axis_matrix(shape[a], attrs, **per_axis[a])
        if m.shape == (shape[a], shape[a]) and np.array_equal(m, np.eye(shape[a])) and not bias.any():
            continue
        mats[a] = (m, bias)
    if not mats:
        return ctx.b.linear(x, 1.0, 0.0, n) if x.info.dtype.name == "Float32" else x
    ctx.report.decomposition("Resize", "per axis: Merger of copies (nearest, integer factor), ResizeBilinear "
                                       "(when it equals Arm NN's), or FullyConnected with the interpolation matrix")
    rank = len(shape)
    hw = (rank - 2, rank - 1)
    if rank == 4 and set(mats) <= set(hw) and not any(b.any() for _, b in mats.values()):
        sizes = [mats[a][0].shape[0] if a in mats else shape[a] for a in hw]
        direct = _direct(ctx, [mats[a][0] if a in mats else np.eye(shape[a]) for a in hw]) \
            if x.info.dtype in RESIZE_TYPES else None
        if direct is not None:
            method, align, half = direct
            return ctx.b.resize(x, sizes, method, n, layout=DataLayout.NCHW, align_corners=align,
                                half_pixel_centers=half)
        if all(np.allclose(mats[a][0], armnn_bilinear_matrix(shape[a], sizes[i]), atol=1e-6)
               for i, a in enumerate(hw) if a in mats):
            return ctx.b.add(L.ResizeBilinear, n, [x],
                             D.ResizeBilinearDescriptor(sizes[1], sizes[0], DataLayout.NCHW))
    y = x
    order = sorted(mats, reverse=True)
    for k, a in enumerate(order):
        m, bias = mats[a]
        last = k == len(order) - 1
        name = n if last else f"{n}_ax{a}"
        r = _repeat_factor(m) if not bias.any() else None
        y = _apply_repeat(ctx, y, a, r, name) if r else _apply_fc(ctx, y, a, m, bias, name)
    return y


def _attrs(ctx, node, legacy: bool):
    attrs = {k: ctx.attr(node, k) for k in ATTRS if ctx.attr(node, k) is not None}
    if legacy:  # Upsample and Resize-10: asymmetric coordinates, nearest rounds down
        attrs = {"mode": attrs.get("mode", "nearest"), "coordinate_transformation_mode": "asymmetric"}
        if attrs["mode"] not in ("nearest", "linear", "bilinear"):
            raise Unsupported(f"mode {attrs['mode']!r}")
        if attrs["mode"] == "bilinear":
            attrs["mode"] = "linear"
        if attrs["mode"] == "nearest":
            attrs["nearest_mode"] = "floor"
    return attrs


def _legacy(ctx, node, x, scales):
    scales = [float(s) for s in np.asarray(scales, np.float64).reshape(-1)]
    if len(scales) != x.info.rank:
        raise Unsupported(f"{len(scales)} scales for a {x.info.rank}-D input")
    attrs = _attrs(ctx, node, legacy=True)
    if attrs["mode"] == "nearest" and any(s < 1 for s in scales):
        raise Unsupported("nearest downsampling before opset 11 rounds differently between runtimes")
    return resize(ctx, node, x, {a: {"scale": s} for a, s in enumerate(scales) if s != 1.0}, attrs)


@register("Upsample", since=7, until=8, layers=("Merger", "ResizeBilinear", "FullyConnected", "Resize", "Reshape", "Permute"))
def upsample7(ctx, node):
    return _legacy(ctx, node, ctx.port(node, 0), ctx.attr(node, "scales"))


@register("Upsample", since=9, layers=("Merger", "ResizeBilinear", "FullyConnected", "Resize", "Reshape"),
          check=needs_const(1, what="scales"))
def upsample9(ctx, node):
    return _legacy(ctx, node, ctx.port(node, 0), ctx.const(node, 1, "scales"))


@register("Resize", since=10, until=10, layers=("Merger", "ResizeBilinear", "FullyConnected", "Resize", "Reshape", "Permute"),
          check=needs_const(1, what="scales"))
def resize10(ctx, node):
    return _legacy(ctx, node, ctx.port(node, 0), ctx.const(node, 1, "scales"))


@register("Resize", since=11, layers=("Merger", "ResizeBilinear", "FullyConnected", "Resize", "Reshape", "Permute"),
          check=needs_const(1, 2, 3, what="roi/scales/sizes"))
def resize11(ctx, node):
    x = ctx.port(node, 0)
    rank = x.info.rank
    attrs = _attrs(ctx, node, legacy=False)
    if ctx.attr(node, "keep_aspect_ratio_policy", "stretch") != "stretch":
        raise Unsupported("keep_aspect_ratio_policy other than 'stretch'")
    axes = norm_axes(ctx.attr(node, "axes", list(range(rank))), rank)
    scales = ctx.const(node, 2).reshape(-1) if ctx.has(node, 2) else np.zeros(0)
    sizes = ctx.const(node, 3).reshape(-1) if ctx.has(node, 3) else np.zeros(0)
    roi = ctx.const(node, 1).reshape(-1).astype(np.float64) if ctx.has(node, 1) else np.zeros(0)
    crop = attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize"
    if crop and roi.size != 2 * len(axes):
        raise Unsupported("tf_crop_and_resize needs an roi with a start and end per axis")
    per_axis = {}
    for k, a in enumerate(axes):
        spec = {}
        if sizes.size:
            if sizes.size != len(axes):
                raise Unsupported(f"{sizes.size} sizes for {len(axes)} axes")
            if int(sizes[k]) <= 0:
                raise Unsupported("an empty output")
            spec["size"] = int(sizes[k])
        elif scales.size:
            if scales.size != len(axes):
                raise Unsupported(f"{scales.size} scales for {len(axes)} axes")
            if float(scales[k]) <= 0:
                raise Unsupported(f"scale {float(scales[k])}")
            spec["scale"] = float(scales[k])
        else:
            raise Unsupported("neither scales nor sizes is given")
        if crop:
            spec["roi"] = (float(roi[k]), float(roi[k + len(axes)]))
        per_axis[a] = spec
    return resize(ctx, node, x, per_axis, attrs)


_GS_MODES = {"bilinear": "linear", "linear": "linear", "nearest": "nearest", "bicubic": "cubic", "cubic": "cubic"}


def _grid_sample_check(node, ctx):
    mode = node.attrs.get("mode", "linear")
    if mode not in _GS_MODES:
        return (f"mode {mode!r} (not an ONNX GridSample mode)", "use 'linear', 'nearest' or 'cubic'")
    if node.attrs.get("padding_mode", "zeros") not in ("zeros", "border", "reflection"):
        return (f"padding_mode {node.attrs.get('padding_mode')!r} (not an ONNX padding mode)",
                "use padding_mode 'zeros', 'border' or 'reflection'")
    return None


@register("GridSample", since=16, check=_grid_sample_check, needs="23.08",
          layers=("Transpose", "Pad", "Reshape", "StridedSlice", "Activation", "Floor", "Subtraction", "Addition",
                  "Multiplication", "Concat", "Merger", "Cast", "Gather", "Splitter", "Constant", "Minimum"),
          notes="linear/nearest/cubic, zeros/border/reflection padding, 2-D and 3-D (cubic 2-D), from --target "
                "23.08; in onnxruntime's order")
def grid_sample_(ctx, node):
    from armnn_import.lowering.grid_sample import grid_sample
    x, grid = ctx.port(node, 0), ctx.port(node, 1)
    r = x.info.rank - 2
    if r not in (2, 3) or grid.info.rank != r + 2 or grid.info.shape[-1] != r \
            or grid.info.shape[0] != x.info.shape[0]:
        raise Unsupported(f"input of shape {list(x.info.shape)} and grid of shape {list(grid.info.shape)}",
                          code="bad-model")
    mode = _GS_MODES[ctx.attr(node, "mode", "linear")]
    return grid_sample(ctx.b, x, grid, mode, ctx.attr(node, "padding_mode", "zeros"),
                       bool(ctx.attr(node, "align_corners", 0)), ctx.name(node))


@register("AffineGrid", since=20, check=needs_const(1, what="size"),
          layers=("Reshape", "StridedSlice", "Constant", "Multiplication", "Addition", "Concat", "Merger"),
          notes="theta times constant base coordinates by broadcasting layers, in onnxruntime's order")
def affine_grid_(ctx, node):
    from armnn_import.lowering.affine_grid import affine_grid
    theta, size = ctx.port(node, 0), [int(v) for v in ctx.const(node, 1, "size").reshape(-1)]
    r = len(size) - 2
    if r not in (2, 3) or theta.info.shape != (size[0], r, r + 1) or min(size) <= 0:
        raise Unsupported(f"theta of shape {list(theta.info.shape)} for size {size}", code="bad-model")
    return affine_grid(ctx.b, theta, size, bool(ctx.attr(node, "align_corners", 0)), ctx.name(node))
