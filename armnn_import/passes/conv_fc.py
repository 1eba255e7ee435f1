"""A convolution whose one window covers its whole input is a FullyConnected (every target).

Keras and TF-slim MobileNet v1 end in a global pooling (kept dims) -> a 1x1 Conv2D on the
[N, 1, 1, C] result -> a Reshape to [N, O]. A FullyConnected computes the same: Arm NN's
reference workloads (Convolve in ConvImpl.cpp, FullyConnected.cpp, 20.08 and 23.08) both
start each output at 0.0f, add weight * input over the input channels in increasing order,
then add the bias, all in float after the decoders (so quantized too: the same dequantized
terms, the same final rounding by the output encoder). Convolve sums c, then y, then x, for
either layout; the FullyConnected sums its input flattened as stored, so the two agree for
NCHW whatever the window (index c*H*W + y*W + x, weights OIHW flattened alike) and for NHWC
only where H = W = 1. The FullyConnected's loop is simpler, and its output is [N, O]
already: the Reshapes to [N, O] after it go.

Only where that adds no layer: the result (through Activations, which are elementwise, and
Permutes that move only axes of size 1) must be read by Reshapes (a Reshape to [N, O] goes,
another takes the 2-D input) and FullyConnecteds (which flatten their input) only; a reader
that needs the 4-D shape (a Multiplication in an SE block, a graph output) keeps the
convolution. In the 19.02 format a float convolution carries no bias (NetBuilder.conv2d):
its bias is the scale-1 BatchNormalization that follows it (before shifts_to_additions makes
it an Addition), whose x + beta the FullyConnected's bias adds bit for bit.

Quantized: CpuRef's FullyConnected wants weights of the input's type (RefLayerSupport::
IsFullyConnectedSupported, 20.08 and 23.08), so per-tensor QSymmS8 weights of a QAsymmS8
convolution become QAsymmS8 with offset 0 (the same values, scale * q); per-axis weights
keep their convolution (neither release runs a per-axis FullyConnected: lowering/perchannel.py).
"""
from __future__ import annotations

import numpy as np

from ..ir import descriptors as D
from ..ir.graph import Graph, Layer, Port
from ..ir.types import ConstTensor, DataLayout, DataType, LayerType, TensorInfo
from ..report import Report
from .cleanup import bn_affine, bypass, float_bn, single_consumer
from .layout import perm_of


def _window_covers_input(conv: Layer) -> bool:
    x, w, d = conv.inputs[0].info, conv.tensors["weights"].info, conv.desc
    if x.rank != 4 or w.rank != 4 or (d.pad_left, d.pad_right, d.pad_top, d.pad_bottom) != (0, 0, 0, 0):
        return False
    if d.data_layout == DataLayout.NHWC:  # (the FC would sum y, x, c; Convolve sums c, y, x)
        return x.shape[1:3] == (1, 1) and w.shape[1:3] == (1, 1)
    kh, kw = w.shape[2:]
    # a window of more than one tap covers the input only with dilation 1
    return (kh, kw) == x.shape[2:] and (kh == 1 or d.dilation_y == 1) and (kw == 1 or d.dilation_x == 1)


def _fc_weights(conv: Layer) -> ConstTensor | None:
    """The convolution's weights as [O, C*kH*kW] in the FullyConnected's reading order, or None."""
    t, x = conv.tensors["weights"], conv.inputs[0].info
    info = t.info
    if info.per_axis_quantized:
        return None
    dtype = info.dtype
    if dtype.is_quantized and dtype != x.dtype:
        if not (dtype == DataType.QSymmS8 and x.dtype == DataType.QAsymmS8 and info.offset == 0):
            return None
        dtype = DataType.QAsymmS8  # (CpuRef's FullyConnected wants the input's type; same values)
    arr = np.ascontiguousarray(t.data).reshape(info.shape[0], -1)
    return ConstTensor(arr, TensorInfo(arr.shape, dtype, info.scale, info.offset))


def _bias_shift(graph: Graph, conv: Layer) -> tuple[Layer, np.ndarray] | None:
    """19.02 format: the scale-1 float BatchNormalization that alone reads a bias-less
    convolution (its bias), with its shift; None otherwise."""
    if conv.desc.bias_enabled or conv.outputs[0].dtype != DataType.Float32 or not single_consumer(graph, conv):
        return None
    bn = graph.consumers(conv.out())[0][0]
    if not float_bn(bn) or bn.desc.data_layout != conv.desc.data_layout:
        return None
    a, b = bn_affine(bn)
    return (bn, b.astype(np.float32)) if np.all(a == 1.0) else None


def _unit_permute(layer: Layer) -> bool:
    x, y = layer.inputs[0].info, layer.outputs[0]
    kept = [a for a in perm_of(layer) if x.shape[a] != 1]
    return kept == sorted(kept) and (x.scale, x.offset) == (y.scale, y.offset)


def _flat_readers(graph: Graph, port: Port, found: list[Layer]) -> bool:
    """Whether every reader of `port` takes [N, O] for [N, 1, 1, O] at no extra layer; the
    Activations, Permutes and Reshapes on the way are appended to `found`, producers first."""
    users = graph.consumers(port)
    for u, i in users:
        if u.type == LayerType.FullyConnected and i == 0:
            continue
        if u.type == LayerType.Reshape:
            found.append(u)
            continue
        if u.type not in (LayerType.Activation, LayerType.Permute) or \
                (u.type == LayerType.Permute and not _unit_permute(u)):
            return False
        found.append(u)
        if not _flat_readers(graph, u.out(), found):
            return False
    return bool(users)


def _rewrite(graph: Graph, conv: Layer, weights: ConstTensor, bias: ConstTensor | None, last: Layer,
             found: list[Layer]) -> None:
    y = conv.outputs[0]
    fc = graph.add(LayerType.FullyConnected, f"{conv.name}_fc", [conv.inputs[0]],
                   D.FullyConnectedDescriptor(bias is not None, True),
                   tensors={"weights": weights, "biases": bias}, outputs=[y.with_shape((y.shape[0], weights.shape[0]))])
    graph.replace_uses(last.out(), fc.out())
    graph.remove([last] if last is conv else [last, conv])
    graph.rename(fc, conv.name)
    src = fc.inputs[0].layer  # (a 19.02 NHWC input's Permute to NCHW: the FC reads the same bytes)
    if src.type == LayerType.Permute and _unit_permute(src) and single_consumer(graph, src):
        bypass(graph, src)
    for layer in found:  # producers first: each sees its input's new [N, O] shape
        x = layer.inputs[0].info
        if layer.type == LayerType.Activation:
            layer.outputs = [layer.outputs[0].with_shape(x.shape)]
        elif layer.type == LayerType.Permute or layer.outputs[0] == x:
            bypass(graph, layer)


def convs_as_fully_connected(graph: Graph, report: Report) -> int:
    n = 0
    for conv in [l for l in graph.layers if l.type == LayerType.Convolution2d]:
        if not _window_covers_input(conv) or (weights := _fc_weights(conv)) is None:
            continue
        shift = _bias_shift(graph, conv)
        last = conv if shift is None else shift[0]
        found: list[Layer] = []
        if not _flat_readers(graph, last.out(), found):
            continue
        bias = conv.tensors.get("biases") if conv.desc.bias_enabled else None
        _rewrite(graph, conv, weights, ConstTensor(shift[1]) if shift is not None else bias, last, found)
        n += 1
    if n:
        report.decomposition("convolution whose window covers its whole input",
                             "a FullyConnected (the same sums in the same order; its [N, O] output needs no Reshape)")
    return n
