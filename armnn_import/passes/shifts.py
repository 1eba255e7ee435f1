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
"""
from __future__ import annotations

import numpy as np

from ..ir import descriptors as D
from ..ir.graph import Graph, Layer, Port
from ..ir.types import ActivationFunction, ConstTensor, DataLayout, DataType, LayerType
from ..report import Report
from .cleanup import bn_affine, float_bn


def _pure_shift(layer: Layer) -> np.ndarray | None:
    """The per-channel shift of a float, 4-D, scale-1 BatchNormalization, or None."""
    if not float_bn(layer) or layer.outputs[0].rank != 4:
        return None
    a, b = bn_affine(layer)
    return b if np.all(a == 1.0) else None


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


def shifts_to_additions(graph: Graph, report: Report) -> int:
    shifts = [(l, b) for l in graph.layers if (b := _pure_shift(l)) is not None]
    if not shifts:
        return 0
    anchor = _anchor(graph)
    if anchor is None:
        return 0
    # one FullyConnected makes every shift, side by side on the channel axis of a 4-D
    # tensor per layout; each Addition reads its channels through a StridedSlice
    total = sum(b.size for _, b in shifts)
    values = np.concatenate([b for _, b in shifts]).astype(np.float32)
    fc = graph.add(LayerType.FullyConnected, "bias_shifts", [anchor], D.FullyConnectedDescriptor(True, False),
                   tensors={"weights": ConstTensor(np.zeros((1, total), np.float32)), "biases": ConstTensor(values)})
    tables = {}
    start = 0
    for bn, b in shifts:
        c, x, name, layout = b.size, bn.inputs[0], bn.name, bn.desc.data_layout
        axis = 1 if layout == DataLayout.NCHW else 3
        if layout not in tables:
            shape = [1, 1, 1, 1]
            shape[axis] = total
            tables[layout] = graph.add(LayerType.Reshape, f"bias_shifts_{layout.name.lower()}", [fc.out()],
                                       D.ReshapeDescriptor(tuple(shape))).out()
        begin, end = [0, 0, 0, 0], [1, 1, 1, 1]
        begin[axis], end[axis] = start, start + c
        graph.remove([bn])
        k = graph.add(LayerType.StridedSlice, f"{name}_shift", [tables[layout]],
                      D.StridedSliceDescriptor(begin=tuple(begin), end=tuple(end), stride=(1, 1, 1, 1)))
        add = graph.add(LayerType.Addition, name, [x, k.out()])
        graph.replace_uses(bn.out(), add.out())
        start += c
    report.decomposition("per-channel shift (convolution bias)", "Addition of a [1, C, 1, 1] constant "
                         "(FullyConnected with zero weights) instead of a BatchNormalization, which "
                         "Arm NN's CpuRef runs about 10x slower")
    return len(shifts)
