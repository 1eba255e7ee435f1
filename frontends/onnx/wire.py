"""Large initializers of an ONNX file, used in place.

protobuf copies every byte it parses, and numpy_helper.to_array copies the
result again, so a model's weights would be held two or three times. Before
parsing, this walks the wire format of ModelProto -> graph -> initializer
(nothing else) and cuts the raw_data of large tensors out of the bytes given to
protobuf; read-only numpy arrays over the file's memory map stand in for them.
Anything unusual about a tensor (external data, an odd type, a size that does
not match its dims, a repeated name) leaves it to protobuf and to_array, which
also report the errors.
"""
from __future__ import annotations

import math
import sys

import numpy as np

MODEL_GRAPH, GRAPH_INITIALIZER = 7, 5
T_DIMS, T_DATA_TYPE, T_SEGMENT, T_NAME, T_RAW_DATA, T_EXTERNAL_DATA, T_DATA_LOCATION = 1, 2, 3, 8, 9, 13, 14
VARINT, I64, LEN, I32 = 0, 1, 2, 5
# TensorProto.DataType -> little-endian numpy type, for the types read as plain arrays
DTYPES = {1: "<f4", 2: "u1", 3: "i1", 4: "<u2", 5: "<i2", 6: "<i4", 7: "<i8", 10: "<f2", 11: "<f8",
          12: "<u4", 13: "<u8"}
ITEMSIZE = {k: np.dtype(v).itemsize for k, v in DTYPES.items()}
MIN_BYTES = 1 << 16
# Float tensors from this size on are cut out too: a model of many small layers holds its
# weights in thousands of them (kept in the proto, they were held once there, once more
# as arrays, and copied again for shape inference). Shape inference needs the values of
# small constants only (shapes, axes, scales: integers, or a few floats), never of these.
FLOAT_MIN_BYTES = 256
FLOAT_TYPES = (1, 10, 11)  # FLOAT, FLOAT16, DOUBLE
# Far more fields than a ModelProto or an initializer's TensorProto holds (dims unpacked,
# repeated data packed); past them the bytes are left to protobuf.
MODEL_FIELDS, TENSOR_FIELDS = 10_000, 100_000


def _varint(buf, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise ValueError("malformed varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _encode_varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _fields(buf, pos: int, end: int, most: int | None = None):
    """(field number, wire type, field start, value start, field end) of each field in
    buf[pos:end]; ValueError after `most` fields (garbage is not walked byte by byte in Python)."""
    count = 0
    if most is None:
        most = end  # (a field takes at least one byte)
    while pos < end:
        count += 1
        if count > most:
            raise ValueError("more fields than such a message has")
        start = pos
        key = buf[pos]  # (one-byte varints, the usual keys and lengths, read inline)
        if key < 0x80:
            pos += 1
        else:
            key, pos = _varint(buf, pos, end)
        field, wire = key >> 3, key & 7
        value = pos
        if wire == VARINT:
            _, pos = _varint(buf, pos, end)
        elif wire == I64:
            pos += 8
        elif wire == LEN:
            n = buf[pos] if pos < end else 0x80
            if n < 0x80:
                value = pos + 1
            else:
                n, value = _varint(buf, pos, end)
            pos = value + n
        elif wire == I32:
            pos += 4
        else:
            raise ValueError(f"wire type {wire}")
        if pos > end:
            raise ValueError("a field runs past the end of its message")
        yield field, wire, start, value, pos


def split_weights(buf, base_offset: int = 0, min_bytes: int = MIN_BYTES, float_min_bytes: int = FLOAT_MIN_BYTES):
    """(the model's bytes without the large raw_data, {name: (numpy dtype, dims, offset, length)}),
    or (None, {}) when there is nothing to cut (or the bytes are not what they should be:
    protobuf then parses them whole and says what is wrong). Cut: raw_data of `min_bytes`
    or more, of `float_min_bytes` or more for float types."""
    if sys.byteorder != "little":
        return None, {}
    found: dict[str, tuple] = {}
    try:
        pieces = []
        for field, wire, start, value, end in _fields(buf, 0, len(buf), MODEL_FIELDS):
            if field == MODEL_GRAPH and wire == LEN:
                graph = _graph(buf, value, end, (min_bytes, float_min_bytes), found)
                pieces += [_encode_varint(field << 3 | LEN), _encode_varint(len(graph)), graph]
            else:
                pieces.append(buf[start:end])
    except ValueError:
        return None, {}
    if not found:
        return None, {}
    return b"".join(pieces), {k: (d, dims, base_offset + off, n) for k, (d, dims, off, n) in found.items()}


def _graph(buf, pos: int, end: int, min_bytes: tuple, found: dict) -> bytes:
    pieces, seen, kept = [], set(), pos  # buf[kept:] is copied as it is, up to the next cut
    initializer_key = GRAPH_INITIALIZER << 3 | LEN
    while pos < end:
        key = buf[pos]
        if key >= 0x80 or key & 7 != LEN:  # (every field of a GraphProto is LEN with a one-byte key)
            pos = next(_fields(buf, pos, end, 1))[4]  # another: the one field at pos, the general way
            continue
        start = pos
        n = buf[pos + 1] if pos + 1 < end else 0x80
        if n < 0x80:
            value = pos + 2
        else:
            n, value = _varint(buf, pos + 1, end)
        pos = value + n
        if pos > end:
            raise ValueError("a field runs past the end of its message")
        if key == initializer_key:
            tensor = _tensor(buf, value, pos, min_bytes, found, seen)
            if tensor is not None:
                pieces += [buf[kept:start], _encode_varint(key), _encode_varint(len(tensor)), tensor]
                kept = pos
    pieces.append(buf[kept:end])
    return b"".join(pieces)


def _tensor(buf, pos: int, end: int, min_bytes: tuple, found: dict, seen: set) -> bytes | None:
    """The TensorProto's bytes without its raw_data when that is cut out, else None."""
    dims, dtype, name, raw, other = _tensor_fields(buf, pos, end)
    if name is not None:
        if name in seen:  # a repeated name: leave the whole model to protobuf
            raise ValueError("repeated initializer name")
        seen.add(name)
    least = min(min_bytes) if dtype in FLOAT_TYPES else min_bytes[0]
    if raw is None or other or dtype not in DTYPES or name is None or raw[2] - raw[1] < least:
        return None
    try:
        text = name.decode("utf-8")
    except UnicodeDecodeError:
        return None
    item = ITEMSIZE[dtype]
    if any(d >= 1 << 62 for d in dims) or math.prod(dims) * item != raw[2] - raw[1]:  # (exact: Python ints)
        return None
    found[text] = (DTYPES[dtype], tuple(dims), raw[1], raw[2] - raw[1])
    return bytes(buf[pos:raw[0]]) + bytes(buf[raw[2]:end])


def _tensor_fields(buf, pos: int, end: int) -> tuple:
    """(dims, data type, name, (raw_data's field start, value start, end), other fields) of
    the TensorProto in buf[pos:end]: what _fields yields, walked inline (a model of many small
    layers has 10,000s of tensors)."""
    dims, dtype, name, raw, other, count = [], None, None, None, False, 0
    while pos < end:
        count += 1
        if count > TENSOR_FIELDS:
            raise ValueError("more fields than such a message has")
        start = pos
        key = buf[pos]
        if key < 0x80:
            pos += 1
        else:
            key, pos = _varint(buf, pos, end)
        field, wire = key >> 3, key & 7
        if wire == VARINT:
            if pos < end and buf[pos] < 0x80:
                v, pos = buf[pos], pos + 1
            else:
                v, pos = _varint(buf, pos, end)
            if field == T_DIMS:
                dims.append(v)
            elif field == T_DATA_TYPE:
                dtype = v
        elif wire == LEN:
            n = buf[pos] if pos < end else 0x80
            if n < 0x80:
                value = pos + 1
            else:
                n, value = _varint(buf, pos, end)
            pos = value + n
            if pos > end:
                raise ValueError("a field runs past the end of its message")
            if field == T_DIMS:
                p = value
                while p < pos:
                    d, p = _varint(buf, p, pos)
                    dims.append(d)
            elif field == T_NAME:
                name = bytes(buf[value:pos])
            elif field == T_RAW_DATA:
                other = other or raw is not None  # a repeated raw_data: protobuf keeps the last
                raw = (start, value, pos)
        elif wire == I64:
            pos += 8
        elif wire == I32:
            pos += 4
        else:
            raise ValueError(f"wire type {wire}")
        if pos > end:
            raise ValueError("a field runs past the end of its message")
        if field in (T_SEGMENT, T_EXTERNAL_DATA, T_DATA_LOCATION):
            other = True
    return dims, dtype, name, raw, other


def mapped_array(source, entry) -> np.ndarray:
    """The read-only array of a cut-out initializer, over the buffer `source`."""
    dtype, dims, offset, length = entry
    dt = np.dtype(dtype)
    return np.frombuffer(source, dt, length // dt.itemsize, offset).reshape(dims)
