"""verify()'s checks of one layer: the target format, value ranges, quantization, then the
layer type's rule (verify_rules.py, verify_rules_23.py) and its inferred output shapes."""
from __future__ import annotations

import dataclasses
import math
import typing
from enum import IntEnum

from ..errors import GraphError
from .kinds import BINARY_LAYERS, since
from .shapes import NUM_INPUTS, NUM_OUTPUTS, infer_outputs
from .types import DataType, LayerType, TensorInfo
from .verify_rules import RULES as _RULES_A, no_rule
from .verify_rules_23 import RULES as _RULES_B

_CONV = (LayerType.Convolution2d, LayerType.DepthwiseConvolution2d)
_RULES = {**_RULES_A, **_RULES_B}  # layer type -> rule(layer, input infos)


def check_layer(layer) -> list[str]:
    kind, t = layer.kind, layer.type
    n_in, want_in = len(layer.inputs), NUM_INPUTS[t]
    if (want_in is None and n_in < 1) or (want_in is not None and n_in != want_in):
        return [f"takes {want_in if want_in is not None else 'one or more'} inputs, got {n_in}"]
    want_out = NUM_OUTPUTS[t] if NUM_OUTPUTS[t] is not None else len(layer.desc.view_sizes)  # (Splitter)
    if len(layer.outputs) != want_out:
        return [f"has {want_out} outputs, got {len(layer.outputs)}"]
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
    problems += _RULES.get(t, no_rule)(layer, ins)
    if t in BINARY_LAYERS or t in (LayerType.Merger, LayerType.Concat, LayerType.ElementwiseBinary):
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


def beyond_target(layer, target) -> list[str]:
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
        if tv is tuple and (not v or (all([type(e) is int for e in v]) and elem_rng[0] <= min(v)
                                      and max(v) <= elem_rng[1])):
            continue  # (a vector of ints in range; lists and min/max, not a generator: asked per layer)
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
    lo, hi = {DataType.QAsymmS8: (-128, 127), DataType.QSymmS8: (0, 0), DataType.QSymmS16: (0, 0)}.get(
        info.dtype, (0, 255))
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
