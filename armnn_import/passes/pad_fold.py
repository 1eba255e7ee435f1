"""Zero Pad layers folded into the convolutions and poolings that read them (every target).

Keras' ZeroPadding2D and tf2onnx give an explicit PAD before a VALID convolution or pooling.
As its own layer it is a whole extra pass over the padded tensor; the consumer's own padding
gives the same numbers, exactly (Arm NN's reference workloads, 20.08 and 23.08 alike):

- Convolution2d / DepthwiseConvolution2d (ConvImpl.cpp): a position in the padding reads
  inputValue = 0.0f in the decoded (real) domain and still adds filter * 0.0f to the sum, in the
  same order as over the padded tensor. A Pad filling real zero (float +0.0; quantized: the raw
  fill, Pad.cpp's pad value encoded at scale 1 offset 0, equal to the zero point) decodes to the
  same +0.0f, so the folded convolution computes the same products and sums bit for bit.
- Max Pooling2d (Pooling2d.cpp): padded positions are left out of the max. Where the Pad's input
  is >= 0 (a ReLU, a BoundedReLu with a lower bound >= 0, a Sigmoid; NaN aside; a quantized
  tensor whose zero point is its lowest level, as a fused ReLU's output is) the zeros never
  win, so max(x and zeros) == max(x). Every pad must be smaller than the window: a window wholly
  in the bottom/right padding reads no input and gives the initial -FLT_MAX (OnPaddingOnly
  tests the clamped range), where the Pad's zeros give 0.
- Average Pooling2d with no padding of its own: PaddingMethod IgnoreValue divides by the whole
  window (height * width, taken before clamping to the input) and sums the real positions, from
  +0.0; the Pad's zeros added +0.0 to that sum, which leaves every float unchanged.

Pools keep Floor rounding only (a Ceiling window may start past the padded edge). A Pad read
through one Permute (19.02: an NHWC model's Pad, then the Permute to the NCHW convolution)
folds too, its pads permuted; the Permute then reads the unpadded tensor.

Each reader is judged on its own: the readers that qualify take the pads and read the Pad's
input, the others keep reading the Pad (a Pad read by a convolution and an Addition: the
convolution folds, the Addition keeps the Pad), which goes once nothing reads it.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.graph import Graph, Layer
from ..ir.shapes import infer_outputs
from ..ir.types import ActivationFunction, DataLayout, LayerType, PaddingMethod, PoolingAlgorithm
from ..ir.types import OutputShapeRounding
from ..report import Report

_CONVS = (LayerType.Convolution2d, LayerType.DepthwiseConvolution2d)
_SPATIAL = {DataLayout.NCHW: (2, 3), DataLayout.NHWC: (1, 2)}


def fills_real_zero(pad: Layer) -> bool:
    """A constant Pad whose fill decodes to +0.0 (float) or is the zero point (quantized)."""
    d, info = pad.desc, pad.outputs[0]
    if getattr(d, "padding_mode", 0) != 0 or info != pad.inputs[0].info.with_shape(info.shape):
        return False
    if info.dtype.is_quantized:
        return info.scales is None and d.pad_value == info.offset
    return d.pad_value == 0.0 and not math.copysign(1.0, d.pad_value) < 0


def _non_negative(pad: Layer) -> bool:
    info, src = pad.inputs[0].info, pad.inputs[0].layer
    if info.dtype.is_quantized and info.scales is None \
            and info.offset == int(np.iinfo(info.dtype.np_dtype).min):  # its zero point is its lowest level
        return True
    if src.type != LayerType.Activation:
        return False
    f = src.desc.function
    return f in (ActivationFunction.ReLu, ActivationFunction.Sigmoid) or (
        f == ActivationFunction.BoundedReLu and src.desc.b >= 0)


def _spatial_pads(pairs: list, layout) -> tuple | None:
    """(top, bottom, left, right) where only the layout's two spatial dims are padded."""
    dims = _SPATIAL.get(layout)
    if dims is None or any(any(p) for i, p in enumerate(pairs) if i not in dims):
        return None
    (t, b), (l, r) = pairs[dims[0]], pairs[dims[1]]
    return t, b, l, r


def _foldable(consumer: Layer, pairs: list, pad: Layer) -> tuple | None:
    """The pads to add to `consumer`, or None where folding would not be exact."""
    d = consumer.desc
    p = _spatial_pads(pairs, d.data_layout) if consumer.type in _CONVS + (LayerType.Pooling2d,) else None
    if p is None or consumer.type in _CONVS:
        return p
    t, b, l, r = (p[0] + d.pad_top, p[1] + d.pad_bottom, p[2] + d.pad_left, p[3] + d.pad_right)
    if max(t, b) >= d.pool_height or max(l, r) >= d.pool_width \
            or d.output_shape_rounding != OutputShapeRounding.Floor:
        return None
    if d.pool_type == PoolingAlgorithm.Max:
        return p if _non_negative(pad) else None
    if d.pool_type == PoolingAlgorithm.Average and not (d.pad_top or d.pad_bottom or d.pad_left or d.pad_right):
        return p
    return None


def _via_permute(graph: Graph, perm: Layer, pairs: list, pad: Layer) -> list | None:
    """[(consumer, pads)] when every reader of `perm` (a Permute reading the Pad) takes its pads."""
    moved = [None] * len(pairs)
    for i, j in enumerate(perm.desc.dim_mappings):  # input dim i goes to output dim j
        moved[j] = pairs[i]
    plan = [(c, _foldable(c, moved, pad) if slot == 0 else None) for c, slot in graph.consumers(perm.out())]
    return plan if plan and all(p is not None for _, p in plan) else None


def _plan(graph: Graph, pad: Layer) -> list:
    """[(reader, input index, permute?, [(consumer, pads)])]: the Pad's readers that can take its
    pads, each on its own (the others keep reading the Pad). A Permute reader folds when every
    reader of it can."""
    n = len(pad.outputs[0].shape)
    if n != 4 or min(pad.desc.pad_list) < 0 or not fills_real_zero(pad):
        return []
    pairs = [tuple(pad.desc.pad_list[2 * i:2 * i + 2]) for i in range(n)]
    plan = []
    for reader, slot in graph.consumers(pad.out()):
        if reader.type == LayerType.Permute:
            sub = _via_permute(graph, reader, pairs, pad)
        else:
            p = _foldable(reader, pairs, pad) if slot == 0 else None
            sub = None if p is None else [(reader, p)]
        if sub is not None:
            plan.append((reader, slot, reader.type == LayerType.Permute, sub))
    return plan


def _apply(graph: Graph, pad: Layer, plan: list) -> None:
    for reader, slot, permute, sub in plan:
        for c, (t, b, l, r) in sub:
            d = c.desc
            d.pad_top, d.pad_bottom, d.pad_left, d.pad_right = (
                d.pad_top + t, d.pad_bottom + b, d.pad_left + l, d.pad_right + r)
            if c.type == LayerType.Pooling2d and d.pool_type == PoolingAlgorithm.Average:
                d.padding_method = PaddingMethod.IgnoreValue  # the padded zeros count in the average
        graph.set_input(reader, slot, pad.inputs[0])
        if permute:  # it now permutes the unpadded tensor
            reader.outputs = list(infer_outputs(reader))
    if not graph.consumers(pad.out()):
        graph.remove([pad])


def fold_pads(graph: Graph, report: Report) -> int:
    n = 0
    for pad in [l for l in graph.layers if l.type == LayerType.Pad]:
        plan = _plan(graph, pad)
        if plan:
            _apply(graph, pad, plan)
            n += len(plan)
    if n:
        report.decomposition("zero padding before a convolution or pooling",
                             "folded into the convolution's or pooling's own padding (exact)")
    return n
