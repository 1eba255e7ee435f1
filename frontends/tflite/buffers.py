"""Constant data of a TFLite model: the buffer behind a tensor, read from the file's bytes, and
its array (large ones alias an immutable file image; small ones are copied; sparse ones are
densified). Every offset and length is checked as the loader's (model.py) are."""
from __future__ import annotations

import math
import mmap
import struct

import numpy as np

from armnn_import.errors import LoadError
from armnn_import.limits import ConstantBudget, check_tensor_bytes, get_limits

from . import fasttable as FT
from .sparse import SparsityError, densify

_U32, _U64 = struct.Struct("<I"), struct.Struct("<Q")
# TensorType -> numpy dtype of constant data (None: no numpy equivalent we read).
NP_TYPES = {
    0: np.float32, 1: np.float16, 2: np.int32, 3: np.uint8, 4: np.int64, 6: np.bool_,
    7: np.int16, 9: np.int8, 10: np.float64, 12: np.uint64, 15: np.uint32, 16: np.uint16,
}
_LE = {k: np.dtype(v).newbyteorder("<") for k, v in NP_TYPES.items()}  # the file's byte order, made once


class Source:
    """What the loader reads tensors with: the file's bytes, where its vector of buffer tables
    starts, the budgets and limits, and whether large constants may alias the bytes."""

    def __init__(self, model, nbuf: int, budget, constants: ConstantBudget):
        self.data, self.nbuf, self.budget, self.constants = model._tab.Bytes, nbuf, budget, constants
        self.size, self.limits, self.alias = len(self.data), get_limits(), _immutable(self.data)
        at = model._tab.Pos + FT.fields(self.data, model._tab.Pos, 5)[4]  # Model.buffers
        self.buffers = FT.vector(self.data, at)[0] if nbuf else 0


def read_buffer(src: Source, b: int) -> np.ndarray | None:
    """Buffer b's bytes (as Model.Buffers(b) finds its table: Vector + Indirect), or None."""
    data, x = src.data, src.buffers + 4 * b
    pos = x + _U32.unpack_from(data, x)[0]
    f = FT.fields(data, pos, 3)  # data, offset, size
    off = _U64.unpack_from(data, pos + f[1])[0] if f[1] else 0
    n = _U64.unpack_from(data, pos + f[2])[0] if f[2] else 0
    if off > 1:  # large models keep data after the FlatBuffer, offset from the file start
        if off + n > src.size:
            raise LoadError(f"malformed TFLite file: buffer {b} ({n} bytes at {off}) runs past "
                            f"the end of the file ({src.size} bytes)")
        return np.frombuffer(data, np.uint8, count=n, offset=off)
    start, n = FT.vector(data, pos + f[0]) if f[0] else (0, 0)
    if not n:
        return None
    src.budget.count(n, 1, f"buffer {b}")
    return np.frombuffer(data, np.uint8, count=n, offset=start)


# Constants at least this large alias the file image instead of being copied.
ALIAS_MIN_BYTES = 1 << 16


def _immutable(buf) -> bool:
    """Whether views of the model's buffer may be kept: bytes, or a read-only map (ours)."""
    return isinstance(buf, bytes) or (isinstance(buf, mmap.mmap) and memoryview(buf).readonly)


def constant(t, raw: np.ndarray, alias: bool = False) -> np.ndarray:
    le = _LE.get(t.type)
    if le is None:
        raise LoadError(f"tensor {t.name!r}: constant data of type {t.type_name} cannot be read")
    dtype = NP_TYPES[t.type]
    if math.prod(t.shape) * le.itemsize != raw.size:  # (the loader has checked the shape)
        check_tensor_bytes(t.shape, le.itemsize, raw.size, f"tensor {t.name!r} ({t.type_name})")
    if alias and raw.size >= ALIAS_MIN_BYTES:
        # A large constant of an immutable file image is used in place (read-only): the
        # weights are then held once, by the file (for a path, it is ours and holds little else).
        return np.frombuffer(raw, le).astype(dtype, copy=False).reshape(t.shape)
    # a copy: a small constant must not keep the whole file alive, nor alias a caller's buffer
    # (one copy, by astype, straight from a view of the bytes: the sizes match, checked above)
    return raw.view(le).astype(dtype).reshape(t.shape)


def sparse_constant(t, raw: np.ndarray, sp, constants) -> np.ndarray:
    """The dense data of a sparse constant (its buffer holds only the stored values)."""
    dtype = NP_TYPES.get(t.type)
    if dtype is None:
        raise LoadError(f"tensor {t.name!r}: constant data of type {t.type_name} cannot be read")
    item = np.dtype(dtype).itemsize
    if raw.size % item:
        raise LoadError(f"malformed TFLite file: sparse tensor {t.name!r} ({t.type_name}) has {raw.size} "
                        f"bytes of values, not a multiple of {item}")
    constants.add(math.prod(t.shape) * item, f"tensor {t.name!r}")
    values = np.frombuffer(raw.tobytes(), np.dtype(dtype).newbyteorder("<")).astype(dtype)
    try:
        return densify(t.shape, sp, values)
    except SparsityError as e:
        raise LoadError(f"malformed TFLite file: sparse tensor {t.name!r}: {e}") from None
