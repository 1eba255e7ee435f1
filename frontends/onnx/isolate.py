"""Run onnx's C++ helpers (shape inference, function-body builders) in a
forked child: on hostile models they can crash the whole process (for
example a GatherND with batch_dims=-5 makes shape inference segfault).
A crashed child means "no result", and the conversion goes on without it."""
from __future__ import annotations

import os
import pickle


def isolated(fn, *args):
    """fn(*args) computed in a child process; None if the child fails or dies."""
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
            os.close(r)
            data = pickle.dumps(fn(*args), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(w, "wb") as f:
                f.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        return None
    try:
        return pickle.loads(data)
    except Exception:  # noqa: BLE001 - a truncated result
        return None
