"""The structural layers of the richer formats, emitted directly (issue 16): Concat, Transpose,
Resize, Pad with a value (20.08) or mirrored (23.08), Softmax on any axis (23.08).

Each conversion runs on the real Arm NN runtime of the target's release and matches its source
runtime (onnxruntime or LiteRT); the numpy executor matches too. Where the target has the layer
the network is leaner: one layer instead of the 19.02 decomposition (no Permutes, FullyConnected
interpolation matrices or StridedSlice/Merger mirrors around it). Under 19.02 nothing changes
(scripts/output_hashes.py --check)."""
from __future__ import annotations

import collections
import os
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper

import armnn_import
from armnn_import import cli
from armnn_import.ir.types import LayerType as L
from armnn_import.ir.types import PaddingMode, ResizeMethod
from armnn_import.serialize import read
from armnn_import.verify_cmd import Tolerance, verify

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # pytest runs with --import-mode=importlib
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnx"))
from ort_check import check  # noqa: E402
from reference_models import ROOT  # noqa: E402

RICH = ("20.08", "23.08")


def _types(graph) -> collections.Counter:
    return collections.Counter(l.type for l in graph.layers if l.type not in (L.Input, L.Output))


# model, release -> the layer types (with counts) of the whole network on that target
REFERENCE = {
    "tflite/ops/resize_bilinear_align_corners.float32.tflite": {r: {L.Resize: 1} for r in RICH},
    "tflite/ops/resize_bilinear_half_pixel.uint8.tflite": {r: {L.Resize: 1} for r in RICH},
    "tflite/ops/resize_bilinear_half_pixel.int8.tflite": {r: {L.Resize: 1} for r in RICH},
    "tflite/ops/resize_nearest_neighbor.float32.tflite": {r: {L.Resize: 1} for r in RICH},
    "tflite/ops/resize_nearest_neighbor_align_corners.uint8.tflite": {r: {L.Resize: 1} for r in RICH},
    "tflite/ops/resize_nearest_neighbor_half_pixel.int8.tflite": {r: {L.Resize: 1} for r in RICH},
    "tflite/ops/padv2.float32.tflite": {r: {L.Pad: 1} for r in RICH},
    "tflite/ops/padv2.uint8.tflite": {r: {L.Pad: 1} for r in RICH},
    "tflite/ops/pad.int8.tflite": {r: {L.Pad: 1} for r in RICH},
    "tflite/ops/mirror_pad_reflect.float32.tflite": {"20.08": {L.StridedSlice: 4, L.Concat: 2},
                                                      "23.08": {L.Pad: 1}},
    "tflite/ops/mirror_pad_symmetric.uint8.tflite": {"20.08": {L.StridedSlice: 4, L.Concat: 2},
                                                      "23.08": {L.Pad: 1}},
    "tflite/ops/transpose.float32.tflite": {r: {L.Transpose: 1} for r in RICH},
    "tflite/ops/transpose_3d.int8.tflite": {r: {L.Transpose: 1} for r in RICH},
    "tflite/ops/concatenation.uint8.tflite": {r: {L.Concat: 1} for r in RICH},
    "tflite/ops/pack.float32.tflite": {r: {L.Stack: 1} for r in RICH},
    "tflite/ops/pack.uint8.tflite": {r: {L.Stack: 1} for r in RICH},
    "tflite/ops/depth_to_space.float32.tflite": {r: {L.DepthToSpace: 1} for r in RICH},
    "tflite/ops/depth_to_space.uint8.tflite": {r: {L.DepthToSpace: 1} for r in RICH},
    "tflite/ops/space_to_depth.float32.tflite": {r: {L.SpaceToDepth: 1} for r in RICH},
    "tflite/ops/space_to_depth.int8.tflite": {r: {L.SpaceToDepth: 1} for r in RICH},
}


def _convert_cli(path, out, *args) -> None:
    assert cli.main([str(path), "-o", str(out), "-q", *map(str, args)]) == 0


@pytest.mark.parametrize("release", RICH)
@pytest.mark.parametrize("model_id", sorted(REFERENCE))
def test_reference_op_models_take_the_direct_layer(model_id, release, armnn_runner_for, tmp_path):
    path, out = ROOT / model_id, tmp_path / "model.armnn"
    _convert_cli(path, out, "--target", release)
    graph = read(out.read_bytes())
    assert dict(_types(graph)) == REFERENCE[model_id][release]
    seed = armnn_import.convert(path).network
    assert len(graph.layers) <= len(seed.layers)
    runner = armnn_runner_for(release)
    for runtime in (runner.path, None):  # the release's CpuRef, then the numpy executor
        check_ = verify(path, str(out), tolerance=Tolerance(atol=1e-4, lsb=1), armnn_runtime=runtime)
        assert check_.ok, check_.format()


@pytest.mark.parametrize("model_id, release, fewer", [
    ("onnx/unet_small.onnx", "20.08", {L.Merger, L.FullyConnected, L.StridedSlice}),
    ("onnx/shufflenetv2_small.onnx", "23.08", {L.Permute, L.Merger}),
    ("onnx/yolo_head_op17.onnx", "20.08", {L.Permute, L.Merger}),
])
def test_networks_are_leaner(model_id, release, fewer, armnn_runner_for, tmp_path):
    """Resize instead of interpolation matrices, Concat and Transpose instead of Merger and Permute."""
    path, out = ROOT / model_id, tmp_path / "model.armnn"
    _convert_cli(path, out, "--target", release)
    graph, seed = read(out.read_bytes()), armnn_import.convert(path).network
    got, was = _types(graph), _types(seed)
    assert all(got[t] < was[t] for t in fewer), (got, was)
    assert not got[L.Merger] and not got[L.Permute]
    assert len(graph.layers) < len(seed.layers)
    check_ = verify(path, str(out), tolerance=Tolerance(atol=1e-4), armnn_runtime=armnn_runner_for(release).path)
    assert check_.ok, check_.format()


# -- ONNX operators built here, against onnxruntime ---------------------------------------------

def _model(nodes, x_shape, y_shape, inits=(), opset=13):
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _feeds(shape, seed=0):
    return {"x": np.random.default_rng(seed).standard_normal(shape).astype(np.float32)}


@pytest.mark.parametrize("release", RICH)
def test_softmax_on_a_middle_axis(release, armnn_runner_for):
    m = _model([helper.make_node("Softmax", ["x"], ["y"], axis=1)], [2, 5, 3, 4], [2, 5, 3, 4])
    net = check(armnn_runner_for(release), m, _feeds((2, 5, 3, 4)), target=release).network
    types = _types(net)
    if release == "23.08":  # SoftmaxDescriptor.axis
        assert dict(types) == {L.Softmax: 1}
        assert [l.desc.axis for l in net.layers if l.type == L.Softmax] == [1]
    else:
        assert dict(types) == {L.Softmax: 1, L.Transpose: 2}


def test_a_transpose_sinks_through_a_softmax_with_an_axis(armnn_runner_for):
    """The layout pass moves a Permute below a Softmax of the 23.08 format by renaming its axis."""
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1]),
             helper.make_node("Softmax", ["t"], ["s"], axis=2),
             helper.make_node("Transpose", ["s"], ["y"], perm=[0, 3, 1, 2])]
    m = _model(nodes, [2, 5, 3, 4], [2, 5, 3, 4])
    net = check(armnn_runner_for("23.08"), m, _feeds((2, 5, 3, 4), 1), target="23.08").network
    assert dict(_types(net)) == {L.Softmax: 1}
    assert [l.desc.axis for l in net.layers if l.type == L.Softmax] == [3]


def _pad_model(mode, pads, shape, value=None):
    inits = [helper.make_tensor("pads", TensorProto.INT64, [len(pads)], pads)]
    names = ["x", "pads"]
    if value is not None:
        inits.append(helper.make_tensor("value", TensorProto.FLOAT, [], [value]))
        names.append("value")
    half = len(pads) // 2
    out = [d + pads[i] + pads[i + half] for i, d in enumerate(shape)]
    return _model([helper.make_node("Pad", names, ["y"], mode=mode)], shape, out, inits)


@pytest.mark.parametrize("release", RICH)
@pytest.mark.parametrize("mode, pads, shape, value, direct", [
    ("constant", [0, 1, 2, 0, 0, 0, 1, 3], [2, 3, 4, 5], 1.5, {"20.08", "23.08"}),
    ("constant", [0, 0, 1, 0, 2, 0, 0, 0, 1, 1], [2, 3, 2, 2, 3], -2.0, {"20.08", "23.08"}),  # 5-D: merged axes
    ("reflect", [1, 2, 0, 3, 0, 2, 1, 4], [2, 3, 4, 5], None, {"23.08"}),
    ("edge", [0, 1, 2, 0, 0, 0, 1, 3], [2, 3, 4, 5], None, set()),  # (Arm NN has no edge mode)
])
def test_onnx_pad(mode, pads, shape, value, direct, release, armnn_runner_for):
    m = _pad_model(mode, pads, shape, value)
    net = check(armnn_runner_for(release), m, _feeds(shape, 2), target=release).network
    pad_layers = [l for l in net.layers if l.type == L.Pad]
    if release in direct:
        assert len(pad_layers) == 1 and not _types(net)[L.Addition] and not _types(net)[L.Concat]
        d = pad_layers[0].desc
        assert d.padding_mode == (PaddingMode.Reflect if mode == "reflect" else PaddingMode.Constant)
        assert d.pad_value == (value or 0.0)
    else:
        assert not pad_layers or pad_layers[0].desc.padding_mode == PaddingMode.Constant


def _resize_model(in_shape, out_shape, sizes=None, scales=None, **attrs):
    inits = [helper.make_tensor("roi", TensorProto.FLOAT, [0], [])]
    names = ["x", "roi"]
    if scales is not None:
        inits.append(helper.make_tensor("scales", TensorProto.FLOAT, [4], scales))
        names.append("scales")
    else:
        inits.append(helper.make_tensor("scales", TensorProto.FLOAT, [0], []))
        inits.append(helper.make_tensor("sizes", TensorProto.INT64, [4], sizes))
        names += ["scales", "sizes"]
    return _model([helper.make_node("Resize", names, ["y"], **attrs)], in_shape, out_shape, inits)


@pytest.mark.parametrize("release", RICH)
@pytest.mark.parametrize("attrs, size, direct", [
    # (mode, coordinate_transformation_mode, nearest_mode), output H, W -> one Resize layer or not.
    # The converter assumes nothing about the modes: it takes the Resize whose interpolation
    # matrices (Resize.cpp) equal the ONNX reference's, so several modes meet one configuration
    (("nearest", "asymmetric", "floor"), (10, 14), True),
    (("nearest", "asymmetric", "floor"), (3, 4), True),
    (("nearest", "align_corners", "round_prefer_ceil"), (9, 11), True),
    (("nearest", "half_pixel", "round_prefer_ceil"), (3, 11), True),
    (("nearest", "pytorch_half_pixel", "round_prefer_ceil"), (8, 3), True),
    (("nearest", "half_pixel", "round_prefer_floor"), (5, 14), True),  # (no ties when doubling)
    (("nearest", "asymmetric", "ceil"), (10, 14), False),  # no Arm NN rounding: the 19.02 path
    (("nearest", "half_pixel", "floor"), (10, 14), False),
    (("linear", "asymmetric", None), (9, 11), True),
    (("linear", "align_corners", None), (9, 11), True),
    (("linear", "half_pixel", None), (9, 4), True),
    (("linear", "pytorch_half_pixel", None), (9, 4), True),
    (("cubic", "half_pixel", None), (9, 11), False),
])
def test_onnx_resize_modes(attrs, size, direct, release, armnn_runner_for):
    mode, ctm, nearest = attrs
    kw = dict(mode=mode, coordinate_transformation_mode=ctm)
    if nearest:
        kw["nearest_mode"] = nearest
    shape = [1, 2, 5, 7]
    m = _resize_model(shape, [1, 2, *size], sizes=[1, 2, *size], **kw)
    net = check(armnn_runner_for(release), m, _feeds(shape, 3), target=release).network
    resize = [l for l in net.layers if l.type == L.Resize]
    if not direct:
        assert not resize
        return
    assert len(resize) == 1 and dict(_types(net)) == {L.Resize: 1}
    d = resize[0].desc
    assert d.method == (ResizeMethod.NearestNeighbor if mode == "nearest" else ResizeMethod.Bilinear)
    assert not (d.align_corners and d.half_pixel_centers)


def test_onnx_resize_by_scales(armnn_runner_for):
    """Upsampling by scales (not sizes), linear half_pixel: one Resize (float32 coordinates within 1e-6)."""
    m = _resize_model([1, 3, 4, 6], [1, 3, 8, 9], scales=[1.0, 1.0, 2.0, 1.5], mode="linear",
                      coordinate_transformation_mode="half_pixel")
    net = check(armnn_runner_for("20.08"), m, _feeds((1, 3, 4, 6), 4), target="20.08").network
    assert dict(_types(net)) == {L.Resize: 1}


@pytest.mark.parametrize("release", RICH)
def test_onnx_transpose_and_concat(release, armnn_runner_for):
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[2, 0, 3, 1]),
             helper.make_node("Concat", ["t", "t"], ["y"], axis=2)]
    m = _model(nodes, [2, 3, 4, 5], [4, 2, 10, 3])
    net = check(armnn_runner_for(release), m, _feeds((2, 3, 4, 5), 5), target=release).network
    assert dict(_types(net)) == {L.Transpose: 1, L.Concat: 1}
    assert [tuple(l.desc.dim_mappings) for l in net.layers if l.type == L.Transpose] == [(2, 0, 3, 1)]


@pytest.mark.parametrize("release", RICH)
@pytest.mark.parametrize("op, mode, shape, out, direct", [
    ("DepthToSpace", "DCR", [2, 12, 2, 3], [2, 3, 4, 6], True),
    ("DepthToSpace", "CRD", [2, 12, 2, 3], [2, 3, 4, 6], False),  # (Arm NN's channel order is DCR)
    ("SpaceToDepth", None, [2, 3, 4, 6], [2, 12, 2, 3], True),
    ("SpaceToDepth", "CRD", [2, 3, 4, 6], [2, 12, 2, 3], False),  # (the ONNX suite has it; not Arm NN's order)
])
def test_onnx_depth_space(op, mode, shape, out, direct, release, armnn_runner_for):
    kw = {"blocksize": 2, **({"mode": mode} if mode else {})}
    # SpaceToDepth has a mode from opset 28 (before, the attribute makes the model invalid)
    opset = 28 if op == "SpaceToDepth" and mode else 13
    m = _model([helper.make_node(op, ["x"], ["y"], **kw)], shape, out, opset=opset)
    want = None
    if op == "SpaceToDepth" and mode:  # (onnxruntime has no opset 28 yet; the ONNX reference takes it)
        from onnx.reference import ReferenceEvaluator
        want = ReferenceEvaluator(m).run(None, _feeds(shape, 6))
    net = check(armnn_runner_for(release), m, _feeds(shape, 6), want=want, target=release).network
    want = L.DepthToSpace if op == "DepthToSpace" else L.SpaceToDepth
    assert (dict(_types(net)) == {want: 1}) == direct


@pytest.mark.parametrize("release", RICH)
@pytest.mark.parametrize("shape, uniform", [([2, 3, 5, 7], False), ([2, 3, 5, 7], True), ([2, 4, 9], False),
                                            ([1, 2, 3, 4, 5], True)])
def test_onnx_instance_normalization(shape, uniform, release, armnn_runner_for):
    c = shape[1]
    rng = np.random.default_rng(7)
    scale = np.full(c, 0.75, np.float32) if uniform else rng.uniform(0.5, 2, c).astype(np.float32)
    bias = np.full(c, -0.25, np.float32) if uniform else rng.standard_normal(c).astype(np.float32)
    inits = [helper.make_tensor("s", TensorProto.FLOAT, [c], scale), helper.make_tensor("b", TensorProto.FLOAT, [c], bias)]
    m = _model([helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)], shape, shape, inits)
    # (the per-channel scale and shift: a BatchNormalization, or Multiplication + Addition by two
    # Constant layers where CpuRef runs that faster, passes/bn_split.py)
    net = check(armnn_runner_for(release), m, _feeds(shape, 8), constant_layers_ok=True, target=release).network
    types = _types(net)
    assert types[L.InstanceNormalization] == 1 and not types[L.Mean] and not types[L.Rsqrt]
    assert types[L.BatchNormalization] + types[L.Multiplication] == (0 if uniform else 1)
    assert types[L.Addition] == types[L.Multiplication] and types[L.Constant] == 2 * types[L.Multiplication]

