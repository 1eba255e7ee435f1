"""Out-of-range values in otherwise well-formed .tflite files: quantization
parameters, operator options and constant parameters. Each is refused with a
reason naming the tensor or option (never a crash in the writer, a GraphError
or a huge allocation), or, where the value has a meaning, converted exactly."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfl_builder import ModelBuilder, run_litert  # noqa: E402

import armnn_import  # noqa: E402
from armnn_import.errors import LoadError, UnsupportedModelError  # noqa: E402


def _tfl(build) -> bytes:
    mb = ModelBuilder()
    build(mb)
    return mb.build(infer_shapes=False)


def _relu_q(dtype, scale, zp):
    def build(mb):
        x = mb.input("x", [1, 4], dtype, quant=(scale, zp))
        mb.output(mb.op("RELU", [x], out_shape=[1, 4], out_quant=(0.5, 0), out_names=["y"]))
    return _tfl(build)


@pytest.mark.parametrize("dtype,zp", [(np.uint8, -4294967156), (np.uint8, 256), (np.int8, 128),
                                      (np.int8, -129)])
def test_zero_point_out_of_range_is_a_load_error(dtype, zp):
    with pytest.raises(LoadError, match=rf"tensor 'x': zero point {zp} is out of range"):
        armnn_import.convert(_relu_q(dtype, 0.5, zp))


@pytest.mark.parametrize("scale", [0.0, -1.0, float("nan"), float("inf")])
def test_scale_not_finite_positive_is_a_load_error(scale):
    with pytest.raises(LoadError, match="tensor 'x': quantization scale"):
        armnn_import.convert(_relu_q(np.uint8, scale, 0))


def test_no_outputs_is_a_load_error():
    def build(mb):
        mb.op("RELU", [mb.input("x", [1, 4])], out_shape=[1, 4])
    with pytest.raises(LoadError, match="no outputs"):
        armnn_import.convert(_tfl(build))


def _refused(build, match):
    with pytest.raises(UnsupportedModelError, match=match):
        armnn_import.convert(_tfl(build)).to_bytes()


def _conv(**opts):
    def build(mb):
        x = mb.input("x", [1, 6, 6, 2])
        w = mb.const("w", np.ones((3, 3, 3, 2), np.float32))
        o = dict(padding="SAME", stride_w=1, stride_h=1, dilation_w_factor=1, dilation_h_factor=1)
        o.update(opts)
        mb.output(mb.op("CONV_2D", [x, w, -1], "Conv2DOptions", out_shape=[1, 6, 6, 3], **o))
    return build


@pytest.mark.parametrize("opts,match", [
    (dict(stride_w=-1), "option stride_w = -1 is out of range"),
    (dict(stride_h=0), "option stride_h = 0 is out of range"),
    (dict(dilation_h_factor=-3), "option dilation_h_factor = -3"),
    (dict(dilation_w_factor=1 << 20), "dilation 1048576 is larger than the input"),
    (dict(padding=7), "option padding = 7 is out of range"),
])
def test_conv_options_out_of_range(opts, match):
    _refused(_conv(**opts), match)


def test_pool_filter_past_the_input():
    """TFLite computes an empty output whatever shape the file claims (test_tflite_empty_pool.py)."""
    def build(mb):
        x = mb.input("x", [1, 4, 4, 2])
        mb.output(mb.op("MAX_POOL_2D", [x], "Pool2DOptions", out_shape=[1, 1, 1, 2], padding="VALID",
                        stride_w=1, stride_h=1, filter_width=5, filter_height=2))
    _refused(build, r"the output is empty \(shape \[1, 3, 0, 2\], as TFLite computes it\)")


def test_pool_negative_filter():
    def build(mb):
        x = mb.input("x", [1, 4, 4, 2])
        mb.output(mb.op("AVERAGE_POOL_2D", [x], "Pool2DOptions", out_shape=[1, 4, 4, 2], padding="SAME",
                        stride_w=1, stride_h=1, filter_width=-2, filter_height=2))
    _refused(build, "option filter_width = -2")


@pytest.mark.parametrize("strides,match", [((1 << 20, 1 << 20), "for an output of 4x4"),
                                           ((64, 128), "at most 4096 positions")])
def test_transpose_conv_strides(strides, match):
    def build(mb):
        x = mb.input("x", [1, 2, 2, 1])
        shape = mb.const("shape", np.array([1, 128, 256, 1] if strides[0] == 64 else [1, 4, 4, 1], np.int32))
        w = mb.const("w", np.ones((1, 2, 2, 1), np.float32))
        mb.output(mb.op("TRANSPOSE_CONV", [shape, w, x], "TransposeConvOptions", out_shape=[1, 4, 4, 1],
                        out_dtype=np.float32, padding="VALID", stride_h=strides[0], stride_w=strides[1]))
    _refused(build, match)


def test_space_to_depth_negative_block():
    def build(mb):
        x = mb.input("x", [1, 4, 4, 2])
        mb.output(mb.op("SPACE_TO_DEPTH", [x], "SpaceToDepthOptions", out_shape=[1, 2, 2, 8], block_size=-2))
    _refused(build, "option block_size = -2")


def test_split_into_zero_parts():
    def build(mb):
        axis = mb.const("axis", np.array(1, np.int32))
        x = mb.input("x", [1, 4])
        mb.output(mb.op("SPLIT", [axis, x], "SplitOptions", out_shape=[1, 4], num_splits=0))
    _refused(build, "option num_splits = 0")


def test_non_finite_float_option():
    def build(mb):
        x = mb.input("x", [1, 4])
        mb.output(mb.op("LEAKY_RELU", [x], "LeakyReluOptions", out_shape=[1, 4], alpha=float("nan")))
    _refused(build, "option alpha is nan")


def test_lrn_negative_radius():
    def build(mb):
        x = mb.input("x", [1, 2, 2, 8])
        mb.output(mb.op("LOCAL_RESPONSE_NORMALIZATION", [x], "LocalResponseNormalizationOptions",
                        out_shape=[1, 2, 2, 8], radius=-1, bias=1.0, alpha=1.0, beta=0.5))
    _refused(build, "option radius = -1")


def test_lrn_radius_past_the_channels_matches_litert(armnn_runner):
    """A window wider than the channels sums all of them (both runtimes clip it):
    the radius is clipped, not written as a 2^31-wide window."""
    def build(mb):
        x = mb.input("x", [1, 2, 3, 8])
        mb.output(mb.op("LOCAL_RESPONSE_NORMALIZATION", [x], "LocalResponseNormalizationOptions",
                        out_shape=[1, 2, 3, 8], radius=(1 << 30), bias=1.0, alpha=0.3, beta=0.75))
    data = _tfl(build)
    r = armnn_import.convert(data)
    (layer,) = [l for l in r.network.layers if l.type.name == "Normalization"]
    assert layer.desc.norm_size == 15
    x = np.random.default_rng(3).standard_normal((1, 2, 3, 8)).astype(np.float32)
    (want,) = run_litert(data, [x])
    (got,) = armnn_runner(r.to_bytes(), [x])
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op,options_type,param", [
    ("TILE", "TileOptions", np.array([1 << 15, 1 << 15], np.int32)),
    ("BROADCAST_TO", None, np.array([1 << 15, 1 << 15], np.int32)),
])
def test_constant_folding_is_bounded(op, options_type, param):
    def build(mb):
        c = mb.const("c", np.ones((1, 1), np.float32))
        p = mb.const("p", param)
        big = mb.op(op, [c, p], options_type, out_shape=list(param))
        x = mb.input("x", [1, 1])
        mb.output(mb.op("ADD", [x, big], "AddOptions", out_shape=list(param)))
    _refused(build, "would make a constant of 1,073,741,824 elements")


def test_inputs_of_mixed_types():
    def build(mb):
        x = mb.input("x", [1, 4], np.uint8, quant=(0.5, 10))
        y = mb.input("y", [1, 4])
        mb.output(mb.op("MAXIMUM", [x, y], out_shape=[1, 4], out_quant=(0.5, 10)))
    _refused(build, "inputs mix data types Float32, QuantisedAsymm8")


def test_output_type_differs_from_the_input():
    def build(mb):
        x = mb.input("x", [1, 4])
        mb.output(mb.op("RELU", [x], out_shape=[1, 4], out_dtype=np.uint8, out_quant=(0.5, 0)))
    _refused(build, "is QuantisedAsymm8 for an input of type Float32")


def test_resize_to_an_absurd_size():
    def build(mb):
        x = mb.input("x", [1, 1, 2, 1])
        size = mb.const("size", np.array([1 << 20, 2], np.int32))
        mb.output(mb.op("RESIZE_NEAREST_NEIGHBOR", [x, size], "ResizeNearestNeighborOptions",
                        out_shape=[1, 1 << 20, 2, 1]))
    _refused(build, "output size .* is too large")
