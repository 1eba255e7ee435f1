"""Atomic output: write a temporary file beside the target, then rename.

A reader of the target sees either the previous file or the complete new one,
never a partial file. The temporary file (`.armnn-import-*.tmp`, in the
target's folder so that the rename stays on one file system) is removed on
any error, on KeyboardInterrupt (SIGINT) and on SIGTERM or SIGHUP (when no
other handler is installed, a handler that removes it and then dies by the
same signal is installed while writing). Only SIGKILL or a crash of the
machine can leave a temporary file behind; the target is intact even then.
"""
from __future__ import annotations

import os
import secrets
import signal
import stat
import threading

from .errors import OutputError

TMP_PREFIX, TMP_SUFFIX = ".armnn-import-", ".tmp"
_CLEANUP_SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s)
_pending: set[str] = set()  # temporary files being written, removed by the signal handler


def _remove_pending() -> None:
    for tmp in list(_pending):
        try:
            os.unlink(tmp)
        except OSError:
            pass
        _pending.discard(tmp)


def _die_cleanly(signum, frame):
    _remove_pending()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_handlers() -> list:
    """Install _die_cleanly for signals that still have their default action
    (only the main thread can set handlers). Returns what to restore."""
    if threading.current_thread() is not threading.main_thread():
        return []
    installed = []
    for s in _CLEANUP_SIGNALS:
        if signal.getsignal(s) == signal.SIG_DFL:
            signal.signal(s, _die_cleanly)
            installed.append(s)
    return installed


def _new_file_mode() -> int:
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def _same_file(a: str, b) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b) or os.path.samefile(a, b)
    except OSError:
        return False


def _chunks(data):
    if isinstance(data, (bytes, bytearray, memoryview)):
        yield data
    else:
        yield from data


def write_atomic(path, data, *, inputs=()) -> None:
    """Write `data` (bytes, or an iterable of bytes chunks) to `path`
    atomically. Refuses to overwrite any of `inputs` or a read-only file;
    never leaves a partial or temporary file behind (see the module doc).
    A target that exists and is not a regular file (/dev/null, a FIFO) is
    written directly instead of being replaced."""
    path = os.fspath(path)
    for src in inputs:
        if os.path.exists(src) and _same_file(path, src):
            raise OutputError(f"{path}: refusing to overwrite the input model")
    target = os.path.realpath(path)
    folder = os.path.dirname(target) or "."
    if not os.path.isdir(folder):
        raise OutputError(f"{path}: output folder {os.path.dirname(path) or '.'} does not exist")
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {e.strerror or e}") from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise OutputError(f"{path}: is a directory")
        if not stat.S_ISREG(st.st_mode):
            return _write_special(path, target, data)
        if not st.st_mode & 0o222:
            raise OutputError(f"{path}: the file is read-only; refusing to replace it")
        if not os.access(target, os.W_OK):
            if _read_only_fs(folder):
                raise OutputError(f"{path}: cannot write in {folder}: Read-only file system")
            raise OutputError(f"{path}: no permission to replace the file")
    mode = stat.S_IMODE(st.st_mode) if st is not None else _new_file_mode()

    restore = _install_handlers()
    tmp = None
    try:
        # The name is registered before the file exists, so that a signal
        # arriving at any point finds it.
        for _ in range(100):
            tmp = os.path.join(folder, f"{TMP_PREFIX}{secrets.token_hex(8)}{TMP_SUFFIX}")
            _pending.add(tmp)
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
                break
            except FileExistsError:
                _pending.discard(tmp)
        else:
            raise OutputError(f"{path}: cannot create a temporary file in {folder}")
        with os.fdopen(fd, "wb") as f:
            for chunk in _chunks(data):
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
        _pending.discard(tmp)
        _fsync_folder(folder)
    except OSError as e:
        where = f"cannot write in {folder}" if tmp is None or not os.path.exists(tmp) else "cannot write"
        raise OutputError(f"{path}: {where}: {e.strerror or e}") from None
    finally:
        if tmp is not None and tmp in _pending:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            _pending.discard(tmp)
        for s in restore:
            signal.signal(s, signal.SIG_DFL)


def _read_only_fs(folder: str) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False


def _write_special(path: str, target: str, data) -> None:
    try:
        with open(target, "wb") as f:
            for chunk in _chunks(data):
                f.write(chunk)
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {e.strerror or e}") from None


def _fsync_folder(folder: str) -> None:
    # Makes the rename itself durable; not every file system allows it.
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
