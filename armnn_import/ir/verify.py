"""verify(graph): the invariants the writer and Arm NN 20.08 rely on.

Checked before writing and after every pass, so a bug is caught where it is
made instead of as a crash or wrong numbers inside Arm NN. The per-layer
rules follow the Validate methods in Arm NN 20.08's
src/backends/backendsCommon/WorkloadData.cpp. Raises GraphError with one
line per problem, each naming the layer.
"""
from __future__ import annotations

import dataclasses
import math
import typing
from collections import Counter
from enum import IntEnum

from ..errors import GraphError
from .descriptors import BINARY_LAYERS, since
from .shapes import NUM_INPUTS, NUM_OUTPUTS, hw_axes, infer_outputs
from .types import DataLayout, DataType, LayerType, TensorInfo

MAX_REPORTED = 20
_CONV = (LayerType.Convolution2d, LayerType.DepthwiseConvolution2d)
_WEIGHTED = _CONV + (LayerType.FullyConnected,)


def verify(graph) -> None:
    """Raise GraphError listing what is wrong with `graph`; return None if nothing is."""
    problems = _structure(graph)
    if not problems:
        for layer in graph.layers:
            problems += [f"layer {layer.name!r} ({layer.type.name}): {p}"
                         for p in _beyond_target(layer, graph.target) or _check_layer(layer)]
        problems += _bindings(graph)
    if not problems and hasattr(graph, "use_problems"):
        problems = graph.use_problems()  # last: an input changed by hand shows as what it breaks first
    if problems:
        more = len(problems) - MAX_REPORTED
        lines = problems[:MAX_REPORTED] + ([f"... and {more} more problems"] if more > 0 else [])
        raise GraphError("\n".join(lines))


# -- graph structure ---------------------------------------------------------

def _structure(graph) -> list[str]:
    problems = [f"layer name {name!r} is used by {n} layers"
                for name, n in Counter(l.name for l in graph.layers).items() if n > 1]
    pos = {id(l): i for i, l in enumerate(graph.layers)}
    for layer in graph.layers:
        for i, p in enumerate(layer.inputs):
            if id(p.layer) not in pos:
                problems.append(f"layer {layer.name!r} input {i} comes from layer {p.layer.name!r}, "
                                "which is not in the graph")
            elif not 0 <= p.slot < len(p.layer.outputs):
                problems.append(f"layer {layer.name!r} input {i} uses output {p.slot} of {p.layer.name!r}, "
                                f"which has {len(p.layer.outputs)} outputs")
    if problems:
        return problems
    for i, layer in enumerate(graph.layers):
        for p in layer.inputs:
            if pos[id(p.layer)] > i:
                problems.append(f"layer {layer.name!r} (position {i}) uses {p.layer.name!r} "
                                f"(position {pos[id(p.layer)]}) before it is defined; the layers are "
                                "not in topological order (graph.toposort())")
                break
    # A cycle is reported instead of the order; layers in topological order (no problem
    # above) have none, so the search runs only when the order is broken.
    cycle = _find_cycle(graph) if problems else None
    if cycle:
        return ["cycle: " + " -> ".join(repr(l.name) for l in cycle)]
    for t in (LayerType.Input, LayerType.Output):
        layers = [l for l in graph.layers if l.type == t]
        ids = [l.binding_id for l in layers]
        if any(not isinstance(b, int) for b in ids) or sorted(ids) != list(range(len(ids))):
            problems.append(f"{t.name} binding ids are {ids}; expected 0..{len(ids) - 1}, each once "
                            f"(layers {[l.name for l in layers]})")
    for l in graph.layers:
        if l.type not in (LayerType.Input, LayerType.Output) and l.binding_id is not None:
            problems.append(f"layer {l.name!r} ({l.type.name}) has a binding id but is not an Input or Output")
    return problems


def _bindings(graph) -> list[str]:
    """Arm NN 20.08 cannot load a network without outputs, nor bind an input
    that feeds nothing ("No input layer is associated with id N")."""
    problems = [] if any(l.type == LayerType.Output for l in graph.layers) else ["the network has no Output layer"]
    used = {id(p.layer) for l in graph.layers for p in l.inputs}
    return problems + [f"Input layer {l.name!r} feeds no layer (passes.cleanup.drop_unused_inputs removes it)"
                       for l in graph.layers if l.type == LayerType.Input and id(l) not in used]


def _find_cycle(graph):
    """One cycle as a list of layers (first == last), or None. Iterative DFS."""
    state: dict[int, int] = {}  # 1 = on the stack, 2 = done
    for root in graph.layers:
        if id(root) in state:
            continue
        path, stack = [], [(root, 0)]
        while stack:
            layer, i = stack.pop()
            if i == 0:
                state[id(layer)] = 1
                path.append(layer)
            if i < len(layer.inputs):
                stack.append((layer, i + 1))
                src = layer.inputs[i].layer
                if state.get(id(src)) == 1:
                    start = next(k for k, l in enumerate(path) if l is src)
                    return list(reversed(path[start:] + [src]))
                if id(src) not in state:
                    stack.append((src, 0))
            else:
                state[id(layer)] = 2
                path.pop()
    return None


# -- one layer ---------------------------------------------------------------

def _check_layer(layer) -> list[str]:
    kind, t = layer.kind, layer.type
    n_in, want_in = len(layer.inputs), NUM_INPUTS[t]
    if (want_in is None and n_in < 1) or (want_in is not None and n_in != want_in):
        return [f"takes {want_in if want_in is not None else 'one or more'} inputs, got {n_in}"]
    if len(layer.outputs) != NUM_OUTPUTS[t]:
        return [f"has {NUM_OUTPUTS[t]} outputs, got {len(layer.outputs)}"]
    if kind.descriptor is not None and not isinstance(layer.desc, kind.descriptor):
        return [f"descriptor is {type(layer.desc).__name__}, expected {kind.descriptor.__name__}"]

    problems = _out_of_range(layer)
    required = [k for k in kind.tensors if k not in kind.optional]
    if getattr(layer.desc, "bias_enabled", False):
        required.append("biases")
    elif "biases" in layer.tensors:
        problems.append("has biases but bias_enabled is false (Arm NN would ignore them)")
    problems += [f"missing constant tensor '{k}'" for k in required if k not in layer.tensors]
    problems += [f"unexpected constant tensor '{k}' ({t.name} has {list(kind.tensors) or 'none'})"
                 for k in layer.tensors if k not in kind.tensors]
    for k, ct in layer.tensors.items():
        problems += _check_quant(ct.info, f"constant '{k}'")
    for i, info in enumerate(layer.outputs):
        problems += _check_quant(info, f"output {i}")
        if any(d < 1 for d in info.shape):
            problems.append(f"output {i} {info} has an empty dimension")
    if problems:
        return problems

    ins = [p.info for p in layer.inputs]
    problems += _RULES.get(t, _no_rule)(layer, ins)
    if t in BINARY_LAYERS or t == LayerType.Merger:
        if len({i.dtype for i in ins}) > 1:
            problems.append(f"inputs mix data types {[i.dtype.name for i in ins]}; Arm NN needs them equal")
    if problems or t == LayerType.Input:
        return problems
    try:
        expected = infer_outputs(layer)
    except GraphError as e:
        msg = str(e)
        return [msg[len(layer.name) + 2:] if msg.startswith(f"{layer.name}: ") else msg]
    for i, (got, exp) in enumerate(zip(layer.outputs, expected)):
        if got.shape != exp.shape or got.dtype != exp.dtype:
            problems.append(f"output {i} is {got}, but its inputs give {exp.shape} {exp.dtype.name}")
    return problems


def _beyond_target(layer, target) -> list[str]:
    """What the target release's format cannot hold: the layer type itself, or a descriptor
    field set away from its default that the format does not have (the writer skips such a
    field, so its value would be lost; in 19.02 convolutions, a runtime would read it as a
    dilation), or an enum value the format lacks."""
    if not target.has(layer.type):
        return [f"is not in the Arm NN {target} format (it needs --target {since(layer.type)} or later)"]
    tensors = _tensor_beyond_target(layer, target)
    if tensors:
        return tensors
    desc = layer.desc
    later, enums = _fields_of(type(desc))[0]
    if not later and not enums:
        return []

    def show(v):
        return v.name if isinstance(v, IntEnum) else repr(v)

    def why(f):
        if layer.type in _CONV and f.name in ("bias_enabled", "data_layout"):
            return "its 19.02 slot is read as a dilation by Arm NN 19.05 and later"
        return "the format has no such field"
    return [f"descriptor field '{f.name}' is {show(getattr(desc, f.name))}; it is not written in the Arm NN "
            f"{target} format ({why(f)}; --target {since(f)} writes it), so it must keep its default "
            f"{show(f.default)}"
            for f in later if not target.has(f) and getattr(desc, f.name) != f.default] + \
        [f"descriptor field '{f.name}' is {show(getattr(desc, f.name))}, which the Arm NN {target} format "
         f"lacks (--target {since(getattr(desc, f.name))} has it)"
         for f in enums if not target.has(getattr(desc, f.name))]


def _tensor_beyond_target(layer, target) -> list[str]:
    """Data types and per-axis quantization that the target's TensorInfo cannot hold."""
    problems = []
    for what, info in _named_infos(layer):
        if not target.has(info.dtype):
            problems.append(f"{what} is {info.dtype.name}, which the Arm NN {target} format lacks "
                            f"(--target {since(info.dtype)} has it)")
        elif info.scales is not None and not target.at_least("20.08"):
            problems.append(f"{what} has per-axis quantization, which the Arm NN {target} format lacks "
                            "(--target 20.08 has it)")
    return problems


class _Name:
    """The name of a layer's output or constant in a message, made only when one is written."""
    __slots__ = ("kind", "key")

    def __init__(self, kind, key):
        self.kind, self.key = kind, key

    def __str__(self):
        return f"output {self.key}" if self.kind else f"constant '{self.key}'"

    __format__ = lambda self, spec: format(str(self), spec)  # noqa: E731


def _named_infos(layer):
    """(name, TensorInfo) of every output and constant of `layer`."""
    for i, info in enumerate(layer.outputs):
        yield _Name(True, i), info
    for k, ct in layer.tensors.items():
        yield _Name(False, k), ct.info


UINT32, INT32 = (0, (1 << 32) - 1), (-(1 << 31), (1 << 31) - 1)
# The only signed scalar descriptor fields of the schema (StridedSliceDescriptor);
# vector fields name their element type in their metadata.
_SIGNED = {"begin_mask", "end_mask", "shrink_axis_mask", "ellipsis_mask", "new_axis_mask",
           "axis"}  # (ArgMinMaxDescriptor, LogSoftmaxDescriptor: int)
_FIELDS: dict[type, tuple] = {}


def _fields_of(cls) -> tuple:
    """((fields a later format added, enum-valued fields), [(name, signed range for scalars,
    int32 elements for tuples)]) of a descriptor class, worked out once per class (verify()
    visits every layer)."""
    got = _FIELDS.get(cls)
    if got is None:
        if not dataclasses.is_dataclass(cls):
            got = (((), ()), ())
        else:
            fs = dataclasses.fields(cls)
            hints = typing.get_type_hints(cls)
            later = tuple(f for f in fs if since(f) != "19.02")
            enums = tuple(f for f in fs if isinstance(hints[f.name], type) and issubclass(hints[f.name], IntEnum))
            got = ((later, enums),
                   tuple((f.name, INT32 if f.name in _SIGNED else UINT32,
                          INT32 if f.metadata.get("elem") == "int32" else UINT32) for f in fs))
        _FIELDS[cls] = got
    return got


def _out_of_range(layer) -> list[str]:
    """Integers the schema stores as uint32 or int32 (descriptor fields, tensor
    dimensions, quantization offsets) must fit, or the writer cannot store them."""
    def bad(values, rng):
        return [v for v in values if not rng[0] <= v <= rng[1]]
    problems = []
    for name, scalar_rng, elem_rng in _fields_of(type(layer.desc))[1]:
        v = getattr(layer.desc, name)
        if isinstance(v, (IntEnum, bool, float)):
            continue  # enums and booleans are coerced on construction; floats are float32
        if isinstance(v, int):
            if scalar_rng[0] <= v <= scalar_rng[1]:
                continue  # (most fields: no list to build)
            rng = scalar_rng
            values = [v]
        elif isinstance(v, tuple):
            rng = elem_rng
            values = [x for e in v for x in (e if isinstance(e, tuple) else (e,))]
        else:
            continue
        out = bad(values, rng)
        if out:
            problems.append(f"descriptor field '{name}' holds {out[0]}, outside the schema's "
                            f"{'int32' if rng == INT32 else 'uint32'} range")
    for what, info in _named_infos(layer):
        if info.shape and (min(info.shape) < 0 or max(info.shape) > UINT32[1]):
            problems.append(f"{what} shape {info.shape} has a dimension outside the uint32 range")
        if not INT32[0] <= info.offset <= INT32[1]:
            problems.append(f"{what} quantization offset {info.offset} is outside the int32 range")
    return problems


def _check_quant(info: TensorInfo, what: str) -> list[str]:
    if not info.dtype.is_quantized:
        return []  # Arm NN ignores scale/offset of other types (bias scale is checked apart)
    problems = []
    if info.scales is not None:
        return _check_per_axis(info, what)
    if not (math.isfinite(info.scale) and info.scale > 0):
        problems.append(f"{what} is {info.dtype.name} with scale {info.scale}; it must be finite and > 0")
    lo, hi = {DataType.QAsymmS8: (-128, 127), DataType.QSymmS8: (0, 0)}.get(info.dtype, (0, 255))
    if not lo <= info.offset <= hi:
        problems.append(f"{what} is {info.dtype.name} with offset {info.offset}; it must be in {lo}..{hi}")
    return problems


def _check_per_axis(info: TensorInfo, what: str) -> list[str]:
    """WorkloadData.cpp ValidatePerAxisQuantization*: dimension 0, offset 0, one scale per index
    of that dimension (the one exception, depthwise weights, is checked by its layer)."""
    problems = []
    if not all(math.isfinite(v) and v > 0 for v in info.scales):
        problems.append(f"{what} has per-axis scales that are not all finite and > 0")
    if info.quant_dim != 0 or info.offset != 0:
        problems.append(f"{what} has per-axis quantization on dimension {info.quant_dim} with offset "
                        f"{info.offset}; Arm NN takes dimension 0 and offset 0 only")
    return problems


def _no_rule(layer, ins):
    return []


def _bias_dtype(dtype: DataType) -> DataType:
    # WorkloadData.cpp GetBiasDataType
    return DataType.Signed32 if dtype.is_quantized else dtype


def _weighted(layer, ins):
    """Convolution2d, DepthwiseConvolution2d, FullyConnected: weight and bias shapes and types."""
    x, w = ins[0], layer.tensors["weights"].info
    d = layer.desc
    if layer.type in _CONV:
        if x.rank != 4 or w.rank != 4:
            return [f"needs a 4-D input and 4-D weights, got input {x.shape} and weights {w.shape}"]
        if d.stride_x < 1 or d.stride_y < 1:
            return [f"strides ({d.stride_x}, {d.stride_y}) must be >= 1"]
        c = x.shape[hw_axes(d.data_layout)[0]]
        if layer.type == LayerType.DepthwiseConvolution2d:
            w_in, out_c, wname = w.shape[1], w.shape[0] * w.shape[1], "[M, C, kH, kW]"
        elif d.data_layout == DataLayout.NCHW:
            w_in, out_c, wname = w.shape[1], w.shape[0], "[O, I, kH, kW]"
        else:
            w_in, out_c, wname = w.shape[3], w.shape[0], "[O, kH, kW, I]"
        if w_in != c:
            return [f"weights {w.shape} ({wname}) are for {w_in} input channels, the input {x.shape} "
                    f"has {c} ({d.data_layout.name})"]
    else:
        if w.rank != 2:
            return [f"weights must be 2-D, got {w.shape}"]
        if x.rank not in (2, 4):
            return [f"input must have 2 or 4 dimensions, got {x.shape}"]
        n_in = math.prod(x.shape[1:])
        w_in, out_c = (w.shape[1], w.shape[0]) if d.transpose_weights_matrix else w.shape
        if w_in != n_in:
            layout = "[O, I]" if d.transpose_weights_matrix else "[I, O]"
            return [f"weights {w.shape} ({layout}) take {w_in} inputs, the input {x.shape} gives {n_in}"]
    problems = []
    if w.scales is not None:
        return problems + _per_axis_weighted(layer, x, w, out_c)
    if x.dtype.is_quantized:
        if w.dtype != DataType.QuantisedAsymm8:
            problems.append(f"weights are {w.dtype.name}; a quantized input needs QuantisedAsymm8 weights")
    elif w.dtype != x.dtype:
        problems.append(f"weights are {w.dtype.name}, the input is {x.dtype.name}; they must match")
    if "biases" in layer.tensors:
        b = layer.tensors["biases"].info
        if b.shape != (out_c,):
            problems.append(f"biases must be 1-D of the {out_c} output channels, got {b.shape}")
        if b.dtype != _bias_dtype(x.dtype):
            problems.append(f"biases are {b.dtype.name}; a {x.dtype.name} input needs "
                            f"{_bias_dtype(x.dtype).name} biases")
        elif x.dtype.is_quantized:
            want = float(x.scale * w.scale)
            # Arm NN allows 1e-6 absolute; the relative bound matters for small scales.
            err = abs(b.scale - want)
            if b.offset != 0 or err > 1e-6 or err > 1e-5 * want:
                problems.append(f"biases have quantization ({b.scale:g}, {b.offset}); they must be "
                                f"(input scale * weight scale = {want:g}, 0)")
    return problems


def _batchnorm(layer, ins):
    x, d = ins[0], layer.desc
    if x.rank != 4:
        return [f"needs a 4-D input, got {x.shape}"]
    c = x.shape[hw_axes(d.data_layout)[0]]
    return [f"'{k}' must be 1-D of the {c} channels ({d.data_layout.name}), got {ct.shape}"
            for k, ct in layer.tensors.items() if ct.shape != (c,)]


def _pool(layer, ins):
    d = layer.desc
    if d.stride_x < 1 or d.stride_y < 1 or d.pool_width < 1 or d.pool_height < 1:
        return [f"pool size ({d.pool_width}, {d.pool_height}) and strides ({d.stride_x}, {d.stride_y}) "
                "must be >= 1"]
    return []


def _permute(layer, ins):
    m = layer.desc.dim_mappings
    if sorted(m) != list(range(ins[0].rank)):
        return [f"dim_mappings {tuple(m)} is not a permutation of 0..{ins[0].rank - 1}"]
    return []


def _strided_slice(layer, ins):
    d, rank = layer.desc, ins[0].rank
    lens = (len(d.begin), len(d.end), len(d.stride))
    if lens != (rank,) * 3:
        return [f"begin/end/stride have lengths {lens}; the input {ins[0].shape} needs {rank} each"]
    if 0 in d.stride:
        return [f"stride {d.stride} contains 0"]
    x, y = ins[0], layer.outputs[0]
    if x.dtype.is_quantized and y.dtype.is_quantized and (x.scale, x.offset) != (y.scale, y.offset):
        # StridedSliceQueueDescriptor::Validate: ValidateTensorQuantizationSpace
        return [f"output quantization ({y.scale:g}, {y.offset}) differs from the input's "
                f"({x.scale:g}, {x.offset}); Arm NN requires them equal"]
    return []


def _reshape(layer, ins):
    target = tuple(layer.desc.target_shape)
    if math.prod(target) != ins[0].num_elements:
        return [f"target shape {target} has {math.prod(target)} elements, "
                f"the input {ins[0].shape} has {ins[0].num_elements}"]
    return []


def _gather(layer, ins):
    if ins[1].dtype != DataType.Signed32:
        return [f"indices (input 1) are {ins[1].dtype.name}; Arm NN needs Signed32"]
    return []


def _merger(layer, ins):
    d, rank = layer.desc, ins[0].rank
    if d.num_views != len(ins):
        return [f"num_views is {d.num_views}, but it has {len(ins)} inputs"]
    if d.num_dimensions != rank:
        return [f"num_dimensions is {d.num_dimensions}, the inputs have rank {rank}"]
    if not 0 <= d.concat_axis < rank:
        return [f"concat_axis {d.concat_axis} is out of range for rank {rank}"]
    if any(i.rank != rank for i in ins):
        return [f"inputs have different ranks: {[i.shape for i in ins]}"]
    want, at = [], 0
    for i in ins:
        want.append(tuple(at if k == d.concat_axis else 0 for k in range(rank)))
        at += i.shape[d.concat_axis]
    if tuple(d.view_origins) != tuple(want):
        return [f"view_origins {tuple(d.view_origins)} do not match the inputs; "
                f"concatenating along axis {d.concat_axis} needs {tuple(want)}"]
    return []


def _quantize_rule(layer, ins):
    """RefLayerSupport IsQuantizeSupported / IsDequantizeSupported (20.08)."""
    # (the file can hold any input type; what CpuRef runs is in tests/layer_cases.py)
    x, y = ins[0], layer.outputs[0]
    if layer.type == LayerType.Quantize and not y.dtype.is_quantized:
        return [f"output is {y.dtype.name}; Quantize gives a quantized tensor"]
    return []


_RULES = {
    LayerType.Quantize: _quantize_rule, LayerType.Dequantize: _quantize_rule,
    LayerType.Convolution2d: _weighted, LayerType.DepthwiseConvolution2d: _weighted,
    LayerType.FullyConnected: _weighted, LayerType.BatchNormalization: _batchnorm,
    LayerType.Pooling2d: _pool, LayerType.Permute: _permute, LayerType.StridedSlice: _strided_slice,
    LayerType.Reshape: _reshape, LayerType.Gather: _gather, LayerType.Merger: _merger,
}


def _per_axis_weighted(layer, x, w, out_c) -> list[str]:
    """Per-axis QSymmS8 weights (20.08 on): a quantized input and output of one type, one weight
    scale per output channel (depthwise [M, C, kH, kW]: C * M, in output order c * M + m, which
    CpuRef's ConvImpl indexes by output channel), and a Signed32 bias with per-axis scales
    input scale * weight scale."""
    y = layer.outputs[0]
    problems = []
    if w.dtype != DataType.QSymmS8 or not x.dtype.is_quantized or x.dtype != y.dtype:
        problems.append(f"per-axis {w.dtype.name} weights need QSymmS8 weights and a quantized input and "
                        f"output of one type (input {x.dtype.name}, output {y.dtype.name})")
    if len(w.scales) != out_c:
        problems.append(f"weights have {len(w.scales)} per-axis scales for {out_c} output channels")
    b = layer.tensors.get("biases")
    if b is not None:
        b = b.info
        want = [float(x.scale) * s for s in w.scales]
        if (b.dtype != DataType.Signed32 or b.scales is None or b.shape != (out_c,) or len(b.scales) != out_c
                or any(abs(g - v) > max(1e-6, 1e-5 * v) for g, v in zip(b.scales, want))):
            problems.append(f"biases must be Signed32 [{out_c}] with per-axis scales input scale * weight "
                            f"scale, got {b}")
    return problems
