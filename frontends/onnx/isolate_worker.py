"""The child processes of isolate.py: a fork of this process (fork_raw), or, for a
process with threads that must not fork, a job for a worker process.

A worker is a fresh Python (fork+exec by subprocess, safe with threads: nothing runs
in between) that imports the job's module once and then, from its single thread,
forks a child per job, so a crash or a hang costs one child and the worker stays
warm: its start-up (about as long as importing the frontend) is paid once per
process (and per thread converting at the same time), not per conversion.

Protocol, over two pipes: the caller sends an 8-byte length and pickle((module, job)),
job being pickle((fn, args)); the worker answers with a byte (1: a result) and an
8-byte length, then the pickled result. On a timeout the caller kills the worker's
process group (worker and child) and starts another worker next time. A worker
whose caller is gone (its request pipe at EOF) kills its child and exits."""
from __future__ import annotations

import atexit
import importlib
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
import time

HEAD = struct.Struct("<?Q")
_idle: list["_Worker"] = []
_lock = threading.Lock()


class _Gone(Exception):
    """The worker died or stopped answering."""


class _Idle(_Gone):
    """The worker had died before the job was sent to it."""


def run_in_worker(fn, args, timeout: float) -> bytes | None:
    """The pickled result of fn(*args) computed by a worker's child, or None."""
    job = pickle.dumps((fn, args), protocol=pickle.HIGHEST_PROTOCOL)
    module = getattr(fn, "__module__", None) or "builtins"
    message = pickle.dumps((module, job), protocol=pickle.HIGHEST_PROTOCOL)
    for attempt in (0, 1):  # a worker that died while idle (killed from outside) is replaced once
        worker = _take()
        try:
            data = worker.call(message, time.monotonic() + timeout)
        except _Gone as e:  # a crash of the worker itself, or a timeout: no result
            worker.kill()
            if isinstance(e, _Idle) and attempt == 0:
                continue
            return None
        _give_back(worker)
        return data
    return None


class _Worker:
    BOOT = ("import sys; sys.path[:] = sys.argv[3:]; "
            f"from {__name__} import serve; serve(int(sys.argv[1]), int(sys.argv[2]))")

    def __init__(self):
        req_r, self.req = os.pipe()
        self.resp, resp_w = os.pipe()
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")  # a worker needs no BLAS pool
        try:
            self.proc = subprocess.Popen([sys.executable, "-c", self.BOOT, str(req_r), str(resp_w), *sys.path],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env,
                                         pass_fds=(req_r, resp_w), start_new_session=True)
        finally:
            os.close(req_r)
            os.close(resp_w)
        self.pid = os.getpid()
        try:
            _read(self.resp, 1, time.monotonic() + 120)
        except _Gone:
            self.kill()
            raise RuntimeError("the isolation worker process could not start (see its messages above)") from None

    def call(self, message: bytes, deadline: float) -> bytes | None:
        try:
            os.write(self.req, struct.pack("<Q", len(message)))
            _write(self.req, message)
        except OSError:  # (EPIPE: nobody reads the request pipe)
            raise _Idle from None
        ok, size = HEAD.unpack(_read(self.resp, HEAD.size, deadline))
        data = _read(self.resp, size, deadline)
        return data if ok else None

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the worker and its child
        except OSError:
            pass
        self.proc.wait()
        self.close()

    def close(self):
        for fd in (self.req, self.resp):
            if fd >= 0:
                os.close(fd)
        self.req = self.resp = -1  # (closed once: the numbers may be reused)


def _take() -> _Worker:
    with _lock:
        if _idle and _idle[-1].pid == os.getpid():
            return _idle.pop()
    return _Worker()


def _give_back(worker: _Worker) -> None:
    with _lock:
        _idle.append(worker)


def _forget_in_child() -> None:
    """In a forked child: the workers belong to the parent; close our copies of their pipes
    (and make a new lock: another thread of the parent may have held this one)."""
    global _lock
    _lock = threading.Lock()
    for w in _idle:
        w.close()
        w.proc.returncode = 0  # (not ours to wait for)
    _idle.clear()


def _stop_all() -> None:
    """At exit: a worker exits when its request pipe closes."""
    with _lock:
        workers = [w for w in _idle if w.pid == os.getpid()]
        _idle.clear()
    for w in workers:
        w.close()
        try:
            w.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            w.kill()


os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(_stop_all)


def fork_raw(fn, args, deadline: float | None, watch: int | None = None) -> bytes | None:
    """The pickled result of fn(*args) computed in a forked child; None if the child fails,
    dies, or is still running at `deadline` (monotonic) or when `watch` (an fd) turns
    readable (it is then killed)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into the caller's stack
        code = 1
        try:
            import faulthandler
            faulthandler.disable()  # a crash here is expected and handled: no dump on stderr
            os.close(r)
            data = pickle.dumps(fn(*args), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(w, "wb") as f:
                f.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    with os.fdopen(r, "rb", buffering=0) as f:
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            ready = [] if left is not None and left <= 0 else \
                select.select([f] + ([watch] if watch is not None else []), [], [], left)[0]
            if f not in ready:
                os.kill(pid, signal.SIGKILL)  # hung, or the caller is gone: give up on the result
                os.waitpid(pid, 0)
                return None
            chunk = f.read(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    data = b"".join(chunks)
    _, status = os.waitpid(pid, 0)
    return data if status == 0 and data else None


def _read(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, got = [], 0
    while got < n:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and (left <= 0 or not select.select([fd], [], [], left)[0]):
            raise _Gone
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise _Gone
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _call(job: bytes):
    """In a worker's child: the job itself."""
    fn, args = pickle.loads(job)
    return fn(*args)


def serve(req: int, resp: int) -> None:
    """The worker's loop (its only thread): one forked child per job."""
    os.write(resp, b"\x01")
    while True:
        try:
            (size,) = struct.unpack("<Q", _read(req, 8, None))
            module, job = pickle.loads(_read(req, size, None))
        except _Gone:  # the caller is gone
            return
        importlib.import_module(module)  # once per worker; the children share it
        data = fork_raw(_call, (job,), None, watch=req)
        try:
            _write(resp, HEAD.pack(data is not None, len(data or b"")) + (data or b""))
        except OSError:
            return
