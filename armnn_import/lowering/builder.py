"""NetBuilder: exact lowerings onto the 32 Arm NN layers, shared by frontends.

Every method takes and returns Ports. `quant=(scale, offset)` sets the
output quantization of a QuantisedAsymm8 result where the inputs don't imply
it. Constants are folded into layers that carry them (Linear, BoundedReLu,
BatchNormalization, FullyConnected biases) so that files hold no Constant
layers, which Arm NN 21.08+ misreads in files without featureVersions.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import descriptors as D
from ..ir.graph import Graph, Port
from ..ir.types import ActivationFunction as AF
from ..ir.types import ConstTensor, DataLayout, DataType, LayerType
from ..report import Report

FLT_MAX = float(np.finfo(np.float32).max)


class Unsupported(Exception):
    """Raised by a converter when a node has no exact lowering; collected by
    the frontend into an UnsupportedModelError (never escapes the library)."""

    def __init__(self, reason: str, hint: str = "", code: str = "inexpressible"):
        super().__init__(reason)
        self.reason, self.hint, self.code = reason, hint, code  # code: errors.REASON_CODES


def inverse_perm(perm) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


class NetBuilder:
    def __init__(self, graph: Graph | None = None, report: Report | None = None):
        self.g = graph if graph is not None else Graph()
        self.report = report if report is not None else Report()

    @property
    def target(self):
        """The Arm NN release whose format the network is written in (armnn_import.target)."""
        return self.g.target

    def add(self, ltype, name, inputs, desc=None, **kw) -> Port:
        return self.g.add(ltype, name, inputs, desc, **kw).out()

    # -- shape and data movement -------------------------------------------
    def permute(self, x: Port, perm, name: str, quant=None) -> Port:
        """numpy.transpose(x, perm)."""
        perm = tuple(int(p) for p in perm)
        if perm == tuple(range(len(perm))):
            return x
        return self.add(LayerType.Permute, name, [x], D.PermuteDescriptor(inverse_perm(perm)), quant=quant)

    def reshape(self, x: Port, shape, name: str) -> Port:
        shape = tuple(int(d) for d in shape)
        if shape == x.info.shape:
            return x
        return self.add(LayerType.Reshape, name, [x], D.ReshapeDescriptor(shape))

    def concat(self, xs: list[Port], axis: int, name: str, quant=None) -> Port:
        if len(xs) == 1:
            return xs[0]
        rank = xs[0].info.rank
        axis %= rank
        origins, at = [], 0
        for x in xs:
            o = [0] * rank
            o[axis] = at
            origins.append(tuple(o))
            at += x.info.shape[axis]
        return self.add(LayerType.Merger, name, xs, D.OriginsDescriptor(axis, len(xs), rank, tuple(origins)),
                        quant=quant)

    def slice(self, x: Port, begin, end, stride, name: str) -> Port:
        """x[begin:end:stride] per axis with Python slice semantics (None = open)."""
        shape = x.info.shape
        b, e, s, end_mask = [], [], [], 0
        for axis, dim in enumerate(shape):
            start, stop, step = slice(begin[axis], end[axis], stride[axis]).indices(dim)
            b.append(start)
            s.append(step)
            if step < 0 and stop < 0:  # runs to index 0 inclusive: Arm NN would wrap -1
                end_mask |= 1 << axis
                e.append(0)
            else:
                e.append(stop)
        if all(st == 1 for st in s) and b == [0] * len(shape) and e == list(shape):
            return x
        if len(shape) > 4:  # Arm NN's StridedSlice takes at most 4-D: merge the axes it leaves alone
            return self._slice_merged(x, [slice(begin[a], end[a], stride[a]).indices(d)
                                          for a, d in enumerate(shape)], name)
        return self.add(LayerType.StridedSlice, name, [x],
                        D.StridedSliceDescriptor(tuple(b), tuple(e), tuple(s), end_mask=end_mask))

    def _slice_merged(self, x: Port, ranges, name: str) -> Port:
        """A slice of a tensor of more than 4 dimensions, exactly, on a reshaped view of at
        most 4: an axis that is kept whole merges into the axis before it (when that one has
        step 1, a range [b, e) of it becomes [b*n, e*n) of the merged axis), size-1 axes vanish.
        When that still leaves more than 4 axes, one sliced axis at a time (then at most 2-D)."""
        shape = x.info.shape
        out = tuple(len(range(*r)) for r in ranges)
        whole = [r == (0, d, 1) for r, d in zip(ranges, shape)]
        groups: list[list[int]] = []  # axes, the first of each possibly sliced, the others whole
        for a, d in enumerate(shape):
            if d == 1:
                continue
            head = groups[-1][0] if groups else None
            if groups and whole[a] and (ranges[head][2] == 1 or whole[head]):
                groups[-1].append(a)
            else:
                groups.append([a])
        if len(groups) > 4:
            y, sliced = x, [a for a in range(len(shape)) if not whole[a]]
            for i, a in enumerate(sliced):
                one = [(0, d, 1) for d in y.info.shape]
                one[a] = ranges[a]
                y = self._slice_merged(y, one, f"{name}_ax{a}" if i < len(sliced) - 1 else name)
            return y
        view, begin, end, stride = [], [], [], []
        for g in groups:
            n = math.prod(shape[a] for a in g[1:])
            start, stop, step = ranges[g[0]]
            view.append(shape[g[0]] * n)
            begin.append(start * n)
            end.append(None if stop < 0 else stop * n)  # (a negative stop runs to index 0 inclusive)
            stride.append(step)
        if not view:
            return self.reshape(x, out, name)
        y = self.slice(self.reshape(x, view, f"{name}_merged"), begin, end, stride, f"{name}_slice")
        return self.reshape(y, out, name)

    def take(self, x: Port, axis: int, start: int, stop: int, name: str, step: int = 1) -> Port:
        rank = x.info.rank
        axis %= rank
        begin, end, stride = [None] * rank, [None] * rank, [1] * rank
        begin[axis], end[axis], stride[axis] = start, stop, step
        return self.slice(x, begin, end, stride, name)

    def split(self, x: Port, axis: int, sizes, name: str) -> list[Port]:
        outs, at = [], 0
        for i, n in enumerate(sizes):
            outs.append(self.take(x, axis, at, at + int(n), f"{name}_{i}"))
            at += int(n)
        return outs

    def pad(self, x: Port, pads, name: str, value: float | None = None) -> Port:
        """Zero padding (the raw value 0, also for a quantized tensor); pads = [(before, after)]
        per axis. With `value` (the 20.08 format on; see pad_level): padding with that value."""
        flat = tuple(int(v) for p in pads for v in p)
        if not any(flat):
            return x
        if x.info.rank > 4:  # Arm NN's Pad takes at most 4-D: merge unpadded axes into the axis before
            return self._pad_merged(x, [(int(a), int(b)) for a, b in pads], name, value)
        if value is None:
            return self.add(LayerType.Pad, name, [x], D.PadDescriptor(flat))
        return self.add(LayerType.Pad, name, [x], D.PadDescriptor(flat, self.pad_level(x, value)))

    def pad_level(self, x: Port, value: float) -> float:
        """The PadDescriptor.padValue that pads x with `value`: CpuRef writes it encoded at
        scale 1, offset 0 (Pad.cpp), so a quantized tensor takes its level value/scale + offset,
        which must be an integer in the type's range (Unsupported otherwise)."""
        info = x.info
        if not info.dtype.is_quantized:
            return float(value)
        level = float(value) / info.scale + info.offset
        lo, hi = (-128, 127) if info.dtype != DataType.QuantisedAsymm8 else (0, 255)
        if abs(level - round(level)) > 1e-3 or not lo <= round(level) <= hi:
            raise Unsupported(f"a pad value {value:g} that the quantized tensor (scale {info.scale:g}, "
                              f"offset {info.offset}) cannot hold")
        return float(round(level))

    def mirror_pad(self, x: Port, pads, mode, name: str) -> Port:
        """Reflect or Symmetric padding as one Pad layer (the 23.08 format: MirrorPad.cpp)."""
        flat = tuple(int(v) for p in pads for v in p)
        if not any(flat):
            return x
        return self.add(LayerType.Pad, name, [x], D.PadDescriptor(flat, 0.0, D.PaddingMode(mode)))

    def _pad_merged(self, x: Port, pads, name: str, value: float | None = None) -> Port:
        """Zero padding of more than 4 dimensions on a view of at most 4: an unpadded axis
        merges into the axis before it (padding p rows of that axis pads p*n elements of
        the merged one), size-1 unpadded axes vanish."""
        shape = x.info.shape
        out = tuple(d + a + b for d, (a, b) in zip(shape, pads))
        groups: list[list[int]] = []
        for a, d in enumerate(shape):
            if not any(pads[a]) and d == 1:
                continue
            if groups and not any(pads[a]):
                groups[-1].append(a)
            else:
                groups.append([a])
        if len(groups) > 4:
            raise Unsupported(f"padding {sum(1 for p in pads if any(p))} axes of a {len(shape)}-D tensor "
                              "(Arm NN's Pad takes at most 4-D, and no merging of axes makes it so)")
        view = [math.prod(shape[a] for a in g) for g in groups]
        merged = [(pads[g[0]][0] * (v // shape[g[0]]), pads[g[0]][1] * (v // shape[g[0]]))
                  for g, v in zip(groups, view)]
        y = self.pad(self.reshape(x, view, f"{name}_merged"), merged, f"{name}_pad", value)
        return self.reshape(y, out, name)

    # -- activations and scalar arithmetic ----------------------------------
    def activation(self, x: Port, fn: AF, name: str, a: float = 0.0, b: float = 0.0, quant=None) -> Port:
        return self.add(LayerType.Activation, name, [x], D.ActivationDescriptor(fn, a, b), quant=quant)

    def linear(self, x: Port, a: float, b: float, name: str, quant=None) -> Port:
        """a*x + b."""
        return self.activation(x, AF.Linear, name, a, b, quant)

    def clamp(self, x: Port, lo: float, hi: float, name: str, quant=None) -> Port:
        """min(hi, max(lo, x)); infinite bounds allowed."""
        lo, hi = max(float(lo), -FLT_MAX), min(float(hi), FLT_MAX)
        if lo == 0.0 and hi == FLT_MAX:
            return self.activation(x, AF.ReLu, name, quant=quant)
        return self.activation(x, AF.BoundedReLu, name, hi, lo, quant)

    def fill_like(self, x: Port, value: float, name: str) -> Port:
        """A tensor of x's shape filled with `value`, made as Linear(a=0, b=value)
        (no Constant layer; NaN or inf in x propagate)."""
        return self.linear(x, 0.0, value, name)

    def constant(self, x: Port, values: np.ndarray, name: str) -> Port:
        """A float32 constant tensor without a Constant layer: one element of x
        through a FullyConnected with zero weights and the values as bias."""
        values = np.asarray(values, np.float32)
        one = self.slice(x, [0] * x.info.rank, [1] * x.info.rank, [1] * x.info.rank, f"{name}_pick")
        one = self.reshape(one, (1, 1), f"{name}_flat")
        fc = self.add(LayerType.FullyConnected, name, [one], D.FullyConnectedDescriptor(True, False),
                      tensors={"weights": ConstTensor(np.zeros((1, values.size), np.float32)),
                               "biases": ConstTensor(values.reshape(-1))})
        self.report.decomposition("constant", "FullyConnected with zero weights and the values as bias")
        return self.reshape(fc, values.shape or (1,), f"{name}_shape")

    # -- elementwise --------------------------------------------------------
    def _equal_rank(self, a: Port, b: Port, name: str) -> tuple[Port, Port]:
        ra, rb = a.info.rank, b.info.rank
        if ra < rb:
            a = self.reshape(a, (1,) * (rb - ra) + a.info.shape, f"{name}_rank_a")
        elif rb < ra:
            b = self.reshape(b, (1,) * (ra - rb) + b.info.shape, f"{name}_rank_b")
        return a, b

    def binary(self, ltype: LayerType, a: Port, b: Port, name: str, quant=None) -> Port:
        a, b = self._equal_rank(a, b, name)
        return self.add(ltype, name, [a, b], quant=quant)

    def binary_const(self, ltype: LayerType, x: Port, c, name: str, *, const_first: bool = False,
                     channel_axis: int | None = None, quant=None) -> Port:
        """x (op) c, or c (op) x when const_first, for a float constant c."""
        c = np.asarray(c, np.float32)
        shape = np.broadcast_shapes(x.info.shape, c.shape)
        if shape != x.info.shape and c.size == 1:
            raise Unsupported("constant operand broadcasts the input to a larger shape")
        uniform = c.size >= 1 and (c.size == 1 or bool(np.all(c == c.reshape(-1)[0])))
        if uniform and math.prod(shape) == x.info.num_elements:  # c adds at most leading 1s
            port = self._scalar_op(ltype, x, float(c.reshape(-1)[0]), name, const_first, quant)
            if port is not None:
                return self.reshape(port, shape, f"{name}_bcast") if port.info.shape != shape else port
        elif uniform:  # c widens x: keep only the axes x lacks (the binary layer broadcasts the rest)
            c = c.reshape((1,) * (len(shape) - c.ndim) + c.shape)
            xs = (1,) * (len(shape) - x.info.rank) + x.info.shape
            c = c[tuple(slice(None) if xd == 1 else slice(0, 1) for xd in xs)]
        if channel_axis is not None and ltype in (LayerType.Addition, LayerType.Subtraction,
                                                  LayerType.Multiplication) and shape == x.info.shape:
            per = _per_channel(c, x.info.rank, channel_axis)
            if per is not None:
                one = np.ones_like(per)
                if ltype == LayerType.Multiplication:
                    return self.batchnorm(x, per, np.zeros_like(per), channel_axis, name)
                if ltype == LayerType.Addition:
                    return self.batchnorm(x, one, per, channel_axis, name)
                return self.batchnorm(x, -one if const_first else one, per if const_first else -per,
                                      channel_axis, name)
        cport = self.constant(x, np.broadcast_to(c, np.broadcast_shapes(c.shape, (1,) * x.info.rank)).copy()
                              if c.ndim < x.info.rank else c, f"{name}_const")
        return self.binary(ltype, cport, x, name, quant) if const_first else self.binary(ltype, x, cport, name, quant)

    def _scalar_op(self, ltype, x, c, name, const_first, quant):
        T = LayerType
        if ltype == T.Addition:
            return self.linear(x, 1.0, c, name, quant)
        if ltype == T.Subtraction:
            return self.linear(x, -1.0, c, name, quant) if const_first else self.linear(x, 1.0, -c, name, quant)
        if ltype == T.Multiplication:
            return self.linear(x, c, 0.0, name, quant)
        if ltype == T.Division and not const_first and c != 0 and np.frexp(c)[0] in (0.5, -0.5):
            return self.linear(x, 1.0 / c, 0.0, name, quant)  # power of two: exact
        if ltype == T.Maximum:
            return self.clamp(x, c, np.inf, name, quant)
        if ltype == T.Minimum:
            return self.clamp(x, -np.inf, c, name, quant)
        if ltype in (T.Division, T.Equal, T.Greater):
            if x.info.dtype != DataType.Float32:
                return None
            k = self.fill_like(x, c, f"{name}_const")
            return self.binary(ltype, k, x, name, quant) if const_first else self.binary(ltype, x, k, name, quant)
        return None

    # -- normalization ------------------------------------------------------
    def batchnorm(self, x: Port, scale, shift, channel_axis: int, name: str, quant=None) -> Port:
        """x * scale + shift per channel, as BatchNormalization(mean 0, var 1, eps 0)."""
        shape, rank = x.info.shape, x.info.rank
        channel_axis %= rank
        c = shape[channel_axis]
        scale = np.broadcast_to(np.asarray(scale, np.float32).reshape(-1), (c,)).copy()
        shift = np.broadcast_to(np.asarray(shift, np.float32).reshape(-1), (c,)).copy()
        if rank == 4 and channel_axis in (1, 3):
            y, layout = x, DataLayout.NCHW if channel_axis == 1 else DataLayout.NHWC
        else:  # fold the other axes so the channel is axis 1 of a 4-D NCHW tensor
            before = int(np.prod(shape[:channel_axis], dtype=np.int64))
            after = int(np.prod(shape[channel_axis + 1:], dtype=np.int64))
            y, layout = self.reshape(x, (before, c, after, 1), f"{name}_4d"), DataLayout.NCHW
        f = lambda v: ConstTensor(v.astype(np.float32))  # noqa: E731
        out = self.add(LayerType.BatchNormalization, name, [y], D.BatchNormalizationDescriptor(0.0, layout),
                       tensors={"mean": f(np.zeros(c)), "variance": f(np.ones(c)), "beta": f(shift),
                                "gamma": f(scale)}, quant=quant)
        return self.reshape(out, shape, f"{name}_back")

    def mean(self, x: Port, axes, keep_dims: bool, name: str, quant=None) -> Port:
        axes = tuple(sorted(int(a) % x.info.rank for a in axes))
        return self.add(LayerType.Mean, name, [x], D.MeanDescriptor(axes, keep_dims), quant=quant)

    def softmax(self, x: Port, axis: int, beta: float, name: str, quant=None) -> Port:
        rank = x.info.rank
        axis %= rank
        if axis == rank - 1:
            return self.add(LayerType.Softmax, name, [x], D.SoftmaxDescriptor(beta), quant=quant)
        if self.target.at_least("23.08"):  # SoftmaxDescriptor.axis (Softmax.cpp, any axis)
            return self.add(LayerType.Softmax, name, [x], D.SoftmaxDescriptor(beta, axis), quant=quant)
        perm = list(range(rank))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        y = self.permute(x, perm, f"{name}_to_last")
        y = self.add(LayerType.Softmax, name, [y], D.SoftmaxDescriptor(beta), quant=quant)
        self.report.decomposition("softmax", "Permute the axis last, Softmax, Permute back")
        return self.permute(y, perm, f"{name}_back")

    # -- matrix and convolution ---------------------------------------------
    def fully_connected(self, x: Port, weights, bias, name: str, quant=None) -> Port:
        """y = x2d @ weights.T + bias, weights [O, I]; x is flattened to [x.shape[0], I]."""
        w = weights if isinstance(weights, ConstTensor) else ConstTensor(np.asarray(weights, np.float32))
        b = None if bias is None else bias if isinstance(bias, ConstTensor) else \
            ConstTensor(np.asarray(bias, np.float32))
        return self.add(LayerType.FullyConnected, name, [x], D.FullyConnectedDescriptor(b is not None, True),
                        tensors={"weights": w, "biases": b}, quant=quant)

    def conv2d(self, x: Port, w_oihw, bias, name: str, *, strides=(1, 1), pads=(0, 0, 0, 0),
               dilations=(1, 1), groups: int = 1, layout: DataLayout = DataLayout.NCHW,
               quant=None, weight_info=None) -> Port:
        """2-D convolution with weights in OIHW order (numpy float32, or uint8
        with `weight_info` for quantized weights); bias float32 (or a Signed32
        ConstTensor). pads = (top, left, bottom, right).

        Arm NN reads the descriptor slots of biasEnabled/dataLayout in this
        schema as dilations, so the convolution itself is always NCHW without
        bias: an NHWC input is permuted around it (the layout pass cancels
        these Permutes) and the bias is a following BatchNormalization.
        From the 20.08 format on, the layer itself has them (conv2d_direct)."""
        if self.g.target.at_least("20.08"):
            return self.conv2d_direct(x, w_oihw, bias, name, strides=strides, pads=pads, dilations=dilations,
                                      groups=groups, layout=layout, quant=quant, weight_info=weight_info)
        if layout == DataLayout.NHWC:
            y = self.permute(x, (0, 3, 1, 2), f"{name}_to_nchw")
            y = self.conv2d(y, w_oihw, bias, name, strides=strides, pads=pads, dilations=dilations,
                            groups=groups, quant=quant, weight_info=weight_info)
            return self.permute(y, (0, 2, 3, 1), f"{name}_to_nhwc")
        w = np.asarray(w_oihw)
        # a kernel axis of size 1 reads one tap whatever its dilation
        dilations = tuple(1 if k == 1 else int(d) for k, d in zip(w.shape[2:], dilations))
        if dilations != (1, 1):
            y = self._dilated_conv(x, w, name, strides, pads, dilations, groups, quant, weight_info)
        else:
            y = self._conv_nchw(x, w, name, strides, pads, groups, quant, weight_info)
        if bias is None:
            return y
        if isinstance(bias, ConstTensor):
            bias = bias.data.astype(np.float64) * bias.info.scale if bias.info.dtype == DataType.Signed32 \
                else bias.data
        # float: the shifts_to_additions pass makes this an Addition (CpuRef runs it faster)
        self.report.decomposition("convolution bias", "a BatchNormalization (mean 0, variance 1, gamma 1) "
                                  "after the convolution")
        return self.batchnorm(y, np.ones(w.shape[0]), np.asarray(bias, np.float32), 1, f"{name}_bias", quant=quant)

    def conv2d_direct(self, x: Port, w_oihw, bias, name: str, *, strides=(1, 1), pads=(0, 0, 0, 0),
                      dilations=(1, 1), groups: int = 1, layout: DataLayout = DataLayout.NCHW,
                      quant=None, weight_info=None) -> Port:
        """conv2d as one layer with its bias, dilation and layout (the 20.08 format on).
        Weights: OIHW for NCHW and OHWI for NHWC; depthwise [M, C, kH, kW] in both
        (20.08's layout, which 23.08 reads with weightsLayoutScheme 0). A quantized
        convolution's bias is Signed32 at input scale x weight scale, as Arm NN wants."""
        w = np.asarray(w_oihw)
        cax = 3 if layout == DataLayout.NHWC else 1
        cin, cout = x.info.shape[cax], w.shape[0]
        dilations = tuple(1 if k == 1 else int(d) for k, d in zip(w.shape[2:], dilations))
        if groups not in (1, cin) or (groups == cin and w.shape[1] != 1):
            self.report.decomposition("grouped convolution", "StridedSlice per group, Convolution2d, Merger")
            gi, go = cin // groups, cout // groups
            b = None if bias is None else self._bias_values(bias)
            outs = [self.conv2d_direct(self.take(x, cax, k * gi, (k + 1) * gi, f"{name}_in{k}"),
                                       w[k * go:(k + 1) * go], None if b is None else b[k * go:(k + 1) * go],
                                       f"{name}_g{k}", strides=strides, pads=pads, dilations=dilations,
                                       layout=layout, quant=quant, weight_info=weight_info)
                    for k in range(groups)]
            return self.concat(outs, cax, name, quant=quant)
        desc = dict(pad_left=pads[1], pad_right=pads[3], pad_top=pads[0], pad_bottom=pads[2],
                    stride_x=strides[1], stride_y=strides[0], dilation_x=dilations[1], dilation_y=dilations[0],
                    bias_enabled=bias is not None, data_layout=layout)
        if groups == 1:
            ltype, D_ = LayerType.Convolution2d, D.Convolution2dDescriptor
            arr = w if layout == DataLayout.NCHW else w.transpose(0, 2, 3, 1)
        else:  # output channel c*M + m -> weights [M, C, kH, kW]
            ltype, D_ = LayerType.DepthwiseConvolution2d, D.DepthwiseConvolution2dDescriptor
            arr = w.reshape(cin, cout // cin, *w.shape[2:]).transpose(1, 0, 2, 3)
        tensors = {"weights": ConstTensor(np.asarray(arr, np.float32)) if weight_info is None
                   else ConstTensor(np.asarray(arr), weight_info.with_shape(arr.shape))}
        if bias is not None:
            tensors["biases"] = self._conv_bias(bias, x, weight_info)
        return self.add(ltype, name, [x], D_(**desc), tensors=tensors, quant=quant)

    @staticmethod
    def _bias_values(bias) -> np.ndarray:
        if isinstance(bias, ConstTensor):
            return bias.data.astype(np.float64) * bias.info.scale if bias.info.dtype == DataType.Signed32 \
                else bias.data
        return np.asarray(bias, np.float32).reshape(-1)

    def _conv_bias(self, bias, x: Port, weight_info) -> ConstTensor:
        if weight_info is None:
            return ConstTensor(np.asarray(self._bias_values(bias), np.float32).reshape(-1))
        scale = float(np.float32(x.info.scale) * np.float32(weight_info.scale))
        if isinstance(bias, ConstTensor) and bias.info.dtype == DataType.Signed32 \
                and np.float32(bias.info.scale) == np.float32(scale):
            return bias
        from .quant import bias_int32
        return bias_int32(np.asarray(self._bias_values(bias), np.float64), scale)

    def _conv_nchw(self, x, w, name, strides, pads, groups, quant, weight_info) -> Port:
        cin, cout = x.info.shape[1], w.shape[0]
        desc = dict(pad_left=pads[1], pad_right=pads[3], pad_top=pads[0], pad_bottom=pads[2],
                    stride_x=strides[1], stride_y=strides[0])

        def tensor(arr):
            # no copy here: a transposed view is copied once, by the writer (see ConstTensor)
            if weight_info is None:
                return ConstTensor(np.asarray(arr, np.float32))
            return ConstTensor(np.asarray(arr), weight_info.with_shape(arr.shape))

        if groups == 1:
            return self.add(LayerType.Convolution2d, name, [x], D.Convolution2dDescriptor(**desc),
                            tensors={"weights": tensor(w)}, quant=quant)
        if groups == cin and cout % cin == 0 and w.shape[1] == 1:
            m = cout // cin  # output channel c*M + m -> weights [M, C, kH, kW]
            arr = w.reshape(cin, m, *w.shape[2:]).transpose(1, 0, 2, 3)
            return self.add(LayerType.DepthwiseConvolution2d, name, [x],
                            D.DepthwiseConvolution2dDescriptor(**desc), tensors={"weights": tensor(arr)}, quant=quant)
        # general groups: one convolution per group, joined on the channel axis
        self.report.decomposition("grouped convolution", "StridedSlice per group, Convolution2d, Merger")
        gi, go = cin // groups, cout // groups
        outs = [self._conv_nchw(self.take(x, 1, k * gi, (k + 1) * gi, f"{name}_in{k}"), w[k * go:(k + 1) * go],
                                f"{name}_g{k}", strides, pads, 1, quant, weight_info) for k in range(groups)]
        return self.concat(outs, 1, name, quant=quant)

    def _dilated_conv(self, x, w, name, strides, pads, dilations, groups, quant, weight_info):
        """SpaceToBatchNd -> convolution -> BatchToSpaceNd (as TensorFlow does);
        a stride is applied afterwards by a StridedSlice, which is exact."""
        self.report.decomposition("dilated convolution", "SpaceToBatchNd, convolution, BatchToSpaceNd")
        dy, dx = dilations
        h, wd = x.info.shape[2], x.info.shape[3]
        kh, kw = w.shape[2], w.shape[3]
        pt, pl, pb, pr = pads
        if (h + pt + pb - dy * (kh - 1)) <= 0 or (wd + pl + pr - dx * (kw - 1)) <= 0:
            raise Unsupported("dilated kernel larger than the padded input")
        eh, ew = (-(h + pt + pb)) % dy, (-(wd + pl + pr)) % dx
        layout = DataLayout.NCHW
        s2b = self.add(LayerType.SpaceToBatchNd, f"{name}_s2b", [x],
                       D.SpaceToBatchNdDescriptor((dy, dx), (pt, pb + eh, pl, pr + ew), layout))
        y = self._conv_nchw(s2b, w, f"{name}_conv", (1, 1), (0, 0, 0, 0), groups, quant, weight_info)
        y = self.add(LayerType.BatchToSpaceNd, f"{name}_b2s", [y],
                     D.BatchToSpaceNdDescriptor((dy, dx), (0, eh, 0, ew), layout))
        if tuple(strides) != (1, 1):
            y = self.slice(y, [None] * 4, [None] * 4, [1, 1, strides[0], strides[1]], f"{name}_stride")
        return y

    # -- layers of the richer formats (callers check self.target first) ------------
    def arg_min_max(self, x: Port, axis: int, function, name: str) -> Port:
        """The index (Signed32) of the first smallest or largest value along `axis`."""
        return self.add(LayerType.ArgMinMax, name, [x], D.ArgMinMaxDescriptor(function, axis % x.info.rank))

    def log_softmax(self, x: Port, axis: int, name: str, beta: float = 1.0) -> Port:
        return self.add(LayerType.LogSoftmax, name, [x], D.LogSoftmaxDescriptor(beta, axis % x.info.rank))

    def unary(self, x: Port, op, name: str, quant=None) -> Port:
        return self.add(LayerType.ElementwiseUnary, name, [x], D.ElementwiseUnaryDescriptor(op), quant=quant)

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

    # -- embedding lookups and attention (Gather with an axis: 20.08 format; Cast, BatchMatMul: 23.08)
    def constant_layer(self, values, name: str) -> Port:
        """A constant as a Constant layer of shape [1, 1, rows, last] and a Reshape to its shape:
        the one form of Constant that Arm NN 23.08 reads right in files of every target (it takes
        a Constant for depthwise weights and permutes it, which keeps this form's element order;
        ir/compat.py). For the rich targets' layers that take a run-time input only (Gather)."""
        ct = values if isinstance(values, ConstTensor) else ConstTensor(np.ascontiguousarray(values))
        shape = ct.shape or (1,)
        last = shape[-1]
        four = (1, 1, ct.info.num_elements // last, last)
        c = self.add(LayerType.Constant, name, [], tensors={"input": ConstTensor(
            ct.data.reshape(four), ct.info.with_shape(four), ct.storage)})
        return self.add(LayerType.Reshape, f"{name}_shape", [c], D.ReshapeDescriptor(shape))

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


def _per_channel(c: np.ndarray, rank: int, axis: int):
    """c's values per channel if c varies only along `axis` of a rank-`rank` tensor."""
    axis %= rank
    full = c.reshape((1,) * (rank - c.ndim) + c.shape) if c.ndim <= rank else None
    if full is None:
        return None
    if any(n != 1 for i, n in enumerate(full.shape) if i != axis):
        return None
    return full.reshape(-1)


def _lstm(self, ltype: LayerType, x: Port, h: Port, c: Port, tensors: dict, desc, name: str):
    """An Lstm layer (one step; outputs scratch, output state, cell state, output) or a
    UnidirectionalSequenceLstm (outputs output state, cell state, output sequence): the Layer,
    whose outputs the caller picks. (Defined here, after the class, to keep its body unchanged.)"""
    return self.g.add(ltype, name, [x, h, c], desc, tensors=tensors)


NetBuilder.lstm = _lstm


def _conv3d(self, x: Port, w_oidhw, bias, name: str, *, strides=(1, 1, 1), pads=(0,) * 6, dilations=(1, 1, 1),
            layout: DataLayout = DataLayout.NCDHW) -> Port:
    """A dense 3-D convolution (the 23.08 format). w_oidhw [O, I, kD, kH, kW]; strides and dilations
    (d, h, w); pads (front, top, left, back, bottom, right). The 23.08 layer takes its weights
    [kD, kH, kW, I, O] and bias as input tensors: made here from x by FullyConnected layers
    (`constant`: no Constant layer, which 23.08 misreads in files of weightsLayoutScheme 0)."""
    w = np.ascontiguousarray(np.asarray(w_oidhw, np.float32).transpose(2, 3, 4, 1, 0))
    ins = [x, self.constant(x, w, f"{name}_weights")]
    if bias is not None:
        ins.append(self.constant(x, np.asarray(bias, np.float32).reshape(-1), f"{name}_bias"))
    d = D.Convolution3dDescriptor(pads[2], pads[5], pads[1], pads[4], pads[0], pads[3],
                                  strides[2], strides[1], strides[0], dilations[2], dilations[1], dilations[0],
                                  bias is not None, layout)
    return self.add(LayerType.Convolution3d, name, ins, d)


def _pool3d(self, x: Port, algo, kernel, name: str, *, strides=(1, 1, 1), pads=(0,) * 6,
            layout: DataLayout = DataLayout.NCDHW, ceil: bool = False, exclude_pad: bool = True) -> Port:
    """3-D pooling (the 23.08 format): kernel and strides (d, h, w); pads (front, top, left, back,
    bottom, right); exclude_pad: padding not counted in averages."""
    d = D.Pooling3dDescriptor(algo, pads[2], pads[5], pads[1], pads[4], pads[0], pads[3],
                              kernel[2], kernel[1], kernel[0], strides[2], strides[1], strides[0],
                              D.OutputShapeRounding.Ceiling if ceil else D.OutputShapeRounding.Floor,
                              D.PaddingMethod.Exclude if exclude_pad else D.PaddingMethod.IgnoreValue, layout)
    return self.add(LayerType.Pooling3d, name, [x], d)


NetBuilder.conv3d, NetBuilder.pool3d = _conv3d, _pool3d


def through_float_exactly(info) -> bool:
    """Whether a tensor's values survive the float32 decode/encode of 23.08's Reduce, Tile and
    ReverseV2 workloads unchanged: float and quantized data do; Signed32 only within 2^24 (not
    known when converting), and those workloads have no Boolean."""
    return info.dtype in (DataType.Float32, DataType.Float16) or info.dtype.is_quantized
