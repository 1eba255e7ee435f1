"""Telling an ONNX file from its first bytes without importing onnx (the plugin's sniff)."""
from __future__ import annotations

# ModelProto's fields (onnx.proto): number -> protobuf wire type (0 varint, 2 length-delimited).
MODEL_FIELDS = {1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2, 26: 2}


def _varint(buf: bytes, pos: int):
    """(value, next position), or None if the buffer ends inside the varint."""
    value = shift = 0
    while pos < len(buf) and shift < 64:
        b = buf[pos]
        value |= (b & 0x7F) << shift
        pos += 1
        if not b & 0x80:
            return value, pos
        shift += 7
    return None


def looks_like_onnx(head: bytes, complete: bool) -> bool:
    """True if `head` parses as the start of a protobuf ModelProto: only
    ModelProto field numbers with their wire types, and an ir_version or a
    graph. `complete` says whether `head` is the whole file."""
    pos, seen = 0, {}
    while pos < len(head):
        tag = _varint(head, pos)
        if tag is not None and MODEL_FIELDS.get(tag[0] >> 3) != tag[0] & 7:
            return False
        value = _varint(head, tag[1]) if tag else None
        if value is None:
            if complete:
                return False  # the file ends inside a field
            break
        field, wire = tag[0] >> 3, tag[0] & 7
        seen[field], pos = value
        if wire == 2:
            pos += value[0]
    if pos > len(head) and complete:
        return False  # a field runs past the end of the file
    if 1 in seen and not 1 <= seen[1] <= 100:
        return False
    return 1 in seen or 7 in seen

