"""What a frontend plugin hands `armnn-import verify`: its source model, run in the
format's own runtime (the plugin's `source_runner(source)`, see plugin.Frontend).

The runtimes are optional (the `verify` extra): a runner imports its runtime with
need_runtime(), which names the package to install when it is missing.
"""
from __future__ import annotations

import importlib
import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .errors import ArmnnImportError


class VerifyError(ArmnnImportError):
    """Verification cannot run: unusable inputs, a model the source runtime
    refuses, a failing Arm NN runner."""


class MissingRuntimeError(VerifyError):
    """The source model's runtime, an optional extra, is not installed."""


@dataclass
class IoSpec:
    name: str
    shape: tuple                       # None for a dimension the model leaves open
    dtype: np.dtype
    quant: tuple[float, int] | None    # (scale, zero point) of a quantized tensor


@dataclass
class Node:
    name: str                          # as the frontend names it in the report
    op: str
    output: object                     # the key of its first output in intermediates()
    consumers: list[str]
    n_outputs: int = 1


class SourceRunner(Protocol):
    runtime: str                       # "onnxruntime", shown in the verify result
    inputs: list[IoSpec]               # in the model's input order
    outputs: list[IoSpec]

    def run(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """The model's outputs on `arrays` (one per input, in order)."""

    @property
    def nodes(self) -> list[Node]:
        """Every node with an output, in the model's order, named as the frontend names it."""

    def intermediates(self, arrays: list[np.ndarray]) -> dict:
        """Node.output -> (value, (scale, zero point) or None) of every node's first output."""


def need_runtime(module: str, package: str, title: str):
    """Import `module` (the runtime of the `title` format), or raise MissingRuntimeError
    naming the pip package that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        article = "an" if title[:1].upper() in "AEIOU" else "a"
        raise MissingRuntimeError(f"verifying {article} {title} model needs {package}: pip install "
                                  f"armnn-import[verify] (or pip install {package})") from None


def model_bytes(source, what: str = "model or .armnn") -> bytes:
    """The bytes of a model given as bytes or a path (a FIFO or device is refused, not read)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    from .discovery import open_regular
    try:
        with open_regular(source, what) as f:
            return f.read()
    except OSError as e:
        raise VerifyError(f"{source}: cannot read: {e.strerror or e}") from None


@contextmanager
def native_stderr_silenced():
    """Point file descriptor 2 at /dev/null (native code writes there directly);
    errors still arrive as Python exceptions."""
    import sys
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
