"""Small one-layer-type networks for every Arm NN layer type, in every data type
and (for layers with a data_layout) both layouts. Shared by
tests/test_layers_runtime.py and tests/layer_table.py.

Every dimension of a test tensor has its own size so that layout and axis bugs
cannot hide; a network often holds several layers of its type (several
functions, paddings, masks) feeding several outputs, so one runtime call covers
them all.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from armnn_import.ir import (ActivationDescriptor, ActivationFunction, BatchNormalizationDescriptor,
                             BatchToSpaceNdDescriptor, ConstTensor, Convolution2dDescriptor,
                             DataLayout, DataType, DepthwiseConvolution2dDescriptor,
                             FullyConnectedDescriptor, Graph, L2NormalizationDescriptor, LayerType,
                             MeanDescriptor, NormalizationAlgorithmChannel,
                             NormalizationAlgorithmMethod, NormalizationDescriptor,
                             OriginsDescriptor, OutputShapeRounding, PadDescriptor, PaddingMethod,
                             PermuteDescriptor, Pooling2dDescriptor, PoolingAlgorithm,
                             ReshapeDescriptor, ResizeBilinearDescriptor, SoftmaxDescriptor,
                             SpaceToBatchNdDescriptor, StridedSliceDescriptor, TensorInfo)
from armnn_import.ir.descriptors import (ArgMinMaxDescriptor, ComparisonDescriptor,
                                         ElementwiseUnaryDescriptor, LogSoftmaxDescriptor)
from armnn_import.ir.kinds import BINARY_LAYERS, LAYER_KINDS
from armnn_import.ir.descriptors import BatchMatMulDescriptor, GatherDescriptor
from armnn_import.ir.types import ArgMinMaxFunction, ComparisonOperation, UnaryOperation
from armnn_import.ir.descriptors import ResizeDescriptor, TransposeDescriptor
from armnn_import.ir.types import PaddingMode, ResizeMethod
from armnn_import.ir.types import BinaryOperation, LogicalBinaryOperation, ReduceOperation
from armnn_import.ir.descriptors import ElementwiseBinaryDescriptor, LogicalBinaryDescriptor, ReduceDescriptor, TileDescriptor

F32, F16, QA8, S32, BOOL = (DataType.Float32, DataType.Float16, DataType.QuantisedAsymm8,
                            DataType.Signed32, DataType.Boolean)
DTYPES = (F32, F16, QA8, S32, BOOL)
NCHW, NHWC = DataLayout.NCHW, DataLayout.NHWC

# Layer types whose descriptor has a data_layout: tested in both layouts.
LAYOUT_LAYERS = frozenset({
    LayerType.Convolution2d, LayerType.DepthwiseConvolution2d, LayerType.Pooling2d,
    LayerType.L2Normalization, LayerType.SpaceToBatchNd, LayerType.BatchToSpaceNd,
    LayerType.Normalization, LayerType.BatchNormalization, LayerType.ResizeBilinear,
    LayerType.StridedSlice, LayerType.Resize, LayerType.SpaceToDepth, LayerType.DepthToSpace,
    LayerType.InstanceNormalization, LayerType.TransposeConvolution2d,
})

IN_Q = (0.04, 110)   # quantization of QuantisedAsymm8 test inputs


class Maker:
    """Builds tensors of one data type: infos, random data and constants."""

    def __init__(self, dtype: DataType, layout: DataLayout, seed: int, target: str = "19.02"):
        self.dt, self.layout = dtype, layout
        self.rng = np.random.default_rng(seed)
        self.inputs: list[np.ndarray] = []
        self.g = Graph(target)

    # NCHW shape -> this layout's shape
    def nchw(self, n, c, h, w):
        return (n, c, h, w) if self.layout == NCHW else (n, h, w, c)

    def info(self, shape, q=IN_Q, dtype=None):
        dt = dtype or self.dt
        if dt == QA8:
            return TensorInfo(shape, dt, *q)
        return TensorInfo(shape, dt)

    def random(self, shape, dtype=None, positive=False, nonzero=False):
        dt = dtype or self.dt
        r = self.rng
        if dt == QA8:
            lo = IN_Q[1] + 5 if (positive or nonzero) else 0
            return r.integers(lo, 256, size=shape).astype(np.uint8)
        if dt == S32:
            v = r.integers(1 if positive else -20, 21, size=shape)
            if nonzero:
                v = np.where(v == 0, 3, v)
            return v.astype(np.int32)
        if dt == BOOL:
            return r.random(shape) < 0.5
        v = r.standard_normal(shape).astype(np.float32)
        if positive or nonzero:
            v = np.abs(v) + np.float32(0.25)
        return v.astype(dt.np_dtype)

    def input(self, name, shape, dtype=None, q=IN_Q, **kw):
        info = self.info(shape, q, dtype)
        self.inputs.append(self.random(shape, info.dtype, **kw))
        return self.g.add_input(name, info)

    def const(self, shape, q=(0.02, 130), scale=0.5, dtype=None):
        dt = dtype or self.dt
        if dt == QA8:
            return ConstTensor.quantized(self.rng.integers(0, 256, size=shape), *q)
        if dt in (F32, F16):
            data = (self.rng.standard_normal(shape) * scale).astype(dt.np_dtype)
            return ConstTensor(data)
        return ConstTensor(self.random(shape, dt))

    def bias(self, n, in_q=IN_Q, w_q=(0.02, 130)):
        if self.dt == QA8:   # Signed32 with scale = input scale * weight scale
            data = self.rng.integers(-300, 300, size=(n,)).astype(np.int32)
            return ConstTensor(data, TensorInfo((n,), S32, in_q[0] * w_q[0], 0))
        return self.const((n,))

    def out(self, name, port):
        self.g.add_output(name, port)


def q(m: Maker, scale, offset):
    """`quant=` for a QuantisedAsymm8 output (ignored for other types)."""
    return (scale, offset) if m.dt == QA8 else None


# -- one builder per layer type -------------------------------------------------------------

def build_input(m):
    x = m.input("x", (2, 3, 5, 7))
    m.out("y", x)


def build_constant(m):
    c = m.g.add(LayerType.Constant, "c", [], tensors={"input": m.const((3, 4, 5), q=(0.03, 100))})
    m.out("y", c.out())


def build_activation(m, variant=None):
    x = m.input("x", (2, 3, 5, 7))
    if variant == "SoftReLu":
        l = m.g.add(LayerType.Activation, "softrelu", [x], ActivationDescriptor(ActivationFunction.SoftReLu),
                    quant=q(m, 0.03, 100))
        m.out("y", l.out())
        return
    params = {
        ActivationFunction.Sigmoid: (0, 0), ActivationFunction.TanH: (1.2, 0.8),
        ActivationFunction.Linear: (0.7, 0.2), ActivationFunction.ReLu: (0, 0),
        ActivationFunction.BoundedReLu: (1.5, -0.5),
        ActivationFunction.LeakyReLu: (0.1, 0), ActivationFunction.Abs: (0, 0),
        ActivationFunction.Sqrt: (0, 0), ActivationFunction.Square: (0, 0),
    }
    for fn, (a, b) in params.items():
        src = x
        if fn == ActivationFunction.Sqrt:   # keep the input of sqrt non-negative
            src = m.g.add(LayerType.Activation, "abs_for_sqrt", [x],
                          ActivationDescriptor(ActivationFunction.Abs)).out()
        l = m.g.add(LayerType.Activation, fn.name, [src], ActivationDescriptor(fn, a, b),
                    quant=q(m, 0.03, 100))
        m.out(f"y_{fn.name}", l.out())


_BINARY_OUT_Q = {
    LayerType.Addition: (0.06, 120), LayerType.Subtraction: (0.06, 128),
    LayerType.Multiplication: (0.08, 128), LayerType.Division: (0.1, 128),
    LayerType.Maximum: (0.04, 100), LayerType.Minimum: (0.04, 140),
}


def build_binary(m, ltype):
    comparison = ltype in (LayerType.Equal, LayerType.Greater)
    divisor = dict(nonzero=True) if ltype == LayerType.Division else {}
    a = m.input("a", (2, 3, 5, 7))
    b = m.input("b", (1, 3, 1, 7), q=(0.05, 100), **divisor)
    if comparison and m.dt in (F32, F16):
        # small integers so that Equal finds equal pairs
        for i in (0, 1):
            m.inputs[i] = np.round(m.inputs[i] * 2).astype(m.inputs[i].dtype)
    if comparison and m.dt == QA8:
        m.inputs[0] = (m.inputs[0] // 16 * 16).astype(np.uint8)   # values equal after decoding
        m.inputs[1] = (m.inputs[1] // 20 * 20).astype(np.uint8)
    l1 = m.g.add(ltype, "ab", [a, b], quant=q(m, *_BINARY_OUT_Q.get(ltype, (0.05, 128))))
    m.out("y_ab", l1.out())
    if ltype != LayerType.Division:       # the broadcast input first
        l2 = m.g.add(ltype, "ba", [b, a], quant=q(m, *_BINARY_OUT_Q.get(ltype, (0.05, 128))))
        m.out("y_ba", l2.out())


def build_pooling2d(m, variant=None):
    x = m.input("x", m.nchw(2, 3, 7, 8))
    variants = [
        ("max_floor", PoolingAlgorithm.Max, (3, 3), (2, 2), (1, 1, 1, 1), OutputShapeRounding.Floor,
         PaddingMethod.Exclude),
        ("avg_ignore_ceil", PoolingAlgorithm.Average, (3, 2), (2, 3), (1, 0, 2, 1),
         OutputShapeRounding.Ceiling, PaddingMethod.IgnoreValue),
        ("avg_exclude_ceil", PoolingAlgorithm.Average, (3, 2), (2, 3), (1, 0, 2, 1),
         OutputShapeRounding.Ceiling, PaddingMethod.Exclude),
        ("avg_nopad", PoolingAlgorithm.Average, (2, 3), (1, 2), (0, 0, 0, 0),
         OutputShapeRounding.Floor, PaddingMethod.Exclude),
    ]
    if variant == "L2":
        variants = [("l2", PoolingAlgorithm.L2, (2, 2), (2, 2), (1, 1, 0, 1), OutputShapeRounding.Floor,
                     PaddingMethod.IgnoreValue)]
    for name, algo, (ph, pw), (sy, sx), (pt, pl, pb, pr), rounding, method in variants:
        d = Pooling2dDescriptor(pool_type=algo, pad_left=pl, pad_right=pr, pad_top=pt, pad_bottom=pb,
                                pool_width=pw, pool_height=ph, stride_x=sx, stride_y=sy,
                                output_shape_rounding=rounding, padding_method=method,
                                data_layout=m.layout)
        l = m.g.add(LayerType.Pooling2d, name, [x], d)
        m.out(f"y_{name}", l.out())


def build_reshape(m):
    x = m.input("x", (2, 3, 4, 5))
    for shape in [(6, 20), (5, 4, 3, 2), (120,)]:
        l = m.g.add(LayerType.Reshape, f"r{len(shape)}", [x], ReshapeDescriptor(shape))
        m.out(f"y{len(shape)}", l.out())


def build_softmax(m, variant=None):
    if variant == "axis":  # SoftmaxDescriptor.axis (the 23.08 format)
        x4 = m.input("x4", (2, 3, 4, 5))
        for axis in (0, 1, 2, -1):
            l = m.g.add(LayerType.Softmax, f"s_ax{axis % 4}", [x4], SoftmaxDescriptor(0.5, axis),
                        quant=q(m, 1 / 256, 0))
            m.out(f"y_ax{axis % 4}", l.out())
        return
    x = m.input("x", (3, 7))
    x4 = m.input("x4", (2, 3, 4, 5))
    for name, src, beta in [("s2", x, 1.0), ("s4", x4, 0.5)]:
        l = m.g.add(LayerType.Softmax, name, [src], SoftmaxDescriptor(beta), quant=q(m, 1 / 256, 0))
        m.out(f"y_{name}", l.out())


# Convolution2d and DepthwiseConvolution2d: Arm NN 19.02+ reads the early schema's
# biasEnabled/dataLayout slots as dilations, so files only hold NCHW convolutions without
# bias (descriptors.py); the "bias" variant and NHWC are checked to be refused by verify().
def _dilation(variant):
    # the 20.08 format's dilation fields (different in x and y)
    return dict(dilation_x=2, dilation_y=3) if variant == "dilated" else {}


def build_convolution2d(m, variant=None):
    x = m.input("x", m.nchw(2, 3, 9, 7))
    w_shape = (4, 3, 3, 2) if m.layout == NCHW else (4, 3, 2, 3)    # [O, I, kH, kW] / [O, kH, kW, I]
    bias = variant in ("bias", "dilated")
    d = Convolution2dDescriptor(pad_left=0, pad_right=1, pad_top=1, pad_bottom=1, stride_x=1,
                                stride_y=2, bias_enabled=bias, data_layout=m.layout, **_dilation(variant))
    tensors = {"weights": m.const(w_shape)}
    if bias:
        tensors["biases"] = m.bias(4)
    l = m.g.add(LayerType.Convolution2d, "conv", [x], d, tensors=tensors, quant=q(m, 0.1, 128))
    m.out("y", l.out())
    d2 = Convolution2dDescriptor(stride_x=2, stride_y=1, data_layout=m.layout)
    w2 = (5, 3, 1, 3) if m.layout == NCHW else (5, 1, 3, 3)
    l2 = m.g.add(LayerType.Convolution2d, "conv_nobias", [x], d2, tensors={"weights": m.const(w2)},
                 quant=q(m, 0.08, 120))
    m.out("y2", l2.out())


def build_depthwise(m, variant=None):
    x = m.input("x", m.nchw(2, 3, 9, 7))
    bias = variant in ("bias", "dilated")
    d = DepthwiseConvolution2dDescriptor(pad_left=1, pad_right=1, pad_top=0, pad_bottom=2, stride_x=2,
                                         stride_y=1, bias_enabled=bias, data_layout=m.layout, **_dilation(variant))
    tensors = {"weights": m.const((2, 3, 3, 2))}                      # [M, C, kH, kW]
    if bias:
        tensors["biases"] = m.bias(6)
    l = m.g.add(LayerType.DepthwiseConvolution2d, "dw", [x], d, tensors=tensors, quant=q(m, 0.06, 128))
    m.out("y", l.out())
    d2 = DepthwiseConvolution2dDescriptor(stride_x=1, stride_y=1, data_layout=m.layout)
    l2 = m.g.add(LayerType.DepthwiseConvolution2d, "dw_m1", [x], d2,
                 tensors={"weights": m.const((1, 3, 2, 3))}, quant=q(m, 0.05, 128))
    m.out("y2", l2.out())


def build_fully_connected(m, variant=None):
    # 4-D input (flattened to [N, 12]) and 2-D input; the "rank3" variant has a 3-D input.
    x = m.input("x", (2, 3, 4) if variant == "rank3" else (2, 3, 2, 2))
    l = m.g.add(LayerType.FullyConnected, "fc", [x], FullyConnectedDescriptor(True, False),
                tensors={"weights": m.const((12, 5)), "biases": m.bias(5)}, quant=q(m, 0.08, 128))
    m.out("y", l.out())
    if variant == "rank3":
        return
    x2 = m.input("x2", (3, 12))
    l2 = m.g.add(LayerType.FullyConnected, "fc_t", [x2], FullyConnectedDescriptor(False, True),
                 tensors={"weights": m.const((6, 12))}, quant=q(m, 0.08, 128))
    m.out("y_t", l2.out())


def build_permute(m):
    x = m.input("x", (2, 3, 4, 5))
    for i, mapping in enumerate([(0, 2, 3, 1), (3, 1, 0, 2), (1, 0, 2, 3)]):
        l = m.g.add(LayerType.Permute, f"p{i}", [x], PermuteDescriptor(mapping))
        m.out(f"y{i}", l.out())


def build_space_to_batch(m):
    x = m.input("x", m.nchw(2, 3, 4, 6))
    d = SpaceToBatchNdDescriptor(block_shape=(2, 3), pad_list=(1, 1, 0, 3), data_layout=m.layout)
    m.out("y", m.g.add(LayerType.SpaceToBatchNd, "s2b", [x], d).out())


def build_batch_to_space(m):
    x = m.input("x", m.nchw(12, 3, 3, 2))
    d = BatchToSpaceNdDescriptor(block_shape=(2, 3), crops=(1, 0, 0, 2), data_layout=m.layout)
    m.out("y", m.g.add(LayerType.BatchToSpaceNd, "b2s", [x], d).out())


def build_normalization(m, variant=None):
    x = m.input("x", m.nchw(2, 7, 5, 6))
    if variant == "LocalContrast":
        d = NormalizationDescriptor(NormalizationAlgorithmChannel.Across,
                                    NormalizationAlgorithmMethod.LocalContrast, norm_size=3, alpha=0.3,
                                    beta=0.75, k=1.5, data_layout=m.layout)
        m.out("y", m.g.add(LayerType.Normalization, "lcn", [x], d).out())
        return
    across = NormalizationDescriptor(NormalizationAlgorithmChannel.Across, norm_size=5, alpha=0.3,
                                     beta=0.75, k=1.5, data_layout=m.layout)
    within = NormalizationDescriptor(NormalizationAlgorithmChannel.Within, norm_size=3, alpha=0.2,
                                     beta=0.6, k=2.0, data_layout=m.layout)
    for name, d in [("across", across), ("within", within)]:
        m.out(f"y_{name}", m.g.add(LayerType.Normalization, name, [x], d).out())


def build_pad(m, variant=None):
    if variant is not None:
        return build_pad_target(m, variant)
    x = m.input("x", (2, 3, 4, 5))
    l = m.g.add(LayerType.Pad, "pad4", [x], PadDescriptor((0, 1, 2, 0, 1, 1, 0, 3)), quant=q(m, 0.05, 100))
    m.out("y4", l.out())
    x2 = m.input("x2", (3, 4))
    m.out("y2", m.g.add(LayerType.Pad, "pad2", [x2], PadDescriptor((1, 2, 3, 0))).out())


def build_rsqrt(m):
    x = m.input("x", (2, 3, 4, 5), positive=True)
    m.out("y", m.g.add(LayerType.Rsqrt, "rsqrt", [x], quant=q(m, 0.02, 10)).out())


def build_floor(m):
    x = m.input("x", (2, 3, 4, 5))
    m.out("y", m.g.add(LayerType.Floor, "floor", [x]).out())


def build_batch_norm(m):
    x = m.input("x", m.nchw(2, 3, 4, 5))
    var = m.const((3,))
    if m.dt in (F32, F16):
        var = ConstTensor(np.abs(var.data) + var.data.dtype.type(0.5))
    elif m.dt == QA8:   # a positive variance
        var = ConstTensor.quantized(m.rng.integers(140, 256, size=(3,)), 0.02, 130)
    tensors = {"mean": m.const((3,)), "variance": var, "beta": m.const((3,)), "gamma": m.const((3,))}
    d = BatchNormalizationDescriptor(eps=1e-3, data_layout=m.layout)
    m.out("y", m.g.add(LayerType.BatchNormalization, "bn", [x], d, tensors=tensors,
                       quant=q(m, 0.1, 128)).out())


def build_resize(m):
    x = m.input("x", m.nchw(2, 3, 5, 7))
    d = ResizeBilinearDescriptor(target_width=4, target_height=8, data_layout=m.layout)
    m.out("y", m.g.add(LayerType.ResizeBilinear, "resize", [x], d).out())


def build_strided_slice(m):
    x = m.input("x", (2, 3, 5, 7))
    variants = [
        ("plain", (0, 1, 1, 0), (2, 3, 4, 7), (1, 1, 2, 3), 0, 0, 0),
        ("masks", (1, 0, -4, 6), (0, 2, 0, 1), (1, 1, 1, -2), 0b0010, 0b0101, 0),
        ("shrink", (1, 0, 2, -6), (2, 3, 3, -1), (1, 1, 1, 2), 0, 0, 0b0101),
        ("reverse", (0, -1, -1, 0), (0, 0, 0, 0), (1, -1, -2, 1), 0b0001, 0b1111, 0),
    ]
    for name, b, e, s, bm, em, sm in variants:
        d = StridedSliceDescriptor(begin=b, end=e, stride=s, begin_mask=bm, end_mask=em,
                                   shrink_axis_mask=sm, data_layout=m.layout)
        m.out(f"y_{name}", m.g.add(LayerType.StridedSlice, name, [x], d).out())


def build_gather(m, variant=None):
    params = m.input("params", (5, 3, 4))
    axis = 1 if variant == "axis1" else 0  # (the 20.08 format on: GatherDescriptor.axis)
    idx = m.g.add_input("indices", TensorInfo((2, 3), S32))
    m.inputs.append(m.rng.integers(0, params.info.shape[axis], size=(2, 3)).astype(np.int32))
    m.out("y", m.g.add(LayerType.Gather, "gather", [params, idx], GatherDescriptor(axis)).out())


def build_gather_nd(m):
    """GatherNd (the 23.08 format): whole rows (ND 1), sub-tensors (ND 2) and elements (ND 3)."""
    params = m.input("params", (5, 3, 4))
    for nd, ishape in [(1, (2, 1)), (2, (2, 3, 2)), (3, (4, 3))]:
        idx = m.g.add_input(f"indices{nd}", TensorInfo(ishape, S32))
        m.inputs.append(np.stack([m.rng.integers(0, d, size=ishape[:-1]) for d in params.info.shape[:nd]],
                                 -1).astype(np.int32))
        m.out(f"y{nd}", m.g.add(LayerType.GatherNd, f"gather_nd{nd}", [params, idx]).out())


def build_elementwise_binary(m):
    """ElementwiseBinary (the 23.08 format), written for Power: broadcast, negative bases (NaN for a
    fractional exponent), and SqDiff."""
    x = m.input("x", (2, 3, 5, 7), positive=m.dt not in (F32, F16))  # (a quantized NaN fails an assertion)
    e = m.input("e", (1, 3, 1, 7))
    if m.dt in (F32, F16):
        m.inputs[-1] = (m.rng.integers(-4, 5, size=(1, 3, 1, 7)) * 0.5).astype(m.inputs[-1].dtype)
    for op in (BinaryOperation.Power, BinaryOperation.SqDiff):
        m.out(f"y_{op.name}", m.g.add(LayerType.ElementwiseBinary, op.name.lower(), [x, e],
                                      ElementwiseBinaryDescriptor(op), quant=q(m, 0.5, 128)).out())


def build_cast(m):
    """Cast (the 23.08 format): from the case's type to Float32 (from Float32: to Signed32)."""
    x = m.input("x", (2, 3, 5, 7))
    to = S32 if m.dt == F32 else F32
    m.out("y", m.g.add(LayerType.Cast, "cast", [x], outputs=[TensorInfo(x.info.shape, to)]).out())


def build_batch_matmul(m):
    """BatchMatMul (the 23.08 format): broadcast batch axes, plain and with transpose_y."""
    a, b = m.input("a", (2, 3, 4, 5)), m.input("b", (2, 1, 5, 6))
    c = m.input("c", (1, 3, 6, 5))
    m.out("y_ab", m.g.add(LayerType.BatchMatMul, "ab", [a, b], BatchMatMulDescriptor(), quant=q(m, 0.5, 128)).out())
    m.out("y_act", m.g.add(LayerType.BatchMatMul, "act", [a, c], BatchMatMulDescriptor(transpose_y=True),
                           quant=q(m, 0.5, 128)).out())


def build_mean(m):
    x = m.input("x", (2, 3, 4, 5))
    for name, axis, keep in [("hw_keep", (1, 2), True), ("last", (3,), False), ("all", (), False),
                             ("first_keep", (0,), True)]:
        l = m.g.add(LayerType.Mean, name, [x], MeanDescriptor(axis, keep))
        m.out(f"y_{name}", l.out())


def build_merger(m):
    a = m.input("a", (2, 3, 4, 5))
    b = m.input("b", (2, 1, 4, 5), q=(0.05, 90))
    c = m.input("c", (2, 2, 4, 5), q=(0.03, 130))
    d = OriginsDescriptor(concat_axis=1, num_views=3, num_dimensions=4,
                          view_origins=((0, 0, 0, 0), (0, 3, 0, 0), (0, 4, 0, 0)))
    m.out("y1", m.g.add(LayerType.Merger, "concat1", [a, b, c], d, quant=q(m, 0.05, 110)).out())
    e = m.input("e", (2, 3, 4, 2))
    d3 = OriginsDescriptor(concat_axis=3, num_views=2, num_dimensions=4,
                           view_origins=((0, 0, 0, 0), (0, 0, 0, 5)))
    m.out("y3", m.g.add(LayerType.Merger, "concat3", [a, e], d3).out())


def build_l2norm(m):
    x = m.input("x", m.nchw(2, 3, 4, 5))
    d = L2NormalizationDescriptor(data_layout=m.layout)
    m.out("y", m.g.add(LayerType.L2Normalization, "l2", [x], d, quant=q(m, 1 / 128, 128)).out())


# -- the 20.08 format's layers --------------------------------------------------------------

def build_arg_min_max(m):
    x = m.input("x", (2, 3, 5, 7))
    for name, fn, axis in [("argmax1", ArgMinMaxFunction.Max, 1), ("argmin3", ArgMinMaxFunction.Min, 3),
                           ("argmax0", ArgMinMaxFunction.Max, 0)]:
        m.out(f"y_{name}", m.g.add(LayerType.ArgMinMax, name, [x], ArgMinMaxDescriptor(fn, axis)).out())


def build_log_softmax(m):
    x = m.input("x", (2, 3, 5, 7))
    for name, beta, axis in [("ls3", 1.0, 3), ("ls1", 0.5, 1)]:
        l = m.g.add(LayerType.LogSoftmax, name, [x], LogSoftmaxDescriptor(beta, axis), quant=q(m, 1 / 16, 255))
        m.out(f"y_{name}", l.out())


def build_comparison(m):
    a, b = m.input("a", (2, 3, 5, 7)), m.input("b", (2, 1, 5, 1))
    for op in ComparisonOperation:
        m.out(f"y_{op.name}", m.g.add(LayerType.Comparison, op.name, [a, b], ComparisonDescriptor(op)).out())


def build_prelu(m):
    x = m.input("x", (2, 3, 5, 7))
    alpha = m.input("alpha", (1, 3, 1, 7), q=(0.02, 128))   # broadcast along axes 0 and 2
    m.out("y_prelu", m.g.add(LayerType.Prelu, "prelu", [x, alpha], quant=q(m, 0.05, 128)).out())


def build_transpose_conv(m):
    """Both layouts (weights [O, I, kH, kW] / [O, kH, kW, I]): strided, padded unevenly, with a bias;
    and stride 1 without one. Batch 1: 20.08's InferOutputShapes divides the output channels by the
    batch (tests/test_transpose_conv_layer.py runs batch 2 at the 23.08 target)."""
    from armnn_import.ir.descriptors import TransposeConvolution2dDescriptor as TD
    x = m.input("x", m.nchw(1, 3, 5, 4))
    w_shape = (4, 3, 3, 2) if m.layout == NCHW else (4, 3, 2, 3)
    d = TD(pad_left=1, pad_right=0, pad_top=0, pad_bottom=2, stride_x=2, stride_y=3, bias_enabled=True,
           data_layout=m.layout)
    l = m.g.add(LayerType.TransposeConvolution2d, "tconv", [x], d,
                tensors={"weights": m.const(w_shape), "biases": m.bias(4)}, quant=q(m, 0.1, 128))
    m.out("y", l.out())
    w2 = (2, 3, 2, 2) if m.layout == NCHW else (2, 2, 2, 3)
    l2 = m.g.add(LayerType.TransposeConvolution2d, "tconv_s1", [x], TD(stride_x=1, stride_y=1, data_layout=m.layout),
                 tensors={"weights": m.const(w2)}, quant=q(m, 0.08, 120))
    m.out("y2", l2.out())


def build_elementwise_unary(m, variant=None):
    if variant:
        return build_elementwise_unary_23(m, variant)
    ops = [o for o in UnaryOperation if o.value <= 4]
    if m.dt == S32:  # (integer-valued results only: 23.08's Signed32 Rsqrt/Sqrt/Exp round their own way)
        ops = [UnaryOperation.Abs, UnaryOperation.Neg]
    x = m.input("x", (2, 3, 5, 7), positive=True)
    for op in ops:
        l = m.g.add(LayerType.ElementwiseUnary, op.name, [x], ElementwiseUnaryDescriptor(op),
                    quant=q(m, 0.05, 128))
        m.out(f"y_{op.name}", l.out())


def build_quantize(m):
    """Quantize into QuantisedAsymm8 from the case's type (from QuantisedAsymm8: a requantization)."""
    x = m.input("x", (2, 3, 5, 7))
    m.out("y", m.g.add(LayerType.Quantize, "quantize", [x], quant=(0.03, 120)).out())


def build_dequantize(m):
    x = m.input("x", (2, 3, 5, 7))
    m.out("y", m.g.add(LayerType.Dequantize, "dequantize", [x]).out())


# -- the 20.08 format's structural layers (issue 16: direct layers) ---------------------------

def build_concat(m):
    """ConcatLayer (the Merger under its later name): the channel and the last axis."""
    a = m.input("a", (2, 3, 4, 5))
    b = m.input("b", (2, 1, 4, 5), q=(0.05, 90))
    d = OriginsDescriptor(concat_axis=1, num_views=2, num_dimensions=4, view_origins=((0, 0, 0, 0), (0, 3, 0, 0)))
    m.out("y1", m.g.add(LayerType.Concat, "concat1", [a, b], d, quant=q(m, 0.05, 110)).out())
    e = m.input("e", (2, 3, 4, 2))
    d3 = OriginsDescriptor(concat_axis=3, num_views=2, num_dimensions=4, view_origins=((0, 0, 0, 0), (0, 0, 0, 5)))
    m.out("y3", m.g.add(LayerType.Concat, "concat3", [a, e], d3).out())


def build_transpose(m):
    """dim_mappings in numpy.transpose's sense: output dimension i is input dimension m[i]."""
    x = m.input("x", (2, 3, 4, 5))
    for i, mapping in enumerate([(0, 2, 3, 1), (3, 1, 0, 2), (1, 0, 2, 3), (2, 0, 3, 1)]):
        m.out(f"y{i}", m.g.add(LayerType.Transpose, f"t{i}", [x], TransposeDescriptor(mapping)).out())
    x3 = m.input("x3", (3, 4, 5))
    m.out("y3d", m.g.add(LayerType.Transpose, "t3d", [x3], TransposeDescriptor((2, 0, 1))).out())


def build_resize_layer(m):
    """ResizeLayer: both methods, each with no flag, align_corners and half_pixel_centers,
    up (8x11 from 5x7) and down (3x4)."""
    x = m.input("x", m.nchw(2, 3, 5, 7))
    for method in ResizeMethod:
        for flag in ("plain", "align", "half"):
            for (h, w) in ((8, 11), (3, 4)):
                d = ResizeDescriptor(h, w, method, m.layout, flag == "align", flag == "half")
                name = f"{method.name}_{flag}_{h}x{w}"
                m.out(f"y_{name}", m.g.add(LayerType.Resize, name, [x], d).out())


def build_pad_target(m, variant):
    """Pad with a value (20.08) or mirrored (23.08: Reflect, Symmetric; any rank)."""
    x = m.input("x", (2, 3, 4, 5))
    x2 = m.input("x2", (3, 4))
    if variant == "value":
        value = 7.0 if m.dt == QA8 else -1.5  # (a raw level for quantized outputs, as Pad.cpp writes it)
        d = PadDescriptor((0, 1, 2, 0, 1, 1, 0, 3), pad_value=value)
        m.out("y4", m.g.add(LayerType.Pad, "pad4", [x], d).out())
        m.out("y2", m.g.add(LayerType.Pad, "pad2", [x2], PadDescriptor((1, 2, 3, 0), pad_value=value)).out())
        return
    mode = PaddingMode.Reflect if variant == "reflect" else PaddingMode.Symmetric
    edge = 1 if mode == PaddingMode.Reflect else 0
    d = PadDescriptor((1, 1 - edge, 2, 3 - edge, 0, 3 - edge, 4 - edge, 2), padding_mode=mode)
    m.out("y4", m.g.add(LayerType.Pad, "mirror4", [x], d).out())
    m.out("y2", m.g.add(LayerType.Pad, "mirror2", [x2], PadDescriptor((2 - edge, 1, 0, 3), padding_mode=mode)).out())
    x5 = m.input("x5", (2, 2, 3, 2, 3))
    d5 = PadDescriptor((1, 1 - edge, 0, 0, 1, 2 - edge, 1 - edge, 0, 2 - edge, 1), padding_mode=mode)
    m.out("y5", m.g.add(LayerType.Pad, "mirror5", [x5], d5).out())


def _lstm_tensors(m, cells, size, peephole):
    from armnn_import.ir.descriptors import LSTM_TENSORS
    shapes = {k: (cells, size) for k in LSTM_TENSORS if k.startswith("input_to_")}
    shapes.update({k: (cells, cells) for k in LSTM_TENSORS if k.startswith("recurrent_to_")})
    shapes.update({k: (cells,) for k in LSTM_TENSORS if k.endswith("_bias") and "projection" not in k})
    shapes["cell_to_input_weights"] = (cells,)  # (20.08's ParseLstm reads it with CIFG off)
    if peephole:
        shapes.update({"cell_to_forget_weights": (cells,), "cell_to_output_weights": (cells,)})
    return shapes


LSTM_VARIANTS = {None: {"activation_func": 4}, "peephole": {"activation_func": 4, "peephole_enabled": True},
                 "clip": {"activation_func": 4, "clipping_thres_cell": 0.4}, "relu": {"activation_func": 1},
                 "relu6": {"activation_func": 3}, "sigmoid": {"activation_func": 6}}


def build_lstm(m, variant=None):
    """One LSTM step, batch 2, 3 inputs, 5 cells; every output is a network output (CpuRef computes
    wrong values when output 1, the output state, has no consumer)."""
    from armnn_import.ir.descriptors import LstmDescriptor
    kw = LSTM_VARIANTS[variant]
    shapes = _lstm_tensors(m, 5, 3, kw.get("peephole_enabled", False))
    x, h, c = m.input("x", (2, 3)), m.input("h", (2, 5)), m.input("c", (2, 5))
    l = m.g.add(LayerType.Lstm, "lstm", [x, h, c], LstmDescriptor(cifg_enabled=False, **kw),
                tensors={k: m.const(v, scale=1.0) for k, v in shapes.items()})
    for i, n in enumerate(("scratch", "h_out", "c_out", "y")):
        m.out(n, l.out(i))


def build_unidirectional_sequence_lstm(m, variant=None):
    """Four steps, batch 2, 3 inputs, 5 cells; the output sequence only (CpuRef 23.08 never writes
    the final-state outputs 0 and 1)."""
    from armnn_import.ir.descriptors import UnidirectionalSequenceLstmDescriptor
    kw = dict(LSTM_VARIANTS.get(variant, LSTM_VARIANTS[None]))
    shapes = _lstm_tensors(m, 5, 3, kw.get("peephole_enabled", False))
    del shapes["cell_to_input_weights"]
    if kw.get("peephole_enabled"):
        shapes["cell_to_input_weights"] = (5,)
    major = variant == "batch_major"
    x = m.input("x", (2, 4, 3) if major else (4, 2, 3))
    h, c = m.input("h", (2, 5)), m.input("c", (2, 5))
    l = m.g.add(LayerType.UnidirectionalSequenceLstm, "uslstm", [x, h, c],
                UnidirectionalSequenceLstmDescriptor(cifg_enabled=False, time_major=not major, **kw),
                tensors={k: m.const(v, scale=1.0) for k, v in shapes.items()})
    m.out("y", l.out(2))


def build_convolution3d(m, variant=None):
    """Both 5-D layouts; weights [kD, kH, kW, I, O] and the bias as network inputs (23.08 takes them
    as tensors), one convolution strided and padded, one dilated without a bias."""
    from armnn_import.ir.descriptors import Convolution3dDescriptor
    x = m.input("x", (2, 3, 5, 6, 7))                     # NCDHW
    xl = m.input("x_ndhwc", (2, 5, 6, 7, 3))
    w = m.input("w", (2, 3, 2, 3, 4), q=(0.02, 130))
    bias = m.input("b", (4,), dtype=S32 if m.dt == QA8 else None, q=(IN_Q[0] * 0.02, 0))
    for name, inp, layout in (("ncdhw", x, DataLayout.NCDHW), ("ndhwc", xl, DataLayout.NDHWC)):
        d = Convolution3dDescriptor(1, 0, 0, 1, 1, 1, 2, 1, 2, bias_enabled=True, data_layout=layout)
        m.out(f"y_{name}", m.g.add(LayerType.Convolution3d, f"conv_{name}", [inp, w, bias], d,
                                   quant=q(m, 0.3, 128)).out())
    d = Convolution3dDescriptor(stride_x=1, stride_y=1, stride_z=1, dilation_x=2, dilation_z=2,
                                data_layout=DataLayout.NCDHW)
    m.out("y_dilated", m.g.add(LayerType.Convolution3d, "conv_dilated", [x, w], d, quant=q(m, 0.3, 128)).out())


def build_pooling3d(m, variant=None):
    """Max, Average (padding excluded and counted) and L2, both 5-D layouts, padded and strided."""
    from armnn_import.ir.descriptors import Pooling3dDescriptor
    x = m.input("x", (2, 3, 5, 6, 7))
    xl = m.input("x_ndhwc", (2, 5, 6, 7, 3))
    algos = [(PoolingAlgorithm.Max, PaddingMethod.Exclude), (PoolingAlgorithm.Average, PaddingMethod.Exclude),
             (PoolingAlgorithm.Average, PaddingMethod.IgnoreValue)]
    if variant == "L2":
        algos = [(PoolingAlgorithm.L2, PaddingMethod.Exclude)]
    for k, (algo, pm) in enumerate(algos):
        for name, inp, layout in (("ncdhw", x, DataLayout.NCDHW), ("ndhwc", xl, DataLayout.NDHWC)):
            d = Pooling3dDescriptor(algo, 1, 0, 1, 1, 0, 1, 2, 3, 2, 2, 2, 1, OutputShapeRounding.Ceiling
                                    if k == 1 else OutputShapeRounding.Floor, pm, layout)
            m.out(f"y{k}_{name}", m.g.add(LayerType.Pooling3d, f"pool{k}_{name}", [inp], d).out())
# -- the 23.08 format's layers --------------------------------------------------------------

def build_reduce(m):
    x = m.input("x", (2, 3, 5, 7))
    for name, op, axes, keep, oq in [("sum1", ReduceOperation.Sum, (1,), True, (0.15, 128)),
                                     ("max03", ReduceOperation.Max, (0, 3), False, None),
                                     ("min_all", ReduceOperation.Min, (), False, None),
                                     ("mean23", ReduceOperation.Mean, (2, 3), True, None),
                                     ("prod1", ReduceOperation.Prod, (1,), False, (1.6, 128))]:
        l = m.g.add(LayerType.Reduce, name, [x], ReduceDescriptor(keep, axes, op),
                    quant=q(m, *oq) if oq else None)
        m.out(f"y_{name}", l.out())


def build_logical_binary(m):
    """On the Boolean results of Comparisons of inputs of the case's type (so every type has a case)."""
    a, b, c = m.input("a", (2, 3, 5, 7)), m.input("b", (2, 1, 5, 1)), m.input("c", (2, 1, 5, 1))
    p = m.g.add(LayerType.Comparison, "a_gt_b", [a, b], ComparisonDescriptor(ComparisonOperation.Greater)).out()
    r = m.g.add(LayerType.Comparison, "b_le_c", [b, c], ComparisonDescriptor(ComparisonOperation.LessOrEqual)).out()
    for op in LogicalBinaryOperation:
        m.out(f"y_{op.name}", m.g.add(LayerType.LogicalBinary, op.name, [p, r], LogicalBinaryDescriptor(op)).out())


def build_tile(m):
    x = m.input("x", (2, 3, 1, 4))
    m.out("y_a", m.g.add(LayerType.Tile, "tile_a", [x], TileDescriptor((1, 2, 3, 1))).out())
    m.out("y_b", m.g.add(LayerType.Tile, "tile_b", [x], TileDescriptor((2, 1, 1, 2))).out())
    v = m.input("v", (3, 5))
    m.out("y_c", m.g.add(LayerType.Tile, "tile_c", [v], TileDescriptor((2, 3))).out())


def build_reverse_v2(m):
    x = m.input("x", (2, 3, 5, 7))
    for name, axes in [("r1", [1]), ("r03", [0, 3]), ("rlast_neg", [-1, 1])]:
        a = m.g.add(LayerType.Constant, f"{name}_axes", [],
                    tensors={"input": ConstTensor(np.asarray(axes, np.int32))}).out()
        m.out(f"y_{name}", m.g.add(LayerType.ReverseV2, name, [x, a]).out())


def build_elementwise_unary_23(m, variant):
    """Ceil, and LogicalNot on a Comparison's Boolean result (UnaryOperation values of the 23.08 format)."""
    x = m.input("x", (2, 3, 5, 7))
    m.inputs[0] = (m.inputs[0] * 3).astype(m.inputs[0].dtype)
    m.out("y_ceil", m.g.add(LayerType.ElementwiseUnary, "ceil", [x], ElementwiseUnaryDescriptor(UnaryOperation.Ceil)).out())
    zero = m.input("zero", (1, 1, 1, 1))
    m.inputs[-1][...] = 0
    pos = m.g.add(LayerType.Comparison, "pos", [x, zero], ComparisonDescriptor(ComparisonOperation.Greater)).out()
    m.out("y_not", m.g.add(LayerType.ElementwiseUnary, "not", [pos],
                           ElementwiseUnaryDescriptor(UnaryOperation.LogicalNot)).out())


def build_depth_space(m, ltype):
    """SpaceToDepth and DepthToSpace, blocks 2 and 3."""
    from armnn_import.ir.descriptors import DepthToSpaceDescriptor, SpaceToDepthDescriptor
    if ltype == LayerType.SpaceToDepth:
        x = m.input("x", m.nchw(2, 3, 6, 12))
        for b in (2, 3):
            l = m.g.add(ltype, f"s2d{b}", [x], SpaceToDepthDescriptor(b, m.layout))
            m.out(f"y{b}", l.out())
    else:
        x = m.input("x", m.nchw(2, 36, 2, 3))
        for b in (2, 3):
            m.out(f"y{b}", m.g.add(ltype, f"d2s{b}", [x], DepthToSpaceDescriptor(b, m.layout)).out())


def build_instance_norm(m):
    from armnn_import.ir.descriptors import InstanceNormalizationDescriptor
    x = m.input("x", m.nchw(2, 3, 5, 7))
    for name, gamma, beta, eps in (("plain", 1.0, 0.0, 1e-5), ("affine", 0.75, -0.5, 1e-3)):
        d = InstanceNormalizationDescriptor(gamma, beta, eps, m.layout)
        m.out(f"y_{name}", m.g.add(LayerType.InstanceNormalization, name, [x], d).out())


def build_stack(m):
    from armnn_import.ir.descriptors import StackDescriptor
    a, b = m.input("a", (2, 3, 4, 5)), m.input("b", (2, 3, 4, 5), q=(0.05, 90))
    for axis in (0, 2, 4):
        l = m.g.add(LayerType.Stack, f"stack{axis}", [a, b], StackDescriptor(axis, 2, (2, 3, 4, 5)),
                    quant=q(m, 0.05, 110))
        m.out(f"y{axis}", l.out())
    c = [m.input(f"c{i}", (3, 7)) for i in range(3)]
    m.out("y2d", m.g.add(LayerType.Stack, "stack2d", c, StackDescriptor(1, 3, (3, 7))).out())


def build_splitter(m):
    """Uneven views along axes 1 and 3; every view is a network output (an unread slot shifts the
    views on CpuRef: passes/splitter_views.py)."""
    from armnn_import.ir.descriptors import OriginsDescriptor, ViewsDescriptor
    x = m.input("x", (2, 6, 5, 7))
    for axis, sizes in ((1, (1, 2, 3)), (3, (4, 3))):
        starts = np.cumsum((0,) + sizes[:-1])
        origins = tuple(tuple(int(st) if i == axis else 0 for i in range(4)) for st in starts)
        views = tuple(tuple(n if i == axis else d for i, d in enumerate((2, 6, 5, 7))) for n in sizes)
        desc = ViewsDescriptor(OriginsDescriptor(axis, len(sizes), 4, origins), views)
        l = m.g.add(LayerType.Splitter, f"split{axis}", [x], desc)
        for k in range(len(sizes)):
            m.out(f"y{axis}_{k}", l.out(k))


BUILDERS = {
    LayerType.Stack: build_stack,
    LayerType.Splitter: build_splitter,
    LayerType.InstanceNormalization: build_instance_norm,
    LayerType.SpaceToDepth: lambda m: build_depth_space(m, LayerType.SpaceToDepth),
    LayerType.DepthToSpace: lambda m: build_depth_space(m, LayerType.DepthToSpace),
    LayerType.Concat: build_concat, LayerType.Transpose: build_transpose, LayerType.Resize: build_resize_layer,
    LayerType.Convolution3d: build_convolution3d, LayerType.Pooling3d: build_pooling3d,
    LayerType.Lstm: build_lstm, LayerType.UnidirectionalSequenceLstm: build_unidirectional_sequence_lstm,
    LayerType.Quantize: build_quantize, LayerType.Dequantize: build_dequantize,
    LayerType.Input: build_input, LayerType.Output: build_input,
    LayerType.Constant: build_constant, LayerType.Activation: build_activation,
    LayerType.Pooling2d: build_pooling2d, LayerType.Reshape: build_reshape,
    LayerType.Softmax: build_softmax, LayerType.Convolution2d: build_convolution2d,
    LayerType.DepthwiseConvolution2d: build_depthwise, LayerType.FullyConnected: build_fully_connected,
    LayerType.Permute: build_permute, LayerType.SpaceToBatchNd: build_space_to_batch,
    LayerType.BatchToSpaceNd: build_batch_to_space, LayerType.Normalization: build_normalization,
    LayerType.Pad: build_pad, LayerType.Rsqrt: build_rsqrt, LayerType.Floor: build_floor,
    LayerType.BatchNormalization: build_batch_norm, LayerType.ResizeBilinear: build_resize,
    LayerType.StridedSlice: build_strided_slice, LayerType.Gather: build_gather,
    LayerType.Mean: build_mean, LayerType.Merger: build_merger,
    LayerType.L2Normalization: build_l2norm,
    LayerType.ArgMinMax: build_arg_min_max, LayerType.LogSoftmax: build_log_softmax,
    LayerType.Comparison: build_comparison, LayerType.ElementwiseUnary: build_elementwise_unary,
    LayerType.Prelu: build_prelu, LayerType.TransposeConvolution2d: build_transpose_conv,
    LayerType.Cast: build_cast, LayerType.BatchMatMul: build_batch_matmul,
}
BUILDERS.update({t: (lambda m, t=t: build_binary(m, t)) for t in BINARY_LAYERS})
BUILDERS.update({LayerType.Reduce: build_reduce, LayerType.LogicalBinary: build_logical_binary,
                 LayerType.Tile: build_tile, LayerType.ReverseV2: build_reverse_v2,
                 LayerType.GatherNd: build_gather_nd, LayerType.ElementwiseBinary: build_elementwise_binary})
assert set(BUILDERS) == set(LayerType)


# Extra networks for one feature of a layer that behaves differently from the rest.
VARIANTS = {
    LayerType.Activation: ("SoftReLu",), LayerType.Pooling2d: ("L2",),
    LayerType.Normalization: ("LocalContrast",), LayerType.FullyConnected: ("rank3",),
    LayerType.Convolution2d: ("bias",), LayerType.DepthwiseConvolution2d: ("bias",),
    LayerType.Lstm: ("peephole", "clip", "relu", "relu6", "sigmoid"),
    LayerType.UnidirectionalSequenceLstm: ("peephole", "clip", "relu", "batch_major"),
    LayerType.Pooling3d: ("L2",),
    LayerType.ElementwiseUnary: ("ceil_not",),
}


# The richer formats' variants of seed layers: what the 20.08 format adds to them.
TARGET_VARIANTS = {
    LayerType.Convolution2d: (None, "bias", "dilated"), LayerType.DepthwiseConvolution2d: (None, "bias", "dilated"),
    LayerType.Gather: ("axis0", "axis1"),  # (the 19.02 GatherLayer has no descriptor: 20.08 reads it as null)
}


# Seed layers whose bytes the 23.08 format changes: its files say weightsLayoutScheme 1, so
# Constant layers are read as they are and depthwise weights are [1, H, W, I*M] (serialize/layouts.py).
LAYOUT_SCHEME_VARIANTS = {LayerType.Constant: (None,), LayerType.DepthwiseConvolution2d: (None, "bias", "dilated")}


@dataclass(frozen=True)
class Case:
    layer: LayerType
    dtype: DataType
    layout: DataLayout | None = None
    variant: str | None = None
    target: str = "19.02"   # the format the file is written in

    @property
    def name(self):
        return self.layer.name + (f"[{self.variant}]" if self.variant else "")

    @property
    def id(self):
        parts = [self.name, self.dtype.name] + ([self.layout.name] if self.layout is not None else [])
        return "-".join(parts) + (f"@{self.target}" if self.target != "19.02" else "")

    def build(self) -> tuple[Graph, list[np.ndarray]]:
        seed = (int(self.layer) * 31 + int(self.dtype)) * 7 + (int(self.layout) if self.layout is not None else 5)
        m = Maker(self.dtype, self.layout if self.layout is not None else NCHW, seed, self.target)
        if self.variant:
            BUILDERS[self.layer](m, self.variant)
        else:
            BUILDERS[self.layer](m)
        return m.g, m.inputs


def _layouts(lt):
    return (NCHW, NHWC) if lt in LAYOUT_LAYERS else (None,)


def all_cases() -> list[Case]:
    cases = []
    for lt in sorted(LayerType, key=lambda t: t.name):
        first = LAYER_KINDS[lt].since
        for dt in DTYPES:
            cases += [Case(lt, dt, layout, target=first) for layout in _layouts(lt)]
        for v in VARIANTS.get(lt, ()):   # a variant is a fact about the layer, not the type
            cases += [Case(lt, F32, layout, v, target=first) for layout in _layouts(lt)]
        for v in TARGET_VARIANTS.get(lt, ()):  # (every data type: the bias is typed per input type)
            cases += [Case(lt, dt, layout, v, target="20.08") for dt in (F32, F16, QA8) for layout in _layouts(lt)]
        for v, release in RELEASE_VARIANTS.get(lt, ()):  # fields that a later format added
            cases += [Case(lt, dt, layout, v, target=release) for dt in (F32, F16, QA8) for layout in _layouts(lt)]
        for v in LAYOUT_SCHEME_VARIANTS.get(lt, ()):
            dts = DTYPES if v is None else (F32, F16, QA8)
            cases += [Case(lt, dt, layout, v, target="23.08") for dt in dts for layout in _layouts(lt)]
    return cases


# Descriptor fields of seed layers that a later format added: (variant, its first release).
RELEASE_VARIANTS = {
    LayerType.Pad: (("value", "20.08"), ("reflect", "23.08"), ("symmetric", "23.08")),
    LayerType.Softmax: (("axis", "23.08"),),
}


# -- what Arm NN 20.08 does not run, found by running every case ------------------------------
# Keys are (layer, variant, dtype, layout); None matches any dtype / layout. These tables are
# 20.08's; what 23.08 does differently is in ON_23_08 below.

# The runtime refuses the file: (one-line reason, fragment of armnn-run's error message).
ARMNN_NAMES = {LayerType.Merger: "Concat", LayerType.ResizeBilinear: "Resize",
               LayerType.Rsqrt: "ElementwiseUnary"}


def _no_type(lt, dtype):
    return ("CpuRef has no workload for this data type (layer support check fails in Optimize)",
            f"Layer of type {ARMNN_NAMES.get(lt, lt.name)} is not supported on any preferred backend")


_GATHER = ("the 20.08 and 23.08 deserializers read a GatherDescriptor the early schema lacks (null pointer)",
           "SIGSEGV during deserialize")
UNSUPPORTED: dict[tuple, tuple[str, str]] = {
    (LayerType.Gather, None, None, None): _GATHER,
    (LayerType.Pooling2d, "L2", None, None): (
        "the 20.08 deserializer has no L2 pooling (asserts 'Unsupported pooling algorithm')",
        "Unsupported pooling algorithm"),
    (LayerType.FullyConnected, "rank3", None, None): (
        "FullyConnected input must have 2 or 4 dimensions", "Input tensor must have 2 or 4 dimensions"),
    (LayerType.Floor, None, QA8, None): _no_type(LayerType.Floor, QA8),
    (LayerType.FullyConnected, None, S32, None): (
        "no such FullyConnected (the bias type check asserts in Optimize)", "GetBiasTypeFromWeightsType"),
    (LayerType.FullyConnected, None, BOOL, None): (
        "no such FullyConnected (the bias type check asserts in Optimize)", "GetBiasTypeFromWeightsType"),
}
# Signed32 runs only in these layer types, Boolean only in these.
SIGNED32_LAYERS = frozenset({
    LayerType.Input, LayerType.Output, LayerType.Constant, LayerType.Reshape, LayerType.Rsqrt,
    LayerType.Addition, LayerType.Subtraction, LayerType.Multiplication, LayerType.Division,
    LayerType.Minimum, LayerType.Maximum, LayerType.Equal, LayerType.Greater,
    LayerType.ArgMinMax, LayerType.Comparison})
BOOLEAN_LAYERS = frozenset({LayerType.Input, LayerType.Output, LayerType.Equal, LayerType.Greater,
                            LayerType.Comparison})
UNSUPPORTED[(LayerType.LogSoftmax, None, QA8, None)] = _no_type(LayerType.LogSoftmax, QA8)
for _lt in (LayerType.Lstm, LayerType.UnidirectionalSequenceLstm):  # (QSymmS16 / QAsymmS8 LSTMs only)
    UNSUPPORTED[(_lt, None, QA8, None)] = _no_type(_lt, QA8)
UNSUPPORTED[(LayerType.InstanceNormalization, None, QA8, None)] = _no_type(LayerType.InstanceNormalization, QA8)
for _dt in (F16, QA8):  # (the converters stack on axis 0 only in Float32 for the 20.08 target)
    UNSUPPORTED[(LayerType.Stack, None, _dt, None)] = (
        "20.08's RefStackWorkload copies an axis-0 stack as float32 words, past the end of smaller types",
        "fatal signal")
for _dt in (F32, F16):  # RefLayerSupport::IsDequantizeSupported: quantized inputs only
    UNSUPPORTED[(LayerType.Dequantize, None, _dt, None)] = _no_type(LayerType.Dequantize, _dt)
for _lt in LayerType:
    for _dt, _ok in ((S32, SIGNED32_LAYERS), (BOOL, BOOLEAN_LAYERS)):
        if _lt not in _ok and _lt != LayerType.Gather:
            UNSUPPORTED.setdefault((_lt, None, _dt, None), _no_type(_lt, _dt))

# The 20.08 format's GatherDescriptor, and the 23.08 layers Cast and BatchMatMul (their cases run
# on 23.08 only): what CpuRef's layer support refuses
_REFUSED_ON_CPUREF = "is not supported on requested backend CpuRef"
UNSUPPORTED[(LayerType.Gather, "axis1", None, None)] = (
    "20.08's CpuRef gathers on axis 0 only ('Reference Gather: axis not supported')",
    f"Layer of type Gather {_REFUSED_ON_CPUREF}")
for _lt, _dts in ((LayerType.BatchMatMul, (S32, BOOL)), (LayerType.Cast, (BOOL,))):
    for _dt in _dts:
        UNSUPPORTED[(_lt, None, _dt, None)] = (f"CpuRef has no {_lt.name} for {_dt.name} (layer support check "
                                               "fails in Optimize)", f"Layer of type {_lt.name} {_REFUSED_ON_CPUREF}")

# Not expressible in a file at all: verify() refuses the graph.
NOT_EXPRESSIBLE: dict[tuple, str] = {
    (LayerType.Convolution2d, None, None, NHWC):
        "data_layout is never written (Arm NN 19.02+ reads its slot as dilationY); NHWC is permuted",
    (LayerType.DepthwiseConvolution2d, None, None, NHWC):
        "data_layout is never written (Arm NN 19.02+ reads its slot as dilationY); NHWC is permuted",
    (LayerType.Convolution2d, "bias", None, None):
        "bias_enabled is never written (Arm NN 19.02+ reads its slot as dilationX); bias goes elsewhere",
    (LayerType.DepthwiseConvolution2d, "bias", None, None):
        "bias_enabled is never written (Arm NN 19.02+ reads its slot as dilationX); bias goes elsewhere",
}

# The runtime loads and runs the file but does not compute the layer; the executor refuses it.
DIVERGENT: dict[tuple, str] = {
    (LayerType.Activation, "SoftReLu", None, None):
        "the 20.08 and 23.08 deserializers map SoftReLu to Sigmoid (no case for it)",
    (LayerType.Normalization, "LocalContrast", None, None):
        "CpuRef (20.08 and 23.08) logs 'Lcr method not supported' and leaves the output unwritten",
}


def _lookup(table, case: Case):
    for dt in (case.dtype, None):
        for layout in (case.layout, None):
            key = (case.layer, case.variant, dt, layout)
            if key in table:
                return table[key]
    return None


# -- what Arm NN 23.08 does differently (found by running every case on 23.08) -----------------
# The tables above are 20.08's. On 23.08 an entry here, with the same kind of key, replaces them:
# ("pass", why it passes there) or (kind, why) as status() returns it.
_ELEMENTWISE_BINARY = (LayerType.Addition, LayerType.Subtraction, LayerType.Multiplication,
                       LayerType.Division, LayerType.Minimum, LayerType.Maximum)
_CONSTANT_2308 = (
    "23.08 reads every Constant of a file without featureVersions (weightsLayoutScheme 0) as "
    "depthwise weights [M,I,H,W] and permutes it to [1,H,W,I*M]: other ranks fail the rank check of "
    "Permute (an assertion in the source build, an exception in Debian 13's libarmnn 23.08-5), 4-D ones "
    "change shape", "mappings")  # "... == mappings.GetSize()" / "... does not match the size of the mappings"
ON_23_08: dict[tuple, tuple[str, object]] = {
    (LayerType.Constant, None, None, None): ("unsupported", _CONSTANT_2308),
    (LayerType.Pooling2d, "L2", None, None): ("pass", "the 23.08 deserializer reads L2 pooling"),
    (LayerType.Merger, None, S32, None): ("pass", "23.08's CpuRef concatenates Signed32"),
    (LayerType.Concat, None, S32, None): ("pass", "23.08's CpuRef concatenates Signed32"),
    (LayerType.Stack, None, S32, None): ("pass", "23.08's CpuRef stacks Signed32"),
    (LayerType.Stack, None, F16, None): ("pass", "23.08's RefStackWorkload has no float32 copy for axis 0"),
    (LayerType.Stack, None, QA8, None): ("pass", "23.08's RefStackWorkload has no float32 copy for axis 0"),
    (LayerType.Reshape, None, BOOL, None): ("pass", "23.08's CpuRef reshapes Boolean"),
    (LayerType.Dequantize, None, F16, None): ("pass", "23.08's CpuRef dequantizes (converts) Float16"),
    (LayerType.ElementwiseUnary, None, S32, None): ("pass", "23.08's CpuRef has Signed32 unary operations"),
    (LayerType.Gather, "axis1", None, None): ("pass", "23.08's CpuRef gathers on any axis"),
    (LayerType.Cast, None, S32, None): ("pass", "23.08's CpuRef casts Signed32"),
    # the 23.08 format's layers: RefLayerSupport lists Signed32 (no Boolean) for these, and
    # LogicalBinary's Boolean inputs come from Comparisons of every type
    **{(_lt, None, S32, None): ("pass", "23.08's CpuRef runs it in Signed32 (through float: exact within 2^24)")
       for _lt in (LayerType.Reduce, LayerType.Tile, LayerType.ReverseV2, LayerType.GatherNd)},
    (LayerType.LogicalBinary, None, S32, None): ("pass", "on the Comparisons' Boolean results"),
    (LayerType.ElementwiseBinary, None, S32, None): ("unsupported", (
        "Signed32 Power goes through float: a result past int32 fails numeric_cast (the converters write "
        "Power for float only)", "numeric_cast failed")),
    (LayerType.LogicalBinary, None, BOOL, None): ("pass", "on the Comparisons' Boolean results"),
    # 23.08 turns these layers into one ElementwiseBinary layer, which CpuRef has for no Boolean
    **{(_lt, None, BOOL, None): ("unsupported", (
        "CpuRef has no workload for this data type (layer support check fails in Optimize)",
        "Layer of type ElementwiseBinary is not supported on any preferred backend"))
       for _lt in _ELEMENTWISE_BINARY},
}
RELEASE_CHANGES: dict[str, dict[tuple, tuple[str, object]]] = {"20.08": {}, "23.08": ON_23_08}
# Entries of ON_23_08 that hold only for files without weightsLayoutScheme 1 (targets before 23.08)
OLD_LAYOUT_SCHEME_ONLY = {(LayerType.Constant, None, None, None)}


def status(case: Case, release: str = "20.08") -> tuple[str, object]:
    """("pass", None), ("unsupported", (reason, fragment)), ("not expressible", reason)
    or ("divergent", reason), on Arm NN `release`."""
    table = RELEASE_CHANGES[release]
    if case.target == "23.08":
        table = {k: v for k, v in table.items() if k not in OLD_LAYOUT_SCHEME_ONLY}
    changed = _lookup(table, case)
    if changed is not None:
        return ("pass", None) if changed[0] == "pass" else changed
    for kind, table in (("not expressible", NOT_EXPRESSIBLE if case.target == "19.02" else {}),
                        ("unsupported", UNSUPPORTED), ("divergent", DIVERGENT)):
        found = _lookup(table, case)
        if found is not None:
            return kind, found
    return "pass", None


def compare(case: Case, got: list[np.ndarray], want: list[np.ndarray]) -> list[str]:
    """Differences between the runtime's outputs (got) and the executor's (want)."""
    problems = []
    if len(got) != len(want):
        return [f"{len(got)} outputs from Arm NN, {len(want)} from the executor"]
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape or g.dtype != w.dtype:
            problems.append(f"output {i}: Arm NN {g.shape} {g.dtype}, executor {w.shape} {w.dtype}")
            continue
        if g.dtype == np.uint8:
            d = np.abs(g.astype(int) - w.astype(int))
            if d.size and d.max() > 1:
                problems.append(f"output {i}: uint8 differs by up to {d.max()} ({(d > 1).sum()} elements)")
        elif g.dtype in (np.float32, np.float16):
            rtol, atol = (1e-5, 1e-6) if g.dtype == np.float32 else (1e-3, 1e-4)
            if not np.allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol,
                               equal_nan=True):
                err = np.nanmax(np.abs(g.astype(np.float64) - w.astype(np.float64)))
                problems.append(f"output {i}: {g.dtype} max abs difference {err:g}")
        elif not np.array_equal(g, w):
            problems.append(f"output {i}: {g.dtype} values differ ({(g != w).sum()} elements)")
    return problems


# -- random configurations: many layers of one type with random parameters in one network --------

def _try_add(m, *args, **kw):
    """Add a layer if its parameters give a valid, non-empty output; else None."""
    from armnn_import.errors import GraphError
    try:
        layer = m.g.add(*args, **kw)
    except GraphError:
        return None
    if min(layer.outputs[0].shape, default=1) <= 0:
        m.g.remove([layer])
        return None
    return layer


def random_network(layer: LayerType, dtype: DataType, seed: int, count: int = 24, target: str = "19.02"):
    """A network with up to `count` layers of type `layer` with random parameters, each
    feeding its own output; returns (graph, inputs)."""
    m = Maker(dtype, NCHW, seed, target)
    r = m.rng
    added = 0
    for i in range(count * 4):
        if added == count:
            break
        layout = (NCHW, NHWC)[r.integers(2)]
        m.layout = layout
        n, c, h, w = int(r.integers(1, 3)), int(r.integers(1, 4)), int(r.integers(1, 9)), int(r.integers(1, 9))
        if layer == LayerType.Pooling2d:
            x = m.input(f"x{i}", m.nchw(n, c, h, w))
            kh, kw = (int(v) for v in r.integers(1, 5, 2))
            pads = [int(v) for v in r.integers(0, 3, 4)]
            if h + pads[2] + pads[3] < kh or w + pads[0] + pads[1] < kw:
                # Arm NN's unsigned shape arithmetic wraps around when the window is larger
                # than the padded input (shapes.py does not refuse it)
                m.inputs.pop()
                m.g.remove([x.layer])
                continue
            d = Pooling2dDescriptor(PoolingAlgorithm(int(r.integers(2))), pad_left=pads[0], pad_right=pads[1],
                                    pad_top=pads[2], pad_bottom=pads[3], pool_width=kw, pool_height=kh,
                                    stride_x=int(r.integers(1, 4)), stride_y=int(r.integers(1, 4)),
                                    output_shape_rounding=OutputShapeRounding(int(r.integers(2))),
                                    padding_method=PaddingMethod(int(r.integers(2))), data_layout=layout)
            l = _try_add(m, LayerType.Pooling2d, f"l{i}", [x], d)
        elif layer in (LayerType.Convolution2d, LayerType.DepthwiseConvolution2d):
            m.layout = NCHW                      # the only layout a file can hold
            x = m.input(f"x{i}", (n, c, h, w))
            kh, kw = (int(v) for v in r.integers(1, 5, 2))
            pads = [int(v) for v in r.integers(0, 3, 4)]
            kw_args = dict(pad_left=pads[0], pad_right=pads[1], pad_top=pads[2], pad_bottom=pads[3],
                           stride_x=int(r.integers(1, 4)), stride_y=int(r.integers(1, 4)))
            if layer == LayerType.Convolution2d:
                d, wshape = Convolution2dDescriptor(**kw_args), (int(r.integers(1, 5)), c, kh, kw)
            else:
                d, wshape = DepthwiseConvolution2dDescriptor(**kw_args), (int(r.integers(1, 4)), c, kh, kw)
            l = _try_add(m, layer, f"l{i}", [x], d, tensors={"weights": m.const(wshape)}, quant=q(m, 0.1, 128))
        elif layer == LayerType.StridedSlice:
            shape = (n, c, h, w)
            x = m.input(f"x{i}", shape)
            b = [int(v) for v in r.integers(-9, 9, 4)]
            e = [int(v) for v in r.integers(-9, 9, 4)]
            s = [int(v) * (1 if r.random() < 0.6 else -1) for v in r.integers(1, 4, 4)]
            shrink = int(r.integers(16)) & int(r.integers(16))
            for a in range(4):
                if shrink & (1 << a):       # Arm NN: |begin - end| <= 1 and a positive stride
                    b[a] = int(r.integers(-shape[a], shape[a]))
                    e[a], s[a] = b[a] + 1, 1
            d = StridedSliceDescriptor(b, e, s, begin_mask=int(r.integers(16)), end_mask=int(r.integers(16)),
                                       shrink_axis_mask=shrink)
            l = _try_add(m, LayerType.StridedSlice, f"l{i}", [x], d)
        elif layer == LayerType.ResizeBilinear:
            x = m.input(f"x{i}", m.nchw(n, c, h, w))
            d = ResizeBilinearDescriptor(int(r.integers(1, 12)), int(r.integers(1, 12)), layout)
            l = _try_add(m, layer, f"l{i}", [x], d)
        elif layer == LayerType.Mean:
            rank = int(r.integers(1, 5))
            x = m.input(f"x{i}", tuple(int(v) for v in r.integers(1, 6, rank)))
            axes = tuple(a for a in range(rank) if r.random() < 0.5)
            l = _try_add(m, layer, f"l{i}", [x], MeanDescriptor(axes, bool(r.integers(2))))
        elif layer == LayerType.Pad:
            rank = int(r.integers(1, 5))
            x = m.input(f"x{i}", tuple(int(v) for v in r.integers(1, 6, rank)))
            l = _try_add(m, layer, f"l{i}", [x], PadDescriptor(tuple(int(v) for v in r.integers(0, 3, 2 * rank))))
        elif layer == LayerType.SpaceToBatchNd:
            bh, bw = (int(v) for v in r.integers(1, 4, 2))
            pads = [int(v) for v in r.integers(0, 3, 4)]
            h, w = bh * int(r.integers(1, 4)) - pads[0] - pads[1], bw * int(r.integers(1, 4)) - pads[2] - pads[3]
            if h < 1 or w < 1:
                continue
            x = m.input(f"x{i}", m.nchw(n, c, h, w))
            d = SpaceToBatchNdDescriptor((bh, bw), tuple(pads), layout)
            l = _try_add(m, layer, f"l{i}", [x], d)
        elif layer == LayerType.BatchToSpaceNd:
            bh, bw = (int(v) for v in r.integers(1, 4, 2))
            crops = [int(v) for v in r.integers(0, 3, 4)]
            x = m.input(f"x{i}", m.nchw(n * bh * bw, c, h, w))
            d = BatchToSpaceNdDescriptor((bh, bw), tuple(crops), layout)
            l = _try_add(m, layer, f"l{i}", [x], d)
        elif layer == LayerType.Normalization:
            x = m.input(f"x{i}", m.nchw(n, int(r.integers(1, 8)), h, w))
            chan = NormalizationAlgorithmChannel(int(r.integers(2)))
            d = NormalizationDescriptor(chan, norm_size=int(r.integers(1, 6)), alpha=float(r.uniform(0, 1)),
                                        beta=float(r.uniform(0.1, 1)), k=float(r.uniform(0.5, 2)),
                                        data_layout=layout)
            l = _try_add(m, layer, f"l{i}", [x], d)
        elif layer in RANDOM_LAYERS_23_08:
            rank = int(r.integers(1, 5))
            shape = tuple(int(v) for v in r.integers(1, 6, rank))
            x = m.input(f"x{i}", shape)
            axes = tuple(a for a in range(rank) if r.random() < 0.5)
            if layer == LayerType.Reduce:
                op = ReduceOperation(int(r.integers(5)))
                oq = q(m, 0.5, 128) if op in (ReduceOperation.Sum, ReduceOperation.Prod) else None
                l = _try_add(m, layer, f"l{i}", [x], ReduceDescriptor(bool(r.integers(2)), axes, op), quant=oq)
            elif layer == LayerType.Tile:
                l = _try_add(m, layer, f"l{i}", [x], TileDescriptor(tuple(int(v) for v in r.integers(1, 4, rank))))
            else:  # ReverseV2: the axes, some negative, as a Signed32 Constant
                ax = [a - rank if r.random() < 0.5 else a for a in axes] or [0]
                c = m.g.add(LayerType.Constant, f"axes{i}", [], tensors={"input": ConstTensor(np.asarray(ax, np.int32))})
                l = _try_add(m, layer, f"l{i}", [x, c.out()])
        else:
            raise ValueError(f"no random configurations for {layer.name}")
        if l is None:
            m.g.remove([x.layer])
            m.inputs.pop()
            continue
        m.out(f"y{i}", l.out())
        added += 1
    return m.g, m.inputs


RANDOM_LAYERS_23_08 = (LayerType.Reduce, LayerType.Tile, LayerType.ReverseV2)  # (random_network(target="23.08"))
RANDOM_LAYERS = (LayerType.Pooling2d, LayerType.Convolution2d, LayerType.DepthwiseConvolution2d,
                 LayerType.StridedSlice, LayerType.ResizeBilinear, LayerType.Mean, LayerType.Pad,
                 LayerType.SpaceToBatchNd, LayerType.BatchToSpaceNd, LayerType.Normalization)


def tie_network():
    """Results exactly halfway between two representable values: uint8 via Linear(0.5 * x)
    on scale-1 data, float16 via 1 + k * 2^-11 (between two float16 neighbours)."""
    g = Graph()
    q = g.add_input("q", TensorInfo((64,), DataType.QuantisedAsymm8, 1.0, 0))
    neg = g.add_input("neg", TensorInfo((64,), DataType.QuantisedAsymm8, 1.0, 128))
    a = g.add_input("a", TensorInfo((8,), DataType.Float16))
    b = g.add_input("b", TensorInfo((8,), DataType.Float16))
    half = ActivationDescriptor(ActivationFunction.Linear, 0.5, 0.0)
    layers = [g.add(LayerType.Activation, "half", [q], half, quant=(1.0, 0)),
              g.add(LayerType.Activation, "half_neg", [neg], half, quant=(1.0, 128)),
              g.add(LayerType.Addition, "add16", [a, b])]
    for i, l in enumerate(layers):
        g.add_output(f"out{i}", l.out())
    qx = np.arange(64, dtype=np.uint8)
    nx = np.arange(64, dtype=np.uint8)                   # values -128 .. -65
    fa = np.ones(8, np.float16)
    fb = (np.arange(1, 17, 2) * 2.0 ** -11).astype(np.float16)   # odd multiples of 2^-11: ties
    return g, [qx, nx, fa, fb]
