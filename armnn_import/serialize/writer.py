"""IR -> .armnn bytes. Mechanical: every decision was made before this point.

Driven by LAYER_KINDS and the descriptor dataclasses; the generated bindings
name every function `<Table>Start`, `<Table>Add<Field>`, `<Table>End`.
Every scalar is written explicitly (ForceDefaults), because newer Arm NN
schemas changed some defaults.
"""
from __future__ import annotations

import dataclasses
import functools
import operator
import struct
import typing
from typing import Iterator

import numpy as np

from ..errors import SerializationError
from ..ir.kinds import LAYER_KINDS, UNION_ORDER, since
from ..ir.kinds import schema_name as _schema_name
from ..ir.graph import Graph
from ..ir.types import ConstTensor, ConstTensorData, LayerType, TensorInfo
from .layouts import WEIGHTS_LAYOUT_SCHEME, depthwise_to_file
from .order import file_order
from . import tables
from .check import FILE_IDENTIFIER, check_file  # noqa: F401 - (check_file: api.py's write check)
from .builder import Builder as _Builder, release_mapped as _release_mapped
from .compiled import compile_table
from . import layer_segments

MAX_BYTES = 2 ** 31 - 1  # FlatBuffers uses signed 32-bit offsets

_STORAGE_DTYPE = {ConstTensorData.ByteData: np.int8, ConstTensorData.ShortData: np.int16,
                  ConstTensorData.IntData: np.int32, ConstTensorData.LongData: np.int64}
STORAGE_DTYPE = _STORAGE_DTYPE  # the element type of each ConstTensorData (reader.py too)


schema_name = functools.lru_cache(maxsize=None)(_schema_name)


def _call(table: str, what: str, b, *args):
    return getattr(b.fb, f"{table}{what}")(b, *args)


_specs = tables.table_specs


def _writer(b, table: str, names: tuple):
    """The compiled writer of `table` with its fields `names` (compiled.compile_table), made once per build."""
    write = b.writers.get((table, names))
    if write is None:
        write = b.writers[(table, names)] = compile_table(*_specs(b, table, names))
    return write


def _table(b, table: str, names: tuple, values) -> int:
    """Write `table` with its fields `names` (schema names) set to `values`, in that order."""
    return _writer(b, table, names)(b, values)


def _vector(b, values, dtype) -> int:
    if isinstance(values, (tuple, list)) and (dtype is np.uint32 or dtype == "uint32" or dtype == "int32"):
        off = tables.small_int_vector(b, values, "uint32" if dtype is np.uint32 else dtype)
        if off is not None:
            return off
    return b.CreateNumpyVector(np.ascontiguousarray(values, dtype=dtype).reshape(-1))


def _tables_vector(b, table: str, field: str, offsets: list[int]) -> int:
    return tables.offsets_vector(b, offsets)


def _tensor_info(b, info: TensorInfo) -> int:
    dims = tables.small_int_vector(b, info.shape, "uint32")  # (_vector's way, without its checks)
    if dims is None:
        dims = _vector(b, info.shape, np.uint32)
    # per-axis scales (slots 4 and 5, the 20.08 format on; verify refuses them for 19.02):
    # Arm NN's deserializer takes a tensor as per-axis when the vector is present
    scales = None if info.scales is None else _vector(b, info.scales, np.float32)
    if scales is None:
        return b.w_tensor_info(b, (dims, int(info.dtype), info.scale, info.offset))
    return _table(b, "TensorInfo", _TENSOR_INFO + ("QuantizationScales", "QuantizationDim"),
                  (dims, int(info.dtype), info.scale, info.offset, scales, info.quant_dim))


_TENSOR_INFO = ("Dimensions", "DataType", "QuantizationScale", "QuantizationOffset")


def _const_tensor(b, t: ConstTensor, arr=None, info=None) -> int:
    """`arr`, `info`: the data (a view) and TensorInfo to write instead of t's own (layouts.py)."""
    elem = np.dtype(_STORAGE_DTYPE[t.storage])
    arr = t.stored if arr is None else arr
    if arr.dtype.itemsize == elem.itemsize and arr.ndim:
        data = b.CreateNumpyVector(arr.view(elem))  # a strided view is copied (transposed) once, here
    else:
        raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        if raw.size % elem.itemsize:
            raise SerializationError(f"{t.info}: {raw.size} bytes do not fill {t.storage.name} elements")
        data = _vector(b, raw.view(elem), elem)
    info = t.info if info is None else info
    off = None if b.segments is None else layer_segments.const_tensor(b, t.storage, info, data)
    if off is not None:
        return off
    data_table = _table(b, t.storage.name, ("Data",), (data,))
    info = _tensor_info(b, info)
    return _table(b, "ConstTensor", ("Info", "DataType", "Data"), (info, int(t.storage), data_table))


def _shared_const(b, t: ConstTensor) -> int:
    """One ConstTensor table per ConstTensor object (the steps of an unrolled recurrent
    layer hold one weight tensor): FlatBuffers tables may be referenced more than once."""
    off = b.consts.get(id(t))
    if off is None:
        off = b.consts[id(t)] = _const_tensor(b, t)
    return off


def _file_tensor(b, layer, k: str) -> int:
    """A layer's constant tensor in the layout the target's format means (layouts.py)."""
    t = layer.tensors[k]
    if layer.type == LayerType.DepthwiseConvolution2d and k == "weights" and b.target.at_least("23.08"):
        key = ("depthwise", id(t))
        if key not in b.consts:
            b.consts[key] = _const_tensor(b, t, *depthwise_to_file(t))
        return b.consts[key]
    return _shared_const(b, t)


def _descriptor_plan(b, cls) -> tuple:
    """(vectors, written, names, write) of a descriptor class for this target: the vector
    fields (those declared as tuples), written first (all of them, as before: a field this
    format lacks still leaves its vector), each with its index among the written fields or
    None; the fields the format has, in order; their schema names; the compiled table writer."""
    plan = b.plans.get(cls)
    if plan is None:
        fs = dataclasses.fields(cls)
        hints = typing.get_type_hints(cls)
        written = [f.name for f in fs if b.target.at_least(since(f))]
        vectors = [(f.name, f.metadata.get("elem", "uint32"), written.index(f.name) if f.name in written else None)
                   for f in fs if typing.get_origin(hints[f.name]) is tuple]
        names = tuple(schema_name(n) for n in written)
        plan = b.plans[cls] = (vectors, operator.attrgetter(*written) if written else None, len(written),
                               _writer(b, cls.__name__, names))
    return plan


def _descriptor(b, desc) -> int:
    vectors, values, n, write = _descriptor_plan(b, type(desc))
    values = [] if n == 0 else [values(desc)] if n == 1 else list(values(desc))
    for name, elem, at in vectors:
        v = getattr(desc, name)
        if name in ("view_origins", "view_sizes"):  # [UintVector]
            subs = [_table(b, "UintVector", ("Data",), (_vector(b, origin, np.uint32),)) for origin in v]
            off = tables.offsets_vector(b, subs)
        elif isinstance(v, tuple):
            off = _vector(b, v, elem)
        else:
            continue
        if at is not None:
            values[at] = off
    if type(desc).__name__ == "ViewsDescriptor":  # (Splitter's: a nested OriginsDescriptor, written first)
        values[0] = _descriptor(b, desc.origins)
    return write(b, values)


def _layer_base(b, layer, index: int, positions: dict[int, int], name: int) -> int:
    slot, connection = b.w_in_slot, tables.connection
    in_slots = [slot(b, (i, connection(positions[id(l)], s))) for i, (l, s) in enumerate(layer.inputs)]
    slot = b.w_out_slot
    out_slots = [slot(b, (i, _tensor_info(b, info))) for i, info in enumerate(layer.outputs)]
    ins = tables.offsets_vector(b, in_slots)
    outs = tables.offsets_vector(b, out_slots)
    return b.w_base(b, (index, name, int(layer.type), ins, outs))


_LAYER_BASE = ("Index", "LayerName", "LayerType", "InputSlots", "OutputSlots")


def _layer_plan(b, ltype) -> tuple:
    """(kind, Input or Output, whether the descriptor is written, the union tag, the AnyLayer
    writer, the descriptor's segment plan, whether the layer goes by segments) of a layer type
    for this build: what _layer asks per layer, worked out once."""
    plan = b.layer_plans.get(ltype)
    if plan is None:
        kind = LAYER_KINDS[ltype]
        with_desc = kind.descriptor is not None and b.target.at_least(kind.descriptor_since)  # (19.02 Gather: none)
        dplan = layer_segments.descriptor_plan(b, kind.descriptor, schema_name) if with_desc else None
        plan = b.layer_plans[ltype] = (
            kind, ltype in (LayerType.Input, LayerType.Output), with_desc,
            b.union[kind.table], _writer(b, "AnyLayer", ("LayerType", "Layer")), dplan,
            b.segments is not None and not kind.params and (dplan is not None or not with_desc))
    return plan


def _layer(b, layer, index: int, positions: dict[int, int]) -> int:
    plan = _layer_plan(b, layer.type)
    kind, bindable, with_desc, union, any_layer, _, by_segments = plan
    name = tables.string(b, layer.name) if type(layer.name) is str else b.CreateString(layer.name)
    got = layer_segments.head(b, layer, index, positions, name, plan) if by_segments else None
    if got is None:
        got = base, = (_layer_base(b, layer, index, positions, name),)
        if bindable:
            got = base, = (_table(b, "BindableLayerBase", ("Base", "LayerBindingId"), (base, layer.binding_id)),)
        if with_desc:
            got = (base, _descriptor(b, layer.desc))
        if not (layer.tensors or kind.params):
            return any_layer(b, (union, _table(b, kind.table, ("Base", "Descriptor")[:len(got)], got)))
    elif not (layer.tensors or kind.params):
        return got[0]  # the segment held the whole layer
    names, values = ["Base", "Descriptor"][:len(got)], list(got)
    if layer.tensors:
        tensors = {k: _file_tensor(b, layer, k) for k in kind.tensors if k in layer.tensors}
        if kind.params:  # the tensors sit in a nested table (LstmInputParams), the layer's inputParams
            tensors = {"input_params": _params_table(b, kind.params, tensors)}
        for k, off in tensors.items():
            names.append(schema_name(k))
            values.append(off)
    elif kind.params:
        names.append(schema_name("input_params"))
        values.append(_params_table(b, kind.params, {}))
    names = tuple(names)
    off = layer_segments.tail(b, layer, names, values, plan) if by_segments else None
    return any_layer(b, (union, _table(b, kind.table, names, values))) if off is None else off


def _params_table(b, table: str, tensors: dict[str, int]) -> int:
    _call(table, "Start", b)
    for k, off in tensors.items():
        _call(table, f"Add{schema_name(k)}", b, off)
    return _call(table, "End", b)


def _feature_versions(b, binding_ids_scheme: int) -> int:
    b.fb.FeatureCompatibilityVersionsStart(b)
    b.fb.FeatureCompatibilityVersionsAddBindingIdsScheme(b, binding_ids_scheme)
    if b.target.at_least("23.08"):
        # Depthwise weights in 23.08's own layout [1, H, W, I*M] (layouts.py): with scheme 0,
        # 23.08 would permute every Constant layer as if it were old-layout depthwise weights.
        # Weights stay inside their layers (constantTensorsAsInputs 0), which 23.08 still reads.
        b.fb.FeatureCompatibilityVersionsAddWeightsLayoutScheme(b, WEIGHTS_LAYOUT_SCHEME)
        b.fb.FeatureCompatibilityVersionsAddConstantTensorsAsInputs(b, 0)
    return b.fb.FeatureCompatibilityVersionsEnd(b)


def write(graph: Graph) -> bytes:
    """Serialize `graph` (already verified and in topological order)."""
    return bytes(write_buffer(graph))


def write_buffer(graph: Graph, *, buffer_size: int | None = None, segments: bool = True) -> memoryview:
    """Like write(), but a view of the builder's buffer (no final copy).
    `buffer_size`: the builder's first buffer (default: estimated); the bytes do not
    depend on it, only how often the buffer grows (the tests vary it). `segments`: False
    writes every table on its own (layer_segments; the same bytes, the tests compare them)."""
    b = _build(graph, buffer_size=buffer_size, segments=segments)
    return memoryview(b.Bytes)[b.Head():]


def write_chunks(graph: Graph, defer_min: int = 1 << 20, *,
                 buffer_size: int | None = None) -> tuple[int, Iterator[memoryview]]:
    """The file's size, and its bytes as consecutive chunks: the builder's buffer between
    the large constants, and each large constant straight from its own array (from the
    memory-mapped model, transposed first if it is a strided view). The same bytes as
    write(), without holding the weights a second time or copying them into the buffer
    (whatever `buffer_size`, see write_buffer)."""
    b = _build(graph, defer_min, buffer_size)
    buf, head = memoryview(b.Bytes), b.Head()

    def chunks():
        pos, end = head, len(buf)
        for off, x in sorted(b.deferred, key=lambda d: -d[0]):  # nearest the front first
            start = end - off
            if not pos <= start <= end - x.nbytes:  # cannot happen: positions are relative to the end
                raise SerializationError(f"internal: a deferred constant at {start} overlaps the one before")
            if start > pos:
                yield buf[pos:start]
            yield memoryview(np.ascontiguousarray(x).reshape(-1).view(np.uint8))
            _release_mapped(x)  # once written (the consumer asked for the next chunk)
            pos = start + x.nbytes
        yield buf[pos:]

    return len(buf) - head, chunks()


def _estimate(graph: Graph, weight_bytes: int) -> int:
    """The buffer size to start with: the weights, the names and ~100 bytes per slot and
    ~500 per layer of tables. Only a guess (descriptor vectors, long shapes, alignment):
    when it is short the buffer grows, which is correct, just slower."""
    layers = graph.layers
    names = len("".join([l.name for l in layers]).encode("utf-8", "surrogatepass"))  # (one encode, not one per name)
    slots = sum([len(l.inputs) + len(l.outputs) for l in layers])
    return weight_bytes + 4096 + 512 * len(layers) + names + 96 * slots


def _build(graph: Graph, defer_min: int | None = None, buffer_size: int | None = None,
           segments: bool = True) -> _Builder:
    unique = {id(t): t for l in graph.layers if l.tensors for t in l.tensors.values()}  # (shared tensors: once)
    weight_bytes = sum(t.stored.nbytes for t in unique.values())
    if weight_bytes > MAX_BYTES - (1 << 20):
        raise SerializationError(
            f"the network's constants take {weight_bytes / 2**30:.2f} GiB, over the 2 GiB FlatBuffers limit; "
            "hint: use --fp16 or a quantized model")
    b = _Builder(_estimate(graph, weight_bytes) if buffer_size is None else buffer_size, defer_min)
    b.ForceDefaults(True)
    b.target, b.fb = graph.target, graph.target.bindings
    b.union = {t: i + 1 for i, t in enumerate(UNION_ORDER)}
    b.layer_plans = {}  # layer type -> _layer_plan
    b.segments, b.programs = ({}, {}) if segments else (None, None)  # (layer_segments)
    b.w_in_slot = _writer(b, "InputSlot", ("Index", "Connection"))
    b.w_out_slot = _writer(b, "OutputSlot", ("Index", "TensorInfo"))
    b.w_base = _writer(b, "LayerBase", _LAYER_BASE)
    b.w_tensor_info = _writer(b, "TensorInfo", _TENSOR_INFO)
    order = file_order(graph)
    positions = dict(zip(map(id, order), range(len(order))))  # id(layer) -> its index in the file
    layers = []
    for i, l in enumerate(order):
        try:
            layers.append(_layer(b, l, i, positions))
        except (TypeError, OverflowError, struct.error) as e:  # a value the schema's type cannot hold
            raise SerializationError(f"layer {l.name!r} ({l.type.name}) cannot be written: {e}") from None
    layers_vec = _tables_vector(b, "SerializedGraph", "Layers", layers)
    # 19.02 lists the Input and Output layers by their index in `layers`; the richer formats
    # by binding id (bindingIdsScheme 1), as those releases' own serializers write them.
    scheme = 1 if b.target.at_least("20.08") else 0
    ids = (lambda l: l.binding_id) if scheme else (lambda l: positions[id(l)])
    input_ids = _vector(b, [ids(l) for l in graph.input_layers], np.uint32)
    output_ids = _vector(b, [ids(l) for l in graph.output_layers], np.uint32)
    versions = _feature_versions(b, scheme) if scheme else None
    b.fb.SerializedGraphStart(b)
    b.fb.SerializedGraphAddLayers(b, layers_vec)
    b.fb.SerializedGraphAddInputIds(b, input_ids)
    b.fb.SerializedGraphAddOutputIds(b, output_ids)
    if versions is not None:
        b.fb.SerializedGraphAddFeatureVersions(b, versions)
    root = b.fb.SerializedGraphEnd(b)
    b.Finish(root, file_identifier=FILE_IDENTIFIER)
    return b
