"""Segments: a run of tables and vectors in one struct pack.

compiled.py packs one table per call; a layer is a dozen tables and vectors (its slots and
their TensorInfos, the slot vectors, LayerBase, its descriptor, its own table, AnyLayer), each
a call with its own bookkeeping. Where each of them lands, measured from where the first one
starts, is fixed by the run's shape (which tables, the lengths of its vectors) and by that start
modulo 8 (the largest alignment); and once every vtable the run uses has been written, what each
table's vtable offset holds is fixed too (a vtable's position, as a distance from the buffer's
end, never changes). So for each shape and residue the run is one struct format, and a generated
function packs the run's values into it: the offsets between its own tables are constants, an
offset to something written before it (the layer's name, its weights) or to a vtable is the run's
start less a constant. The bytes are those of the table-by-table way, which writes the run
whenever its segment is not ready (a vtable not written yet) or a value is unusual.

A program is a list of items in writing order:
  ("vec", code, n)            a vector of n uint32 ("I") or int32 ("i") values (small_int_vector)
  ("offs", (j, ...))          a vector of offsets to items j (offsets_vector)
  ("table", nfields, specs, sources)  a table (compiled.compile_table's arguments), a source per
      field: "v" the next value, "conn" the next two values (a
      Connection), ("c", x) the constant x, ("i", j) item j, ("e", k) the k-th earlier offset.
Values are taken in the program's order; the function is fn(b, v, e) -> the offsets of `exports`.
"""
from __future__ import annotations

import struct

from .compiled import layout
from .tables import room


def _table_args(specs, sources, start: int, ends, offs: list, nv: int, checks: list) -> tuple:
    """A table's pack arguments (as source text) in address order, bar its vtable offset,
    and the next value's index; bool values' indices go to `checks`."""
    fields = []
    for i, src in enumerate(sources):
        end = start + ends[i]  # the field's end, from the run's start
        if src == "v":
            fields.append([f"v[{nv}]"])
            if specs[i][5] == "bool":  # struct packs any object as '?', table() wants a bool
                checks.append(nv)
            nv += 1
        elif src == "conn":
            fields.append([f"v[{nv}]", f"v[{nv + 1}]"])
            nv += 2
        elif src[0] == "c":
            fields.append([repr(src[1])])
        elif src[0] == "i":
            if end - offs[src[1]] < 4:
                raise AssertionError("a segment's offset does not point back")
            fields.append([str(end - offs[src[1]])])
        else:
            fields.append([f"U+{end}-e[{src[1]}]"])
    return [x for f in reversed(fields) for x in f], nv  # the last field added lies lowest


def compile_segment(program: list, r: int, vtables: dict, exports: tuple):
    """The writer of `program` started at a distance from the buffer's end ≡ r (mod 8), or None
    while a vtable it uses is not written yet."""
    used, maxalign, nv = r, 4, 0
    offs, pieces, args, checks = [], [], [], []
    for item in program:
        kind = item[0]
        if kind == "vec" or kind == "offs":
            n = item[2] if kind == "vec" else len(item[1])
            pad = (-used) & 3
            used += pad + 4 + 4 * n
            rel = used - r
            if kind == "vec":
                a = [str(n)] + [f"v[{nv + i}]" for i in range(n)]
                nv += n
            else:  # element i lies 4 + 4i bytes after the start and points back to item j
                a = [str(n)] + [str(rel - 4 - 4 * i - offs[j]) for i, j in enumerate(item[1])]
            pieces.append(f"I{n}{item[1] if kind == 'vec' else 'I'}" + (f"{pad}x" if pad else ""))
        else:
            _, nfields, specs, sources = item
            total, packer, _, key, ends = layout(specs, used & 7)
            found = vtables.get(key)
            if found is None:
                return None
            maxalign = max([maxalign] + [s[2] for s in specs])
            rel = used - r + total
            fields, nv = _table_args(specs, sources, used - r, ends, offs, nv, checks)
            a = [f"{found - rel}-U"] + fields
            pieces.append(packer.format.lstrip("<"))
            used += total
        offs.append(rel)
        args.append(a)
    fmt = struct.Struct("<" + "".join(reversed(pieces)))
    if fmt.size != used - r:
        raise AssertionError(f"a segment of {used - r} bytes packs {fmt.size}")
    flat = ", ".join(x for a in reversed(args) for x in a)
    return _function(fmt, flat, "".join(f"U+{offs[j]}, " for j in exports), checks, maxalign)


def _function(fmt: struct.Struct, flat: str, out: str, checks: list, maxalign: int):
    """The segment's function: room for it, one pack of `flat` (the arguments' source text),
    the head moved, the offsets `out` returned."""
    total = fmt.size
    src = "\n".join([
        "def segment(b, v, e):",
        "    head = b.head",
        f"    if head < {total}:",
        f"        head = room(b, {total})",
        "    buf = b.Bytes",
        "    U = len(buf) - head",
        *[f"    if v[{i}].__class__ is not bool: raise TypeError('not a bool')" for i in checks],
        f"    pack(buf, head - {total}, {flat})",
        f"    b.head = head - {total}",
        f"    if b.minalign < {maxalign}: b.minalign = {maxalign}",
        f"    return ({out})",
    ])
    scope = {"room": room, "pack": fmt.pack_into}
    exec(compile(src, "<armnn_import segment>", "exec"), scope)  # noqa: S102 - our own code, made above
    return scope["segment"]
