"""Atomic output (armnn_import.output.write_atomic): an unnamed (O_TMPFILE) or hidden
temporary file in the target folder, checked, then renamed. Never a partial target,
never a temporary file left behind (SIGKILL included where O_TMPFILE exists; elsewhere
the next run removes the leftover), never the input overwritten, never a file other
than the one promised; clear OutputErrors."""
import errno
import glob
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from armnn_import import output
from armnn_import.errors import OutputError
from armnn_import.output import write_atomic

OLD, NEW = b"previous output" * 10, b"new output" * 1000


def _temps(folder) -> list:
    return glob.glob(os.path.join(folder, output.TMP_PREFIX + "*" + output.TMP_SUFFIX))


def _umask() -> int:
    m = os.umask(0o022)
    os.umask(m)
    return m


# -- plain behaviour -------------------------------------------------------------------------------
def test_writes_and_leaves_nothing_else(tmp_path):
    target = tmp_path / "out.armnn"
    write_atomic(target, NEW)
    assert target.read_bytes() == NEW
    assert os.listdir(tmp_path) == ["out.armnn"]
    assert (os.stat(target).st_mode & 0o777) == 0o666 & ~_umask()


def test_accepts_chunks(tmp_path):
    target = tmp_path / "out.armnn"
    write_atomic(target, (NEW[i:i + 7] for i in range(0, len(NEW), 7)))
    assert target.read_bytes() == NEW


def test_replaces_and_keeps_the_mode(tmp_path):
    target = tmp_path / "out.armnn"
    target.write_bytes(OLD)
    os.chmod(target, 0o640)
    write_atomic(target, NEW)
    assert target.read_bytes() == NEW and (os.stat(target).st_mode & 0o777) == 0o640


def test_through_a_symlink_writes_the_linked_file(tmp_path):
    (tmp_path / "real").mkdir()
    real = tmp_path / "real" / "out.armnn"
    real.write_bytes(OLD)
    os.symlink(real, tmp_path / "link.armnn")
    write_atomic(tmp_path / "link.armnn", NEW)
    assert os.path.islink(tmp_path / "link.armnn") and real.read_bytes() == NEW
    assert not _temps(tmp_path) and not _temps(tmp_path / "real")


def test_missing_folder(tmp_path):
    with pytest.raises(OutputError, match="does not exist"):
        write_atomic(tmp_path / "nope" / "out.armnn", NEW)
    assert os.listdir(tmp_path) == []


def test_target_is_a_directory(tmp_path):
    (tmp_path / "out.armnn").mkdir()
    with pytest.raises(OutputError, match="directory"):
        write_atomic(tmp_path / "out.armnn", NEW)
    assert os.listdir(tmp_path) == ["out.armnn"] and os.listdir(tmp_path / "out.armnn") == []


@pytest.mark.parametrize("how", ["same path", "relative path", "symlink", "hard link"])
def test_never_overwrites_the_input(tmp_path, how, monkeypatch):
    model = tmp_path / "m.onnx"
    model.write_bytes(OLD)
    monkeypatch.chdir(tmp_path)
    target = {"same path": str(model), "relative path": "./m.onnx", "symlink": str(tmp_path / "link"),
              "hard link": str(tmp_path / "hard")}[how]
    if how == "symlink":
        os.symlink(model, target)
    if how == "hard link":
        os.link(model, target)
    with pytest.raises(OutputError, match="input"):
        write_atomic(target, NEW, inputs=[str(model)])
    assert model.read_bytes() == OLD and not _temps(tmp_path)


def test_read_only_target_file(tmp_path):
    target = tmp_path / "out.armnn"
    target.write_bytes(OLD)
    os.chmod(target, 0o444)
    with pytest.raises(OutputError, match="read-only"):
        write_atomic(target, NEW)
    assert target.read_bytes() == OLD and not _temps(tmp_path)


def test_fifo_target_is_written_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    write_atomic(fifo, NEW)
    reader.join(10)
    assert got == [NEW] and os.path.exists(fifo) and not os.path.isfile(fifo)
    assert not _temps(tmp_path)


def test_error_in_the_data_source_cleans_up(tmp_path):
    target = tmp_path / "out.armnn"
    target.write_bytes(OLD)

    def chunks():
        yield NEW[:100]
        raise ValueError("the serializer failed")

    with pytest.raises(ValueError):
        write_atomic(target, chunks())
    assert target.read_bytes() == OLD and os.listdir(tmp_path) == ["out.armnn"]


# -- the written file is checked before the rename (issue 12) ----------------------------------------
@pytest.mark.parametrize("size", [len(NEW) - 1, len(NEW) + 1])
def test_a_size_other_than_promised_keeps_the_old_file(tmp_path, size):
    target = tmp_path / "out.armnn"
    target.write_bytes(OLD)
    with pytest.raises(OutputError, match=f"{len(NEW):,} bytes were written, {size:,} were promised"):
        write_atomic(target, [NEW[:10], NEW[10:]], size=size)
    assert target.read_bytes() == OLD and os.listdir(tmp_path) == ["out.armnn"]


def test_the_check_reads_the_written_file_back(tmp_path):
    target = tmp_path / "out.armnn"
    target.write_bytes(OLD)
    seen = []

    def check(read_at, size):
        seen.append((size, read_at(0, 10), read_at(size - 4, 100)))
        return "the identifier is wrong"
    with pytest.raises(OutputError, match="the identifier is wrong.*previous file is kept"):
        write_atomic(target, NEW, size=len(NEW), check=check)
    assert seen == [(len(NEW), NEW[:10], NEW[-4:])]
    assert target.read_bytes() == OLD and os.listdir(tmp_path) == ["out.armnn"]
    write_atomic(target, NEW, size=len(NEW), check=lambda read_at, size: None)
    assert target.read_bytes() == NEW


@pytest.mark.skipif(not getattr(os, "O_TMPFILE", 0), reason="no O_TMPFILE on this platform")
def test_the_file_being_written_has_no_name(tmp_path):
    target = tmp_path / "out.armnn"
    seen = []

    def chunks():
        yield NEW
        seen.append(sorted(os.listdir(tmp_path)))
        yield NEW
    write_atomic(target, chunks())
    assert seen == [[]] and target.read_bytes() == NEW + NEW and os.listdir(tmp_path) == ["out.armnn"]


def test_without_o_tmpfile_a_named_file_is_used(tmp_path, monkeypatch):
    monkeypatch.setattr(output, "_O_TMPFILE", 0)
    target = tmp_path / "out.armnn"
    seen = []

    def chunks():
        yield NEW
        seen.append(len(_temps(tmp_path)))
    write_atomic(target, chunks())
    assert seen == [1] and target.read_bytes() == NEW and os.listdir(tmp_path) == ["out.armnn"]


# -- full disk and read-only folder, simulated -----------------------------------------------------
class _FailingFile:
    """Wraps a file object; write() fails with ENOSPC after `budget` bytes."""

    def __init__(self, f, budget):
        self.f, self.budget = f, budget

    def write(self, b):
        if len(b) > self.budget:
            self.f.write(bytes(b[:self.budget]))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.budget -= len(b)
        return self.f.write(b)

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self.f.__exit__(*exc)


@pytest.mark.parametrize("where", ["write", "fsync"])
def test_disk_full_simulated(tmp_path, monkeypatch, where):
    target = tmp_path / "out.armnn"
    target.write_bytes(OLD)
    if where == "write":
        real = os.fdopen
        monkeypatch.setattr(output.os, "fdopen", lambda fd, mode: _FailingFile(real(fd, mode), 1000))
    else:
        def fsync(fd):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        monkeypatch.setattr(output.os, "fsync", fsync)
    with pytest.raises(OutputError, match="No space left"):
        write_atomic(target, NEW)
    assert target.read_bytes() == OLD and os.listdir(tmp_path) == ["out.armnn"]


def test_read_only_folder_simulated(tmp_path, monkeypatch):
    def refuse(path, flags, mode=0o777):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)
    monkeypatch.setattr(output.os, "open", refuse)
    with pytest.raises(OutputError, match="Read-only file system"):
        write_atomic(tmp_path / "out.armnn", NEW)
    assert os.listdir(tmp_path) == []


# -- full disk and read-only folder, real (a tiny tmpfs; needs root) -------------------------------
@pytest.fixture
def tmpfs(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {r.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_disk_full_on_a_tiny_tmpfs(tmpfs):
    target = tmpfs / "out.armnn"
    target.write_bytes(OLD)
    with pytest.raises(OutputError, match="No space left on device"):
        write_atomic(target, b"\x01" * (200 << 10))
    assert target.read_bytes() == OLD and os.listdir(tmpfs) == ["out.armnn"]


def test_read_only_mount(tmpfs):
    target = tmpfs / "out.armnn"
    target.write_bytes(OLD)
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    with pytest.raises(OutputError, match="Read-only file system"):
        write_atomic(target, NEW)
    with pytest.raises(OutputError, match="Read-only file system"):
        write_atomic(tmpfs / "new.armnn", NEW)
    assert target.read_bytes() == OLD and os.listdir(tmpfs) == ["out.armnn"]


# -- killed mid-write --------------------------------------------------------------------------------
# Every child starts from the default signal dispositions: a suite started from a background
# job (`bash scripts/test.sh &`) inherits SIGINT ignored, and Python then installs no
# KeyboardInterrupt handler, so the child would sleep through the SIGINT the test sends.
_DEFAULT_SIGNALS = textwrap.dedent("""
    import signal
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for _s in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(_s, signal.SIG_DFL)
""")
# NAMED=1: the named temporary file, as on a platform without O_TMPFILE
_SLOW_WRITER = _DEFAULT_SIGNALS + textwrap.dedent("""
    import os, sys, time
    import armnn_import.output as output
    from armnn_import.output import write_atomic
    if os.environ.get("NAMED") == "1":
        output._O_TMPFILE = 0

    def chunks():
        yield b"new" * 1000
        sys.stdout.write("writing\\n"); sys.stdout.flush()
        time.sleep(60)
        yield b"never"

    write_atomic(sys.argv[1], chunks())
""")


def _kill_mid_write(tmp_path, script, args, sig, env=None):
    """Start `script`, wait until it says it is writing (past the first chunk, inside
    write_atomic), send `sig`; returns the exit code."""
    import selectors
    proc = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})
    try:
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        assert sel.select(60), "the child did not start writing"
        line = proc.stdout.readline()
        assert line == "writing\n", (line, proc.stderr.read() if proc.poll() is not None else "")
        proc.send_signal(sig)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode


@pytest.mark.parametrize("named", ["O_TMPFILE", "named"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_signal_mid_write_leaves_no_temporary_file(tmp_path, sig, named):
    target = tmp_path / "out.armnn"
    target.write_bytes(OLD)
    code = _kill_mid_write(tmp_path, _SLOW_WRITER, [str(target)], sig, {"NAMED": str(int(named == "named"))})
    assert code != 0
    if sig != signal.SIGINT:
        assert code == -sig  # it still dies by the signal, after cleaning up
    assert target.read_bytes() == OLD
    assert os.listdir(tmp_path) == ["out.armnn"]


@pytest.mark.skipif(not getattr(os, "O_TMPFILE", 0), reason="no O_TMPFILE on this platform")
def test_sigkill_mid_write_leaves_nothing_with_o_tmpfile(tmp_path):
    """The file being written has no name (O_TMPFILE): SIGKILL leaves no trace (issue 17)."""
    target = tmp_path / "out.armnn"
    target.write_bytes(OLD)
    assert _kill_mid_write(tmp_path, _SLOW_WRITER, [str(target)], signal.SIGKILL) == -signal.SIGKILL
    assert target.read_bytes() == OLD and os.listdir(tmp_path) == ["out.armnn"]


def test_sigkill_leftover_of_the_named_file_is_removed_by_the_next_run(tmp_path):
    """Without O_TMPFILE, SIGKILL leaves the hidden temporary file (never a partial
    target); the next write into that folder removes it: it is older than that run."""
    target = tmp_path / "out.armnn"
    target.write_bytes(OLD)
    code = _kill_mid_write(tmp_path, _SLOW_WRITER, [str(target)], signal.SIGKILL, {"NAMED": "1"})
    assert code == -signal.SIGKILL and target.read_bytes() == OLD
    left = _temps(tmp_path)
    assert len(left) == 1 and os.path.getsize(left[0]) <= 3000
    # A process's start time is known to a clock tick (10 ms), rounded down: a run that starts
    # within a tick of the leftover's last write keeps it (that errs on the side of keeping).
    time.sleep(0.1)
    subprocess.run([sys.executable, "-c", "import sys; from armnn_import.output import write_atomic; "
                    "write_atomic(sys.argv[1], b'next run')", str(tmp_path / "other.armnn")],
                   check=True, timeout=60)
    assert sorted(os.listdir(tmp_path)) == ["other.armnn", "out.armnn"] and target.read_bytes() == OLD


def test_stale_cleanup_spares_newer_files_and_other_names(tmp_path):
    old_tmp = tmp_path / f"{output.TMP_PREFIX}{'0' * 16}{output.TMP_SUFFIX}"
    fresh_tmp = tmp_path / f"{output.TMP_PREFIX}{'1' * 16}{output.TMP_SUFFIX}"
    lookalike = tmp_path / f"{output.TMP_PREFIX}mine{output.TMP_SUFFIX}"
    old_dir = tmp_path / f"{output.TMP_PREFIX}{'2' * 16}{output.TMP_SUFFIX}"
    for f in (old_tmp, fresh_tmp, lookalike):
        f.write_bytes(b"partial")
    old_dir.mkdir()
    long_ago = time.time() - 3600
    for f in (old_tmp, lookalike, old_dir):
        os.utime(f, (long_ago, long_ago))
    # fresh_tmp was written after this process started: possibly a run still writing it
    write_atomic(tmp_path / "out.armnn", NEW)
    assert sorted(os.listdir(tmp_path)) == sorted(["out.armnn", fresh_tmp.name, lookalike.name, old_dir.name])


def test_sigterm_with_a_handler_of_the_caller_is_left_alone(tmp_path):
    """A program with its own SIGTERM handler keeps it; write_atomic installs none."""
    script = textwrap.dedent("""
        import signal, sys
        from armnn_import.output import write_atomic
        mine = lambda s, f: None
        signal.signal(signal.SIGTERM, mine)
        seen = []
        def chunks():
            seen.append(signal.getsignal(signal.SIGTERM))
            yield b"x"
        write_atomic(sys.argv[1], chunks())
        assert seen == [mine] and signal.getsignal(signal.SIGTERM) is mine
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        write_atomic(sys.argv[1], chunks())
        assert seen[1] is not signal.SIG_DFL and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    """)
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "out")], check=True, timeout=60)


# The CLI end to end: a real conversion whose write is slowed down.
_SLOW_CLI = _DEFAULT_SIGNALS + textwrap.dedent("""
    import sys, time
    import armnn_import.output as out

    real = out.write_atomic
    def slow(path, data, **kw):
        def chunks():
            for i, chunk in enumerate(out._chunks(data)):
                yield chunk
                if i == 0:
                    sys.stdout.write("writing\\n"); sys.stdout.flush()
                    time.sleep(60)
        return real(path, chunks(), **kw)
    out.write_atomic = slow

    from armnn_import.cli import main
    sys.exit(main(["-q", sys.argv[1], "-o", sys.argv[2]]))
""")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_cli_interrupted_mid_write(tmp_path, sig):
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    model = os.path.join(repo, "test_models", "onnx", "resnet_small.onnx")
    target = tmp_path / "out.armnn"
    target.write_bytes(OLD)
    code = _kill_mid_write(tmp_path, _SLOW_CLI, [model, str(target)], sig)
    assert code == (130 if sig == signal.SIGINT else -signal.SIGTERM)
    assert target.read_bytes() == OLD and os.listdir(tmp_path) == ["out.armnn"]
