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

from ..ir.axes import TO_NCHW, TO_NHWC
from ..ir.descriptors import PermuteDescriptor
from ..ir.kinds import BINARY_LAYERS
from ..ir.graph import Graph, Layer, Port
from ..ir.types import DataLayout, LayerType
from ..lowering.builder import inverse_perm
from ..report import Report
from .worklist import Order as _Order, Scan as _Scan

ELEMENTWISE = {LayerType.Activation, LayerType.Floor, LayerType.Rsqrt} | BINARY_LAYERS
LAYOUT_LAYERS = {LayerType.Pooling2d, LayerType.BatchNormalization, LayerType.L2Normalization,
                 LayerType.Normalization, LayerType.ResizeBilinear, LayerType.SpaceToBatchNd,
                 LayerType.BatchToSpaceNd}
# the 20.08 format's layers with a data_layout (the same computation in either layout)
LAYOUT_LAYERS |= {LayerType.Resize, LayerType.SpaceToDepth, LayerType.DepthToSpace, LayerType.InstanceNormalization}


def perm_of(layer: Layer) -> tuple[int, ...]:
    """numpy.transpose axes of a Permute layer."""
    return inverse_perm(layer.desc.dim_mappings)


def _flip_layout(desc, perm):
    """desc of a layout-carrying layer that ran on permuted data, for the unpermuted data."""
    if perm == TO_NCHW and desc.data_layout == DataLayout.NCHW:
        return dataclasses.replace(desc, data_layout=DataLayout.NHWC)
    if perm == TO_NHWC and desc.data_layout == DataLayout.NHWC:
        return dataclasses.replace(desc, data_layout=DataLayout.NCHW)
    return None


_CONVS = (LayerType.Convolution2d, LayerType.DepthwiseConvolution2d)


def _rewrite(layer: Layer, perm, target=None) -> object | bool:
    """The descriptor `layer` needs when it reads unpermuted data, True when
    it needs no change, or None when the Permute cannot pass it."""
    t, d = layer.type, layer.desc
    if t in ELEMENTWISE:
        return True
    if t in LAYOUT_LAYERS or (t in _CONVS and target is not None and target.at_least("20.08")):
        return _flip_layout(d, perm)  # (convolutions: the formats that write their data_layout)
    if t == LayerType.Softmax:  # (an axis other than the last: the 23.08 format on)
        axis = d.axis % len(perm)
        if perm[axis] == axis:
            return True
        return dataclasses.replace(d, axis=perm[axis]) if target is not None and target.at_least("23.08") \
            else None
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


def _touch(graph: Graph, layer: Layer) -> None:
    """Tell the pass's watcher that `layer`'s descriptor or outputs changed (it and its readers)."""
    if graph.watch is not None:
        graph.watch(layer)
        for u, _ in graph.consumers(layer):
            graph.watch(u)


def _sink_one(graph: Graph, layer: Layer) -> bool:
    """Move the Permutes feeding `layer` below it, if all its inputs allow."""
    if not layer.inputs or layer.type == LayerType.Output or len(layer.outputs) != 1:
        return False
    sources = [p[0] for p in layer.inputs]
    mapping = sources[0].desc.dim_mappings if sources[0].type == LayerType.Permute else None
    for s in sources:  # (loops, not any() over generators: asked at every step)
        if s.type != LayerType.Permute or s.desc.dim_mappings != mapping:
            return False  # (equal mappings: equal permutations)
        o, i = s.outputs[0], s.inputs[0].info
        if o.scale != i.scale or o.offset != i.offset:
            return False  # a Permute that relabels its bytes' quantization (see tflite AVERAGE_POOL_2D)
    perm = inverse_perm(mapping)
    new_desc = _rewrite(layer, perm, graph.target)
    if new_desc is None:
        return False
    out_perm = perm
    if isinstance(new_desc, tuple):  # (descriptor, None): no Permute needed after the layer
        new_desc, out_perm = new_desc
    # a Permute with other users stays for them (dead-layer removal drops it otherwise)
    old = layer.outputs[0]
    graph.set_inputs(layer, [s.inputs[0] for s in sources])
    if new_desc is not True:
        if layer.type == LayerType.Convolution2d:  # weights [O, I, kH, kW] <-> [O, kH, kW, I]
            w = layer.tensors["weights"]
            axes = (0, 2, 3, 1) if new_desc.data_layout == DataLayout.NHWC else (0, 3, 1, 2)
            layer.tensors = {**layer.tensors, "weights": w.transposed(axes)}
        layer.desc = new_desc  # (depthwise weights are [M, C, kH, kW] in both layouts)
    if out_perm is None:
        _touch(graph, layer)
        return True
    layer.outputs = [old.with_shape([old.shape[perm.index(i)] for i in range(len(perm))])]
    # (the Permute back gives the layer's old output: what infer_outputs works out, which
    # also reports a rank that does not fit)
    after = graph.add(LayerType.Permute, f"{layer.name}_permute", [layer.out()], PermuteDescriptor(mapping),
                      outputs=[old] if old.rank == len(perm) else None)
    graph.replace_uses(layer.out(), after.out())
    graph.set_inputs(after, [layer.out()])
    _touch(graph, layer)
    return True


def sink_permutes(graph: Graph, report: Report) -> int:
    """Sink Permutes until none moves. The rule, as first written: repeat {put the
    graph in topological order; sink at the first layer (in that order) where a
    Permute can pass; one merge_permutes and one remove_identities pass over the
    whole graph}. Here each of those scans visits only the layers that may match
    (a worklist per scan, ordered by position; see _Scan), with the same result:
    the same rewrites in the same order, so the same layers, names and order."""
    from .cleanup import bypass, is_identity, merge_one, compose_permutes, remove_dead_layers

    graph.toposort()
    if not any(l.type == LayerType.Permute for l in graph.layers):
        remove_dead_layers(graph, report)  # what the loop below comes to when nothing can move
        return 0
    order = _Order(graph.layers)
    scans = [_Scan(order, _may_sink_for(graph.target)), _Scan(order, _may_merge), _Scan(order, _may_be_identity)]
    sink, merge, ident = scans
    for layer in graph.layers:
        for q in scans:
            q.add(layer)

    watch = _Watcher(graph, order, scans)
    flushed = watch.flushed

    def keep_identity(layer):  # remove_identities at one layer; True: still a candidate
        return flushed(is_identity(layer) and not bypass(graph, layer))

    moved, appended = 0, None
    graph.watch = watch
    try:
        for _ in range(4 * len(graph.layers) + 1):
            if appended is not None:  # what toposort() does with the one Permute appended last
                _place(order, scans, appended, graph)
            last = order.last
            hit = sink.run(graph, lambda l: flushed(_sink_one(graph, l)), stop_at_first=True)
            if hit is None:
                break
            moved += 1
            appended = order.last if order.last is not last and order.last in graph else None
            merge.run(graph, lambda l: flushed((merge_one(graph, l, LayerType.Permute, compose_permutes), False)[1]))
            ident.run(graph, keep_identity)
        else:  # rare: the cap was reached; as before, dead layers go before the final toposort
            graph.watch = None
            graph.layers = order.walk(graph)
            remove_dead_layers(graph, report)
            graph.toposort()
            return moved
    finally:
        graph.watch = None
    if appended is not None:
        _place(order, scans, appended, graph)
    graph.layers = order.walk(graph)
    remove_dead_layers(graph, report)
    return moved


class _Watcher:
    """graph.watch during sink_permutes: a layer told of (its connections, descriptor or outputs
    changed) goes to the scans once, when the running step ends (flushed): within a step nothing
    the scans decide on moves (the visit's position, the layers' labels), and what they test of
    a layer is its state when the step is done. A new layer is placed at the end at once."""

    def __init__(self, graph: Graph, order: "_Order", scans):
        self.graph, self.order, self.scans = graph, order, scans
        self.touched: dict = {}  # in the order they were told of

    def __call__(self, layer) -> None:
        if layer not in self.order.label:
            if layer not in self.graph:
                return
            self.order.append(layer)  # a new layer: at the end, as graph.add puts it
        self.touched[layer] = None

    def flushed(self, result):
        touched = self.touched
        if touched:  # (per scan, each in the order told of: each scan's queue as layer by layer)
            for q in self.scans:
                pending, wants = q.pending, q.wants
                for layer in touched:
                    if layer not in pending and (wants is None or wants(layer)):
                        q.enqueue(layer)
            touched.clear()
        return result


# What each scan's step needs of a layer before it can act, from facts that change only with
# the layer's type or inputs (and every change of its inputs, or of its sources' readers,
# tells the watcher, which adds the layer again): a layer without them is not queued.
# the layer types _rewrite may let a Permute pass (with convolutions from the 20.08 format on)
_SINK_TYPES = frozenset(ELEMENTWISE | LAYOUT_LAYERS | {LayerType.Softmax, LayerType.Merger, LayerType.Pad,
                                                       LayerType.Mean, LayerType.StridedSlice})


def _may_sink_for(target):
    """_may_sink for `target`: of a layer type a Permute may pass there, for a start."""
    types = _SINK_TYPES | frozenset(_CONVS) if target is not None and target.at_least("20.08") else _SINK_TYPES
    return lambda layer: layer.type in types and _may_sink(layer)


def _may_sink(layer) -> bool:  # (_sink_one: every input a Permute)
    ins = layer.inputs
    if not ins:
        return False
    for p in ins:  # (a loop, not all() over a generator: asked of every layer told of)
        if p[0].type != LayerType.Permute:
            return False
    return True


def _may_merge(layer) -> bool:  # (merge_one: a Permute reading a Permute)
    return layer.type == LayerType.Permute and bool(layer.inputs) and layer.inputs[0].layer.type == LayerType.Permute


from .cleanup import IDENTITY_TYPES as _IDENTITY_TYPES  # noqa: E402 (the types cleanup.is_identity accepts)


def _may_be_identity(layer) -> bool:
    return layer.type in _IDENTITY_TYPES


def _place(order: "_Order", scans, layer, graph: Graph) -> None:
    if layer in graph:
        was = order.label[layer], order.version
        order.place_before_first_user(layer, graph)
        if (order.label[layer], order.version) == was:
            return
        for q in scans:  # its queued entries carry the old position
            if layer in q.pending and q.version == order.version:
                q._push(layer, order.label[layer])
