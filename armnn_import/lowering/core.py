"""What every lowering module shares: the refusal a converter raises, and small helpers."""
from __future__ import annotations

import numpy as np

FLT_MAX = float(np.finfo(np.float32).max)


class Unsupported(Exception):
    """Raised by a converter when a node has no exact lowering; collected by
    the frontend into an UnsupportedModelError (never escapes the library)."""

    def __init__(self, reason: str, hint: str = "", code: str = "inexpressible"):
        super().__init__(reason)
        self.reason, self.hint, self.code = reason, hint, code  # code: errors.REASON_CODES


def inverse_perm(perm) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)
