"""flatbuffers.table.Table's field lookups with fewer Python calls, for the tables the TFLite
loader reads per tensor and per operator (at 100,000 nodes the stock lookups were the
loader's main cost: three Get calls per field, each building a memoryview).

`fast(obj)` switches one generated object's table to _FastTable in place (same slots), so
nothing global changes. Its answers, and its errors on malformed offsets (TypeError from
the same range check, struct.error past the end), are the stock table's.
"""
from __future__ import annotations

import struct

from flatbuffers import number_types as N
from flatbuffers.table import Table

_SOFFSET = struct.Struct("<i")
_VOFFSET = struct.Struct("<H")
_UMAX = 0xFFFFFFFF


class _FastTable(Table):
    __slots__ = ()

    def Offset(self, vtableOffset):
        buf, pos = self.Bytes, self.Pos
        if not 0 <= pos <= _UMAX:
            N.enforce_number(pos, N.UOffsetTFlags)
        vtable = pos - _SOFFSET.unpack_from(buf, pos)[0]
        if not 0 <= vtable <= _UMAX:
            N.enforce_number(vtable, N.UOffsetTFlags)
        if vtableOffset < _VOFFSET.unpack_from(buf, vtable)[0]:
            off = vtable + vtableOffset
            if not 0 <= off <= _UMAX:
                N.enforce_number(off, N.UOffsetTFlags)
            return _VOFFSET.unpack_from(buf, off)[0]
        return 0

    def Get(self, flags, off):
        if not 0 <= off <= _UMAX:
            N.enforce_number(off, N.UOffsetTFlags)
        return flags.py_type(flags.packer_type.unpack_from(self.Bytes, off)[0])


def fast(obj):
    """`obj` (a generated tflite object, or None) with its table's lookups made fast."""
    if obj is not None and type(obj._tab) is Table:
        obj._tab.__class__ = _FastTable
    return obj


# -- whole tables at once -----------------------------------------------------------------
# The loader reads every field of every tensor and operator. Through the generated objects
# each field is a call chain (Offset, Get, enforce_number, and a numpy array per vector);
# below, one table's field offsets come from one unpack of its vtable, and a vector of
# ints is one unpack. Positions are checked as Table's are (an offset outside 0..2^32-1 is
# the same TypeError); reads past the end are struct.error, as with the stock table.

def fields(buf, pos: int, n: int) -> tuple:
    """The offsets of a table's first n fields (0: absent), as Table.Offset(4 + 2 * i) gives them."""
    if not 0 <= pos <= _UMAX:
        N.enforce_number(pos, N.UOffsetTFlags)
    vtable = pos - _SOFFSET.unpack_from(buf, pos)[0]
    if not 0 <= vtable <= _UMAX:
        N.enforce_number(vtable, N.UOffsetTFlags)
    k = min(n, max(0, (_VOFFSET.unpack_from(buf, vtable)[0] - 3) // 2))  # field i: 4 + 2i < vtable size
    got = (_FIELDS[k] if k < len(_FIELDS) else struct.Struct(f"<{k}H")).unpack_from(buf, vtable + 4) if k else ()
    return got + (0,) * (n - k) if k < n else got


def vector(buf, at: int) -> tuple[int, int]:
    """(start of the data, length) of the vector whose offset is stored at `at`."""
    start = at + _UOFFSET.unpack_from(buf, at)[0]
    return start + 4, _UOFFSET.unpack_from(buf, start)[0]


def tables(buf, at: int) -> list[int]:
    """The positions of the tables in the vector of offsets stored at `at` (Vector + Indirect)."""
    start, n = vector(buf, at)
    return [start + 4 * i + off for i, off in enumerate(struct.unpack_from(f"<{n}I", buf, start))]


def string(buf, at: int) -> bytes:
    """The string whose offset is stored at `at`, as Table.String slices it."""
    start, n = vector(buf, at)
    return bytes(buf[start:start + n])


def scalar(buf, at: int, fmt: struct.Struct):
    return fmt.unpack_from(buf, at)[0]


_UOFFSET = struct.Struct("<I")
_FIELDS = [struct.Struct(f"<{k}H") for k in range(16)]  # k vtable entries (the loader asks for at most 9)
