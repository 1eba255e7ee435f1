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
from .conv_layers import ConvolutionLayers
from .core import FLT_MAX, Unsupported, inverse_perm  # noqa: F401  (public here, where callers import them)
from .format_layers import FormatLayers


class NetBuilder(ConvolutionLayers, FormatLayers):
    """The layers of the IR as methods on Ports; convolutions and the richer formats' layers
    are in the base classes (conv_layers.py, format_layers.py)."""

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

    def fill_like(self, x: Port, value: float, name: str, quant=None) -> Port:
        """A tensor of x's shape filled with `value`, whatever x holds: BoundedReLu(a = b = value),
        std::min(value, std::max(value, x)), is value for every x, NaN and infinities included
        (std::max(v, NaN) is v). (Linear(a=0, b=value) would give NaN for an infinite x: 0 * inf.)"""
        return self.activation(x, AF.BoundedReLu, name, float(value), float(value), quant)

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
        scale, shift = _channels(scale, c), _channels(shift, c)
        if rank == 4 and channel_axis in (1, 3):
            y, layout = x, DataLayout.NCHW if channel_axis == 1 else DataLayout.NHWC
        else:  # fold the other axes so the channel is axis 1 of a 4-D NCHW tensor
            before = int(np.prod(shape[:channel_axis], dtype=np.int64))
            after = int(np.prod(shape[channel_axis + 1:], dtype=np.int64))
            y, layout = self.reshape(x, (before, c, after, 1), f"{name}_4d"), DataLayout.NCHW
        # (float32 arrays made here, each held by this layer alone: one ConstTensor table each)
        out = self.add(LayerType.BatchNormalization, name, [y], D.BatchNormalizationDescriptor(0.0, layout),
                       tensors={"mean": ConstTensor(np.zeros(c, np.float32)),
                                "variance": ConstTensor(np.ones(c, np.float32)), "beta": ConstTensor(shift),
                                "gamma": ConstTensor(scale)}, quant=quant)
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

    # -- embedding lookups and attention (Gather with an axis: 20.08 format; Cast, BatchMatMul: 23.08)
    def constant_layer(self, values, name: str) -> Port:
        """A constant as a Constant layer of shape [1, 1, rows, last] and a Reshape to its shape:
        the one form of Constant that Arm NN 23.08 reads right in files without featureVersions (it
        takes a Constant for depthwise weights and permutes it, which keeps this form's element order;
        ir/compat.py). In the 23.08 format (weightsLayoutScheme 1) it is one Constant of its own shape."""
        ct = values if isinstance(values, ConstTensor) else ConstTensor(np.ascontiguousarray(values))
        if self.target.at_least("23.08"):  # its files say weightsLayoutScheme 1: read as written
            return self.add(LayerType.Constant, name, [], tensors={"input": ct if ct.shape else ConstTensor(
                ct.data.reshape(1), ct.info.with_shape((1,)), ct.storage)})
        shape = ct.shape or (1,)
        last = shape[-1]
        four = (1, 1, ct.info.num_elements // last, last)
        c = self.add(LayerType.Constant, name, [], tensors={"input": ConstTensor(
            ct.data.reshape(four), ct.info.with_shape(four), ct.storage)})
        return self.add(LayerType.Reshape, f"{name}_shape", [c], D.ReshapeDescriptor(shape))


def _channels(v, c: int) -> np.ndarray:
    """v as a new float32 vector of c values (a single value repeated)."""
    a = np.asarray(v, np.float32).reshape(-1)
    return a.copy() if a.size == c else np.broadcast_to(a, (c,)).copy()


def _per_channel(c: np.ndarray, rank: int, axis: int):
    """c's values per channel if c varies only along `axis` of a rank-`rank` tensor."""
    axis %= rank
    full = c.reshape((1,) * (rank - c.ndim) + c.shape) if c.ndim <= rank else None
    if full is None:
        return None
    if any(n != 1 for i, n in enumerate(full.shape) if i != axis):
        return None
    return full.reshape(-1)


def through_float_exactly(info) -> bool:
    """Whether a tensor's values survive the float32 decode/encode of 23.08's Reduce, Tile and
    ReverseV2 workloads unchanged: float and quantized data do; Signed32 only within 2^24 (not
    known when converting), and those workloads have no Boolean."""
    return info.dtype in (DataType.Float32, DataType.Float16) or info.dtype.is_quantized
