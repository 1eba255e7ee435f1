"""Per-channel shifts (a convolution's bias) as an Addition instead of a BatchNormalization.

This format's convolutions carry no bias (NetBuilder.conv2d), so a bias is a
BatchNormalization with scale 1 after the convolution, and the BatchNormalization
passes fold a model's own normalization into the same layer. Arm NN 20.08's CpuRef
runs BatchNormalization at about 110 ns an element, more than half the cost of a
3x3 depthwise convolution, while an Addition with a broadcast [1, C, 1, 1]
operand costs under 10 ns (benchmarks/layer_costs.py). So each pure shift becomes
    x + StridedSlice(all shifts)
where all the network's shifts are made once, side by side, by a FullyConnected with
zero weights and the shifts as its bias, fed by one element of a float network input
clamped to 0 by BoundedReLu(0, 0): the constants are exact even when that input holds
NaN or infinity, and the file has no Constant layer.
The sums are the ones BatchNormalization computes (x * 1 + beta), bit for bit.

That form is for the 19.02 format, which has no Constant layer. From the 20.08 format on each
shift is x + Constant, and a shift that NetBuilder.batchnorm made 4-D by a Reshape (a recurrent
gate's bias on [1, 4H], a LayerNorm's beta) is added on the tensor's own rank: neither Reshape is
written, and the broadcast walks fewer inner loops. Equal shifts read one Constant (a
bidirectional LSTM's time steps share their gate bias: 8 steps, 2 Constants).

"""
from __future__ import annotations

import numpy as np

from ..ir import descriptors as D
from ..ir.graph import Graph, Layer, Port
from ..ir.types import ActivationFunction, ConstTensor, DataLayout, DataType, LayerType
from ..lowering.builder import NetBuilder
from ..report import Report
from .cleanup import bn_affine, float_bn


def _pure_shift(layer: Layer) -> np.ndarray | None:
    """The per-channel shift of a float, 4-D, scale-1 BatchNormalization, or None."""
    if not float_bn(layer) or layer.outputs[0].rank != 4:
        return None
    a, b = bn_affine(layer)
    return b if np.all(a == 1.0) else None


def _scale_shift(layer: Layer) -> tuple[None, np.ndarray] | None:
    """(None, shift) of a float 4-D pure-shift BatchNormalization this pass rewrites.
    (A scaled one stays a BatchNormalization on every target: as Multiplication + Addition it
    runs faster on CpuRef but takes more layers than the 19.02 network, and a richer target
    never writes a larger network.)"""
    b = _pure_shift(layer)
    return None if b is None else (None, b)


def _anchor(graph: Graph) -> Port | None:
    """[1, 1], always 0: one element of the first float input through BoundedReLu(0, 0)."""
    src = next((l for l in graph.input_layers if l.outputs[0].dtype == DataType.Float32), None)
    if src is None:
        return None
    r, x = src.outputs[0].rank, src.out()
    if r > 4:  # Arm NN's StridedSlice takes at most 4-D
        x, r = graph.add(LayerType.Reshape, "bias_anchor_1d", [x], D.ReshapeDescriptor((x.info.num_elements,))).out(), 1
    pick = graph.add(LayerType.StridedSlice, "bias_anchor_pick", [x],
                     D.StridedSliceDescriptor(begin=(0,) * r, end=(1,) * r, stride=(1,) * r))
    flat = graph.add(LayerType.Reshape, "bias_anchor_flat", [pick.out()], D.ReshapeDescriptor((1, 1)))
    zero = graph.add(LayerType.Activation, "bias_anchor", [flat.out()],
                     D.ActivationDescriptor(ActivationFunction.BoundedReLu, 0.0, 0.0))
    return zero.out()


def _own_rank(graph: Graph, bn: Layer) -> tuple[Port, tuple[int, ...], list[Layer]] | None:
    """(x, the shift's shape on x's rank, the Reshapes that read bn) when bn reads NetBuilder.batchnorm's
    Reshape of x to (before, C, after, 1) and only Reshapes read bn: x + shift needs neither Reshape."""
    r, users = bn.inputs[0].layer, [u for u, _ in graph.consumers(bn.out())]
    if r.type != LayerType.Reshape or bn.desc.data_layout != DataLayout.NCHW or \
            not users or any(u.type != LayerType.Reshape for u in users):
        return None
    x = r.inputs[0]
    (before, c, _, one), s = bn.inputs[0].info.shape, x.info.shape
    for a in range(len(s)):  # the axis of x that holds the channels
        if one == 1 and s[a] == c and int(np.prod(s[:a], dtype=np.int64)) == before:
            return x, tuple(c if i == a else 1 for i in range(len(s))), users
    return None


def _constant_shifts(graph: Graph, shifts, report: Report) -> int:
    """The 20.08 format on: x + Constant, on x's own rank where a Reshape made x 4-D; one Constant
    (23.08 format) or NetBuilder.constant_layer (Constant + Reshape, 20.08 format) per distinct shift."""
    nb, made = NetBuilder(graph, report), {}
    for bn, (_, b) in shifts:
        own = _own_rank(graph, bn)
        if own is None:
            x, users = bn.inputs[0], None
            shape = (1, b.size, 1, 1) if bn.desc.data_layout == DataLayout.NCHW else (1, 1, 1, b.size)
        else:
            x, shape, users = own
        values = b.astype(np.float32).reshape(shape)
        key = (shape, values.tobytes())
        if key not in made:
            made[key] = (nb.add(LayerType.Constant, f"{bn.name}_shift", [], tensors={"input": ConstTensor(values)})
                         if graph.target.at_least("23.08") else nb.constant_layer(values, f"{bn.name}_shift"))
        graph.remove([bn])
        # (x * 1 + shift, the BatchNormalization's sum, is x + shift bit for bit)
        y = graph.add(LayerType.Addition, bn.name, [x, made[key]], outputs=[x.info]).out()
        if users is None:
            graph.replace_uses(bn.out(), y)
            continue
        for u in users:  # a Reshape back to x's shape goes; another reads the sum (a Reshape of it)
            if u.outputs[0].shape == x.info.shape:
                graph.replace_uses(u.out(), y)
                graph.remove([u])
            else:
                graph.set_input(u, 0, y)
    report.decomposition("per-channel shift (bias)", "Addition of a Constant instead of a BatchNormalization, "
                         "which Arm NN's CpuRef runs about 10x slower")
    return len(shifts)


def shifts_to_additions(graph: Graph, report: Report) -> int:
    bn = LayerType.BatchNormalization  # (the type first: nearly every layer is none)
    shifts = [(l, ab) for l in graph.layers if l.type == bn and (ab := _scale_shift(l)) is not None]
    if not shifts:
        return 0
    if graph.target.at_least("20.08"):
        return _constant_shifts(graph, shifts, report)
    anchor = _anchor(graph)
    if anchor is None:
        return 0
    # one FullyConnected makes every scale and shift, side by side on the channel axis of a
    # 4-D tensor per layout; each Multiplication / Addition reads its channels through a StridedSlice
    parts = [v for _, ab in shifts for v in ab if v is not None]
    total = sum(v.size for v in parts)
    values = np.concatenate(parts).astype(np.float32)
    fc = graph.add(LayerType.FullyConnected, "bias_shifts", [anchor], D.FullyConnectedDescriptor(True, False),
                   tensors={"weights": ConstTensor(np.zeros((1, total), np.float32)), "biases": ConstTensor(values)})
    tables = {}
    start = 0

    def take(layout, c, name):
        nonlocal start
        axis = 1 if layout == DataLayout.NCHW else 3
        if layout not in tables:
            shape = [1, 1, 1, 1]
            shape[axis] = total
            tables[layout] = graph.add(LayerType.Reshape, f"bias_shifts_{layout.name.lower()}", [fc.out()],
                                       D.ReshapeDescriptor(tuple(shape))).out()
        begin, end = [0, 0, 0, 0], [1, 1, 1, 1]
        begin[axis], end[axis] = start, start + c
        start += c
        table = tables[layout]
        # (the output infer_outputs gives this slice of the table, without working it out per layer)
        return graph.add(LayerType.StridedSlice, name, [table],
                         D.StridedSliceDescriptor(begin=tuple(begin), end=tuple(end), stride=(1, 1, 1, 1)),
                         outputs=[table.info.with_shape(tuple(e - b for b, e in zip(begin, end)))]).out()
    for bn, (a, b) in shifts:
        y, name, layout = bn.inputs[0], bn.name, bn.desc.data_layout
        graph.remove([bn])
        if a is not None:
            k = take(layout, a.size, f"{name}_scale")
            y = graph.add(LayerType.Multiplication, name if b is None else f"{name}_mul", [y, k]).out()
        if b is not None:
            k = take(layout, b.size, f"{name}_shift")
            axis = 1 if layout == DataLayout.NCHW else 3
            # y + k has y's info when k ([1, C, 1, 1] or [1, 1, 1, C]) has y's channels (infer_outputs'
            # broadcast); otherwise infer_outputs works it out (and reports what does not fit)
            same = y.info.rank == 4 and y.info.shape[axis] == b.size and a is None
            y = graph.add(LayerType.Addition, name, [y, k], outputs=[y.info] if same else None).out()
        graph.replace_uses(bn.out(), y)
    report.decomposition("per-channel shift (convolution bias)", "Addition of a [1, C, 1, 1] constant "
                         "(FullyConnected with zero weights) instead of a BatchNormalization, which "
                         "Arm NN's CpuRef runs about 10x slower")
    return len(shifts)
