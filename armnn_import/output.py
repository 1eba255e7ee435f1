"""Atomic output: write a temporary file beside the target, then rename."""
from __future__ import annotations

import os
import tempfile

from .errors import OutputError


def write_atomic(path, data: bytes, *, inputs=()) -> None:
    """Write `data` to `path` atomically. Refuses to overwrite any of `inputs`;
    never leaves a partial or temporary file behind."""
    path = os.fspath(path)
    target = os.path.realpath(path)
    for src in inputs:
        if os.path.exists(src) and os.path.realpath(src) == target:
            raise OutputError(f"{path}: refusing to overwrite the input model")
    folder = os.path.dirname(target) or "."
    if not os.path.isdir(folder):
        raise OutputError(f"{path}: output folder {folder} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".armnn-import-", suffix=".tmp", dir=folder)
    except OSError as e:
        raise OutputError(f"{path}: cannot write in {folder}: {e.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {e.strerror}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
