"""Tables in one call: the bytes flatbuffers.Builder writes, with a fraction of its Python calls.

A generated binding writes one field per call, through five or six builder methods
(PrependXSlot -> PrependSlot -> Prepend -> Prep -> Place -> encode.Write, and Slot), which
at 100,000 layers was most of the writer's time. Here each binding is called once, on a
recorder, to learn what it asks of the builder (its slot, scalar type and default); a table
is then written by `table()` in one loop that does the same alignment, padding, range checks
and packing as those methods, in the same order, so the buffer is byte for byte the same.
The writer always forces defaults (ForceDefaults), so every field it adds is written.
"""
from __future__ import annotations

import struct

import numpy as np
from flatbuffers import number_types as N
from flatbuffers.builder import IsNestedError, OffsetArithmeticError

_UOFFSET = struct.Struct("<I")
_SOFFSET = struct.Struct("<i")

# A field: (slot, packer or None for an offset to a table/vector/string, byte width, min, max, type name)
_SPECS: dict[tuple[str, str], tuple] = {}
_STARTS: dict[tuple[str, str], int] = {}


class _Recorder:
    """Stands in for the builder in one call of a generated function and keeps what it asked."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        def record(*args):
            self.calls.append((name, args))
            return 0
        return record


def _record(fb, func: str, *args):
    r = _Recorder()
    getattr(fb, func)(r, *args)
    if len(r.calls) != 1:
        raise AssertionError(f"{func} makes {len(r.calls)} builder calls, expected one")
    return r.calls[0]


def field(fb, table: str, name: str) -> tuple:
    """The spec of `<table>Add<name>` in the bindings module `fb`."""
    key = (fb.__name__, f"{table}Add{name}")
    spec = _SPECS.get(key)
    if spec is None:
        meth, args = _record(fb, key[1], 0)
        if meth == "PrependUOffsetTRelativeSlot":
            spec = (args[0], None, 4, None, None, None)
        elif meth == "PrependStructSlot":  # the value: a function writing the struct inline
            spec = (args[0], None, -1, None, None, None)
        elif meth.startswith("Prepend") and meth.endswith("Slot"):
            kind = meth[len("Prepend"):-len("Slot")]
            flags = getattr(N, ("Uint8" if kind == "Byte" else kind) + "Flags")
            spec = (args[0], flags.packer_type, flags.bytewidth, flags.min_val, flags.max_val, flags.name)
        else:
            raise AssertionError(f"{key[1]}: unexpected builder call {meth}")
        spec = _SPECS[key] = spec
    return spec


def num_fields(fb, table: str) -> int:
    """How many slots `<table>Start` opens."""
    key = (fb.__name__, table)
    n = _STARTS.get(key)
    if n is None:
        meth, args = _record(fb, f"{table}Start")
        if meth != "StartObject":
            raise AssertionError(f"{table}Start: unexpected builder call {meth}")
        n = _STARTS[key] = args[0]
    return n


def room(b, needed: int) -> int:
    """Grow the buffer until `needed` bytes fit before head (Builder.Prep's loop); the new head."""
    head = b.head
    while head < needed:
        old = len(b.Bytes)
        b.GrowByteBuffer()
        head += len(b.Bytes) - old
    b.head = head
    return head


def table(b, nfields: int, items) -> int:
    """Write a table of `nfields` slots with `items` [(spec, value)] in the order the bindings'
    Add calls would come (StartObject, the Adds, EndObject); its offset."""
    if b.nested:
        raise IsNestedError()
    if not b.forceDefaults:
        raise AssertionError("the writer forces defaults")
    b.nested = True
    b.objectEnd = len(b.Bytes) - b.head
    vt = [0] * nfields
    for (slot, packer, size, lo, hi, tname), x in items:
        if size < 0:  # a struct, written in place (PrependStructSlot)
            x(b)
            vt[slot] = len(b.Bytes) - b.head
            continue
        if packer is not None and lo is not None and not lo <= x <= hi:
            raise TypeError("bad number %s for type %s" % (str(x), tname))  # N.enforce_number
        if size > b.minalign:
            b.minalign = size
        head = b.head
        n = len(b.Bytes)
        align = (head - n) & (size - 1)
        if head < align + size:
            head = room(b, align + size)
            n = len(b.Bytes)
        if align:
            b.Bytes[head - align:head] = b"\x00" * align
            head -= align
        if packer is None:
            off = n - head
            if not x <= off:
                raise OffsetArithmeticError("flatbuffers: Offset arithmetic error.")
            head -= 4
            _UOFFSET.pack_into(b.Bytes, head, off - x + 4)
        else:
            head -= size
            packer.pack_into(b.Bytes, head, x)
        b.head = head
        vt[slot] = n - head
    b.current_vtable = vt
    b.nested = False
    return b.WriteVtable()


def connection(layer_index: int, slot: int):
    """The writer of an inline Connection struct (CreateConnection: Prep(4, 8), then
    outputSlotIndex and sourceLayerIndex as uint32)."""
    if not (type(layer_index) is int and type(slot) is int and 0 <= layer_index <= _UMAX and 0 <= slot <= _UMAX):
        for v in (layer_index, slot):
            N.enforce_number(v, N.Uint32Flags)
    return Connection((layer_index, slot))


_UMAX = 0xFFFFFFFF


_CONNECTION = struct.Struct("<II")


class Connection(tuple):
    """An inline Connection struct (sourceLayerIndex, outputSlotIndex) as a field value: a
    compiled table packs the two numbers; table() calls it (CreateConnection's Prep(4, 8))."""
    __slots__ = ()

    def __call__(self, b):
        b.Prep(4, 8)
        b.head -= 8
        _CONNECTION.pack_into(b.Bytes, b.head, self[0], self[1])


def _start_vector(b, nbytes: int) -> int:
    """StartVector(4, n, 4) for `nbytes` of data, bar the writing: the head once the vector
    (its length, the data and the padding after them) is in place. The caller packs it."""
    if b.nested:
        raise IsNestedError()
    head = b.head
    pad = (head - len(b.Bytes)) & 3
    need = pad + 4 + nbytes
    if head < need:
        head = room(b, need)
    if b.minalign < 4:
        b.minalign = 4
    if pad:
        b.Bytes[head - pad:head] = _ZEROS[pad]
    return head - need


def offsets_vector(b, offsets) -> int:
    """A vector of offsets to tables (StartVector(4, n, 4), PrependUOffsetTRelative each, EndVector)."""
    n = len(offsets)
    head = _start_vector(b, 4 * n)
    buf = b.Bytes
    # element i lies at head + 4 + 4i and points back to offset off_i: it holds its own
    # distance from the buffer's end less off_i
    base = len(buf) - head - 4
    if n <= 64:
        values = [base - 4 * i - off for i, off in enumerate(offsets)]
        if values and min(values) < 4:
            raise OffsetArithmeticError("flatbuffers: Offset arithmetic error.")
        _UOFFSET.pack_into(buf, head, n)
        struct.pack_into(f"<{n}I", buf, head + 4, *values)
    else:
        values = base - 4 * np.arange(n, dtype=np.int64) - np.asarray(offsets, np.int64)
        if values.min() < 4:
            raise OffsetArithmeticError("flatbuffers: Offset arithmetic error.")
        _UOFFSET.pack_into(buf, head, n)
        buf[head + 4:head + 4 + 4 * n] = values.astype("<u4").tobytes()
    b.head = head
    return len(buf) - head


_SMALL = {"uint32": ("I", 0, 0xFFFFFFFF), "int32": ("i", -(1 << 31), (1 << 31) - 1)}


def small_int_vector(b, values, elem: str) -> int | None:
    """A short vector of Python ints as CreateNumpyVector writes it (StartVector(4, n, 4), the
    data, EndVector), or None when `values` is not that (the caller takes numpy's way)."""
    fmt = _SMALL.get(elem)
    if fmt is None or len(values) > 64:
        return None
    code, lo, hi = fmt
    for v in values:
        if type(v) is not int or not lo <= v <= hi:
            return None  # numpy's conversion decides (and raises what it raises)
    n = len(values)
    head = _start_vector(b, 4 * n)
    struct.pack_into(f"<I{n}{code}", b.Bytes, head, n, *values)
    b.head = head
    return len(b.Bytes) - head


_ZEROS = [b"\x00" * k for k in range(5)]


def string(b, s: str) -> int:
    """CreateString(s) (Prep(4, len + 1), the bytes and their NUL, EndVector) in three copies."""
    x = s.encode("utf-8")
    n = len(x)
    if b.nested:
        raise IsNestedError()
    head = b.head
    pad = (head - len(b.Bytes) - n - 1) & 3
    need = pad + n + 5
    if head < need:
        head = room(b, need)
    if b.minalign < 4:
        b.minalign = 4
    head -= need
    buf = b.Bytes
    _UOFFSET.pack_into(buf, head, n)
    buf[head + 4:head + 4 + n] = x
    buf[head + 4 + n:head + need] = _ZEROS[1 + pad]
    b.head = head
    return len(buf) - head


def write_vtable(b) -> int:
    """Builder.WriteVtable with its common case (a vtable equal to one already written) in a
    few statements; a new vtable is written as the stock builder writes it."""
    # PrependSOffsetTRelative(0): the slot the vtable's offset goes into (Prep(4, 0) inlined)
    if b.minalign < 4:
        b.minalign = 4
    n = len(b.Bytes)
    align = (b.head - n) & 3
    if b.head < align + 4:
        room(b, align + 4)
        n = len(b.Bytes)
    if align:
        b.Bytes[b.head - align:b.head] = b"\x00" * align
        b.head -= align
    b.head -= 4
    _SOFFSET.pack_into(b.Bytes, b.head, n - b.head)
    object_offset = n - b.head
    key = []
    trim = True
    for elem in reversed(b.current_vtable):
        if elem == 0:
            if trim:
                continue
        else:
            elem = object_offset - elem
            trim = False
        key.append(elem)
    object_size = object_offset - b.objectEnd
    key.append(object_size)
    key = tuple(key)
    found = b.vtables.get(key)
    if found is None:
        new_vtable(b, object_offset, object_size, key)
    else:
        _SOFFSET.pack_into(b.Bytes, b.head, found - object_offset)
    b.current_vtable = None
    return object_offset


def new_vtable(b, object_offset: int, object_size: int, key: tuple) -> None:
    """The stock builder's writing of a new vtable (fields last to first, trailing zeros
    trimmed, then the object's and the vtable's sizes), remembered for deduplication."""
    vt = b.current_vtable
    trailing, trim = 0, True
    for i in range(len(vt) - 1, -1, -1):
        off, elem = 0, vt[i]
        if elem == 0:
            if trim:
                trailing += 1
                continue
        else:
            off = object_offset - elem
            trim = False
        b.PrependVOffsetT(off)
    b.PrependVOffsetT(object_size)
    b.PrependVOffsetT((len(vt) - trailing + 2) * N.VOffsetTFlags.bytewidth)
    object_start = len(b.Bytes) - object_offset
    _SOFFSET.pack_into(b.Bytes, object_start, b.Offset() - object_offset)
    b.vtables[key] = b.Offset()


def table_specs(b, table: str, names: tuple) -> tuple:
    """(slot count, field specs) of `table`'s fields `names` in the builder's bindings
    (b.fb), worked out once per build (cached in b.specs)."""
    got = b.specs.get((table, names))
    if got is None:
        got = b.specs[(table, names)] = (num_fields(b.fb, table), tuple(field(b.fb, table, k) for k in names))
    return got
