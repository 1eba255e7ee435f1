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
