"""Compiled tables: table()'s bytes in one struct pack per table.

table() works out each field's padding and position one call at a time. But where every
field of a table lands is fixed by the table's fields and by where the builder's head stands
modulo 8 (the largest alignment): so for each of those 8 residues the whole table (fields,
padding, the offset to its vtable) is one struct format, packed in one call, and its vtable's
deduplication key is a constant. compile_table() makes that writer; the bytes are table()'s.
"""
from __future__ import annotations

import struct

from flatbuffers.builder import IsNestedError

from .tables import new_vtable, room, table


def layout(specs, used0: int) -> tuple:
    """Where table() would put each field, starting `used0` bytes from the buffer's end:
    (total bytes, struct format in address order, vtable entries relative to the start,
    the dedup key, per field its distance from the start of the object's end)."""
    used = used0
    ends = []
    for slot, packer, size, *_ in specs:
        if size < 0:  # Connection: Prep(4, 8), then 8 bytes
            used += (-used) & 3
            used += 8
        else:
            used += (-used) & (size - 1)
            used += size
        ends.append(used)
    used += (-used) & 3  # the vtable offset (write_vtable's Prep(4, 0))
    object_offset = used + 4
    total = object_offset - used0
    # address order: the vtable offset first (lowest), then the fields, the last one added first
    fmt, at = ["<i"], 4
    for (slot, packer, size, *_), end in sorted(zip(specs, ends), key=lambda s: -s[1]):
        pos = object_offset - end
        if pos > at:
            fmt.append(f"{pos - at}x")
        fmt.append("II" if size < 0 else "I" if packer is None else packer.format.lstrip("<"))
        at = pos + (8 if size < 0 else size)
    if total > at:
        fmt.append(f"{total - at}x")
    nslots = 1 + max(s[0] for s in specs)
    vt = [0] * nslots
    for (slot, *_), end in zip(specs, ends):
        vt[slot] = end - used0
    key = []
    trim = True
    for elem in reversed(vt):
        if elem == 0:
            if trim:
                continue
        else:
            elem = total - elem
            trim = False
        key.append(elem)
    key.append(total)
    return total, struct.Struct("".join(fmt)), vt, tuple(key), [e - used0 for e in ends]


def _flatten(kinds, order, args) -> list | None:
    """The pack's arguments in address order: a Connection's two numbers, the rest as they are;
    None for a bool out of range (struct would pack it, table() refuses it)."""
    flat = []
    for i in order:
        k, v = kinds[i], args[i]
        if k == "struct":
            flat += v
        elif k == "bool" and not False <= v <= True:
            return None
        else:
            flat.append(v)
    return flat


def compile_table(nfields: int, specs: tuple):
    """write(b, values) -> offset: table(b, nfields, zip(specs, values)) in one struct pack
    (values in the order of specs). Anything unusual (a value out of range, an offset that
    does not point back) goes through table() itself, which raises what it raises."""
    specs = tuple(specs)
    slots = [s[0] for s in specs]
    if not specs or len(set(slots)) != len(slots) or max(slots) >= nfields:
        return lambda b, values: table(b, nfields, zip(specs, values))
    layouts = [None] * 8
    maxalign = max([4] + [s[2] for s in specs])
    # the fields in address order (the last one added lies lowest), with their kind
    kinds = tuple(("struct" if s[2] < 0 else "offset" if s[1] is None else "bool" if s[5] == "bool"
                   else "scalar") for s in specs)
    order = tuple(range(len(specs) - 1, -1, -1))
    simple = all(k in ("offset", "scalar") for k in kinds)
    offsets = tuple(i for i, k in enumerate(kinds) if k == "offset")

    def write(b, values):
        if b.nested:
            raise IsNestedError()
        head, buf = b.head, b.Bytes
        r = (len(buf) - head) & 7
        lay = layouts[r]
        if lay is None:
            lay = layouts[r] = layout(specs, r)
        total, packer, vt, key, ends = lay
        if head < total:
            head = room(b, total)
            buf = b.Bytes
        used0 = len(buf) - head
        args = list(values)
        for i in offsets:
            v = used0 + ends[i] - args[i]
            if v < 4:  # not an offset to something written before: table() raises
                return table(b, nfields, zip(specs, values))
            args[i] = v
        flat = args[::-1] if simple else _flatten(kinds, order, args)
        if flat is None:
            return table(b, nfields, zip(specs, values))
        found = b.vtables.get(key)
        object_offset = used0 + total
        try:
            packer.pack_into(buf, head - total, 0 if found is None else found - object_offset, *flat)
        except (struct.error, OverflowError):
            return table(b, nfields, zip(specs, values))
        if maxalign > b.minalign:
            b.minalign = maxalign
        b.head = head - total
        if found is None:  # a new vtable: written as the stock builder writes it
            b.current_vtable = [used0 + e if e else 0 for e in vt] + [0] * (nfields - len(vt))
            new_vtable(b, object_offset, total, key)
            b.current_vtable = None
        return object_offset

    return write
