"""passes/pad_fold.py: a zero Pad folds into the convolution or pooling that reads it, exactly.

Single-op TFLite and ONNX models, converted by the CLI for every target and run on the real
runtimes that read the file (19.02 and 20.08 files on 20.08 and 23.08, 23.08 files on 23.08),
against LiteRT / onnxruntime; the file without the pass (our old output) gives the same bits on
the same runtime. The negative cases keep their Pad and still match: before 23.08 a kept Pad
reaches its Convolution2d readers through the guard's identity Reshape (passes/pad_guard.py),
since Arm NN 20.08's optimizer misfolds a Pad -> Convolution2d link (shown: the same file
without the guard fails there)."""
from __future__ import annotations

import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "tflite"))
from tfl_builder import ModelBuilder  # noqa: E402

import armnn_import.passes as passes  # noqa: E402
from armnn_import import cli  # noqa: E402
from armnn_import.ir.types import LayerType  # noqa: E402
from armnn_import.serialize import read  # noqa: E402
from armnn_import.verify_cmd import Tolerance, verify  # noqa: E402

TARGETS = ("19.02", "20.08", "23.08")
RNG = np.random.default_rng(16)
QX, QW, QY = (0.05, 3), (0.02, 0), (0.1, -5)


def _w(*shape):
    return RNG.uniform(-1, 1, shape).astype(np.float32)


def _pads(mb, pads):
    return mb.const("pads", np.array(pads, np.int32))


def _tfl(body, shape=(1, 9, 8, 3)):
    mb = ModelBuilder()
    x = mb.input("x", shape)
    mb.output(body(mb, x))
    return mb.build(), RNG.standard_normal(shape).astype(np.float32)


def _conv(mb, x, pads, stride=1, dilation=1):
    y = mb.op("PAD", [x, _pads(mb, pads)], "PadOptions")
    return mb.op("CONV_2D", [y, mb.const("w", _w(4, 3, 3, 3)), mb.const("b", _w(4))], "Conv2DOptions",
                 padding="VALID", stride_w=stride, stride_h=stride, dilation_w_factor=dilation,
                 dilation_h_factor=dilation)


def _dwconv(mb, x):
    y = mb.op("PAD", [x, _pads(mb, [[0, 0], [2, 1], [1, 1], [0, 0]])], "PadOptions")
    return mb.op("DEPTHWISE_CONV_2D", [y, mb.const("w", _w(1, 3, 3, 6)), mb.const("b", _w(6))],
                 "DepthwiseConv2DOptions", padding="VALID", stride_w=1, stride_h=1, depth_multiplier=2)


def _pool(mb, x, op, pads, relu=True, window=3):
    if relu:
        x = mb.op("RELU", [x])
    y = mb.op("PAD", [x, _pads(mb, pads)], "PadOptions")
    return mb.op(op, [y], "Pool2DOptions", padding="VALID", stride_w=2, stride_h=2, filter_width=window,
                 filter_height=window)


def _quant_conv(mb, x, fill=None):
    pads = _pads(mb, [[0, 0], [1, 2], [2, 1], [0, 0]])
    y = mb.op("PAD", [x, pads], "PadOptions", out_quant=QX) if fill is None else \
        mb.op("PADV2", [x, pads, mb.const("v", np.array([fill], np.int8), quant=QX)], out_quant=QX)
    w = mb.const("w", RNG.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8), quant=QW)
    b = mb.const("b", RNG.integers(-500, 500, 4).astype(np.int32), quant=(QX[0] * QW[0], 0))
    return mb.op("CONV_2D", [y, w, b], "Conv2DOptions", padding="VALID", stride_w=1, stride_h=1,
                 out_quant=QY, version=3)


SYM = [[0, 0], [1, 1], [1, 1], [0, 0]]
ASYM = [[0, 0], [0, 2], [3, 1], [0, 0]]
POOL_ASYM = [[0, 0], [0, 2], [2, 1], [0, 0]]  # (every pad below the 3x3 window)
#: name: (model body, Pads left under 19.02 / the richer targets)
TFL_CASES = {
    "conv_asymmetric": (lambda mb, x: _conv(mb, x, ASYM), 0, 0),
    "conv_stride2": (lambda mb, x: _conv(mb, x, SYM, stride=2), 0, 0),
    "conv_dilated": (lambda mb, x: _conv(mb, x, ASYM, dilation=2), None, 0),
    "depthwise": (_dwconv, 0, 0),
    "maxpool_after_relu": (lambda mb, x: _pool(mb, x, "MAX_POOL_2D", POOL_ASYM), 0, 0),
    "avgpool": (lambda mb, x: _pool(mb, x, "AVERAGE_POOL_2D", POOL_ASYM, relu=False), 0, 0),
    # negative cases: the Pad stays (before 23.08 read by its Convolution2d through a guard Reshape)
    "nonzero_fill": (lambda mb, x: mb.op("CONV_2D", [mb.op("PADV2", [x, _pads(mb, SYM), mb.const(
        "v", np.array([0.5], np.float32))]), mb.const("w", _w(4, 3, 3, 3)), mb.const("b", _w(4))],
        "Conv2DOptions", padding="VALID", stride_w=1, stride_h=1), None, 1),
    "nonzero_fill_own_padding": (lambda mb, x: mb.op("CONV_2D", [mb.op("PADV2", [x, _pads(mb, ASYM), mb.const(
        "v", np.array([0.5], np.float32))]), mb.const("w", _w(4, 3, 3, 3)), mb.const("b", _w(4))],
        "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1), None, 1),
    # (20.08 folds no Pad into a DepthwiseConvolution2d: no guard, and it still matches there)
    "nonzero_fill_depthwise": (lambda mb, x: mb.op("DEPTHWISE_CONV_2D", [mb.op("PADV2", [x, _pads(mb, SYM), mb.const(
        "v", np.array([0.5], np.float32))]), mb.const("w", _w(1, 3, 3, 6)), mb.const("b", _w(6))],
        "DepthwiseConv2DOptions", padding="VALID", stride_w=1, stride_h=1, depth_multiplier=2), None, 1),
    "channel_pads": (lambda mb, x: mb.op("CONV_2D", [mb.op("PAD", [x, _pads(mb, [[0, 0], [1, 1], [1, 1], [1, 0]])]),
                                                     mb.const("w", _w(4, 3, 3, 4)), mb.const("b", _w(4))],
                                         "Conv2DOptions", padding="VALID", stride_w=1, stride_h=1), 1, 1),
    # the convolution folds (on top of its own SAME padding), the ADD keeps reading the Pad
    "two_consumer_kinds": (lambda mb, x: mb.op("ADD", [mb.op("CONV_2D", [
        p := mb.op("PAD", [x, _pads(mb, SYM)]), mb.const("w", _w(3, 3, 3, 3)), mb.const("b", _w(3))],
        "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1), p]), 1, 1),
    "maxpool_no_relu": (lambda mb, x: _pool(mb, x, "MAX_POOL_2D", POOL_ASYM, relu=False), 1, 1),
    "pads_not_below_window": (lambda mb, x: _pool(mb, x, "MAX_POOL_2D", [[0, 0], [2, 0], [0, 0], [0, 0]],
                                                  window=2), 1, 1),
}

#: Arm NN 20.08's optimizer (FoldPadIntoConvolution2d.hpp) folds every Pad -> Convolution2d link
#: unchecked: it drops the pad value, overwrites the convolution's own padding and ignores pads on
#: C. These cases keep a Pad before a Convolution2d: without the guard pass their files of the
#: 20.08 format run wrong there (or fail its optimize step); with it they match.
RUNTIME_20_08_FOLDS = {"nonzero_fill", "nonzero_fill_own_padding", "channel_pads"}


def _write(src, out, target, fold=True, drop=()):
    drop = set(drop) | (set() if fold else {"fold_pads"})
    old, passes.PIPELINE = passes.PIPELINE, tuple(p for p in passes.PIPELINE if p[0] not in drop)
    try:
        assert cli.main([str(src), "-o", str(out), "-q", "--target", target]) == 0
    finally:
        passes.PIPELINE = old
    return [l.type for l in read(out.read_bytes()).layers]


def _pad_readers(path) -> list:
    """The types of the layers that read a Pad in the file (the guard: no Convolution2d before 23.08)."""
    g = read(path.read_bytes())
    return [l.type for l in g.layers for p in l.inputs if p.layer.type == LayerType.Pad]


def _guarded(types) -> int:
    """The layers other than Pads and the guard's Reshapes (one per kept Pad before 23.08 at most)."""
    return len(types) - types.count(LayerType.Pad) - types.count(LayerType.Reshape)


def _check(src, data, target, runner, tmp_path, pads_left, tol=Tolerance(rtol=1e-4, atol=1e-5)):
    if runner.release < target:
        pytest.skip(f"Arm NN {runner.release} does not read the {target} format")
    new, old = tmp_path / "new.armnn", tmp_path / "old.armnn"
    types, before = _write(src, new, target), _write(src, old, target, fold=False)
    if pads_left is not None:
        assert types.count(LayerType.Pad) == pads_left, types
    if pads_left == 0:  # (a case that folds had a Pad to fold)
        assert LayerType.Pad in before, before
    assert _guarded(before) == _guarded(types), (before, types)
    if target != "23.08":
        assert LayerType.Convolution2d not in _pad_readers(new) + _pad_readers(old)
    else:  # (23.08-format files meet only 23.08, which checks before folding: no guard)
        assert LayerType.Reshape not in _pad_readers(new)
    check = verify(str(src), str(new), inputs=data, tolerance=tol, armnn_runtime=runner.path)
    assert check.ok, check.format()
    feed = [np.load(tmp_path / "x.npy")] if (tmp_path / "x.npy").exists() else None
    if feed is not None:  # the same arithmetic as the Pad + layer: the same bits
        a, b = runner(new, feed), runner(old, feed)
        assert all(np.array_equal(u, v) for u, v in zip(a, b))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(TFL_CASES))
def test_tflite_pad_folds(name, target, armnn_release_runner, tmp_path):
    body, left_19, left = TFL_CASES[name]
    model, x = _tfl(body, (1, 9, 8, 3))
    src = tmp_path / "m.tflite"
    src.write_bytes(model)
    np.save(tmp_path / "x.npy", x)
    if name in RUNTIME_20_08_FOLDS and target == "20.08" == armnn_release_runner.release:
        _unguarded_fails(src, [x], target, armnn_release_runner, tmp_path)
    _check(src, [x], target, armnn_release_runner, tmp_path, left_19 if target == "19.02" else left)
    if name == "two_consumer_kinds":  # the convolution took the pads: only the ADD reads the Pad
        assert _pad_readers(tmp_path / "new.armnn") == [LayerType.Addition]
    if name == "nonzero_fill_depthwise" and target == "20.08":
        assert _pad_readers(tmp_path / "new.armnn") == [LayerType.DepthwiseConvolution2d]


def _unguarded_fails(src, data, target, runner, tmp_path):
    """The file without the guard pass has a Pad -> Convolution2d link, which 20.08 misfolds."""
    bare = tmp_path / "unguarded.armnn"
    _write(src, bare, target, drop={"guard_pad_convs"})
    assert LayerType.Convolution2d in _pad_readers(bare)
    try:
        ok = verify(str(src), str(bare), inputs=data, armnn_runtime=runner.path).ok
    except Exception:  # (the runner's optimize step fails)
        ok = False
    assert not ok, "Arm NN 20.08 no longer misfolds a Pad -> Convolution2d: the guard may go"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fill", [None, 20])
def test_tflite_quantized_conv(fill, target, armnn_release_runner, tmp_path):
    """fill 20 (real 0.85, not the zero point 3): the int8 Pad stays, guarded before 23.08."""
    mb = ModelBuilder()
    x = mb.input("x", (1, 7, 6, 3), np.int8, QX)
    mb.output(_quant_conv(mb, x, fill))
    src = tmp_path / "q.tflite"
    src.write_bytes(mb.build())
    data = RNG.integers(-128, 128, (1, 7, 6, 3)).astype(np.int8)
    if fill is not None and target == "20.08" == armnn_release_runner.release:
        _unguarded_fails(src, [data], target, armnn_release_runner, tmp_path)
    # 19.02 writes uint8 (+128, offset 131): its Pad fills raw 0, not the zero point, so is kept
    _check(src, [data], target, armnn_release_runner, tmp_path, None, Tolerance(lsb=1))
    types = [l.type for l in read((tmp_path / "new.armnn").read_bytes()).layers]
    if target != "19.02":
        assert types.count(LayerType.Pad) == (fill is not None), types


#: ONNX kinds: (pads, constant_value or None, the Conv's own pads, an Add also reading the Pad)
ONNX_CONVS = {
    "conv": ([0, 0, 1, 2, 0, 0, 2, 1], None, None, False),
    # the Pad stays: read by its Conv through the guard Reshape before 23.08
    "conv_nonzero_own_padding": ([0, 0, 1, 2, 0, 0, 2, 1], 0.5, [1, 1, 1, 1], False),
    "conv_channel_pads": ([0, 1, 1, 1, 0, 0, 1, 1], None, None, False),
    # the Conv folds (on top of its own padding), the Add keeps the Pad
    "conv_add": ([0, 0, 1, 1, 0, 0, 1, 1], None, [1, 1, 1, 1], True),
}


def _onnx(kind):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 9, 8])
    pad_list, value, own, add = ONNX_CONVS.get(kind, ([0, 0, 1, 2, 0, 0, 2, 1], None, None, False))
    pads = helper.make_tensor("pads", TensorProto.INT64, [8], pad_list)
    nodes, inits, src, pad_in = [], [pads], "x", ["pads"]
    if value is not None:
        inits.append(helper.make_tensor("v", TensorProto.FLOAT, [], [value]))
        pad_in.append("v")
    if kind == "maxpool":
        nodes.append(helper.make_node("Relu", ["x"], ["r"]))
        src = "r"
    nodes.append(helper.make_node("Pad", [src] + pad_in, ["p"], mode="constant"))
    if kind in ONNX_CONVS:
        c_in = 3 + pad_list[1] + pad_list[5]
        inits.append(onnx.numpy_helper.from_array(_w(c_in if add else 4, c_in, 3, 3), "w"))
        conv_out = "c" if add else "y"
        nodes.append(helper.make_node("Conv", ["p", "w"], [conv_out], strides=[1, 1] if add else [2, 1],
                                      **({"pads": own} if own else {})))
        if add:
            nodes.append(helper.make_node("Add", ["c", "p"], ["y"]))
    else:
        op = "MaxPool" if kind == "maxpool" else "AveragePool"
        nodes.append(helper.make_node(op, ["p"], ["y"], kernel_shape=[3, 3], strides=[2, 2]))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph(nodes, "g", [x], [y], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", ["conv_nonzero_own_padding", "conv_channel_pads", "conv_add"])
def test_onnx_pad_kept(kind, target, armnn_release_runner, tmp_path):
    """A Pad that stays: a non-zero fill before a Conv with its own pads, pads on C, a Pad read by
    a Conv and an Add. 19.02 and 20.08 files (NCHW: the Pad reads straight into the Conv) run on
    20.08, whose optimizer would misfold them without the guard Reshape."""
    src = tmp_path / "m.onnx"
    onnx.save(_onnx(kind), src)
    x = RNG.standard_normal((1, 3, 9, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    # (19.02's Pad has no value: a non-zero fill is a zero Pad plus the fill, no Pad -> Conv link)
    nonzero_19 = kind == "conv_nonzero_own_padding" and target == "19.02"
    if target != "23.08" and armnn_release_runner.release == "20.08" and kind != "conv_add" and not nonzero_19:
        _unguarded_fails(src, [x], target, armnn_release_runner, tmp_path)
    _check(src, [x], target, armnn_release_runner, tmp_path, None if nonzero_19 else 1)
    if kind == "conv_add":
        assert _pad_readers(tmp_path / "new.armnn") == [LayerType.Addition]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", ["conv", "maxpool", "avgpool"])
def test_onnx_pad_folds(kind, target, armnn_release_runner, tmp_path):
    src = tmp_path / "m.onnx"
    onnx.save(_onnx(kind), src)
    x = RNG.standard_normal((1, 3, 9, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    _check(src, [x], target, armnn_release_runner, tmp_path, 0)


MODELS = ("densenet_mini", "resnet_mini", "mobilenet_v1_025")
#: the 19.02 (uint8) int8 networks' levels from LiteRT, as tests/tflite/test_tflite_frontend.py's NETWORK_LEVELS
NETWORK_LEVELS_19_02 = {"densenet_mini": 8, "resnet_mini": 4, "mobilenet_v1_025": 14}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("model", MODELS)
def test_reference_models_lose_their_pads(model, target, armnn_release_runner, tmp_path):
    """Every Pad of the three Keras models folds; the outputs match LiteRT as before, bit for
    bit the old file's."""
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "test_models")
    src = os.path.join(root, "tflite", "models", f"{model}.float32.tflite")
    npz = np.load(os.path.join(root, "tflite", "models", f"{model}.float32.npz"))
    x = npz["input_0"]
    np.save(tmp_path / "x.npy", x)
    _check(src, [x], target, armnn_release_runner, tmp_path, 0)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("model", MODELS)
def test_int8_reference_models_lose_their_pads(model, target, armnn_release_runner, tmp_path):
    """From 20.08 on int8 stays QAsymmS8 and its Pads fill the zero point: they all fold. 19.02's
    uint8 Pads fill raw 0: only where that is the zero point (resnet_mini's Pad before its max
    pool, after a fused ReLU: offset 0, the lowest level) does one fold. The layer count drops by
    the Pads folded, and the old file gives the same bits."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
    from test_targets import RICH_NETWORK_LSB
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "test_models")
    src = os.path.join(root, "tflite", "models", f"{model}.int8.tflite")
    x = np.load(src.replace(".tflite", ".npz"))["input_0"]
    # (19.02 has no int8: the network reads uint8, x + 128, and has Pads of its quantized bias paths)
    np.save(tmp_path / "x.npy", (x.astype(np.int16) + 128).astype(np.uint8) if target == "19.02" else x)
    lsb = NETWORK_LEVELS_19_02[model] if target == "19.02" \
        else RICH_NETWORK_LSB.get(f"tflite/models/{model}.int8.tflite", 1)
    _check(src, [x], target, armnn_release_runner, tmp_path, None if target == "19.02" else 0, Tolerance(lsb=lsb))
