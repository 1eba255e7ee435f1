"""The builtin options of a TFLite operator, as a dict of snake_case names (the loader's part,
model.py; every option class of the `tflite` package is read the same way, by its getters)."""
from __future__ import annotations

import re
import struct
from functools import lru_cache

import numpy as np

from armnn_import.errors import LoadError

from . import fasttable as FT

_U32, _I32, _U16 = struct.Struct("<I"), struct.Struct("<i"), struct.Struct("<H")


def _vector(getter, n: int, budget, what: str) -> np.ndarray:
    """An option's vector, its length counted against the loader's budget (model._numpy's checks)."""
    budget.count(n, 1, what)
    arr = getter()
    if not isinstance(arr, np.ndarray) or arr.size != n:
        raise LoadError(f"malformed TFLite file: cannot read {what}")
    return arr


@lru_cache(maxsize=None)
def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@lru_cache(maxsize=None)
def _option_class(type_id: int):
    """(class, scalar getters, vector getters) of a BuiltinOptions union member."""
    import importlib

    from tflite.BuiltinOptions import BuiltinOptions

    names = {v: k for k, v in vars(BuiltinOptions).items() if isinstance(v, int)}
    name = names.get(type_id)
    if name is None or name == "NONE":
        return None
    cls = getattr(importlib.import_module(f"tflite.{name}"), name)
    scalars, vectors = [], []
    for attr, fn in vars(cls).items():
        if not callable(fn) or attr.startswith(("GetRootAs", "Init")) or attr.endswith("BufferHasIdentifier"):
            continue
        if attr.endswith("AsNumpy"):
            vectors.append(attr[:-len("AsNumpy")])
        elif fn.__code__.co_argcount == 1 and not attr.endswith(("Length", "IsNone")):
            scalars.append(attr)
    return cls, tuple(scalars), tuple(vectors), _widths(cls, scalars)


class _Probe:
    """A table that records which vtable slot a getter reads, and how many bytes."""
    Pos = 0

    def __init__(self):
        self.slot = self.width = None

    def Offset(self, slot):
        self.slot = slot
        return 4

    def Get(self, flags, off):
        self.width = flags.bytewidth
        return flags.py_type(0)


def _widths(cls, scalars) -> dict[int, int]:
    """{vtable slot: bytes read} of the scalar getters (for read_options' cache key)."""
    out = {}
    for attr in scalars:
        opts, probe = cls(), _Probe()
        opts._tab = probe
        try:
            getattr(opts, attr)()
        except Exception:  # noqa: BLE001 - a getter of another shape: no caching for this class
            return {}
        if probe.slot is None or probe.width is None:
            return {}
        out[probe.slot] = probe.width
    return out


def _extent(data, vtable: int, size: int, widths: dict) -> int:
    """The bytes past a table's start that its getters read: every field, and the object's
    size (a field past the object's end: a malformed table)."""
    obj = _U16.unpack_from(data, vtable + 2)[0]
    slots = struct.unpack_from(f"<{max(0, size - 4) // 2}H", data, vtable + 4)
    return max([obj] + [off + widths.get(4 + 2 * k, 8) for k, off in enumerate(slots) if off])


def read_options(data, pos: int, f: tuple, budget, seen: dict) -> dict:
    """The builtin options of the operator table at `pos` (its field offsets `f`). Options of
    scalars only are read once per distinct bytes (`seen`): a model's convolutions mostly
    share theirs, and the values are a function of the table's vtable and bytes."""
    type_id = data[pos + f[3]] if f[3] else 0
    info = _option_class(type_id) if type_id else None
    if info is None or not f[4]:
        return {}
    at = pos + f[4]
    table = at + _U32.unpack_from(data, at)[0]
    cls, scalars, vectors, widths = info
    key = None
    if not vectors and widths:
        vtable = table - _I32.unpack_from(data, table)[0]
        if 0 <= vtable <= len(data) - 4:
            size = _U16.unpack_from(data, vtable)[0]
            vt = bytes(data[vtable:vtable + size])
            # the extent is a function of the vtable's bytes (at least 4 read): shared by most tables
            ext = ("extent", type_id, vt if size >= 4 else bytes(data[vtable:vtable + 4]))
            end = seen.get(ext)
            if end is None:
                end = seen[ext] = _extent(data, vtable, size, widths)
            key = (type_id, vt, bytes(data[table + 4:table + end]))  # (not its vtable offset)
            got = seen.get(key)
            if got is not None:
                return dict(got)
    opts = cls()
    opts.Init(data, table)
    out = {"_type": cls.__name__}
    for attr in scalars:
        value = getattr(opts, attr)()
        if isinstance(value, (int, float, bool)):
            out[snake(attr)] = value
    for attr in vectors:
        n = getattr(opts, attr + "Length")()
        out[snake(attr)] = _vector(getattr(opts, attr + "AsNumpy"), n, budget, f"option {attr}") \
            if n else np.zeros(0, np.int32)
    if key is not None:
        seen[key] = dict(out)
    return out


#: custom operators converted like a builtin: their custom_options are a C struct (raw bytes, not
#: FlexBuffers), read into the options of the builtin they extend. mediapipe's
#: Convolution2DTransposeBias (mediapipe/util/tflite/operations/transpose_conv_bias.cc) casts them
#: to TfLiteTransposeConvParams {TfLitePadding padding; int stride_width; int stride_height;}
#: (TfLitePadding: 0 unknown, 1 SAME, 2 VALID; later TFLite releases appended fields)
CUSTOM_STRUCTS = {"Convolution2DTransposeBias": ("<3i", ("tflite_padding", "stride_w", "stride_h"))}


def custom_options(code: str, raw: bytes) -> dict:
    """The options of a custom operator of CUSTOM_STRUCTS; {"_error": why} when they are short."""
    fmt, names = CUSTOM_STRUCTS[code]
    size = struct.calcsize(fmt)
    if len(raw) < size:
        return {"_type": code, "_error": f"its custom options are {len(raw)} bytes, not the {size} "
                                          "of TfLiteTransposeConvParams"}
    return {"_type": code, **dict(zip(names, struct.unpack_from(fmt, raw)))}


def known_custom_ops(data, at: int, ops) -> None:
    """Name each custom operator of options.CUSTOM_STRUCTS by its custom code (the registry's key:
    it converts them like builtins) and read its options from its custom_options bytes."""
    known = [op for op in ops if op.op == "CUSTOM" and op.custom_code in CUSTOM_STRUCTS]
    if not known:
        return
    tables = FT.tables(data, at)
    for op in known:
        pos = tables[op.index]
        f = FT.fields(data, pos, 6)  # ..., builtin_options, custom_options
        raw = b""
        if f[5]:
            start, n = FT.vector(data, pos + f[5])
            if start + n > len(data):
                raise LoadError(f"malformed TFLite file: cannot read operator {op.index}'s custom options")
            raw = bytes(data[start:start + n])
        op.op, op.options = op.custom_code, custom_options(op.custom_code, raw)
