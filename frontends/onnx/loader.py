"""Loading an ONNX model: from a path, bytes or a ModelProto, with external
data confined to the model's own folder."""
from __future__ import annotations

import mmap
import os
from collections import Counter

import numpy as np
import onnx
from onnx import TensorProto

from armnn_import.errors import LoadError
from armnn_import.discovery import open_regular


def load_model(source, mapped: dict | None = None) -> onnx.ModelProto:
    """The ModelProto with every external tensor read in (raises LoadError).
    Given a dict, large initializers of a model file are left out of the proto
    and put in `mapped` (name -> read-only array over the file's memory map)."""
    if isinstance(source, onnx.ModelProto):
        model = onnx.ModelProto()
        model.CopyFrom(source)  # never modify the caller's model
        base = None
    elif isinstance(source, (bytes, bytearray, memoryview)):
        model = _parse(bytes(source), "the model bytes")
        base = None
    else:
        path = os.fspath(source)
        try:
            with open_regular(path) as f:  # never a FIFO or a device: they would block
                model = _parse_file(f, path, mapped)
        except IsADirectoryError:
            raise LoadError(f"{path}: is a directory, not a model file") from None
        except OSError as e:
            raise LoadError(f"{path}: cannot read: {e.strerror or e}") from None
        base = os.path.dirname(os.path.abspath(path))
    externals = [t for t in _all_tensors(model) if t.data_location == TensorProto.EXTERNAL]
    if externals and base is None:
        raise LoadError(f"tensor {externals[0].name!r} keeps its data in an external file; "
                        "give the model as a path so the file can be found beside it")
    if externals and mapped is not None:
        maps: dict[str, object] = {}  # one memory map per external data file
        counts = Counter(t.name for t in model.graph.initializer)
        for t in model.graph.initializer:
            if t.data_location == TensorProto.EXTERNAL and counts[t.name] == 1:
                arr = _map_external(t, base, maps)
                if arr is not None:
                    mapped[t.name] = arr
        externals = [t for t in _all_tensors(model) if t.data_location == TensorProto.EXTERNAL]
    for t in externals:
        _load_external(t, base)
    if not model.HasField("graph"):
        raise LoadError("the ONNX model has no graph")
    _check_names(model)
    return model


def _check_names(model: onnx.ModelProto) -> None:
    """protobuf hands out bytes, not str, for a string field holding invalid
    UTF-8: refuse such names (in subgraphs too) before they reach the IR."""
    graphs = [model.graph]
    while graphs:
        g = graphs.pop()
        # (one flat pass over the names; labelled only when one is bad, see _bad_name)
        names = [g.name]
        names += [v.name for v in g.input]
        names += [v.name for v in g.output]
        names += [v.name for v in g.value_info]
        names += [t.name for t in g.initializer]
        names += [s.values.name for s in g.sparse_initializer]
        for node in g.node:
            names += (node.name, node.op_type, node.domain)
            names += node.input
            names += node.output
            attributes = node.attribute
            if attributes:
                for a in attributes:
                    names.append(a.name)
                    if a.HasField("g"):
                        graphs.append(a.g)
                    graphs.extend(a.graphs)
        if set(map(type, names)) - {str}:  # (the types of all names at C speed)
            _bad_name(g)


def _bad_name(g) -> None:
    """Raise LoadError for the first name of graph `g` (not its subgraphs) that is not valid UTF-8."""
    names = [(g.name, "graph")]
    names += [(v.name, "value") for v in (*g.input, *g.output, *g.value_info)]
    names += [(t.name, "initializer") for t in g.initializer]
    names += [(s.values.name, "initializer") for s in g.sparse_initializer]
    for node in g.node:
        names += [(node.name, "node"), (node.op_type, "operator"), (node.domain, "domain")]
        names += [(n, "value") for n in (*node.input, *node.output)]
        names += [(a.name, "attribute") for a in node.attribute]
    for name, what in names:
        if not isinstance(name, str):
            raise LoadError(f"{what} name {name!r} is not valid UTF-8")


def _parse_file(f, what: str, mapped: dict | None) -> onnx.ModelProto:
    """Parse straight from a memory map of the file (protobuf copies what it
    keeps; a read() would hold the whole file once more while parsing), with
    the large initializers cut out into `mapped` when it is given (see wire.py)."""
    try:
        image = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (ValueError, OSError):  # empty, or a pipe / special file
        return _parse(f.read(), what)
    if mapped is not None:
        from .wire import mapped_array, split_weights
        with memoryview(image) as view:
            rest, cut = split_weights(view)
        if rest is not None:
            model = _parse(rest, what)
            mapped.update({name: mapped_array(image, entry) for name, entry in cut.items()})
            return model  # the arrays keep the map open
    with image, memoryview(image) as view:
        return _parse(view, what)


def _parse(data, what: str) -> onnx.ModelProto:
    if not data:
        raise LoadError(f"{what}: the file is empty")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as e:  # noqa: BLE001 - protobuf raises DecodeError or RuntimeError
        raise LoadError(f"{what}: not a valid ONNX model ({type(e).__name__}: {e})") from None
    return model


def _all_tensors(model: onnx.ModelProto):
    """Every TensorProto in the model: initializers, sparse initializers and
    tensor attributes, in subgraphs too (iterative, so deep nesting cannot
    overflow the stack)."""
    graphs = [model.graph]
    while graphs:
        g = graphs.pop()
        yield from g.initializer
        for s in g.sparse_initializer:
            yield s.values
            yield s.indices
        for node in g.node:
            for a in node.attribute:
                if a.HasField("t"):
                    yield a.t
                yield from a.tensors
                if a.HasField("sparse_tensor"):
                    yield a.sparse_tensor.values
                    yield a.sparse_tensor.indices
                if a.HasField("g"):
                    graphs.append(a.g)
                graphs.extend(a.graphs)


def _map_external(tensor: TensorProto, base: str, maps: dict):
    """A large external initializer as a read-only array over a memory map of its
    file (then marked as cut out, see wire.py), or None to read it the usual way."""
    from .wire import DTYPES, MIN_BYTES
    dtype = DTYPES.get(tensor.data_type)
    if dtype is None:
        return None
    real, offset, length = _external_range(tensor, base)
    dims = tuple(tensor.dims)
    item = np.dtype(dtype).itemsize
    if length < MIN_BYTES or any(d < 0 for d in dims) or int(np.prod(dims, dtype=object)) * item != length:
        return None  # read in, so that to_array reports what is wrong
    if real not in maps:
        try:
            with open(real, "rb") as f:
                maps[real] = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):
            return None
    arr = np.frombuffer(maps[real], dtype, length // item, offset).reshape(dims)
    tensor.data_location = TensorProto.DEFAULT
    del tensor.external_data[:]
    return arr


def _load_external(tensor: TensorProto, base: str) -> None:
    real, offset, length = _external_range(tensor, base)
    try:
        with open(real, "rb") as f:
            f.seek(offset)
            data = f.read(length)
    except OSError as e:
        raise LoadError(f"tensor {tensor.name or '(unnamed)'!r}: cannot read "
                        f"{os.path.basename(real)!r}: {e.strerror or e}") from None
    tensor.raw_data = data
    tensor.data_location = TensorProto.DEFAULT
    del tensor.external_data[:]


def _external_range(tensor: TensorProto, base: str) -> tuple[str, int, int]:
    """(the data file's real path, offset, length), checked to stay inside the model's folder."""
    info = {e.key: e.value for e in tensor.external_data}
    name = tensor.name or "(unnamed)"
    loc = info.get("location", "")
    if not loc:
        raise LoadError(f"tensor {name!r}: external data without a location")
    parts = loc.replace("\\", "/").split("/")
    if os.path.isabs(loc) or loc.startswith(("/", "\\")) or (len(loc) > 1 and loc[1] == ":") \
            or ".." in parts or "\0" in loc:
        raise LoadError(f"tensor {name!r}: external data location {loc!r} is outside the model's folder "
                        "(absolute paths and '..' are not allowed)")
    path = os.path.join(base, *[p for p in parts if p not in ("", ".")])
    real, root = os.path.realpath(path), os.path.realpath(base)
    if os.path.commonpath([real, root]) != root:
        raise LoadError(f"tensor {name!r}: external data location {loc!r} leads outside the model's "
                        "folder (through a symbolic link)")
    if not os.path.isfile(real):
        raise LoadError(f"tensor {name!r}: external data file {loc!r} not found beside the model")
    try:
        offset = int(info.get("offset", 0) or 0)
        length = int(info["length"]) if info.get("length", "") != "" else None
    except ValueError:
        raise LoadError(f"tensor {name!r}: external data offset/length are not integers") from None
    size = os.path.getsize(real)
    if length is None:
        length = size - offset
    if offset < 0 or length < 0 or offset + length > size:
        raise LoadError(f"tensor {name!r}: external data offset {offset} and length {length} "
                        f"run past the end of {loc!r} ({size} bytes)")
    return real, offset, length
