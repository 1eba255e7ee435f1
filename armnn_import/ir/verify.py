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
    layers = graph.layers
    names = [l.name for l in layers]
    problems = [] if len(set(names)) == len(names) else \
        [f"layer name {name!r} is used by {n} layers" for name, n in Counter(names).items() if n > 1]
    pos = {id(l): i for i, l in enumerate(layers)}
    late = []  # (layer, position, the first input defined after it, its position)
    for i, layer in enumerate(layers):
        first_late = None
        for j, p in enumerate(layer.inputs):
            src = p.layer
            k = pos.get(id(src))
            if k is None:
                problems.append(f"layer {layer.name!r} input {j} comes from layer {src.name!r}, "
                                "which is not in the graph")
            elif not 0 <= p.slot < len(src.outputs):
                problems.append(f"layer {layer.name!r} input {j} uses output {p.slot} of {src.name!r}, "
                                f"which has {len(src.outputs)} outputs")
            elif k > i and first_late is None:
                first_late = (layer, i, src, k)
        if first_late is not None:
            late.append(first_late)
    if problems:
        return problems
    for layer, i, src, k in late:
        problems.append(f"layer {layer.name!r} (position {i}) uses {src.name!r} "
                        f"(position {k}) before it is defined; the layers are "
                        "not in topological order (graph.toposort())")
    # A cycle is reported instead of the order; layers in topological order (no problem
    # above) have none, so the search runs only when the order is broken.
    cycle = _find_cycle(graph) if problems else None
    if cycle:
        return ["cycle: " + " -> ".join(repr(l.name) for l in cycle)]
    io = {LayerType.Input: [], LayerType.Output: []}
    bound = []  # layers other than Input and Output with a binding id
    for l in layers:
        group = io.get(l.type)
        if group is not None:
            group.append(l)
        elif l.binding_id is not None:
            bound.append(l)
    for t in (LayerType.Input, LayerType.Output):
        ids = [l.binding_id for l in io[t]]
        if any(not isinstance(b, int) for b in ids) or sorted(ids) != list(range(len(ids))):
            problems.append(f"{t.name} binding ids are {ids}; expected 0..{len(ids) - 1}, each once "
                            f"(layers {[l.name for l in io[t]]})")
    for l in bound:
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
    tensors = layer.tensors
    if kind.tensors or tensors:
        required = _required(t, kind)
        if getattr(layer.desc, "bias_enabled", False) and "biases" in kind.tensors:  # (Convolution3d: an input)
            required = required + ["biases"]
        elif "biases" in tensors:
            problems.append("has biases but bias_enabled is false (Arm NN would ignore them)")
        problems += [f"missing constant tensor '{k}'" for k in required if k not in tensors]
        problems += [f"unexpected constant tensor '{k}' ({t.name} has {list(kind.tensors) or 'none'})"
                     for k in tensors if k not in kind.tensors]
        for k, ct in tensors.items():
            if ct.info.dtype in _QUANTIZED:
                problems += _check_quant(ct.info, f"constant '{k}'")
    for i, info in enumerate(layer.outputs):
        if info.dtype in _QUANTIZED:
            problems += _check_quant(info, f"output {i}")
        if info.shape and min(info.shape) < 1:
            problems.append(f"output {i} {info} has an empty dimension")
    if problems:
        return problems

    ins = [p.info for p in layer.inputs]
    problems += _RULES.get(t, _no_rule)(layer, ins)
    if t in BINARY_LAYERS or t in (LayerType.Merger, LayerType.Concat):
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


_QUANTIZED = frozenset(t for t in DataType if t.is_quantized)
_REQUIRED: dict = {}


def _required(t, kind) -> list[str]:
    """The constant tensors a layer type must have (a new list: the caller may extend it)."""
    got = _REQUIRED.get(t)
    if got is None:
        got = _REQUIRED[t] = tuple(k for k in kind.tensors if k not in kind.optional)
    return list(got)


def _beyond_target(layer, target) -> list[str]:
    """What the target release's format cannot hold: the layer type itself, or a descriptor
    field set away from its default that the format does not have (the writer skips such a
    field, so its value would be lost; in 19.02 convolutions, a runtime would read it as a
    dilation), or an enum value the format lacks."""
    plan = _target_plan(target)
    if layer.type not in plan[0]:
        return [f"is not in the Arm NN {target} format (it needs --target {since(layer.type)} or later)"]
    tensors = _tensor_beyond_target(layer, target)
    if tensors:
        return tensors
    desc = layer.desc
    fields = plan[2].get(type(desc))
    if fields is None:
        later, enums = _fields_of(type(desc))[0]
        fields = plan[2][type(desc)] = (tuple(f for f in later if not target.has(f)), enums)
    if not any(getattr(desc, f.name) != f.default for f in fields[0]) and \
            all((type(v), v) in plan[1] for v in (getattr(desc, f.name) for f in fields[1])):
        return []  # (nearly every layer: no field the format lacks is set, every enum value is in it)
    later, enums = _fields_of(type(desc))[0]

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
    ok, per_axis = _target_types(target)
    if all(i.dtype in ok and (per_axis or i.scales is None) for i in layer.outputs) and \
            all(ct.info.dtype in ok and (per_axis or ct.info.scales is None) for ct in layer.tensors.values()):
        return []  # (nearly every layer: no message to build)
    problems = []
    for what, info in _named_infos(layer):
        if not target.has(info.dtype):
            problems.append(f"{what} is {info.dtype.name}, which the Arm NN {target} format lacks "
                            f"(--target {since(info.dtype)} has it)")
        elif info.scales is not None and not target.at_least("20.08"):
            problems.append(f"{what} has per-axis quantization, which the Arm NN {target} format lacks "
                            "(--target 20.08 has it)")
    return problems


_TARGET_TYPES: dict = {}
_TARGET_PLANS: dict = {}


def _target_plan(target) -> tuple:
    """(the layer types the target's format has, the (enum type, value) pairs it has,
    {descriptor class: (the fields the format lacks, the enum fields)}), per release."""
    got = _TARGET_PLANS.get(target.release)
    if got is None:
        from . import types as T
        enums = [v for v in vars(T).values() if isinstance(v, type) and issubclass(v, IntEnum) and v is not IntEnum]
        got = _TARGET_PLANS[target.release] = (
            frozenset(t for t in LayerType if target.has(t)),
            frozenset((e, m) for e in enums for m in e if target.has(m)), {})
    return got


def _target_types(target) -> tuple:
    """(the data types the target's format has, whether it has per-axis quantization)."""
    got = _TARGET_TYPES.get(target.release)
    if got is None:
        got = _TARGET_TYPES[target.release] = (frozenset(t for t in DataType if target.has(t)),
                                               target.at_least("20.08"))
    return got


class _Name:
    """The name of a layer's output or constant in a message, made only when one is written."""
    __slots__ = ("kind", "key")

    def __init__(self, kind, key):
        self.kind, self.key = kind, key

    def __str__(self):
        return f"output {self.key}" if self.kind else f"constant '{self.key}'"

    __format__ = lambda self, spec: format(str(self), spec)  # noqa: E731


def _infos(layer):
    """The TensorInfo of every output and constant of `layer` (as _named_infos, unnamed)."""
    if not layer.tensors:
        return layer.outputs
    return [*layer.outputs, *(ct.info for ct in layer.tensors.values())]


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
    desc = layer.desc
    for name, scalar_rng, elem_rng in _fields_of(type(desc))[1]:
        v = getattr(desc, name)
        tv = type(v)
        if tv is int and scalar_rng[0] <= v <= scalar_rng[1]:
            continue  # (exactly int: neither a bool nor an enum; most fields)
        if tv is tuple and all(type(e) is int and elem_rng[0] <= e <= elem_rng[1] for e in v):
            continue  # (a vector of ints in range)
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
    lo, hi = INT32
    if all((not i.shape or (min(i.shape) >= 0 and max(i.shape) <= UINT32[1])) and lo <= i.offset <= hi
           for i in _infos(layer)):
        return problems  # (nearly every layer: no message to build)
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
        if w.dtype != (DataType.QAsymmS8 if x.dtype == DataType.QAsymmS8 else DataType.QuantisedAsymm8):
            problems.append(f"weights are {w.dtype.name}; a {x.dtype.name} input needs weights of its type")
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


def _lstm_tensors(layer) -> dict[str, tuple]:
    """The constant tensors an LSTM layer's flags call for, with their shapes given the
    cell size C, the input size I and the output size O (as strings to fill in)."""
    d = layer.desc
    want = {f"{a}_to_{g}_weights": ("C", "I" if a == "input" else "O")
            for a in ("input", "recurrent") for g in ("forget", "cell", "output")}
    want.update({f"{g}_bias": ("C",) for g in ("forget_gate", "cell", "output_gate")})
    if not d.cifg_enabled:
        want.update({"input_to_input_weights": ("C", "I"), "recurrent_to_input_weights": ("C", "O"),
                     "input_gate_bias": ("C",)})
        if d.peephole_enabled or layer.type == LayerType.Lstm:
            # (20.08's ParseLstm reads cellToInputWeights whenever CIFG is off, peepholes or not)
            want["cell_to_input_weights"] = ("C",)
    if d.peephole_enabled:
        want.update({"cell_to_forget_weights": ("C",), "cell_to_output_weights": ("C",)})
    if d.projection_enabled:  # (both releases' deserializers read the bias whenever projection is on)
        want.update({"projection_weights": ("O", "C"), "projection_bias": ("O",)})
    if d.layer_norm_enabled:
        want.update({f"{g}_layer_norm_weights": ("C",) for g in ("forget", "cell", "output")})
        if not d.cifg_enabled:
            want["input_layer_norm_weights"] = ("C",)
    return want


def _lstm_rule(layer, ins):
    """LstmLayer / UnidirectionalSequenceLstmLayer (ValidateTensorShapesFromInputs, LstmQueueDescriptor
    Validate) on float32: the tensors the flags need, of matching shapes; an activation code
    LstmUtils knows."""
    d, problems = layer.desc, []
    if d.activation_func not in (0, 1, 3, 4, 6):
        problems.append(f"activation_func {d.activation_func} is not one of LstmUtils' 0, 1, 3, 4, 6")
    rank = 2 if layer.type == LayerType.Lstm else 3
    x, h, c = ins
    if x.rank != rank or h.rank != 2 or c.rank != 2:
        return problems + [f"inputs are {x.shape}, {h.shape}, {c.shape}; expected rank {rank}, 2, 2"]
    types = {i.dtype for i in ins} | {t.info.dtype for t in layer.tensors.values()}
    if len(types) != 1 or not types <= {DataType.Float32, DataType.Float16}:
        problems.append(f"inputs and constants are {sorted(t.name for t in types)}; one float type "
                        "(Float32 or Float16) is taken")
    want = _lstm_tensors(layer)
    problems += [f"missing constant tensor '{k}'" for k in want if k not in layer.tensors]
    problems += [f"constant tensor '{k}' is not used with these flags" for k in layer.tensors if k not in want]
    if problems:
        return problems
    cells = layer.tensors["input_to_output_weights"].info.shape[0]
    batch = x.shape[1] if getattr(d, "time_major", False) else x.shape[0]
    sizes = {"C": cells, "I": x.shape[-1], "O": h.shape[1]}
    for k, dims in want.items():
        shape = tuple(sizes[v] for v in dims)
        if layer.tensors[k].info.shape != shape:
            problems.append(f"constant '{k}' is {layer.tensors[k].info.shape}, expected {shape}")
    if h.shape != (batch, sizes["O"]) or c.shape != (batch, cells):
        problems.append(f"states {h.shape} and {c.shape} do not fit batch {batch}, output {sizes['O']} "
                        f"and {cells} cells")
    if not d.projection_enabled and sizes["O"] != cells:
        problems.append(f"output size {sizes['O']} differs from the {cells} cells without a projection")
    return problems


_RULES.update({LayerType.Lstm: _lstm_rule, LayerType.UnidirectionalSequenceLstm: _lstm_rule})


def _layout_5d(layer, ins):
    if layer.desc.data_layout not in (DataLayout.NDHWC, DataLayout.NCDHW):
        return [f"data_layout {layer.desc.data_layout.name}; a 3-D layer takes NDHWC or NCDHW"]
    if ins[0].rank != 5:
        return [f"input is {ins[0].shape}, not 5-D"]
    return []


def _conv3d_rule(layer, ins):
    """Convolution3d (23.08): input, weights [kD, kH, kW, I, O] and, with bias_enabled, a bias [O],
    of one float type (the weights as inputs: Convolution3dDescriptor::GetNumInputs)."""
    d, problems = layer.desc, _layout_5d(layer, ins)
    if problems:
        return problems
    want = 3 if d.bias_enabled else 2
    if len(ins) != want:
        return [f"takes {want} inputs (input, weights{', bias' if d.bias_enabled else ''}), got {len(ins)}"]
    x, w = ins[0], ins[1]
    cin = x.shape[1 if d.data_layout == DataLayout.NCDHW else 4]
    if w.rank != 5 or w.shape[3] != cin:
        problems.append(f"weights {w.shape} are not [kD, kH, kW, {cin}, O]")
    elif d.bias_enabled and ins[2].shape != (w.shape[4],):
        problems.append(f"bias {ins[2].shape} is not [{w.shape[4]}]")
    y = layer.outputs[0]
    if x.dtype in (DataType.Float32, DataType.Float16):
        if len({i.dtype for i in ins} | {y.dtype}) != 1:
            problems.append(f"inputs are {[i.dtype.name for i in ins]}; one float type is taken")
    elif not (x.dtype.is_quantized and y.dtype == x.dtype and w.dtype.is_quantized
              and (not d.bias_enabled or ins[2].dtype == DataType.Signed32)):
        problems.append(f"inputs are {[i.dtype.name for i in ins]}: a quantized input takes quantized weights "
                        "and a Signed32 bias (RefLayerSupport IsConvolution3dSupported)")
    if min(d.stride_x, d.stride_y, d.stride_z, d.dilation_x, d.dilation_y, d.dilation_z) < 1:
        problems.append("strides and dilations must be at least 1")
    return problems


def _pool3d_rule(layer, ins):
    d, problems = layer.desc, _layout_5d(layer, ins)
    if min(d.stride_x, d.stride_y, d.stride_z, d.pool_width, d.pool_height, d.pool_depth) < 1:
        problems.append("pool sizes and strides must be at least 1")
    return problems


_RULES.update({LayerType.Convolution3d: _conv3d_rule, LayerType.Pooling3d: _pool3d_rule})
# -- the 23.08 format's layers (WorkloadData.cpp and the layers' ValidateTensorShapesFromInputs, 23.08)

def _reduce_rule(layer, ins):
    x, axes = ins[0], tuple(layer.desc.axis)
    if not 1 <= x.rank <= 4:
        return [f"input is {x.rank}-D; Arm NN's Reduce takes 1 to 4 dimensions"]
    if len(set(axes)) != len(axes) or any(a >= x.rank for a in axes):
        return [f"axes {axes} must be distinct dimensions of the rank-{x.rank} input"]
    return []


def _logical_rule(layer, ins):
    if any(i.dtype != DataType.Boolean for i in ins):
        return [f"inputs are {[i.dtype.name for i in ins]}; LogicalBinary takes Boolean tensors"]
    return []


def _reverse_rule(layer, ins):
    x, axes = ins
    if x.rank > 4:
        return [f"input is {x.rank}-D; Arm NN's ReverseV2 takes at most 4 dimensions"]
    if axes.dtype != DataType.Signed32 or axes.rank != 1 or axes.shape[0] > x.rank:
        return [f"axes input is {axes}; ReverseV2 takes a 1-D Signed32 tensor of at most {x.rank} axes"]
    return []


def _tile_rule(layer, ins):
    m = tuple(layer.desc.m_multiples)
    if len(m) != ins[0].rank or any(k < 1 for k in m):
        return [f"multiples {m} must be one positive number per input dimension ({ins[0].rank})"]
    return []


_RULES.update({LayerType.Reduce: _reduce_rule, LayerType.LogicalBinary: _logical_rule,
               LayerType.ReverseV2: _reverse_rule, LayerType.Tile: _tile_rule})


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


def _transpose(layer, ins):
    m = layer.desc.dim_mappings
    if sorted(m) != list(range(ins[0].rank)):
        return [f"dim_mappings {tuple(m)} is not a permutation of 0..{ins[0].rank - 1}"]
    return []


def _resize(layer, ins):
    d = layer.desc
    if ins[0].rank != 4:
        return [f"needs a 4-D input, got {ins[0].shape}"]
    if d.align_corners and d.half_pixel_centers:  # Resize.cpp asserts they are not both set
        return ["align_corners and half_pixel_centers are both set; Arm NN takes at most one"]
    if d.target_height < 1 or d.target_width < 1:
        return [f"target size {d.target_height}x{d.target_width} is empty"]
    return []


def _pad(layer, ins):
    """PadQueueDescriptor: one (before, after) pair per dimension; MirrorPad.cpp (23.08): a
    reflected pad at most the dimension - 1, a symmetric one at most the dimension."""
    from .types import PaddingMode
    d, shape = layer.desc, ins[0].shape
    if len(d.pad_list) != 2 * len(shape):
        return [f"pad_list has {len(d.pad_list)} entries for a rank-{len(shape)} input"]
    if d.padding_mode != PaddingMode.Constant:
        edge = 1 if d.padding_mode == PaddingMode.Reflect else 0
        if any(v > n - edge for i, n in enumerate(shape) for v in d.pad_list[2 * i:2 * i + 2]):
            return [f"{d.padding_mode.name} padding {d.pad_list} is larger than the input {shape} allows"]
    return []


def _four_d(layer, ins):
    return [] if ins[0].rank == 4 else [f"needs a 4-D input, got {ins[0].shape}"]


_RULES.update({LayerType.Concat: _merger, LayerType.Transpose: _transpose, LayerType.Resize: _resize,
               LayerType.Pad: _pad, LayerType.InstanceNormalization: _four_d})
# -- the 23.08 format: Cast and BatchMatMul (gather worktree) --------------------------------
def _cast_rule(layer, ins):
    """CastQueueDescriptor::Validate (23.08): no Boolean on either side."""
    x, y = ins[0], layer.outputs[0]
    if DataType.Boolean in (x.dtype, y.dtype):
        return [f"casts {x.dtype.name} to {y.dtype.name}; Arm NN's Cast takes no Boolean"]
    return []


def _batch_matmul_rule(layer, ins):
    """BatchMatMulQueueDescriptor::Validate (23.08): float or quantized inputs and output of one
    type; transpose and adjoint not both set."""
    d, y = layer.desc, layer.outputs[0]
    if len({i.dtype for i in ins} | {y.dtype}) > 1 or y.dtype in (DataType.Signed32, DataType.Boolean):
        return [f"inputs {[i.dtype.name for i in ins]} and output {y.dtype.name}: BatchMatMul needs one "
                "float or quantized type"]
    if (d.transpose_x and d.adjoint_x) or (d.transpose_y and d.adjoint_y):
        return ["transpose and adjoint cannot both be set for one input"]
    return []


_RULES.update({LayerType.Cast: _cast_rule, LayerType.BatchMatMul: _batch_matmul_rule})


def _stack_rule(layer, ins):
    if ins[0].rank > 4:  # Stack.cpp indexes at most 4 input dimensions
        return [f"stacks {ins[0].rank}-D inputs; Arm NN's Stack takes at most 4-D"]
    if len({i.dtype for i in ins}) > 1:
        return [f"inputs mix data types {[i.dtype.name for i in ins]}; Arm NN needs them equal"]
    return []


_RULES[LayerType.Stack] = _stack_rule
