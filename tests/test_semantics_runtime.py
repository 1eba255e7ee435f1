"""Arm NN 20.08 semantics that are easy to get wrong, checked on the real runtime
against independent formulations (numpy, onnx.reference), not against the
executor. One runtime call per test.
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from armnn_import.ir import (ActivationDescriptor, ActivationFunction, Convolution2dDescriptor,
                             ConstTensor, DataLayout, DataType, DepthwiseConvolution2dDescriptor,
                             FullyConnectedDescriptor, Graph, LayerType, MeanDescriptor,
                             NormalizationAlgorithmChannel, NormalizationDescriptor, OriginsDescriptor,
                             OutputShapeRounding, PadDescriptor, PaddingMethod, PermuteDescriptor,
                             Pooling2dDescriptor, PoolingAlgorithm, ResizeBilinearDescriptor,
                             StridedSliceDescriptor, TensorInfo)
from armnn_import.serialize import write

sys.path.insert(0, str(Path(__file__).parent))   # pytest runs with --import-mode=importlib
from layer_cases import tie_network  # noqa: E402

NCHW, NHWC = DataLayout.NCHW, DataLayout.NHWC
RNG = np.random.default_rng(1234)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def close(got, want, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(got.astype(np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol)


def onnx_run(op, inputs: dict, opset=19, runtime="reference", **attrs):
    """Run one ONNX node with onnx.reference (or onnxruntime); `inputs` maps names to arrays."""
    node = helper.make_node(op, list(inputs), ["y"], **attrs)
    vis = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
           for k, v in inputs.items()]
    graph = helper.make_graph([node], "g", vis, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    if runtime == "onnxruntime":
        import onnxruntime
        model.ir_version = 9
        return onnxruntime.InferenceSession(model.SerializeToString()).run(None, inputs)[0]
    return ReferenceEvaluator(model).run(None, inputs)[0]


def outputs_of(g, layers):
    for i, l in enumerate(layers):
        g.add_output(f"out{i}", l.out())


def test_permute_dim_mappings_send_input_dim_i_to_output_dim_mapping_i(armnn_runner):
    g = Graph()
    x = randn(2, 3, 4, 5)
    p = g.add_input("x", TensorInfo(x.shape))
    mappings = [(0, 2, 3, 1), (3, 1, 0, 2), (2, 0, 3, 1)]
    outputs_of(g, [g.add(LayerType.Permute, f"p{i}", [p], PermuteDescriptor(m)) for i, m in enumerate(mappings)])
    got = armnn_runner(write(g), [x])
    for m, y in zip(mappings, got):
        np.testing.assert_array_equal(y, np.moveaxis(x, [0, 1, 2, 3], m))


def test_convolution_weight_layouts_vs_onnx_conv(armnn_runner):
    # Convolution2d: [O, I, kH, kW]; DepthwiseConvolution2d: [M, C, kH, kW], output channel c * M + m.
    x = randn(2, 3, 6, 7)
    w = randn(4, 3, 3, 2)
    dw = randn(2, 3, 3, 2)     # M = 2, C = 3
    g = Graph()
    p = g.add_input("x", TensorInfo(x.shape))
    conv = g.add(LayerType.Convolution2d, "conv", [p],
                 Convolution2dDescriptor(pad_left=0, pad_right=1, pad_top=1, pad_bottom=1, stride_x=1, stride_y=2),
                 tensors={"weights": ConstTensor(w)})
    dconv = g.add(LayerType.DepthwiseConvolution2d, "dw", [p],
                  DepthwiseConvolution2dDescriptor(pad_left=1, pad_right=1, pad_top=0, pad_bottom=2,
                                                   stride_x=2, stride_y=1),
                  tensors={"weights": ConstTensor(dw)})
    outputs_of(g, [conv, dconv])
    got = armnn_runner(write(g), [x])
    want_conv = onnx_run("Conv", {"x": x, "w": w}, pads=[1, 0, 1, 1], strides=[2, 1])
    onnx_dw = np.stack([dw[m, c] for c in range(3) for m in range(2)])[:, None]   # [C*M, 1, kH, kW]
    want_dw = onnx_run("Conv", {"x": x, "w": onnx_dw}, group=3, pads=[0, 1, 2, 1], strides=[1, 2])
    close(got[0], want_conv)
    close(got[1], want_dw)


def test_merger_places_inputs_at_their_view_origins(armnn_runner):
    a, e = randn(2, 3, 4, 2), randn(2, 3, 4, 5)
    b, c = randn(2, 1, 4, 2), randn(2, 2, 4, 2)
    g = Graph()
    pa, pe, pb, pc = (g.add_input(n, TensorInfo(v.shape)) for n, v in zip("aebc", (a, e, b, c)))
    # a goes after e on axis 3; on axis 1 the views are c, a, b from the top
    m3 = g.add(LayerType.Merger, "m3", [pa, pe],
               OriginsDescriptor(3, 2, 4, ((0, 0, 0, 5), (0, 0, 0, 0))))
    m1 = g.add(LayerType.Merger, "m1", [pa, pb, pc],
               OriginsDescriptor(1, 3, 4, ((0, 2, 0, 0), (0, 5, 0, 0), (0, 0, 0, 0))))
    outputs_of(g, [m3, m1])
    got = armnn_runner(write(g), [a, e, b, c])
    np.testing.assert_array_equal(got[0], np.concatenate([e, a], axis=3))
    np.testing.assert_array_equal(got[1], np.concatenate([c, a, b], axis=1))


def test_strided_slice_masks_vs_numpy_slicing(armnn_runner):
    x = randn(2, 3, 5, 7)
    cases = [  # (begin, end, stride, begin_mask, end_mask, shrink_mask), the same slice in numpy
        (((0, 1, 1, 0), (2, 3, 4, 7), (1, 1, 2, 3), 0, 0, 0), x[0:2, 1:3, 1:4:2, 0:7:3]),
        (((1, 0, -4, 6), (0, 2, 0, 1), (1, 1, 1, -2), 0b0010, 0b0101, 0), x[1:, :2, -4:, 6:1:-2]),
        (((1, 0, 2, -6), (2, 3, 3, -1), (1, 1, 1, 2), 0, 0, 0b0101), x[1, 0:3, 2, -6:-1:2]),
        (((0, -1, -1, 0), (0, 0, 0, 0), (1, -1, -2, 1), 0b0001, 0b1111, 0), x[:, ::-1, ::-2, :]),
        (((0, 0, 9, -9), (2, 3, -9, 99), (1, 1, -1, 1), 0, 0, 0), x[:, :, 4::-1, 0:]),   # clamped
    ]
    g = Graph()
    p = g.add_input("x", TensorInfo(x.shape))
    layers = [g.add(LayerType.StridedSlice, f"s{i}", [p], StridedSliceDescriptor(b, e, s, bm, em, sm))
              for i, ((b, e, s, bm, em, sm), _) in enumerate(cases)]
    outputs_of(g, layers)
    got = armnn_runner(write(g), [x])
    for y, (_, want) in zip(got, cases):
        np.testing.assert_array_equal(y, want)


def test_pooling_padding_method_and_rounding_vs_onnx(armnn_runner):
    x = randn(2, 3, 7, 8)
    variants = [  # Arm NN (algo, kernel hw, stride yx, pads t l b r, rounding, method) -> ONNX op, attributes
        ((PoolingAlgorithm.Average, (3, 3), (2, 2), (1, 1, 1, 1), OutputShapeRounding.Floor,
          PaddingMethod.IgnoreValue), ("AveragePool", dict(count_include_pad=1, ceil_mode=0))),
        ((PoolingAlgorithm.Average, (3, 3), (2, 2), (1, 1, 1, 1), OutputShapeRounding.Floor,
          PaddingMethod.Exclude), ("AveragePool", dict(count_include_pad=0, ceil_mode=0))),
        ((PoolingAlgorithm.Average, (3, 2), (2, 3), (1, 0, 2, 1), OutputShapeRounding.Ceiling,
          PaddingMethod.IgnoreValue), ("AveragePool", dict(count_include_pad=1, ceil_mode=1))),
        ((PoolingAlgorithm.Average, (3, 2), (2, 3), (1, 0, 2, 1), OutputShapeRounding.Ceiling,
          PaddingMethod.Exclude), ("AveragePool", dict(count_include_pad=0, ceil_mode=1))),
        ((PoolingAlgorithm.Max, (3, 3), (2, 2), (0, 1, 0, 1), OutputShapeRounding.Ceiling,
          PaddingMethod.Exclude), ("MaxPool", dict(ceil_mode=1))),
        ((PoolingAlgorithm.Max, (2, 3), (2, 2), (1, 1, 1, 1), OutputShapeRounding.Floor,
          PaddingMethod.IgnoreValue), ("MaxPool", dict(ceil_mode=0))),
    ]
    g = Graph()
    p = g.add_input("x", TensorInfo(x.shape))
    layers = []
    for i, ((algo, (kh, kw), (sy, sx), (t, l, b, r), rounding, method), _) in enumerate(variants):
        d = Pooling2dDescriptor(algo, pad_left=l, pad_right=r, pad_top=t, pad_bottom=b, pool_width=kw,
                                pool_height=kh, stride_x=sx, stride_y=sy, output_shape_rounding=rounding,
                                padding_method=method, data_layout=NCHW)
        layers.append(g.add(LayerType.Pooling2d, f"pool{i}", [p], d))
    outputs_of(g, layers)
    got = armnn_runner(write(g), [x])
    for y, ((_, (kh, kw), (sy, sx), (t, l, b, r), _, _), (op, attrs)) in zip(got, variants):
        want = onnx_run(op, {"x": x}, kernel_shape=[kh, kw], strides=[sy, sx], pads=[t, l, b, r], **attrs)
        close(y, want)


def _lrn_across(x, size, alpha, beta, k):
    # out = x * (k + alpha * sum of squares over `size` neighbouring channels) ^ -beta; no 1/size
    out = np.empty(x.shape, np.float64)
    r, depth = size // 2, x.shape[1]
    for c in range(depth):
        window = x[:, max(0, c - r):min(depth, c + r + 1)].astype(np.float64)
        out[:, c] = x[:, c] * (k + alpha * (window ** 2).sum(axis=1)) ** -beta
    return out


def _lrn_within(x, size, alpha, beta, k):
    out = np.empty(x.shape, np.float64)
    r, (h, w) = size // 2, x.shape[2:]
    for i in range(h):
        for j in range(w):
            window = x[:, :, max(0, i - r):i + r + 1, max(0, j - r):j + r + 1].astype(np.float64)
            out[:, :, i, j] = x[:, :, i, j] / (k + alpha * (window ** 2).sum(axis=(2, 3))) ** beta
    return out


def test_normalization_parameters_vs_numpy(armnn_runner):
    x = randn(2, 7, 5, 6)
    xt = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    g = Graph()
    p = g.add_input("x", TensorInfo(x.shape))
    pt = g.add_input("xt", TensorInfo(xt.shape))
    across = dict(norm_size=5, alpha=0.3, beta=0.75, k=1.5)
    within = dict(norm_size=3, alpha=0.2, beta=0.6, k=2.0)
    layers = [
        g.add(LayerType.Normalization, "across", [p],
              NormalizationDescriptor(NormalizationAlgorithmChannel.Across, data_layout=NCHW, **across)),
        g.add(LayerType.Normalization, "across_nhwc", [pt],
              NormalizationDescriptor(NormalizationAlgorithmChannel.Across, data_layout=NHWC, **across)),
        g.add(LayerType.Normalization, "within", [p],
              NormalizationDescriptor(NormalizationAlgorithmChannel.Within, data_layout=NCHW, **within)),
    ]
    outputs_of(g, layers)
    got = armnn_runner(write(g), [x, xt])
    args_a = (across["norm_size"], across["alpha"], across["beta"], across["k"])
    close(got[0], _lrn_across(x, *args_a))
    close(got[1], _lrn_across(x, *args_a).transpose(0, 2, 3, 1))
    close(got[2], _lrn_within(x, within["norm_size"], within["alpha"], within["beta"], within["k"]))
    # The same thing in ONNX terms: LRN divides alpha by size. (onnx.reference's LRN disagrees
    # with the ONNX spec and onnxruntime for inner channels, so onnxruntime is used here.)
    close(got[0], onnx_run("LRN", {"x": x}, runtime="onnxruntime", size=5, alpha=0.3 * 5, beta=0.75, bias=1.5))


def test_fully_connected_transpose_weights_matrix(armnn_runner):
    x = randn(2, 3, 2, 2)                       # flattened to [2, 12]
    w = randn(12, 5)                            # [inputs, outputs]
    wt = randn(6, 12)                           # [outputs, inputs] with transpose_weights_matrix
    g = Graph()
    p = g.add_input("x", TensorInfo(x.shape))
    outputs_of(g, [
        g.add(LayerType.FullyConnected, "fc", [p], FullyConnectedDescriptor(False, False),
              tensors={"weights": ConstTensor(w)}),
        g.add(LayerType.FullyConnected, "fc_t", [p], FullyConnectedDescriptor(False, True),
              tensors={"weights": ConstTensor(wt)}),
    ])
    got = armnn_runner(write(g), [x])
    x2 = x.reshape(2, 12).astype(np.float64)
    close(got[0], x2 @ w)
    close(got[1], x2 @ wt.T)


def test_resize_bilinear_is_onnx_linear_asymmetric(armnn_runner):
    x = randn(2, 3, 5, 7)
    xt = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    g = Graph()
    p = g.add_input("x", TensorInfo(x.shape))
    pt = g.add_input("xt", TensorInfo(xt.shape))
    outputs_of(g, [
        g.add(LayerType.ResizeBilinear, "r", [p], ResizeBilinearDescriptor(4, 8, NCHW)),
        g.add(LayerType.ResizeBilinear, "rt", [pt], ResizeBilinearDescriptor(11, 3, NHWC)),
    ])
    got = armnn_runner(write(g), [x, xt])

    def onnx_resize(h, w):
        return onnx_run("Resize", {"x": x, "roi": np.zeros(0, np.float32), "scales": np.zeros(0, np.float32),
                                   "sizes": np.array([2, 3, h, w], np.int64)},
                        mode="linear", coordinate_transformation_mode="asymmetric")

    close(got[0], onnx_resize(8, 4))
    close(got[1], onnx_resize(3, 11).transpose(0, 2, 3, 1))


def test_mean_keep_dims(armnn_runner):
    x = randn(2, 3, 4, 5)
    variants = [((1, 2), True), ((1, 2), False), ((3,), True), ((), False), ((0, 3), False)]
    g = Graph()
    p = g.add_input("x", TensorInfo(x.shape))
    outputs_of(g, [g.add(LayerType.Mean, f"m{i}", [p], MeanDescriptor(a, k)) for i, (a, k) in enumerate(variants)])
    got = armnn_runner(write(g), [x])
    for y, (axis, keep) in zip(got, variants):
        want = x.astype(np.float64).mean(axis=axis or None, keepdims=keep)
        close(y, np.reshape(want, y.shape) if not axis else want)
        if not axis:
            assert y.shape == (1,)


def test_bounded_relu_is_min_a_max_b(armnn_runner):
    x = randn(3, 4, 5) * 4
    g = Graph()
    p = g.add_input("x", TensorInfo(x.shape))
    params = [(1.5, -0.5), (6.0, 0.0), (0.25, 0.25)]
    outputs_of(g, [g.add(LayerType.Activation, f"b{i}", [p],
                         ActivationDescriptor(ActivationFunction.BoundedReLu, a, b))
                   for i, (a, b) in enumerate(params)])
    got = armnn_runner(write(g), [x])
    for y, (a, b) in zip(got, params):
        np.testing.assert_array_equal(y, np.minimum(np.float32(a), np.maximum(np.float32(b), x)))


def test_softrelu_is_loaded_as_sigmoid(armnn_runner):
    # Arm NN 20.08's deserializer has no SoftReLu case; frontends must not emit it.
    x = randn(3, 4, 5)
    g = Graph()
    p = g.add_input("x", TensorInfo(x.shape))
    outputs_of(g, [g.add(LayerType.Activation, "sr", [p], ActivationDescriptor(ActivationFunction.SoftReLu))])
    (y,) = armnn_runner(write(g), [x])
    close(y, 1 / (1 + np.exp(-x.astype(np.float64))))
    assert not np.allclose(y, np.log1p(np.exp(x)), rtol=1e-3)


def test_quantized_pad_fills_raw_zero_not_the_zero_point(armnn_runner):
    x = RNG.integers(0, 256, size=(3, 4), dtype=np.uint8)
    g = Graph()
    p = g.add_input("x", TensorInfo(x.shape, DataType.QuantisedAsymm8, 0.04, 110))
    outputs_of(g, [g.add(LayerType.Pad, "pad", [p], PadDescriptor((1, 2, 0, 3)))])
    (y,) = armnn_runner(write(g), [x])
    np.testing.assert_array_equal(y, np.pad(x, ((1, 2), (0, 3)), constant_values=0))


def test_quantized_normalization_encodes_with_the_input_quantization(armnn_runner):
    scale, offset = 0.04, 110
    x = RNG.integers(0, 256, size=(1, 5, 3, 4), dtype=np.uint8)
    g = Graph()
    p = g.add_input("x", TensorInfo(x.shape, DataType.QuantisedAsymm8, scale, offset))
    d = NormalizationDescriptor(NormalizationAlgorithmChannel.Across, norm_size=3, alpha=0.5, beta=0.75,
                                k=1.0, data_layout=NCHW)
    # the output says scale 0.01, offset 0; CpuRef still encodes with the input's (0.04, 110)
    outputs_of(g, [g.add(LayerType.Normalization, "lrn", [p], d, quant=(0.01, 0))])
    (y,) = armnn_runner(write(g), [x])
    real = (x.astype(np.float64) - offset) * scale
    want = np.clip(np.floor(_lrn_across(real, 3, 0.5, 0.75, 1.0) / scale + 0.5) + offset, 0, 255)
    assert np.abs(y.astype(int) - want).max() <= 1


def test_rounding_ties_go_away_from_zero(armnn_runner):
    g, (qx, nx, fa, fb) = tie_network()
    got = armnn_runner(write(g), [qx, nx, fa, fb])
    np.testing.assert_array_equal(got[0], np.floor(qx / 2 + 0.5).astype(np.uint8))       # 0.5 -> 1, 2.5 -> 3
    real = (nx.astype(np.float64) - 128) / 2                                              # -64 .. -32.5
    np.testing.assert_array_equal(got[1], (np.ceil(real - 0.5) + 128).astype(np.uint8))  # -32.5 -> -33
    exact = 1 + np.arange(1, 17, 2) * 2.0 ** -11
    ulp = 2.0 ** -10
    np.testing.assert_array_equal(got[2].astype(np.float64), np.ceil(exact / ulp) * ulp)  # away from zero
