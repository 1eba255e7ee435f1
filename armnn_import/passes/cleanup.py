"""Layout-independent clean-up passes."""
from __future__ import annotations

import numpy as np

from ..errors import ArmnnImportError
from ..ir.descriptors import PermuteDescriptor
from ..ir.graph import Graph, Layer
from ..ir.types import ActivationFunction, ConstTensor, DataLayout, DataType, LayerType
from ..report import Report


def single_consumer(graph: Graph, layer: Layer) -> bool:
    return graph.num_consumers(layer) == 1


def bypass(graph: Graph, layer: Layer) -> bool:
    """Route `layer`'s consumers to its input; False where that would wire an
    Input layer straight to an Output layer (kept: Arm NN wants a layer between)."""
    src = layer.inputs[0]
    users = graph.consumers(layer)
    if src.layer.type == LayerType.Input and any(u.type == LayerType.Output for u, _ in users):
        return False
    graph.replace_uses(layer.out(), src)
    graph.remove([layer])
    return True


IDENTITY_TYPES = frozenset({LayerType.Reshape, LayerType.Pad, LayerType.Permute, LayerType.StridedSlice,
                             LayerType.Merger, LayerType.Activation})


def is_identity(layer: Layer) -> bool:
    t, d = layer.type, layer.desc
    if t not in IDENTITY_TYPES:  # first: cheaper than comparing the TensorInfos (every layer is asked)
        return False
    if len(layer.inputs) != 1 or len(layer.outputs) != 1:
        return False
    if t == LayerType.Activation and getattr(d, "function", None) != ActivationFunction.Linear:
        return False  # (before the TensorInfos: a ReLU is asked at every step of sink_permutes)
    if layer.outputs[0] != layer.inputs[0].info:
        return False
    if t in (LayerType.Reshape, LayerType.Pad):
        return True  # same TensorInfo in and out
    if t == LayerType.Permute:  # (same shape in and out, checked above: with at most one
        # dimension over 1, any order of the axes keeps the elements in place)
        return list(d.dim_mappings) == sorted(d.dim_mappings) or sum(n > 1 for n in layer.outputs[0].shape) <= 1
    if t == LayerType.StridedSlice:
        return all(s == 1 for s in d.stride) and not d.shrink_axis_mask
    if t == LayerType.Merger:
        return True
    if t == LayerType.Activation and layer.outputs[0].dtype in (DataType.Float32, DataType.Float16):
        return d.function == ActivationFunction.Linear and d.a == 1.0 and d.b == 0.0
    return False


def remove_identities(graph: Graph, report: Report) -> int:
    return sum(bypass(graph, l) for l in list(graph.layers)
               if l.type in IDENTITY_TYPES and is_identity(l) and not _constant_shape(l))


def _constant_shape(layer: Layer) -> bool:
    """A Reshape right after a Constant: kept, even as an identity. Arm NN 23.08 reads a [1, 1, H, W]
    Constant of a file without featureVersions as [1, H, W, 1] (ir/compat.py), and this Reshape gives
    it back its shape (lowering.builder.NetBuilder.constant_layer)."""
    return layer.type == LayerType.Reshape and layer.inputs[0].layer.type == LayerType.Constant


def _inputs_key(layer: Layer):
    """The type and inputs of a layer that may be merged (None: never merged)."""
    if layer.type in (LayerType.Input, LayerType.Output) or not layer.inputs:
        return None
    for t in layer.tensors.values():  # (a loop, not any() over a generator: every layer is asked)
        if t.stored.nbytes > 4096:
            return None  # large weights: not worth hashing
    return (layer.type, tuple(layer.inputs))  # (Ports: a Layer hashes and compares by identity)


def _key(layer: Layer):
    """What else makes two layers of the same type and inputs compute the same thing."""
    tensors = tuple((k, t.info, t.data.tobytes()) for k, t in sorted(layer.tensors.items()))
    return repr(layer.desc), tuple(layer.outputs), tensors


def merge_duplicates(graph: Graph, report: Report) -> int:
    """Layers with the same type, inputs, descriptor and constants become one
    (e.g. the Permutes the NHWC lowering puts before each consumer of a tensor).
    Each layer merges into the first earlier one that equals it; the descriptors and
    constants are compared only among layers of the same type and inputs (few)."""
    seen: dict = {}  # (type, inputs) -> [[layer, its _key or None until needed]]
    n = 0
    for layer in list(graph.layers):  # topological order: inputs already merged
        cheap = _inputs_key(layer)
        if cheap is None:
            continue
        group = seen.get(cheap)
        if group is None:
            seen[cheap] = [[layer, None]]
            continue
        key = _key(layer)
        for entry in group:
            if entry[1] is None:  # (its inputs were merged before it was seen: the key is as it was then)
                entry[1] = _key(entry[0])
            if entry[1] == key:
                for slot in range(len(layer.outputs)):
                    graph.replace_uses(layer.out(slot), entry[0].out(slot))
                graph.remove([layer])
                n += 1
                break
        else:
            group.append([layer, key])
    return n


def remove_dead_layers(graph: Graph, report: Report) -> int:
    """Drop layers whose results reach no Output (Input layers stay: they are the bindings)."""
    live: set = set()  # (layers: a Layer hashes by identity)
    stack = [l for l in graph.layers if l.type == LayerType.Output]
    while stack:
        l = stack.pop()
        if l in live:
            continue
        live.add(l)
        stack.extend([p[0] for p in l.inputs])
    dead = [l for l in graph.layers if l not in live and l.type != LayerType.Input]
    graph.remove(dead)
    return len(dead)


def drop_unused_inputs(graph: Graph, report: Report) -> int:
    """Arm NN cannot bind an input that feeds nothing ("No input layer is
    associated with id N"): drop the layers whose results reach no Output,
    unused Input layers included (with a warning), and number the remaining
    inputs 0..n-1 in their old order. A graph without outputs is left alone
    (verify() refuses it)."""
    outputs = [l for l in graph.layers if l.type == LayerType.Output]
    if not outputs:
        return 0
    live: set[int] = set()
    stack = list(outputs)
    while stack:
        l = stack.pop()
        if id(l) not in live:
            live.add(id(l))
            stack.extend(p.layer for p in l.inputs)
    dead = [l for l in graph.layers if id(l) not in live]
    unused = [l for l in graph.input_layers if id(l) not in live]
    for l in unused:
        report.warn(f"input {l.name!r} is not needed to compute the outputs (at most its shape is used); "
                    "the Arm NN network has no such input")
    graph.remove(dead)
    if unused:
        for i, l in enumerate(graph.input_layers):
            l.binding_id = i
        if not graph.input_layers:
            report.warn("the outputs do not depend on any input: the network computes constants")
    return len(dead)


def fold_constants(graph: Graph, report: Report, keep_int16: bool = True, only: LayerType | None = None) -> int:
    """Evaluate layers whose inputs are all Constant layers (numpy executor), but the Dequantize
    of QSymmS16 constants while keep_int16; layers of type `only`, if given."""
    from ..executor import evaluate
    from ..ir.compat import reads_as_written_by_23_08

    n = 0
    for layer in list(graph.layers):
        if not layer.inputs or layer.type == LayerType.Output or (only is not None and layer.type != only):
            continue
        if not all(p.layer.type == LayerType.Constant for p in layer.inputs):
            continue
        if layer.type == LayerType.Reshape and reads_as_written_by_23_08(graph, layer.inputs[0].layer):
            continue  # a [1, 1, H, W] Constant and its Reshape: the form Arm NN 23.08 reads right
        if keep_int16 and layer.type == LayerType.Dequantize and layer.inputs[0].info.dtype == DataType.QSymmS16:
            continue  # int16 levels that passes/int16.py may compute on (it folds what it leaves)
        try:
            values = evaluate(layer, [p.layer.tensors["input"].data for p in layer.inputs])
        except ArmnnImportError:  # e.g. a layer the runtime can't run either: leave it
            continue
        const = graph.add(LayerType.Constant, layer.name + "_folded",
                          tensors={"input": ConstTensor(values[0].astype(layer.outputs[0].dtype.np_dtype),
                                                        layer.outputs[0])})
        graph.replace_uses(layer.out(), const.out())
        graph.remove([layer])
        report.folded.append(layer.name)
        n += 1
    if n:
        remove_dead_layers(graph, report)
    return n


def _merge_chains(graph: Graph, ltype: LayerType, combine) -> int:
    """X(a) -> X(b) becomes one X whose descriptor is combine(a, b) (dropped
    if it is an identity), when the first X feeds nothing else."""
    return sum(merge_one(graph, layer, ltype, combine) for layer in list(graph.layers))


def merge_one(graph: Graph, layer: Layer, ltype: LayerType, combine) -> bool:
    """One step of _merge_chains at `layer` (also the worklist step of sink_permutes)."""
    src = layer.inputs[0].layer if layer.inputs else None
    if layer.type != ltype or src is None or src.type != ltype or not single_consumer(graph, src):
        return False
    layer.desc = combine(src.desc, layer.desc)
    if graph.watch is not None:
        graph.watch(layer)  # its consumers see a new descriptor
        for u, _ in graph.consumers(layer):
            graph.watch(u)
    graph.set_inputs(layer, [src.inputs[0]])
    graph.remove([src])
    if is_identity(layer):
        bypass(graph, layer)
    return True


def compose_permutes(a: PermuteDescriptor, b: PermuteDescriptor) -> PermuteDescriptor:
    """The one Permute doing Permute(a) then Permute(b)."""
    return PermuteDescriptor(tuple(b.dim_mappings[a.dim_mappings[i]] for i in range(len(a.dim_mappings))))


def merge_permutes(graph: Graph, report: Report) -> int:
    """Permute(a) -> Permute(b) becomes one Permute (or nothing, if they cancel)."""
    return _merge_chains(graph, LayerType.Permute, compose_permutes)


def merge_reshapes(graph: Graph, report: Report) -> int:
    """Reshape -> Reshape becomes one Reshape."""
    return _merge_chains(graph, LayerType.Reshape, lambda a, b: b)


def bn_affine(bn: Layer) -> tuple[np.ndarray, np.ndarray]:
    """BatchNormalization as y = a*x + b per channel (float64)."""
    t = bn.tensors
    f64 = np.float64
    a = t["gamma"].data.astype(f64) / np.sqrt(t["variance"].data.astype(f64) + f64(bn.desc.eps))
    return a, t["beta"].data.astype(f64) - t["mean"].data.astype(f64) * a


def _set_affine(bn: Layer, a, b) -> None:
    f = lambda v: ConstTensor(np.asarray(v, np.float32))  # noqa: E731
    bn.tensors = {"mean": f(np.zeros_like(a)), "variance": f(np.ones_like(a)), "beta": f(b), "gamma": f(a)}
    bn.desc.eps = 0.0


def float_bn(layer: Layer) -> bool:
    return layer.type == LayerType.BatchNormalization and layer.outputs[0].dtype == DataType.Float32


def merge_batchnorms(graph: Graph, report: Report) -> int:
    """BatchNormalization -> BatchNormalization on the same channels becomes one."""
    n = 0
    for bn in list(graph.layers):
        src = bn.inputs[0].layer if bn.inputs else None
        if not (float_bn(bn) and src is not None and float_bn(src)):
            continue
        if src.desc.data_layout != bn.desc.data_layout or not single_consumer(graph, src):
            continue
        a1, b1 = bn_affine(src)
        a2, b2 = bn_affine(bn)
        _set_affine(bn, a1 * a2, b1 * a2 + b2)
        graph.set_inputs(bn, [src.inputs[0]])
        graph.remove([src])
        n += 1
    return n


def fold_batchnorm_into_conv(graph: Graph, report: Report) -> int:
    """Conv -> BatchNormalization (float, NCHW): the scale moves into the
    weights, leaving the BatchNormalization a pure per-channel shift (the
    convolution's bias, which this format can only carry in a separate layer)."""
    n = 0
    for bn in list(graph.layers):
        if not float_bn(bn) or bn.desc.data_layout != DataLayout.NCHW:
            continue
        conv = bn.inputs[0].layer
        if conv.type not in (LayerType.Convolution2d, LayerType.DepthwiseConvolution2d):
            continue
        if conv.outputs[0].dtype != DataType.Float32 or not single_consumer(graph, conv):
            continue
        a, b = bn_affine(bn)
        if np.all(a == 1.0):
            continue
        w = conv.tensors["weights"].data.astype(np.float64)
        if conv.type == LayerType.DepthwiseConvolution2d:  # [M, C, kh, kw], out channel c*M + m
            m, c = w.shape[:2]
            w = w * a.reshape(c, m).T[:, :, None, None]
        else:  # [O, I, kh, kw]
            w = w * a.reshape(-1, 1, 1, 1)
        conv.tensors["weights"] = ConstTensor(w.astype(np.float32), conv.tensors["weights"].info)
        _set_affine(bn, np.ones_like(a), b)
        n += 1
    return n
