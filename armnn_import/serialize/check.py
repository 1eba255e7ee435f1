"""The check of a written .armnn file (output.write_atomic's `check`): its identifier and root
table, read back with a few dozen bytes whatever the file's size."""
from __future__ import annotations

import struct

FILE_IDENTIFIER = b"ARMN"


def check_file(read_at, size: int, layers: int | None = None) -> str | None:
    """What is wrong with a written .armnn file, or None: its identifier, and its
    root table (a SerializedGraph whose vtable, layers vector and, if given, layer
    count read back inside the file). `read_at(offset, n) -> bytes` reads the file;
    only a few dozen bytes are read, whatever the file's size."""
    def u32(off):
        b = read_at(off, 4)
        return struct.unpack("<I", b)[0] if len(b) == 4 else None

    head = read_at(0, 8)
    if len(head) < 8 or size < 8:
        return f"only {size} bytes"
    if head[4:8] != FILE_IDENTIFIER:
        return f"file identifier is {head[4:8]!r}, expected {FILE_IDENTIFIER!r}"
    root = struct.unpack("<I", head[:4])[0]
    if not 8 <= root <= size - 4 or root % 4:
        return f"root table offset {root} is outside the file ({size} bytes)"
    vtable = root - struct.unpack("<i", read_at(root, 4))[0]
    vt = read_at(vtable, 6) if 0 <= vtable <= size - 6 else b""
    if len(vt) < 6:
        return f"root table's vtable at {vtable} is outside the file"
    vt_size, _, layers_field = struct.unpack("<HHH", vt)
    if vt_size < 6 or vtable + vt_size > size or not layers_field:
        return "root table has no layers"
    vec = root + layers_field
    n = None if vec + 4 > size else u32(vec)
    vec = vec + n if n is not None else size
    count = u32(vec) if vec + 4 <= size else None
    if count is None or vec + 4 + 4 * count > size:
        return "root table's layers vector runs past the end of the file"
    if layers is not None and count != layers:
        return f"root table lists {count} layers, the network has {layers}"
    return None
