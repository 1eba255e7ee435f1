"""--fp16: the whole network in Float16, and --fp16-weights (refused where the
target has no layer to widen Float16 constants)."""
from __future__ import annotations

import numpy as np

from ..errors import ConversionError
from ..ir.graph import Graph
from ..ir.types import ConstTensor, DataType, LayerType
from ..report import Report

F16_MAX = float(np.finfo(np.float16).max)


def to_float16(graph: Graph, report: Report, keep=frozenset()) -> int:
    """Every Float32 tensor and constant becomes Float16. This format has no
    conversion layer, so the whole network runs in Float16, its inputs and
    outputs included (Arm NN 20.08 CpuRef runs every layer we emit in Float16, once an axis-0
    Stack is a Concat: _unstack_axis0)."""
    n = 0
    done: dict[int, ConstTensor] = {}  # id(Float32 tensor) -> its Float16 one: shared tensors stay shared
    for layer in graph.layers:
        if id(layer) in keep:  # (a float32 part of a float16 model: float32_islands)
            continue
        layer.outputs = [o.with_dtype(DataType.Float16) if o.dtype == DataType.Float32 else o
                         for o in layer.outputs]
        for name, t in list(layer.tensors.items()):
            if id(t) in done:
                layer.tensors[name] = done[id(t)]
                continue
            if t.info.dtype != DataType.Float32:
                continue
            finite = t.data[np.isfinite(t.data)]  # (infinities are Float16 values too)
            big = float(np.abs(finite).max()) if finite.size else 0.0
            if big > F16_MAX:
                raise ConversionError(f"layer {layer.name!r}: constant '{name}' holds {big:g}, beyond Float16's "
                                      f"range ({F16_MAX:g}); convert without --fp16")
            layer.tensors[name] = done[id(t)] = ConstTensor(t.data.astype(np.float16),
                                                            t.info.with_dtype(DataType.Float16))
            n += 1
    report.decomposition("fp16", "every Float32 tensor and constant stored and run as Float16, "
                                  "inputs and outputs included (the format has no conversion layer)")
    _unstack_axis0(graph, report)
    return n


def _unstack_axis0(graph: Graph, report: Report) -> None:
    """An axis-0 Stack made Float16, in a file Arm NN 20.08 can read, as Reshapes + one Concat:
    20.08's RefStackWorkload copies an axis-0 stack as float32 words whatever the data type, so a
    Float16 one reads and writes twice its bytes (wrong values, then an abort). 23.08's has no
    such copy (tests/layer_cases.py)."""
    if graph.target.at_least("23.08"):
        return
    from ..ir.descriptors import OriginsDescriptor, ReshapeDescriptor
    todo = [l for l in graph.layers if l.type == LayerType.Stack and l.desc.axis == 0
            and l.outputs[0].dtype == DataType.Float16]
    for st in todo:
        y, shape = st.outputs[0], (1,) + tuple(st.desc.input_shape)
        rows = [graph.add(LayerType.Reshape, f"{st.name}_in{k}", [x], ReshapeDescriptor(shape),
                          outputs=[x.info.with_shape(shape)]).out() for k, x in enumerate(st.inputs)]
        origins = tuple((k,) + (0,) * (len(shape) - 1) for k in range(len(rows)))
        cat = graph.add(LayerType.Concat, f"{st.name}_concat", rows,
                        OriginsDescriptor(0, len(rows), len(shape), origins), outputs=[y])
        graph.replace_uses(st.out(), cat.out())
        graph.remove([st])
        graph.rename(cat, st.name)
    if todo:
        graph.toposort()
        report.decomposition("Float16 Stack on axis 0", "Reshapes + Concat: Arm NN 20.08 copies an axis-0 "
                             "Stack as float32 words whatever its data type")


def float32_edges(graph: Graph, names) -> int:
    """Float32 inputs and outputs (those named) of a Float16 network, after to_float16: a Cast to
    Float16 after each such input, a Cast to Float32 before each such output (the 23.08 format)."""
    n, names = 0, set(names)
    for inp in graph.input_layers:
        info = inp.outputs[0]
        if inp.name not in names or info.dtype != DataType.Float16:
            continue
        users = graph.consumers(inp.out())
        inp.outputs = [info.with_dtype(DataType.Float32)]
        half = graph.add(LayerType.Cast, f"{inp.name}_float16", [inp.out()], outputs=[info])
        for layer, i in users:
            graph.set_input(layer, i, half.out())
        n += 1
    for out in graph.output_layers:
        src = out.inputs[0]
        if out.name in names and src.info.dtype == DataType.Float16:
            back = graph.add(LayerType.Cast, f"{out.name}_float32", [src],
                             outputs=[src.info.with_dtype(DataType.Float32)])
            graph.set_inputs(out, [back.out()])
            n += 1
    graph.toposort()
    return n


def float32_islands(graph: Graph, starts, ends) -> set[int]:
    """The float32 parts of a float16 model (the 23.08 format), before to_float16: the ids of the
    layers a start Cast reaches before an end Cast, and of the Constant layers only they read,
    which to_float16 then leaves Float32 (a Constant that other layers read too is copied). The
    start Casts become Float16 -> Float32, the end ones Float32 -> Float16; an end Cast that no
    part reaches (a Cast to float16 of a float16 tensor) is removed."""
    named = {layer.name: layer for layer in graph.layers}
    end = {id(named[n]) for n in ends if n in named}
    work = [named[n] for n in starts if n in named]
    keep = {id(layer) for layer in work}
    while work:
        for user, _ in graph.consumers(work.pop()):
            if id(user) not in keep and id(user) not in end:
                keep.add(id(user))
                work.append(user)
    for layer in [l for l in graph.layers if id(l) in keep]:
        for i, p in enumerate(layer.inputs):
            if p.layer.type == LayerType.Constant and id(p.layer) not in keep:
                if any(id(u) not in keep for u, _ in graph.consumers(p)):
                    c = graph.add(LayerType.Constant, f"{p.layer.name}_float32", [], tensors=dict(p.layer.tensors))
                    graph.set_input(layer, i, c.out())
                    p = c.out()
                keep.add(id(p.layer))
    for layer in [l for l in graph.layers if id(l) in end and id(l.inputs[0].layer) not in keep]:
        graph.replace_uses(layer.out(), layer.inputs[0])
        graph.remove([layer])
    graph.toposort()
    return keep


def fp16_widening_layer(target=None) -> LayerType | None:
    """The layer that widens Float16 constants to Float32 at run time on `target`
    (--fp16-weights), or None. The Arm NN 19.02 format written today (target None)
    has none: its 32 layer types include no Cast, ConvertFp16ToFp32 or Dequantize (and
    Arm NN 20.08's reference Dequantize takes only quantized inputs, not Float16).
    A later target format answers here with its layer."""
    return None


def check_fp16_weights(target=None) -> LayerType:
    """Refuse --fp16-weights where `target` has no widening layer (see fp16_widening_layer)."""
    layer = fp16_widening_layer(target)
    if layer is None:
        release = getattr(target, "release", target) or "19.02"
        why = ("its Cast layer could, but its files keep each layer's weights inside the layer "
               "(featureVersions.constantTensorsAsInputs 0), so no Cast can sit between them"
               if release == "23.08" else
               "no Cast or ConvertFp16ToFp32 layer, and Arm NN 20.08's reference Dequantize takes only "
               "quantized inputs")
        raise ConversionError(f"--fp16-weights: the Arm NN {release} format has no layer that widens Float16 "
                              f"constants to Float32 at run time ({why}), so Float16 weights cannot feed a "
                              "Float32 network; convert without it (Float32), or with --fp16 (everything in "
                              "Float16)")
    return layer
