"""Run onnx's C++ helpers (shape inference, function-body builders) in a
forked child: on hostile models they can crash the whole process (for
example a GatherND with batch_dims=-5 makes shape inference segfault).
A crashed child means "no result", and the conversion goes on without it."""
from __future__ import annotations

import os
import pickle
import select
import signal
import time


def isolated(fn, *args, timeout: float = 600.0):
    """fn(*args) computed in a child process; None if the child fails, dies or hangs."""
    if not hasattr(os, "fork"):
        try:
            return fn(*args)
        except Exception:  # noqa: BLE001 - advisory results only
            return None
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
    chunks, deadline = [], time.monotonic() + timeout
    with os.fdopen(r, "rb", buffering=0) as f:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([f], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)  # hung: give up on the result
                os.waitpid(pid, 0)
                return None
            chunk = f.read(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    data = b"".join(chunks)
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        return None
    try:
        return pickle.loads(data)
    except Exception:  # noqa: BLE001 - a truncated result
        return None
