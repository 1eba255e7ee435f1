"""Permute sinking and cancellation.

A Permute whose consumer does not care about the order of axes (or can be
told the new order through its descriptor) is moved below that consumer:

    x -> Permute(p) -> L -> y    becomes    x -> L' -> Permute(p) -> y

Repeated, this carries Permutes down until they meet their inverse (and
merge_permutes removes both) or a layer that needs the permuted order.
Each rule says how L changes; a layer type with no rule stops the Permute.
"""
from __future__ import annotations

import dataclasses

from ..ir.descriptors import BINARY_LAYERS, PermuteDescriptor
from ..ir.graph import Graph, Layer, Port
from ..ir.types import DataLayout, LayerType
from ..lowering.builder import inverse_perm
from ..report import Report

TO_NCHW = (0, 3, 1, 2)  # numpy axes: NHWC -> NCHW
TO_NHWC = (0, 2, 3, 1)
ELEMENTWISE = {LayerType.Activation, LayerType.Floor, LayerType.Rsqrt} | BINARY_LAYERS
LAYOUT_LAYERS = {LayerType.Pooling2d, LayerType.BatchNormalization, LayerType.L2Normalization,
                 LayerType.Normalization, LayerType.ResizeBilinear, LayerType.SpaceToBatchNd,
                 LayerType.BatchToSpaceNd}


def _perm(layer: Layer) -> tuple[int, ...]:
    """numpy.transpose axes of a Permute layer."""
    return inverse_perm(layer.desc.dim_mappings)


def _flip_layout(desc, perm):
    """desc of a layout-carrying layer that ran on permuted data, for the unpermuted data."""
    if perm == TO_NCHW and desc.data_layout == DataLayout.NCHW:
        return dataclasses.replace(desc, data_layout=DataLayout.NHWC)
    if perm == TO_NHWC and desc.data_layout == DataLayout.NHWC:
        return dataclasses.replace(desc, data_layout=DataLayout.NCHW)
    return None


def _rewrite(layer: Layer, perm) -> object | bool:
    """The descriptor `layer` needs when it reads unpermuted data, True when
    it needs no change, or None when the Permute cannot pass it."""
    t, d = layer.type, layer.desc
    if t in ELEMENTWISE:
        return True
    if t in LAYOUT_LAYERS:
        return _flip_layout(d, perm)
    if t == LayerType.Softmax:
        return True if perm[-1] == len(perm) - 1 else None
    if t == LayerType.Merger:
        axis = perm[d.concat_axis]
        origins = tuple(tuple(o[perm.index(i)] for i in range(len(perm))) for o in d.view_origins)
        return dataclasses.replace(d, concat_axis=axis, view_origins=origins)
    if t == LayerType.Pad:
        pairs = [d.pad_list[2 * perm.index(i): 2 * perm.index(i) + 2] for i in range(len(perm))]
        return dataclasses.replace(d, pad_list=tuple(v for p in pairs for v in p))
    if t == LayerType.Mean and d.axis:
        new = dataclasses.replace(d, axis=tuple(sorted(perm[a] for a in d.axis)))
        if d.keep_dims:
            return new
        kept = [perm[j] for j in range(len(perm)) if j not in d.axis]
        return (new, None) if kept == sorted(kept) else None  # the reduced result is already in order
    if t == LayerType.StridedSlice and not (d.shrink_axis_mask or d.ellipsis_mask or d.new_axis_mask):
        def remap(v):
            return tuple(v[perm.index(i)] for i in range(len(perm)))

        def bits(m):
            return sum(1 << perm[j] for j in range(len(perm)) if m & (1 << j))
        return dataclasses.replace(d, begin=remap(d.begin), end=remap(d.end), stride=remap(d.stride),
                                   begin_mask=bits(d.begin_mask), end_mask=bits(d.end_mask))
    return None


def _sink_one(graph: Graph, layer: Layer) -> bool:
    """Move the Permutes feeding `layer` below it, if all its inputs allow."""
    if not layer.inputs or layer.type == LayerType.Output or len(layer.outputs) != 1:
        return False
    sources = [p.layer for p in layer.inputs]
    if any(s.type != LayerType.Permute for s in sources):
        return False
    if any((s.outputs[0].scale, s.outputs[0].offset) != (s.inputs[0].info.scale, s.inputs[0].info.offset)
           for s in sources):
        return False  # a Permute that relabels its bytes' quantization (see tflite AVERAGE_POOL_2D)
    perm = _perm(sources[0])
    if any(_perm(s) != perm for s in sources):
        return False
    new_desc = _rewrite(layer, perm)
    if new_desc is None:
        return False
    out_perm = perm
    if isinstance(new_desc, tuple):  # (descriptor, None): no Permute needed after the layer
        new_desc, out_perm = new_desc
    # a Permute with other users stays for them (dead-layer removal drops it otherwise)
    old = layer.outputs[0]
    layer.inputs = [s.inputs[0] for s in sources]
    if new_desc is not True:
        layer.desc = new_desc
    if out_perm is None:
        return True
    layer.outputs = [old.with_shape([old.shape[perm.index(i)] for i in range(len(perm))])]
    after = graph.add(LayerType.Permute, f"{layer.name}_permute", [layer.out()],
                      PermuteDescriptor(sources[0].desc.dim_mappings))
    graph.replace_uses(layer.out(), after.out())
    after.inputs = [layer.out()]
    return True


def sink_permutes(graph: Graph, report: Report) -> int:
    from .cleanup import merge_permutes, remove_dead_layers, remove_identities

    moved = 0
    for _ in range(4 * len(graph.layers) + 1):
        graph.toposort()
        step = 0
        for layer in list(graph.layers):
            if _sink_one(graph, layer):
                step += 1
                break  # the graph changed: start over in topological order
        if not step:
            break
        moved += step
        merge_permutes(graph, report)
        remove_identities(graph, report)
    remove_dead_layers(graph, report)
    return moved
