""".armnn bytes -> IR. The mirror of writer.py, with bounds checks: the
Python FlatBuffers runtime does no verification, so every vector length and
offset is checked against the buffer before it is followed, and anything
that still goes wrong becomes a ReadError."""
from __future__ import annotations

import dataclasses
import struct
import typing

import flatbuffers
import numpy as np

from ..errors import ReadError
from ..ir.kinds import LAYER_KINDS, UNION_ORDER, UNION_SIZE, schema_name, since
from ..ir.graph import Graph, Layer, Port
from ..ir.types import ConstTensor, ConstTensorData, DataLayout, DataType, LayerType, TensorInfo
from ..target import Target
from . import armnn_schema_23_08_generated as fb_latest
from .layouts import depthwise_from_file
from .order import forwards
from .writer import FILE_IDENTIFIER, STORAGE_DTYPE

_KIND_BY_TABLE = {k.table: (t, k) for t, k in LAYER_KINDS.items()}


class _Buf:
    def __init__(self, data: bytes):
        self.data = data
        self.size = len(data)
        # ConstTensor table position -> the ConstTensor read from it: layers that share one
        # table (the writer writes a shared tensor once) share the object, so it is written once again
        self.tensors: dict[int, ConstTensor] = {}

    def check_len(self, n: int, elem: int, what: str):
        if n < 0 or n * elem > self.size:
            raise ReadError(f"{what}: vector of {n} elements runs past the end of the file")


def _check_string(buf, tab, slot: int, what: str):
    # The runtime slices strings without a bounds check, so a truncated file
    # would silently yield a shorter name; the terminating NUL must be inside.
    o = tab.Offset(slot)
    if o:
        off = o + tab.Pos
        off += tab.Get(flatbuffers.number_types.UOffsetTFlags, off)
        n = tab.Get(flatbuffers.number_types.UOffsetTFlags, off)
        if off + 4 + n >= buf.size:
            raise ReadError(f"{what}: string runs past the end of the file")


def _table(obj, cls):
    t = cls()
    t.Init(obj.Bytes, obj.Pos)
    return t


def _np_vec(buf, obj, field: str, what: str) -> np.ndarray:
    n = getattr(obj, f"{field}Length")()
    buf.check_len(n, 4, what)
    if n == 0:
        return np.zeros(0, np.int64)
    return np.asarray(getattr(obj, f"{field}AsNumpy")())


def _tensor_info(buf, ti, what: str) -> TensorInfo:
    if ti is None:
        raise ReadError(f"{what}: missing TensorInfo")
    dims = _np_vec(buf, ti, "Dimensions", what)
    try:
        dtype = DataType(ti.DataType())
    except ValueError:
        raise ReadError(f"{what}: unknown data type {ti.DataType()}") from None
    scales = None
    if hasattr(ti, "QuantizationScalesIsNone") and not ti.QuantizationScalesIsNone():
        buf.check_len(ti.QuantizationScalesLength(), 4, what)
        scales = () if ti.QuantizationScalesLength() == 0 else \
            tuple(float(v) for v in np.asarray(ti.QuantizationScalesAsNumpy(), np.float32).reshape(-1))
    return TensorInfo(tuple(int(d) for d in dims), dtype, ti.QuantizationScale(), ti.QuantizationOffset(),
                      scales, ti.QuantizationDim() if scales is not None else 0)


def _const_tensor(buf, ct, what: str) -> ConstTensor:
    fb = buf.fb
    info = _tensor_info(buf, ct.Info(), what)
    try:
        storage = ConstTensorData(ct.DataType())
    except ValueError:
        raise ReadError(f"{what}: unknown constant data kind {ct.DataType()}") from None
    table = ct.Data()
    if table is None:
        raise ReadError(f"{what}: constant tensor without data")
    data = _table(table, getattr(fb, storage.name))
    elem = np.dtype(STORAGE_DTYPE[storage]).itemsize
    n = data.DataLength()
    buf.check_len(n, elem, what)
    need = info.num_elements * info.dtype.np_dtype.itemsize
    if n * elem != need:
        raise ReadError(f"{what}: {n * elem} bytes of data for a {info} tensor ({need} bytes)")
    raw = np.asarray(data.DataAsNumpy()) if n else np.zeros(0, np.uint8)
    arr = raw.view(np.uint8).view(info.dtype.np_dtype).reshape(info.shape).copy()
    return ConstTensor(arr, info, storage)


def _descriptor(buf, obj, cls, what: str):
    if obj is None:
        return cls()
    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):
        if not buf.target.at_least(since(f)):  # not in this file's format: the default
            continue
        name = schema_name(f.name)
        if f.name in ("view_origins", "view_sizes"):  # [UintVector]
            n = getattr(obj, f"{name}Length")()
            buf.check_len(n, 4, what)
            values[f.name] = tuple(tuple(int(x) for x in _np_vec(buf, getattr(obj, name)(i), "Data", what))
                                   for i in range(n))
        elif f.name == "origins":  # (ViewsDescriptor's nested OriginsDescriptor)
            values[f.name] = _descriptor(buf, obj.Origins(), hints[f.name], what)
        elif typing.get_origin(hints[f.name]) is tuple:
            values[f.name] = tuple(int(x) for x in _np_vec(buf, obj, name, what))
        else:
            values[f.name] = getattr(obj, name)()
    try:
        return cls(**values)
    except ValueError as e:
        raise ReadError(f"{what}: bad descriptor value: {e}") from None


def _read_layer(buf, any_layer, position: int):
    fb = buf.fb
    tag = any_layer.LayerType()
    size = UNION_SIZE[buf.target.release]
    if not 1 <= tag <= size:
        raise ReadError(f"layer {position}: layer type tag {tag} is not in the Arm NN {buf.target} format "
                        "(the file was probably written by a newer Arm NN serializer)")
    table = UNION_ORDER[tag - 1]
    if table not in _KIND_BY_TABLE:
        raise ReadError(f"layer {position}: {table} is in the Arm NN {buf.target} format, "
                        "but armnn-import does not read it")
    ltype, kind = _KIND_BY_TABLE[table]
    raw = any_layer.Layer()
    if raw is None:
        raise ReadError(f"layer {position}: missing layer table")
    obj = _table(raw, getattr(fb, table))
    binding_id = None
    base = obj.Base()
    if base is None:
        raise ReadError(f"layer {position}: missing base")
    if ltype in (LayerType.Input, LayerType.Output):
        binding_id = base.LayerBindingId()
        base = base.Base()
        if base is None:
            raise ReadError(f"layer {position}: missing base")
    if base.LayerType() != ltype:
        raise ReadError(f"layer {position}: base says type {base.LayerType()}, table is {table}")
    _check_string(buf, base._tab, 6, f"layer {position} name")  # 6: LayerBase.layerName
    name = (base.LayerName() or b"").decode("utf-8", "replace")
    what = f"layer {position} ({table} {name!r})"
    n_in, n_out = base.InputSlotsLength(), base.OutputSlotsLength()
    buf.check_len(n_in, 4, what)
    buf.check_len(n_out, 4, what)
    conns = []
    for i in range(n_in):
        c = base.InputSlots(i).Connection()
        if c is None:
            raise ReadError(f"{what}: input slot {i} is not connected")
        conns.append((c.SourceLayerIndex(), c.OutputSlotIndex()))
    outputs = [_tensor_info(buf, base.OutputSlots(i).TensorInfo(), what) for i in range(n_out)]
    desc = None
    if kind.descriptor:  # (a table without its descriptor in this format, as 19.02's GatherLayer: defaults)
        desc = _descriptor(buf, obj.Descriptor(), kind.descriptor, what) \
            if buf.target.at_least(kind.descriptor_since) else kind.descriptor()
    tensors = {}
    holder = obj
    if kind.params:  # the tensors sit in a nested table (LstmInputParams)
        holder = obj.InputParams()
        if holder is None:
            raise ReadError(f"{what}: missing {kind.params}")
    for k in kind.tensors:
        ct = getattr(holder, schema_name(k))()
        if ct is not None:
            if ct._tab.Pos not in buf.tensors:
                buf.tensors[ct._tab.Pos] = _const_tensor(buf, ct, f"{what} {k}")
            tensors[k] = buf.tensors[ct._tab.Pos]
        elif k not in kind.optional:
            raise ReadError(f"{what}: missing constant tensor '{k}'")
    layer = Layer(ltype, name, [], outputs, desc, tensors, binding_id)
    return base.Index(), layer, conns


def _file_target(data: bytes) -> Target:
    """The format a file is written in, from its featureVersions: none in 19.02; only the
    binding-id scheme in 20.08; the weights-layout and constant-tensor schemes too from
    23.08 on (a writer that forces defaults, as ours and Arm NN's do, writes them all)."""
    root = fb_latest.SerializedGraph.GetRootAs(data, 0)
    versions = root.FeatureVersions()
    if versions is None:
        return Target("19.02")
    if versions._tab.Offset(6) or versions._tab.Offset(8):
        return Target("23.08")
    return Target("20.08")


def _depthwise_to_ir(g: Graph) -> None:
    """Depthwise weights of a weightsLayoutScheme 1 file, [1, H, W, I*M], as the IR's [M, I, H, W]."""
    done: dict[int, ConstTensor] = {}
    for layer in g.layers:
        if layer.type != LayerType.DepthwiseConvolution2d or "weights" not in layer.tensors or not layer.inputs:
            continue
        x = layer.inputs[0].info
        if x.rank != 4:
            raise ReadError(f"layer {layer.name!r}: depthwise input {x.shape} is not 4-D")
        c = x.shape[1 if layer.desc.data_layout == DataLayout.NCHW else 3]
        t = layer.tensors["weights"]
        if id(t) not in done:
            try:
                done[id(t)] = depthwise_from_file(t, c)
            except ValueError as e:
                raise ReadError(f"layer {layer.name!r}: {e}") from None
        layer.tensors["weights"] = done[id(t)]


def read(data: bytes) -> Graph:
    """Parse .armnn bytes into a Graph. Raises ReadError on anything malformed."""
    data = bytes(data)
    if len(data) < 8:
        raise ReadError(f"not an .armnn file: only {len(data)} bytes")
    if data[4:8] != FILE_IDENTIFIER:
        raise ReadError(f"not an .armnn file: file identifier is {data[4:8]!r}, expected {FILE_IDENTIFIER!r}")
    if len(data) % 4:
        # FlatBuffers builders pad a finished buffer to a multiple of its alignment (>= 4).
        raise ReadError(f"not a complete .armnn file: {len(data)} bytes is not a multiple of 4 (truncated?)")
    buf = _Buf(data)
    try:
        buf.target = _file_target(data)
        buf.fb = fb = buf.target.bindings
        root = fb.SerializedGraph.GetRootAs(data, 0)
        n = root.LayersLength()
        buf.check_len(n, 4, "layers")
        entries = [_read_layer(buf, root.Layers(i), i) for i in range(n)]
        versions = root.FeatureVersions() if buf.target.at_least("20.08") else None
        buf.scheme = versions.BindingIdsScheme() if versions is not None else 0
        buf.weights_scheme = versions.WeightsLayoutScheme() if buf.target.at_least("23.08") else 0
        input_ids = [int(x) for x in _np_vec(buf, root, "InputIds", "inputIds")]
        output_ids = [int(x) for x in _np_vec(buf, root, "OutputIds", "outputIds")]
    except ReadError:
        raise
    except (struct.error, IndexError, ValueError, TypeError, UnicodeDecodeError, AttributeError,
            OverflowError, MemoryError) as e:
        raise ReadError(f"corrupt .armnn file: {type(e).__name__}: {e}") from None

    entries = forwards(entries)
    by_index = {}
    for index, layer, _ in entries:
        if index in by_index:
            raise ReadError(f"two layers have index {index}")
        by_index[index] = layer
    g = Graph(buf.target)
    if buf.scheme == 1:  # the ids are binding ids
        by_binding = {(l.type, l.binding_id): i for i, l in by_index.items()
                      if l.type in (LayerType.Input, LayerType.Output)}
        input_ids = [by_binding.get((LayerType.Input, b), -1) for b in input_ids]
        output_ids = [by_binding.get((LayerType.Output, b), -1) for b in output_ids]
    for index, layer, conns in entries:
        for src, slot in conns:
            if src not in by_index or slot >= len(by_index[src].outputs):
                raise ReadError(f"layer {layer.name!r} is connected to missing output {src}:{slot}")
            layer.inputs.append(Port(by_index[src], slot))  # not yet in a graph: no use-lists to keep
        g.attach(layer)
    if buf.weights_scheme >= 1:
        _depthwise_to_ir(g)
    for ids, want in ((input_ids, LayerType.Input), (output_ids, LayerType.Output)):
        for i in ids:
            if i not in by_index or by_index[i].type != want:
                raise ReadError(f"{'inputIds' if want == LayerType.Input else 'outputIds'} names layer {i}, "
                                f"which is not an {want.name} layer")
    return g
