"""Frontend discovery and input-format detection.

Frontends are plugins in the entry-point group `armnn_import.frontends`
(armnn_import.plugin.Frontend describes the object each one loads).
The format of a file is told from its first bytes, without importing onnx
or tflite, so that detection and `--help` stay fast.
"""
from __future__ import annotations

import functools
import os
import stat

from .errors import LoadError

GROUP = "armnn_import.frontends"
HEAD_BYTES = 4096

# ModelProto's fields (onnx.proto): number -> protobuf wire type (0 varint, 2 length-delimited).
_ONNX_MODEL_FIELDS = {1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2, 26: 2}


def available_frontends() -> dict:
    """Installed frontends: name -> importlib.metadata.EntryPoint (not loaded).
    Looked up once per process: the lookup reads every installed package's metadata."""
    return dict(_entry_points())


@functools.lru_cache(maxsize=1)
def _entry_points() -> tuple:
    from importlib.metadata import entry_points

    return tuple((ep.name, ep) for ep in entry_points(group=GROUP))


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
        if tag is not None and _ONNX_MODEL_FIELDS.get(tag[0] >> 3) != tag[0] & 7:
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


def sniff_format(head: bytes, complete: bool = False) -> str | None:
    """'armnn', 'tflite' or 'onnx' from a file's first bytes, or None."""
    if head[4:8] == b"ARMN":
        return "armnn"
    if head[4:8] == b"TFL3":
        return "tflite"
    if looks_like_onnx(head, complete):
        return "onnx"
    return None


_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def open_regular(path, what: str = "model"):
    """Open `path` for binary reading, if it is a regular file (symlinks followed).
    Anything else is refused with a LoadError: a FIFO would block forever on open()
    or read(), a device like /dev/zero never ends. The open itself does not block
    (O_NONBLOCK, cleared once the file is known to be regular)."""
    path = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
                     | getattr(os, "O_BINARY", 0))
    except IsADirectoryError:
        raise LoadError(f"{path}: is a directory, not a {what} file") from None
    except OSError as e:
        raise LoadError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise LoadError(f"{path}: is a directory, not a {what} file")
        if not stat.S_ISREG(mode):
            kind = next((k for test, k in _KINDS if test(mode)), "not a regular file")
            raise LoadError(f"{path}: is {kind}; only a regular file can be read as a {what} file "
                            "(save a stream to a file first)")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def frontend_for(path) -> str:
    """The format name of the model file at `path` ('onnx', 'tflite', or
    'armnn' for an already converted file). Raises LoadError if the file
    cannot be read or no heuristic and no installed frontend recognises it."""
    try:
        with open_regular(path) as f:
            head = f.read(HEAD_BYTES)
            complete = not f.read(1)
    except OSError as e:
        raise LoadError(f"{path}: cannot read: {e.strerror or e}") from None
    if not head:
        raise LoadError(f"{path}: the file is empty")
    fmt = sniff_format(head, complete)
    if fmt is not None:
        return fmt
    # Formats without a built-in heuristic (e.g. a TFLite file without its
    # identifier): ask the installed frontends. A frontend that fails to load
    # cannot claim the file; the error shows up if it is chosen explicitly.
    for name, ep in sorted(available_frontends().items()):
        try:
            if ep.load().sniff(head):
                return name
        except Exception:  # noqa: BLE001 - a broken plugin must not break detection
            continue
    raise LoadError(f"{path}: unrecognised format ({_describe(head)}); "
                    "expected an ONNX (.onnx) or TFLite (.tflite) model")


def _describe(head: bytes) -> str:
    printable = head[:8].decode("ascii", "replace")
    if all(32 <= b < 127 or b in (9, 10, 13) for b in head[:64]):
        return f"looks like text starting {printable!r}"
    return f"first bytes {head[:8].hex(' ')}"


def model_name(path) -> str:
    """The file name without its extension, for default output names."""
    return os.path.splitext(os.path.basename(os.fspath(path)))[0]
