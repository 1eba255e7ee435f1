"""A one-line progress bar on stderr for the conversion of a large model.

    [########----------------]  35% passes: sink_permutes

No dependency: the line is redrawn with a carriage return. It follows the
phases a Report announces (Report.listener): the top-level phases of
report.PHASES move the bar, the phases inside them (a frontend's own steps,
the passes one by one) only change the text after the phase name.
"""
from __future__ import annotations

import os
import sys

from .report import PHASES

LARGE_MODEL = 20 * 1024 * 1024  # bytes; smaller models convert too fast to need a bar
_SHARE = {"load": 0.05, "frontend": 0.45, "passes": 0.35, "write": 0.10, "verify": 0.05}


def wanted(path, quiet: bool, stream=None) -> bool:
    """A bar is drawn for a model larger than LARGE_MODEL when the stream is a terminal."""
    stream = stream or sys.stderr
    if quiet or not getattr(stream, "isatty", lambda: False)():
        return False
    try:
        return os.path.getsize(path) > LARGE_MODEL
    except (OSError, TypeError):
        return False


class Progress:
    def __init__(self, label: str, stream=None, width: int = 24, phases=PHASES):
        self.label, self.stream, self.width = label, stream or sys.stderr, width
        shares = {p: _SHARE.get(p, 0.05) for p in phases}
        total = sum(shares.values())
        self._start, acc = {}, 0.0
        for p in phases:  # where each top-level phase starts, as a fraction of the whole
            self._start[p] = acc / total
            acc += shares[p]
        self.fraction, self.phase, self._shown = 0.0, "", False

    def __call__(self, name: str) -> None:
        """Report.listener: a phase starts."""
        if name in self._start:
            self.phase = name
            self.fraction = max(self.fraction, self._start[name])
            self._draw(name)
        elif self.phase:
            self._draw(f"{self.phase}: {name.split(':', 1)[-1]}")

    def _draw(self, text: str) -> None:
        done = int(round(self.fraction * self.width))
        line = f"{self.label} [{'#' * done}{'-' * (self.width - done)}] {self.fraction:4.0%} {text}"
        self.stream.write("\r" + line[:_columns(self.stream) - 1] + "\x1b[K")
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        """Erase the bar, leaving the line for whatever is printed next."""
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False


def _columns(stream) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 80
