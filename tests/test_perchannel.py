"""Per-channel int8 weights as QSymmS8 with per-axis scales (the 20.08 format on), on the real
Arm NN 20.08 and 23.08 runtimes (CpuRef), against the quantized operators' definition computed
in float64: y = clamp(round((conv(x_real, w_real) + b_real) / out_scale) + out_offset).

Also the runtime facts that decide the lowering (lowering/perchannel.py): both CpuRefs run
per-axis Convolution2d and DepthwiseConvolution2d weights; neither runs a per-axis
FullyConnected."""
from __future__ import annotations

import os

import numpy as np
import pytest

from armnn_import.errors import GraphError
from armnn_import.executor import run as run_executor
from armnn_import.ir import descriptors as D
from armnn_import.ir.graph import Graph
from armnn_import.ir.types import ConstTensor, DataLayout, DataType, LayerType, TensorInfo
from armnn_import.ir.verify import verify
from armnn_import.lowering import NetBuilder, perchannel
from armnn_import.serialize import read, write
from armnn_import.testing.armnn_runtime import ArmnnRuntimeError

XQ, YQ = (0.05, 120), (0.08, 100)
NHWC = DataLayout.NHWC


def _runtime(release, armnn_runner_for):
    return release, armnn_runner_for(release)


@pytest.fixture(params=["20.08", "23.08"])
def runtime(request, armnn_runner_for):
    """(release, run(bytes, inputs)) for the real runtime of each rich release."""
    return _runtime(request.param, armnn_runner_for)


# (target, runtime): 20.08 output on 20.08 and 23.08, 23.08 output on 23.08
PAIRS = pytest.mark.parametrize("target, release", [("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")])


def _weights(rng, shape, channels, axis):
    """int8 weights and per-channel scales spread over two decades (one scale per tensor would
    lose the small channels)."""
    q = rng.integers(-127, 128, size=shape).astype(np.int8)
    scales = (np.float32(0.002) * np.float32(10) ** rng.uniform(0, 2, channels)).astype(np.float32)
    return q, scales


def _real_conv_nhwc(x, w_oihw, bias, strides, pads, groups):
    """float64 NHWC convolution (OIHW weights), zero padding (real 0)."""
    n, h, wd, c = x.shape
    o, ci, kh, kw = w_oihw.shape
    xp = np.pad(x, ((0, 0), (pads[0], pads[2]), (pads[1], pads[3]), (0, 0)))
    oh = (h + pads[0] + pads[2] - kh) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - kw) // strides[1] + 1
    y = np.zeros((n, oh, ow, o))
    go = o // groups
    for oc in range(o):
        g = oc // go
        for ky in range(kh):
            for kx in range(kw):
                patch = xp[:, ky:ky + strides[0] * oh:strides[0], kx:kx + strides[1] * ow:strides[1],
                           g * ci:(g + 1) * ci]
                y[..., oc] += patch @ w_oihw[oc, :, ky, kx]
    return y + bias


def _quantize(real, q):
    return np.clip(np.round(real / q[0]) + q[1], 0, 255).astype(np.uint8)


def _graph(target, build, xshape):
    nb = NetBuilder(Graph(target))
    x = nb.g.add_input("x", TensorInfo(xshape, DataType.QuantisedAsymm8, *XQ))
    nb.g.add_output("y", build(nb, x))
    verify(nb.g)
    return nb.g


def _check(graph, runtime, x, want_u8):
    release, run = runtime
    data = write(graph)
    assert read(data).target == graph.target
    got = np.asarray(run(data, [x])[0])
    assert got.dtype == np.uint8 and got.shape == want_u8.shape
    err = np.abs(got.astype(int) - want_u8.astype(int)).max()
    assert err <= 1, f"off by {err} LSB on Arm NN {release}"
    # the numpy executor follows the runtime exactly
    np.testing.assert_array_equal(run_executor(graph, [x])[0], got)


@PAIRS
def test_per_axis_convolution(target, release, armnn_runner_for, rng=np.random.default_rng(1)):
    runtime = _runtime(release, armnn_runner_for)
    w, s = _weights(rng, (4, 3, 3, 3), 4, 0)  # OIHW
    b_real = rng.normal(0, 0.3, 4)
    x = rng.integers(0, 256, (1, 6, 7, 3)).astype(np.uint8)

    def build(nb, xp):
        b = perchannel.bias(b_real, XQ[0], s)
        return perchannel.conv2d(nb, xp, w, s, b, YQ, "conv", strides=(2, 1), pads=(1, 1, 1, 1), layout=NHWC)
    g = _graph(target, build, x.shape)
    conv = next(l for l in g.layers if l.type == LayerType.Convolution2d)
    assert conv.tensors["weights"].info.dtype == DataType.QSymmS8 and len(conv.tensors["weights"].info.scales) == 4
    b_int = np.round(b_real / (np.float32(XQ[0]) * s)) * (np.float32(XQ[0]) * s)
    real = _real_conv_nhwc((x.astype(float) - XQ[1]) * XQ[0], w * s[:, None, None, None].astype(float),
                           b_int, (2, 1), (1, 1, 1, 1), 1)
    _check(g, runtime, x, _quantize(real, YQ))


@PAIRS
def test_per_axis_depthwise_with_a_multiplier(target, release, armnn_runner_for, rng=np.random.default_rng(2)):
    """Depthwise weights [M, C, kH, kW] carry their C * M scales in output order c * M + m."""
    runtime = _runtime(release, armnn_runner_for)
    c, m = 3, 2
    w, s = _weights(rng, (c * m, 1, 3, 3), c * m, 0)  # OIHW, output channel c * M + m
    b_real = rng.normal(0, 0.3, c * m)
    x = rng.integers(0, 256, (1, 5, 6, c)).astype(np.uint8)

    def build(nb, xp):
        return perchannel.conv2d(nb, xp, w, s, perchannel.bias(b_real, XQ[0], s), YQ, "dw", pads=(1, 0, 1, 2),
                                 groups=c, layout=NHWC)
    g = _graph(target, build, x.shape)
    assert any(l.type == LayerType.DepthwiseConvolution2d for l in g.layers)
    b_int = np.round(b_real / (np.float32(XQ[0]) * s)) * (np.float32(XQ[0]) * s)
    real = _real_conv_nhwc((x.astype(float) - XQ[1]) * XQ[0], w * s[:, None, None, None].astype(float),
                           b_int, (1, 1), (1, 0, 1, 2), c)
    _check(g, runtime, x, _quantize(real, YQ))


@PAIRS
def test_per_axis_fully_connected_as_a_1x1_convolution(target, release, armnn_runner_for, rng=np.random.default_rng(3)):
    runtime = _runtime(release, armnn_runner_for)
    w, s = _weights(rng, (4, 5), 4, 0)
    b_real = rng.normal(0, 0.3, 4)
    x = rng.integers(0, 256, (3, 5)).astype(np.uint8)
    g = _graph(target, lambda nb, xp: perchannel.fully_connected(nb, xp, w, s, perchannel.bias(b_real, XQ[0], s),
                                                                 YQ, "fc"), x.shape)
    assert not any(l.type == LayerType.FullyConnected for l in g.layers)
    b_int = np.round(b_real / (np.float32(XQ[0]) * s)) * (np.float32(XQ[0]) * s)
    real = ((x.astype(float) - XQ[1]) * XQ[0]) @ (w * s[:, None].astype(float)).T + b_int
    _check(g, runtime, x, _quantize(real, YQ))


def _per_axis_fc_graph(target, rng=np.random.default_rng(4)):
    w, s = _weights(rng, (4, 5), 4, 0)
    nb = NetBuilder(Graph(target))
    x = nb.g.add_input("x", TensorInfo((2, 5), DataType.QuantisedAsymm8, *XQ))
    y = nb.add(LayerType.FullyConnected, "fc", [x], D.FullyConnectedDescriptor(True, True),
               tensors={"weights": perchannel.weights(w, s), "biases": perchannel.bias(np.zeros(4), XQ[0], s)},
               quant=YQ)
    nb.g.add_output("y", y)
    verify(nb.g)
    return nb.g


def test_neither_cpuref_runs_a_per_axis_fully_connected(runtime):
    """Why perchannel.fully_connected is a convolution: 20.08 asserts in GetBiasTypeFromWeightsType
    (QSymmS8 weights), 23.08 wants FullyConnected weights of the input's type."""
    release, run = runtime
    x = np.zeros((2, 5), np.uint8)
    with pytest.raises(ArmnnRuntimeError) as e:
        run(write(_per_axis_fc_graph(release)), [x])
    want = "GetBiasTypeFromWeightsType" if release == "20.08" else "Fully Connected"
    assert want in e.value.stderr


def test_per_axis_round_trip_and_refused_for_19_02():
    g = _per_axis_fc_graph("20.08")
    back = read(write(g))
    info = next(l for l in back.layers if l.type == LayerType.FullyConnected).tensors["weights"].info
    assert info == g.layers[1].tensors["weights"].info and info.scales is not None and info.quant_dim == 0
    seed = Graph("19.02")
    nb = NetBuilder(seed)
    x = seed.add_input("x", TensorInfo((2, 5), DataType.QuantisedAsymm8, *XQ))
    w = perchannel.weights(np.ones((4, 5), np.int8), np.full(4, 0.01, np.float32))
    seed.add_output("y", nb.add(LayerType.FullyConnected, "fc", [x], D.FullyConnectedDescriptor(False, True),
                                tensors={"weights": w}, quant=YQ))
    with pytest.raises(GraphError, match=r"QSymmS8, which the Arm NN 19.02 format lacks \(--target 20.08"):
        verify(seed)
    plain = ConstTensor(np.ones((4, 5), np.uint8), TensorInfo.per_axis((4, 5), DataType.QuantisedAsymm8,
                                                                       np.full(4, 0.01)))
    seed.layers[1].tensors["weights"] = plain
    with pytest.raises(GraphError, match="per-axis quantization, which the Arm NN 19.02 format lacks"):
        verify(seed)


# -- float interface: QUANTIZE / DEQUANTIZE at a quantized TFLite model's edges ----------------------
def _float_io_model(rng):
    """float input -> QUANTIZE (int8) -> CONV_2D (per-channel int8 weights) -> DEQUANTIZE -> float."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tflite"))
    from tfl_builder import ModelBuilder
    mb = ModelBuilder()
    x = mb.input("x", [1, 5, 6, 3])
    xq = mb.op("QUANTIZE", [x], out_dtype=np.int8, out_quant=(0.03, -5))
    w, s = _weights(rng, (4, 3, 3, 3), 4, 0)  # OHWI
    wt = mb.const("w", w, quant=(s, np.zeros(4, np.int64), 0))
    bs = (np.float32(0.03) * s).astype(np.float32)
    bt = mb.const("b", np.round(rng.normal(0, 0.3, 4) / bs).astype(np.int32), quant=(bs, np.zeros(4, np.int64), 0))
    y = mb.op("CONV_2D", [xq, wt, bt], "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1,
              out_quant=(0.05, 3))
    mb.output(mb.op("DEQUANTIZE", [y], out_dtype=np.float32))
    return mb.build()


@PAIRS
def test_float_io_quantized_model_keeps_its_float_interface(target, release, armnn_runner_for, tmp_path):
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tflite"))
    from tfl_builder import run_litert

    import armnn_import
    src = tmp_path / "floatio.tflite"
    src.write_bytes(_float_io_model(np.random.default_rng(5)))
    _, run = _runtime(release, armnn_runner_for)
    g = armnn_import.convert(src, target=target).network
    types = [l.type for l in g.layers]
    assert LayerType.Quantize in types and LayerType.Dequantize in types
    assert g.input_layers[0].outputs[0].dtype == DataType.Float32
    assert next(l for l in g.layers if l.type == LayerType.Convolution2d).tensors["weights"].info.scales
    x = np.random.default_rng(6).normal(0, 1.5, (1, 5, 6, 3)).astype(np.float32)
    want = run_litert(src.read_bytes(), [x])[0]
    got = np.asarray(run(write(g), [x])[0])
    assert got.dtype == np.float32
    assert np.abs(got - want).max() <= 0.05 * 1 + 1e-6  # at most 1 LSB of the output's scale
    np.testing.assert_array_equal(run_executor(g, [x])[0], got)
    # the seed format still has a quantized interface (no Quantize/Dequantize layers)
    seed = armnn_import.convert(src).network
    assert seed.input_layers[0].outputs[0].dtype == DataType.QuantisedAsymm8
