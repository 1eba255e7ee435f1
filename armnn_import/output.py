"""Atomic output: write a temporary file beside the target, then rename.

A reader of the target sees either the previous file or the complete new one,
never a partial file. Where the platform has O_TMPFILE (Linux) the temporary
file has no name while it is written: it gets one (linkat through
/proc/self/fd) only once complete and checked, and is renamed over the target
at once, so even SIGKILL leaves nothing behind. Elsewhere it is a hidden
`.armnn-import-<hex>.tmp` in the target's folder (the rename stays on one file
system), removed on any error, on KeyboardInterrupt (SIGINT) and on SIGTERM or
SIGHUP (when no other handler is installed, a handler that removes it and then
dies by the same signal is installed while writing); one that SIGKILL or a
crash left is removed by the next write into that folder (remove_stale). The
target is intact in every case.

Before the rename the written file is checked against what was promised (its
size, and for .armnn files its identifier and root table): a serializer bug
becomes an OutputError with the previous file kept, never a corrupt file.
"""
from __future__ import annotations

import errno
import os
import re
import secrets
import signal
import stat
import threading
import time

from .errors import OutputError

TMP_PREFIX, TMP_SUFFIX = ".armnn-import-", ".tmp"
_TMP_NAME = re.compile(re.escape(TMP_PREFIX) + "[0-9a-f]{16}" + re.escape(TMP_SUFFIX))
_O_TMPFILE = getattr(os, "O_TMPFILE", 0)  # Linux 3.11+; 0: named temporary files only
_IMPORTED = time.time()
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


def write_atomic(path, data, *, inputs=(), size: int | None = None, check=None) -> None:
    """Write `data` (bytes, or an iterable of bytes chunks) to `path`
    atomically. Refuses to overwrite any of `inputs` or a read-only file;
    never leaves a partial or temporary file behind (see the module doc).
    A target that exists and is not a regular file (/dev/null, a FIFO) is
    written directly instead of being replaced.

    Before the new file replaces the old one it is checked: `size` (if given)
    is the number of bytes `data` promised, and `check(read_at, size)` (if
    given) reads the written file back through read_at(offset, n) -> bytes and
    returns what is wrong with it, or None. Either failing is an OutputError;
    the old file is kept and the new one removed."""
    path = os.fspath(path)
    target, folder, st = _existing_target(path, inputs)
    if st is not None and not stat.S_ISREG(st.st_mode):
        return _write_special(path, target, data, size)
    mode = stat.S_IMODE(st.st_mode) if st is not None else _new_file_mode()
    remove_stale(folder)
    _replace(path, target, folder, data, mode, size, check)


def _existing_target(path: str, inputs):
    """(the real target path, its folder, its stat or None): refuses an input, a missing folder,
    a directory, and a read-only or unwritable file before anything is written."""
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
        return target, folder, None
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {e.strerror or e}") from None
    if stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{path}: is a directory")
    if stat.S_ISREG(st.st_mode):
        if not st.st_mode & 0o222:
            raise OutputError(f"{path}: the file is read-only; refusing to replace it")
        if not os.access(target, os.W_OK):
            if _read_only_fs(folder):
                raise OutputError(f"{path}: cannot write in {folder}: Read-only file system")
            raise OutputError(f"{path}: no permission to replace the file")
    return target, folder, st


def _replace(path: str, target: str, folder: str, data, mode: int, size, check) -> None:
    """Write a complete, fsynced and checked temporary file in `folder`, then rename it over
    `target`; on any failure or signal the temporary file goes and the old file stays."""
    restore = _install_handlers()
    tmp = None  # the temporary file's name, once it has one
    try:
        fd, tmp = _open_temporary(path, folder)
        with os.fdopen(fd, "w+b") as f:
            written = 0
            for chunk in _chunks(data):
                f.write(chunk)
                written += memoryview(chunk).nbytes
            f.flush()
            os.fsync(f.fileno())
            _check_written(path, f.fileno(), written, size, check)
            if hasattr(os, "fchmod"):
                os.fchmod(f.fileno(), mode)
            if tmp is None:  # an unnamed file (O_TMPFILE): give it a name now that it is complete
                tmp = _link_temporary(f.fileno(), folder)
        if not hasattr(os, "fchmod"):
            os.chmod(tmp, mode)
        os.replace(tmp, target)
        _pending.discard(tmp)
        _fsync_folder(folder)
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {e.strerror or e}") from None
    finally:
        if tmp is not None and tmp in _pending:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            _pending.discard(tmp)
        for s in restore:
            signal.signal(s, signal.SIG_DFL)


def _temporary_name(folder: str) -> str:
    return os.path.join(folder, f"{TMP_PREFIX}{secrets.token_hex(8)}{TMP_SUFFIX}")


def _open_temporary(path: str, folder: str):
    """(fd open for reading and writing, name or None). Where the platform has
    O_TMPFILE the file has no name until it is complete, so that even SIGKILL
    leaves nothing behind; otherwise a named hidden file in `folder`."""
    if _O_TMPFILE and os.path.isdir("/proc/self/fd"):
        try:
            return os.open(folder, _O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600), None
        except OSError as e:
            if e.errno in (errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EACCES):
                raise OutputError(f"{path}: cannot write in {folder}: {e.strerror or e}") from None
            # EOPNOTSUPP, EISDIR, EINVAL...: the file system or kernel has none
    for _ in range(100):
        # The name is registered before the file exists, so that a signal
        # arriving at any point finds it.
        tmp = _temporary_name(folder)
        _pending.add(tmp)
        try:
            return os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600), tmp
        except FileExistsError:
            _pending.discard(tmp)
        except OSError as e:
            _pending.discard(tmp)
            raise OutputError(f"{path}: cannot write in {folder}: {e.strerror or e}") from None
    raise OutputError(f"{path}: cannot create a temporary file in {folder}")


def _link_temporary(fd: int, folder: str) -> str:
    """Give the complete unnamed file a (temporary) name: linkat through /proc with
    AT_SYMLINK_FOLLOW, the one way an unprivileged process can (a dir fd makes
    os.link call linkat; plain link() would link the /proc symlink itself). The
    caller renames it over the target (linkat cannot replace a file)."""
    dfd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
    try:
        for _ in range(100):
            tmp = _temporary_name(folder)
            _pending.add(tmp)
            try:
                os.link(f"/proc/self/fd/{fd}", os.path.basename(tmp), dst_dir_fd=dfd, follow_symlinks=True)
                return tmp
            except FileExistsError:
                _pending.discard(tmp)
            except OSError:
                _pending.discard(tmp)
                raise
        raise OSError(errno.EEXIST, f"cannot name the temporary file in {folder}")
    finally:
        os.close(dfd)


def _check_written(path: str, fd: int, written: int, size, check) -> None:
    on_disk = os.fstat(fd).st_size
    problem = None
    if size is not None and written != size:
        problem = f"{written:,} bytes were written, {size:,} were promised"
    elif on_disk != written:
        problem = f"the file has {on_disk:,} bytes, {written:,} were written"
    elif check is not None:
        problem = check(lambda offset, n: os.pread(fd, n, offset), on_disk)
    if problem:
        raise OutputError(f"{path}: the written file is not the network (internal error: {problem}); "
                          "the previous file is kept -- this is a bug in armnn-import, please report it")


def remove_stale(folder: str) -> list[str]:
    """Remove the temporary files of our own naming pattern in `folder` that a
    killed earlier run left: regular files of this user, last written before this
    process started (a run still writing one keeps writing, so its file is newer).
    Returns the names removed."""
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    started, uid = _process_start(), getattr(os, "getuid", lambda: None)()
    for e in entries:
        if not _TMP_NAME.fullmatch(e.name) or e.path in _pending:
            continue
        try:
            st = e.stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and (uid is None or st.st_uid == uid) and st.st_mtime < started:
                os.unlink(e.path)
                removed.append(e.name)
        except OSError:
            pass
    return removed


def _process_start() -> float:
    """When this process started (Linux: /proc, to the clock tick), else when this
    module was imported; the earlier of the two, so that a clock step makes us keep
    a file rather than remove it."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rpartition(")")[2].split()[19])  # field 22: starttime, since boot
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
        return min(_IMPORTED, time.time() - age)
    except (OSError, ValueError, IndexError, AttributeError):
        return _IMPORTED


def _read_only_fs(folder: str) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False


def _write_special(path: str, target: str, data, size) -> None:
    written = 0
    try:
        with open(target, "wb") as f:
            for chunk in _chunks(data):
                f.write(chunk)
                written += memoryview(chunk).nbytes
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {e.strerror or e}") from None
    if size is not None and written != size:  # (nothing to read back from a pipe or a device)
        raise OutputError(f"{path}: {written:,} bytes were written, {size:,} were promised (internal error)")


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
