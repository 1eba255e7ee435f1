"""Frontend discovery and input-format detection.

Frontends are plugins in the entry-point group `armnn_import.frontends`
(armnn_import.plugin.Frontend describes the object each one loads).
The format of a file is told from its first bytes by the plugins themselves (an
identifier, or a heuristic over the bytes): a plugin's package is cheap to import
and its sniffing imports no format library, so that detection stays fast. The core
knows one format of its own, the .armnn file it writes.
"""
from __future__ import annotations

import functools
import os
import stat

from .errors import LoadError

GROUP = "armnn_import.frontends"
HEAD_BYTES = 4096

# The core's own format: an already converted network (FlatBuffers identifier at bytes 4..8).
ARMNN_IDENTIFIER = b"ARMN"


def available_frontends() -> dict:
    """Installed frontends: name -> importlib.metadata.EntryPoint (not loaded).
    Looked up once per process: the lookup reads every installed package's metadata."""
    return dict(_entry_points())


@functools.lru_cache(maxsize=1)
def _entry_points() -> tuple:
    from importlib.metadata import entry_points

    return tuple((ep.name, ep) for ep in entry_points(group=GROUP))


def load_frontend(name: str):
    """The plugin object of the frontend `name`; LoadError if none is installed or it fails to load."""
    ep = available_frontends().get(name)
    if ep is None:
        raise LoadError(f"no frontend installed for format {name!r}")
    try:
        return ep.load()
    except Exception as e:  # noqa: BLE001 - a plugin that cannot be imported is an installation problem
        raise LoadError(f"the '{name}' frontend cannot be loaded: {type(e).__name__}: {e}") from e


def loaded_frontends() -> tuple[dict, dict]:
    """({name: plugin} of the frontends that load, {name: error line} of those that do not),
    in name order. Loading a plugin is cheap: it imports only its package's __init__."""
    ok, broken = {}, {}
    for name in sorted(available_frontends()):
        try:
            ok[name] = load_frontend(name)
        except LoadError as e:
            broken[name] = str(e)
    return ok, broken


def sniff_format(head: bytes, complete: bool = False) -> str | None:
    """'armnn', or the name of the installed frontend whose format the file's first bytes
    are, or None. A frontend's `identifier` (bytes at an offset that only its format has)
    wins over every frontend's `sniff` heuristic; heuristics are asked in name order."""
    if head[4:8] == ARMNN_IDENTIFIER:
        return "armnn"
    plugins = loaded_frontends()[0]
    for name, fe in plugins.items():
        ident = getattr(fe, "identifier", None)
        if ident is not None and head[ident[0]:ident[0] + len(ident[1])] == ident[1]:
            return name
    for name, fe in plugins.items():
        try:
            if fe.sniff(head, complete):
                return name
        except Exception:  # noqa: BLE001 - a broken plugin must not break detection
            continue
    return None


def formats_wanted() -> str:
    """What a model file may be, from the installed frontends, for messages."""
    plugins = loaded_frontends()[0].values()
    kinds = [f"{getattr(fe, 'title', fe.name)} ({', '.join(getattr(fe, 'extensions', ()))})" for fe in plugins]
    if not kinds:
        return "a model in an installed format (no frontend is installed)"
    return "a model in an installed format: " + ", ".join(kinds)


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
    """The format name of the model file at `path`: the name of the installed frontend
    that recognises it, or 'armnn' for an already converted file. Raises LoadError if
    the file cannot be read or no installed frontend recognises it."""
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
    broken = loaded_frontends()[1]
    why = f"; {'; '.join(broken.values())}" if broken else ""
    raise LoadError(f"{path}: unrecognised format ({_describe(head)}); expected {formats_wanted()}{why}")


def format_of(model) -> str:
    """The format name of a path, bytes or in-memory model: 'armnn', or the name of the
    installed frontend that recognises (for an object: `accepts`) it. LoadError if none does."""
    if isinstance(model, (str, os.PathLike)):
        return frontend_for(model)
    if isinstance(model, (bytes, bytearray, memoryview)):
        fmt = sniff_format(bytes(model[:HEAD_BYTES]), complete=len(model) <= HEAD_BYTES)
        if fmt is None:
            raise LoadError(f"unrecognised model format (expected the bytes of {formats_wanted()})")
        return fmt
    for name, fe in loaded_frontends()[0].items():
        if fe.accepts(model):
            return name
    raise LoadError(f"cannot convert a {type(model).__name__}: expected a path, bytes, or an in-memory "
                    f"model an installed frontend accepts ({', '.join(sorted(available_frontends())) or 'none'})")


def frontend_of(model):
    """The frontend plugin for a path, bytes or in-memory model (only that one is loaded
    for a path or bytes). LoadError if none takes it, or the input is an .armnn file."""
    fmt = format_of(model)
    if fmt == "armnn":
        raise LoadError("the input is already an .armnn file")
    return load_frontend(fmt)


def _describe(head: bytes) -> str:
    printable = head[:8].decode("ascii", "replace")
    if all(32 <= b < 127 or b in (9, 10, 13) for b in head[:64]):
        return f"looks like text starting {printable!r}"
    return f"first bytes {head[:8].hex(' ')}"


def model_name(path) -> str:
    """The file name without its extension, for default output names."""
    return os.path.splitext(os.path.basename(os.fspath(path)))[0]
