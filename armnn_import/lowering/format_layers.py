"""NetBuilder's layers of the richer formats (20.08 and 23.08): one method a layer, the caller
checks self.target first. A base class of NetBuilder (builder.py)."""
from __future__ import annotations

import numpy as np

from ..ir import descriptors as D
from ..ir.graph import Port
from ..ir.types import ActivationFunction, ConstTensor, DataLayout, DataType, LayerType, UnaryOperation

# RefLayerSupport::IsSplitterSupported (20.08 and 23.08), of the types the IR has
SPLITTER_TYPES = (DataType.Float32, DataType.Float16, DataType.QuantisedAsymm8, DataType.QAsymmS8)


class FormatLayers:
    # -- layers of the richer formats (callers check self.target first) ------------
    def arg_min_max(self, x: Port, axis: int, function, name: str) -> Port:
        """The index (Signed32) of the first smallest or largest value along `axis`."""
        return self.add(LayerType.ArgMinMax, name, [x], D.ArgMinMaxDescriptor(function, axis % x.info.rank))

    def log_softmax(self, x: Port, axis: int, name: str, beta: float = 1.0) -> Port:
        return self.add(LayerType.LogSoftmax, name, [x], D.LogSoftmaxDescriptor(beta, axis % x.info.rank))

    def unary(self, x: Port, op, name: str, quant=None) -> Port:
        return self.add(LayerType.ElementwiseUnary, name, [x], D.ElementwiseUnaryDescriptor(op), quant=quant)

    def exp(self, x: Port, name: str) -> Port:
        """e^x: one ElementwiseUnary Exp from the 23.08 format on (CpuRef's std::exp); before,
        sigmoid(x) / sigmoid(-x) = (1 + e^x) / (1 + e^-x): an identity, exact up to float rounding,
        and without overflow until e^x itself overflows."""
        if self.target.has(LayerType.ElementwiseUnary):  # (23.08: 20.08 cannot read the layer)
            return self.unary(x, UnaryOperation.Exp, name)
        self.report.decomposition("Exp", "Sigmoid(x) / Sigmoid(-x)")
        pos = self.activation(x, ActivationFunction.Sigmoid, f"{name}_sig")
        neg = self.activation(self.linear(x, -1.0, 0.0, f"{name}_neg"), ActivationFunction.Sigmoid, f"{name}_signeg")
        return self.add(LayerType.Division, name, [pos, neg])

    def prelu(self, x: Port, alpha, name: str, quant=None) -> Port:
        """x < 0 ? alpha * x : x (Prelu layer, the 20.08 format on), alpha a Port, a ConstTensor of
        x's type or float values for a float x, broadcast to x (a Constant layer: constant_layer).
        CpuRef decodes x and alpha to float and encodes the result: one rounding when quantized."""
        if isinstance(alpha, ConstTensor):
            c = alpha
            four = (1,) * (x.info.rank - len(c.shape)) + tuple(c.shape)
            alpha = self.constant_layer(ConstTensor(c.data.reshape(four), c.info.with_shape(four), c.storage),
                                        f"{name}_alpha")
        elif not isinstance(alpha, Port):
            a = np.asarray(alpha, np.float32)
            a = a.reshape((1,) * (x.info.rank - a.ndim) + a.shape)
            alpha = self.constant_layer(a.astype(np.float16) if x.info.dtype == DataType.Float16 else a,
                                        f"{name}_alpha")
        x, alpha = self._equal_rank(x, alpha, name)
        return self.add(LayerType.Prelu, name, [x, alpha], quant=quant)

    def splitter_fits(self, x: Port, parts: int) -> bool:
        return self.target.has(LayerType.Splitter) and parts > 1 and x.info.dtype in SPLITTER_TYPES

    def split_views(self, x: Port, axis: int, sizes, name: str) -> list[Port]:
        """x cut along `axis` into parts of `sizes`: one Splitter layer where the target has it, the
        parts are 2+ and its type is one RefLayerSupport::IsSplitterSupported takes, else
        StridedSlices (NetBuilder.split). Unread parts keep their output slots."""
        axis %= x.info.rank
        if not self.splitter_fits(x, len(sizes)):
            return self.split(x, axis, sizes, name)
        origins, views, at = [], [], 0
        for n in sizes:
            origins.append(tuple(at if i == axis else 0 for i in range(x.info.rank)))
            views.append(tuple(int(n) if i == axis else d for i, d in enumerate(x.info.shape)))
            at += int(n)
        desc = D.ViewsDescriptor(D.OriginsDescriptor(axis, len(views), x.info.rank, tuple(origins)), tuple(views))
        layer = self.g.add(LayerType.Splitter, name, [x], desc)
        return [layer.out(i) for i in range(len(views))]

    def transpose_conv2d_fits(self, x: Port, out_channels: int | None = None) -> bool:
        """Whether the target has the layer and every runtime reading its file infers x's output shape
        (O = out_channels): 23.08's InferOutputShapes gives O; 20.08's, for input channels C and batch
        N, O * C / (N * C) where O >= N (O only for N = 1), and O where O < N (asserting that N * C
        divides by O * C). So at the 20.08 target batch 1, or O < N with N a multiple of O."""
        n = x.info.shape[0]
        return self.target.has(LayerType.TransposeConvolution2d) and (
            self.target.at_least("23.08") or n == 1 or (out_channels is not None and out_channels < n
                                                         and n % out_channels == 0))

    def transpose_conv2d(self, x: Port, w, bias, name: str, *, strides, pads, layout: DataLayout,
                         quant=None, weight_info=None) -> Port:
        """One TransposeConvolution2d layer (the 20.08 format on): weights [O, I, kH, kW] for
        NCHW, [O, kH, kW, I] for NHWC; pads (top, left, bottom, right), each >= 0, cut from the full
        (in - 1) * stride + k result; bias float32 [O] or None. Per-tensor uint8 weights: `w` the
        uint8 array, `weight_info` their TensorInfo; the bias becomes Signed32 at input scale x
        weight scale (CpuRef decodes all three to float, sums in float and rounds once)."""
        if weight_info is not None:
            w = ConstTensor(np.ascontiguousarray(w), weight_info.with_shape(np.shape(w)))
            bias = None if bias is None else self._conv_bias(bias, x, weight_info)
        desc = D.TransposeConvolution2dDescriptor(
            pad_left=int(pads[1]), pad_right=int(pads[3]), pad_top=int(pads[0]), pad_bottom=int(pads[2]),
            stride_x=int(strides[1]), stride_y=int(strides[0]), bias_enabled=bias is not None,
            data_layout=layout)
        # (quantized: w and bias given as ConstTensors, e.g. lowering.perchannel's, and quant the output's)
        tensors = {"weights": w if isinstance(w, ConstTensor) else ConstTensor(np.ascontiguousarray(w, np.float32))}
        if bias is not None:
            tensors["biases"] = bias if isinstance(bias, ConstTensor) else \
                ConstTensor(np.asarray(bias, np.float32).reshape(-1))
        return self.add(LayerType.TransposeConvolution2d, name, [x], desc, tensors=tensors, quant=quant)

    def compare(self, op, a: Port, b: Port, name: str) -> Port:
        a, b = self._equal_rank(a, b, name)
        return self.add(LayerType.Comparison, name, [a, b], D.ComparisonDescriptor(op))

    def pool2d(self, x: Port, algo, kernel, name: str, *, strides=(1, 1), pads=(0, 0, 0, 0),
               layout: DataLayout = DataLayout.NCHW, ceil: bool = False, exclude_pad: bool = True,
               quant=None) -> Port:
        """pads = (top, left, bottom, right); exclude_pad: padding not counted in averages."""
        d = D.Pooling2dDescriptor(algo, pads[1], pads[3], pads[0], pads[2], kernel[1], kernel[0],
                                  strides[1], strides[0],
                                  D.OutputShapeRounding.Ceiling if ceil else D.OutputShapeRounding.Floor,
                                  D.PaddingMethod.Exclude if exclude_pad else D.PaddingMethod.IgnoreValue,
                                  layout)
        return self.add(LayerType.Pooling2d, name, [x], d, quant=quant)

    # -- embedding lookups and attention (Gather with an axis: 20.08 format; Cast, BatchMatMul: 23.08;
    # their constant inputs: NetBuilder.constant_layer)
    def gather(self, params: Port, indices: Port, axis: int, name: str) -> Port:
        """numpy.take(params, indices, axis) for run-time Signed32 indices in [0, dim): a Gather
        layer (the 20.08 format on). Arm NN 20.08's CpuRef gathers on axis 0 only, so there
        another axis is permuted to the front and back (exact)."""
        rank = params.info.rank
        axis %= rank
        if axis and not self.target.at_least("23.08"):
            front = self.permute(params, (axis,) + tuple(a for a in range(rank) if a != axis), f"{name}_front")
            y = self.add(LayerType.Gather, name, [front, indices], D.GatherDescriptor(0))
            ni = indices.info.rank
            back = tuple(range(ni, ni + axis)) + tuple(range(ni)) + tuple(range(ni + axis, y.info.rank))
            self.report.decomposition("Gather", "Arm NN 20.08 gathers on axis 0: Permute, Gather, Permute")
            return self.permute(y, back, f"{name}_back")
        return self.add(LayerType.Gather, name, [params, indices], D.GatherDescriptor(axis))

    def gather_nd(self, params: Port, indices: Port, name: str) -> Port:
        """params[tuple(indices[..., :])] for run-time Signed32 index tuples inside params'
        leading dimensions: a GatherNd layer (the 23.08 format)."""
        return self.add(LayerType.GatherNd, name, [params, indices])

    def power(self, x: Port, e: Port, name: str) -> Port:
        """x ** e, broadcast (an ElementwiseBinary Power layer, the 23.08 format): CpuRef's
        std::pow of the two values as floats."""
        x, e = self._equal_rank(x, e, name)
        return self.add(LayerType.ElementwiseBinary, name, [x, e], D.ElementwiseBinaryDescriptor(D.BinaryOperation.Power))

    def cast(self, x: Port, dtype: DataType, name: str) -> Port:
        """x converted to `dtype` (Cast layer, the 23.08 format): float -> int truncates,
        int -> float rounds to nearest, float32 <-> float16 rounds to nearest."""
        if x.info.dtype == dtype:
            return x
        from ..ir.types import TensorInfo
        return self.add(LayerType.Cast, name, [x], outputs=[TensorInfo(x.info.shape, dtype)])

    def batch_matmul(self, a: Port, b: Port, name: str, *, transpose_a: bool = False,
                     transpose_b: bool = False, quant=None) -> Port:
        """a @ b over the last two axes (either transposed first), batch axes broadcast
        (BatchMatMul layer, the 23.08 format); ranks are equalized with leading 1s."""
        a, b = self._equal_rank(a, b, name)
        return self.add(LayerType.BatchMatMul, name, [a, b], D.BatchMatMulDescriptor(transpose_a, transpose_b),
                        quant=quant)


    # -- structural layers of the 20.08 format (callers check self.target first) ---
    def transpose(self, x: Port, perm, name: str) -> Port:
        """numpy.transpose(x, perm) as a Transpose layer (dim_mappings = perm)."""
        perm = tuple(int(p) for p in perm)
        if perm == tuple(range(len(perm))):
            return x
        return self.add(LayerType.Transpose, name, [x], D.TransposeDescriptor(perm))

    def resize(self, x: Port, size, method, name: str, *, layout: DataLayout = DataLayout.NCHW,
               align_corners: bool = False, half_pixel_centers: bool = False, quant=None) -> Port:
        """One Resize layer to size = (height, width)."""
        d = D.ResizeDescriptor(int(size[0]), int(size[1]), method, layout, align_corners, half_pixel_centers)
        return self.add(LayerType.Resize, name, [x], d, quant=quant)

    def space_to_depth(self, x: Port, block: int, name: str, layout: DataLayout = DataLayout.NCHW) -> Port:
        """ONNX SpaceToDepth / TFLite SPACE_TO_DEPTH (channel (i * b + j) * C + c) as one layer."""
        return self.add(LayerType.SpaceToDepth, name, [x], D.SpaceToDepthDescriptor(int(block), layout))

    def instance_norm(self, x: Port, eps: float, name: str, gamma: float = 1.0, beta: float = 0.0,
                      layout: DataLayout = DataLayout.NCHW) -> Port:
        """(x - mean) * gamma / sqrt(var + eps) + beta over H and W of each channel (InstanceNorm.cpp)."""
        d = D.InstanceNormalizationDescriptor(float(gamma), float(beta), float(eps), layout)
        return self.add(LayerType.InstanceNormalization, name, [x], d)

    def stack(self, xs: list[Port], axis: int, name: str, quant=None) -> Port:
        """numpy.stack(xs, axis) as one Stack layer (inputs of one shape, at most 4-D)."""
        shape = xs[0].info.shape
        d = D.StackDescriptor(int(axis) % (len(shape) + 1), len(xs), shape)
        return self.add(LayerType.Stack, name, xs, d, quant=quant)

    def depth_to_space(self, x: Port, block: int, name: str, layout: DataLayout = DataLayout.NCHW) -> Port:
        """ONNX DepthToSpace in DCR mode / TFLite DEPTH_TO_SPACE as one layer."""
        return self.add(LayerType.DepthToSpace, name, [x], D.DepthToSpaceDescriptor(int(block), layout))


    # -- layers of the 23.08 format (callers check self.target first) ------------------
    def reduce(self, x: Port, axes, keep_dims: bool, op, name: str, quant=None) -> Port:
        """Sum/Max/Min/Prod/Mean over `axes` (ReduceOperation), in one float accumulation per
        output element (23.08 Reduce.cpp); the input is 1-D to 4-D."""
        axes = tuple(sorted({int(a) % x.info.rank for a in axes}))
        return self.add(LayerType.Reduce, name, [x], D.ReduceDescriptor(keep_dims, axes, op), quant=quant)

    def logical(self, op, a: Port, b: Port, name: str) -> Port:
        """LogicalAnd / LogicalOr (LogicalBinaryOperation) of two Boolean tensors."""
        a, b = self._equal_rank(a, b, name)
        return self.add(LayerType.LogicalBinary, name, [a, b], D.LogicalBinaryDescriptor(op))

    def tile(self, x: Port, multiples, name: str) -> Port:
        """numpy.tile(x, multiples), one multiple per dimension."""
        multiples = tuple(int(k) for k in multiples)
        if all(k == 1 for k in multiples):
            return x
        return self.add(LayerType.Tile, name, [x], D.TileDescriptor(multiples))

    def reverse(self, x: Port, axes, name: str) -> Port:
        """numpy.flip(x, axes): ReverseV2, its axes a Signed32 Constant layer (which Arm NN 23.08
        reads as it is in files of the 23.08 target, serialize/layouts.py)."""
        axes = sorted({int(a) % x.info.rank for a in axes})
        if not axes:
            return x
        a = self.add(LayerType.Constant, f"{name}_axes", [],
                     tensors={"input": ConstTensor(np.asarray(axes, np.int32))})
        return self.add(LayerType.ReverseV2, name, [x, a])

    def lstm(self, ltype: LayerType, x: Port, h: Port, c: Port, tensors: dict, desc, name: str):
        """An Lstm layer (one step; outputs scratch, output state, cell state, output) or a
        UnidirectionalSequenceLstm (outputs output state, cell state, output sequence): the Layer,
        whose outputs the caller picks."""
        return self.g.add(ltype, name, [x, h, c], desc, tensors=tensors)
