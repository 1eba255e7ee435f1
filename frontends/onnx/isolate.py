"""Run onnx's C++ helpers (shape inference, function-body builders) in a
child process: on hostile models they can crash the whole process (for
example a GatherND with batch_dims=-5 makes shape inference segfault).
A crashed child means "no result", and the conversion goes on without it.

The child is a fork of this process only when this process has no other
thread: a fork copies the memory of every thread but runs only the calling
one, so a lock another thread held (malloc's, onnxruntime's, the import lock)
stays locked in the child for ever, a deadlock (Python 3.12 warns about such
forks). The CLI's process is single-threaded, and a fork costs it nothing: the
child shares the parsed model and the converter's state. A process with threads
(a library user's pipeline, a test process with an onnxruntime session) sends
the job instead to a worker process started with fork+exec (isolate_worker.py),
which forks a child per job from its own single thread. Either way a crash, an
exhausted memory or a hang of the child gives None, and the caller its usual
clear error or warning."""
from __future__ import annotations

import ctypes
import os
import pickle
import sys
import threading
import time

from .isolate_worker import fork_raw, run_in_worker


def isolated(fn, *args, timeout: float = 600.0, portable=None):
    """fn(*args) computed in a child process; None if the child fails, dies or hangs.
    `portable()` gives (fn2, args2), picklable, that compute the same as fn(*args), for a child
    that is not a fork of this process (default: fn and args themselves must be picklable)."""
    if not hasattr(os, "fork"):
        try:
            return fn(*args)
        except Exception:  # noqa: BLE001 - advisory results only
            return None
    # The CLI's process is single-threaded (numpy's OpenBLAS pool aside, see fork_is_safe): it keeps
    # the fork, which costs nothing and shares the parsed model; a worker costs about 1 s to start.
    if fork_is_safe() or not sys.executable:  # (no interpreter to start a worker with: fork as before)
        data = fork_raw(fn, args, time.monotonic() + timeout)
    else:
        job_fn, job_args = portable() if portable is not None else (fn, args)
        data = run_in_worker(job_fn, job_args, timeout)
    if not data:
        return None
    try:
        return pickle.loads(data)
    except Exception:  # noqa: BLE001 - a truncated result
        return None


def fork_is_safe() -> bool:
    """True when fork() would leave no thread but the calling one behind in the child: none
    besides it, or only OpenBLAS's pool, which OpenBLAS's own pthread_atfork handler stops
    before every fork (numpy starts it at import; Python 3.12's check, made after the fork,
    does not see it either). Where threads cannot be counted, False."""
    if threading.active_count() > 1:
        return False
    try:
        n = len(os.listdir("/proc/self/task"))
    except OSError:
        return False
    return n <= 1 or n - _blas_pool_threads() <= 1


_BLAS: dict[str, object] = {}  # path of a loaded OpenBLAS -> its ctypes handle (None: not usable)
PARALLEL = ("openblas_get_parallel", "openblas_get_parallel64_", "scipy_openblas_get_parallel64_")


def _blas_pool_threads() -> int:
    """Worker threads of the pthreads OpenBLAS libraries loaded in this process (those
    its fork handler stops); 0 for libraries it cannot tell about (counted as threads)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split(None, 5)[5].strip() for line in f if "openblas" in line and ".so" in line}
    except (OSError, IndexError):
        return 0
    total = 0
    for path in sorted(paths):
        if path not in _BLAS:
            _BLAS[path] = _pthreads_blas(path)
        lib = _BLAS[path]
        if lib is not None and ctypes.c_int.in_dll(lib, "blas_server_avail").value:
            total += max(ctypes.c_int.in_dll(lib, "blas_num_threads").value - 1, 0)
    return total


def _pthreads_blas(path: str):
    """The handle of an OpenBLAS built with its own pthreads pool (get_parallel() == 1; an
    OpenMP build's threads are not stopped at fork), else None."""
    try:
        lib = ctypes.CDLL(path)  # (already loaded: the same handle, nothing runs)
        getter = next((getattr(lib, n) for n in PARALLEL if hasattr(lib, n)), None)
        for sym in ("blas_server_avail", "blas_num_threads"):
            ctypes.c_int.in_dll(lib, sym)
    except (OSError, ValueError):
        return None
    return lib if getter is not None and getter() == 1 else None
