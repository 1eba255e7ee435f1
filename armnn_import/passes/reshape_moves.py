"""Reshapes moved to where they cost fewer layers (the 20.08 format on: Splitter layers).

A Reshape only renames the element order's dimensions, so a Reshape can move:
- into a Splitter: a Splitter of Reshape(x) whose every output is reshaped to one shape T, cut
  along an axis with only 1s before it (each view is a contiguous run of the buffer, in order),
  is a Splitter of Reshape(x, [rows, *T[1:]]) along axis 0 into T-shaped views: n + 1 Reshapes
  become one (a TFLite UNPACK of a sequence: Reshape, Splitter, a Reshape per time step);
- past an elementwise binary layer: f(Reshape(a), Reshape(b)), a and b of one shape and each
  Reshape read by f alone, is Reshape(f(a, b)): two Reshapes become one (an int8 LSTM step's
  input and recurrent products, each a Convolution2d between Reshapes, summed).
Elementwise layers and the Splitter copy each element where it was; only shapes change, so
every value, quantized or float, is the same as before.
"""
from __future__ import annotations

import numpy as np

from ..ir import descriptors as D
from ..ir.graph import Graph, Layer
from ..ir.types import LayerType
from ..report import Report

#: binary layers whose output element i reads element i of each same-shaped input
ELEMENTWISE = frozenset({LayerType.Addition, LayerType.Multiplication, LayerType.Subtraction,
                         LayerType.Division, LayerType.Maximum, LayerType.Minimum})


def _split_axis(s: Layer) -> int | None:
    """The one axis along which s's views cut its input, with only 1s before it, or None."""
    shape = s.inputs[0].info.shape
    axes = {i for o, z in zip(s.desc.origins.view_origins, s.desc.view_sizes)
            for i, (a, b) in enumerate(zip(o, z)) if a != 0 or b != shape[i]}
    if len(axes) != 1:
        return None
    a = axes.pop()
    return a if all(d == 1 for d in shape[:a]) else None


def _into_splitter(graph: Graph, s: Layer) -> bool:
    r, users = s.inputs[0].layer, graph.consumers(s)
    if r.type != LayerType.Reshape or not users or any(u.type != LayerType.Reshape for u, _ in users):
        return False
    shapes = {u.outputs[0].shape for u, _ in users}
    a = _split_axis(s)
    if len(shapes) != 1 or a is None or {u.inputs[0].slot for u, _ in users} != set(range(len(s.outputs))):
        return False
    t = shapes.pop()
    shape = s.inputs[0].info.shape
    inner, size, row = int(np.prod(shape[a + 1:])), int(np.prod(t)), int(np.prod(t[1:]))
    starts = [o[a] * inner for o in s.desc.origins.view_origins]
    total = int(np.prod(shape))
    if any(z[a] * inner != size for z in s.desc.view_sizes) or any(k % row for k in starts + [total]):
        return False
    rows = (total // row,) + tuple(t[1:])
    x = r.inputs[0]
    if x.info.shape != rows:
        x = graph.add(LayerType.Reshape, f"{r.name}_rows", [x], D.ReshapeDescriptor(rows)).out()
    origins = tuple((k // row,) + (0,) * (len(t) - 1) for k in starts)
    desc = D.ViewsDescriptor(D.OriginsDescriptor(0, len(origins), len(t), origins), (tuple(t),) * len(origins))
    outs = [o.with_shape(tuple(t)) for o in s.outputs]
    graph.remove([s])
    new = graph.add(LayerType.Splitter, s.name, [x], desc, outputs=outs)
    for u, _ in users:
        graph.replace_uses(u.out(), new.out(u.inputs[0].slot))
        graph.remove([u])
    if not graph.consumers(r.out()):
        graph.remove([r])
    return True


def _past_binary(graph: Graph, f: Layer) -> bool:
    ra, rb = (p.layer for p in f.inputs)
    if ra.type != LayerType.Reshape or rb.type != LayerType.Reshape or ra is rb:
        return False
    a, b = ra.inputs[0], rb.inputs[0]
    if a.info.shape != b.info.shape or a.info.shape == f.outputs[0].shape or \
            not ra.outputs[0].shape == rb.outputs[0].shape == f.outputs[0].shape or \
            len(graph.consumers(ra.out())) != 1 or len(graph.consumers(rb.out())) != 1:
        return False
    out = f.outputs[0]
    graph.remove([f, ra, rb])
    y = graph.add(f.type, f.name, [a, b], f.desc, outputs=[out.with_shape(a.info.shape)])
    back = graph.add(LayerType.Reshape, f"{f.name}_shape", [y.out()], D.ReshapeDescriptor(out.shape))
    graph.replace_uses(f.out(), back.out())
    return True


def move_reshapes(graph: Graph, report: Report) -> int:
    if not graph.target.has(LayerType.Splitter):  # the 19.02 format: as written
        return 0
    n = sum(_past_binary(graph, f) for f in [l for l in graph.layers if l.type in ELEMENTWISE])
    n += sum(_into_splitter(graph, s) for s in [l for l in graph.layers if l.type == LayerType.Splitter])
    if n:
        report.decomposition("reshapes", "moved into a Splitter or past an elementwise layer, where "
                             "fewer Reshape layers do")
    return n
