"""The writer's FlatBuffers builder: numpy vectors copied once, large ones deferred to the
file's chunks (writer.write_chunks), the buffer grown into zero pages."""
from __future__ import annotations

import mmap
import struct

import flatbuffers
import numpy as np

from ..errors import SerializationError
from . import tables

_RELEASE_MIN_BYTES = 1 << 20
_UOFFSET = struct.Struct("<I")


class Builder(flatbuffers.Builder):
    """flatbuffers.Builder that copies numpy vectors once, straight into its
    buffer (the stock one goes through an intermediate bytes object), from
    strided views too (a transposed weight is transposed by that copy). Its
    buffer starts as untouched zero pages (numpy's calloc) instead of a
    bytearray that is zero-filled first.

    Vectors of at least `defer_min` bytes get their space but are not copied in
    (write_chunks writes them from their own arrays). Where each one goes is kept
    as its distance from the buffer's END: a FlatBuffer is built backwards, and
    growing the buffer moves what is built to the end of a bigger one, so that
    distance is the only position that stays true (an absolute index into the
    buffer goes stale on the first growth)."""

    def __init__(self, size: int, defer_min: int | None = None):
        super().__init__(0)
        self.Bytes = memoryview(np.zeros(max(size, 64), np.uint8)).cast("B")
        self.head = len(self.Bytes)
        # (bytes from the start of the vector's data to the end of the buffer, array)
        self.defer_min, self.deferred = defer_min, []
        self.consts: dict[int, int] = {}  # id(ConstTensor) -> its table: layers sharing one tensor share it
        self.grown = 0  # how many times the estimate was too small (for the tests)
        self.specs, self.plans = {}, {}  # per table and fields (_specs), per descriptor class
        self.writers = {}  # per table and fields: its compiled writer (compiled.compile_table)

    WriteVtable = tables.write_vtable  # the same bytes, in fewer calls

    def CreateString(self, s, encoding="utf-8", errors="strict"):
        if type(s) is str and encoding == "utf-8" and errors == "strict":
            return tables.string(self, s)  # the same bytes, in fewer calls
        return super().CreateString(s, encoding, errors)

    def CreateNumpyVector(self, x):
        x = np.asarray(x)
        if x.dtype.byteorder == ">":
            x = x.astype(x.dtype.newbyteorder("<"))
        if x.dtype.alignment > 4 or self.nested:
            self.StartVector(x.itemsize, x.size, x.dtype.alignment)
            self.head = self.head - x.nbytes
            self._place(x)
            self.vectorNumElems = x.size
            return self.EndVector()
        # StartVector(itemsize, n, alignment <= 4) and EndVector in a few statements (the same bytes):
        # the padding that aligns the end of the data to 4, the data, then its length
        nbytes, head = x.nbytes, self.head
        pad = (head - len(self.Bytes) - nbytes) & 3
        if head < pad + 4 + nbytes:
            head = tables.room(self, pad + 4 + nbytes)
        if self.minalign < 4:
            self.minalign = 4
        if pad:
            self.Bytes[head - pad:head] = b"\x00" * pad
        self.head = head - pad - nbytes
        self._place(x)
        self.head -= 4
        _UOFFSET.pack_into(self.Bytes, self.head, x.size)
        return len(self.Bytes) - self.head

    def _place(self, x: np.ndarray) -> None:
        """Copy `x` to the head (its room made), or defer it (write_chunks)."""
        if self.defer_min is not None and x.nbytes >= self.defer_min:
            self.deferred.append((self.Offset(), x))
        elif x.nbytes:
            dst = np.frombuffer(self.Bytes, x.dtype.newbyteorder("<"), x.size, self.head)
            dst.reshape(x.shape)[...] = x
            release_mapped(x)

    def GrowByteBuffer(self):
        """Double the buffer like the stock builder, but into zero pages again, copying
        only what is built and not the holes of the deferred vectors (which would make
        the whole of the weights resident just to copy zeros)."""
        old, used = self.Bytes, len(self.Bytes) - self.head
        if len(old) >= flatbuffers.Builder.MAX_BUFFER_SIZE:
            raise SerializationError("the network does not fit in the 2 GiB a FlatBuffer can hold")
        size = min(2 * len(old), flatbuffers.Builder.MAX_BUFFER_SIZE)
        new = memoryview(np.zeros(size, np.uint8)).cast("B")
        pos = len(old) - used  # copy [pos, end) of old to the same distance from the end of new
        for off, x in sorted(self.deferred, key=lambda d: -d[0]):  # nearest the front first
            start = len(old) - off
            new[size - len(old) + pos:size - len(old) + start] = old[pos:start]
            pos = start + x.nbytes
        new[size - len(old) + pos:] = old[pos:]
        self.Bytes = new
        self.grown += 1


def release_mapped(x: np.ndarray) -> None:
    """Drop the pages of a memory-mapped input file that `x` was just copied from
    out of this process's resident set (they stay in the page cache, and come back
    if read again), so that a large model is not resident twice: once as input,
    once as output."""
    base = x
    while isinstance(base, (np.ndarray, memoryview)):
        base = base.base if isinstance(base, np.ndarray) else base.obj
    if not isinstance(base, mmap.mmap) or x.nbytes < _RELEASE_MIN_BYTES or not hasattr(base, "madvise"):
        return  # (no madvise on Windows: the pages just stay)
    start = x.__array_interface__["data"][0] - np.frombuffer(base, np.uint8).__array_interface__["data"][0]
    lo = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE  # whole pages inside x only
    hi = (start + x.nbytes) // mmap.PAGESIZE * mmap.PAGESIZE
    if hi > lo:
        base.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
