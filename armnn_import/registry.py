"""Operator registries: one small converter function per operator, keyed by
op name and version range (opset for ONNX, operator version for TFLite).

    ONNX = OpRegistry("onnx")

    @ONNX.register("Relu", since=6, layers=("Activation",))
    def relu(ctx, node): ...

`lookup(op, version)` picks the entry with the largest `since` <= version,
as tf2onnx and TVM do; the catalogue (`armnn-import ops`) reads `entries()`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class OpEntry:
    op: str
    since: int
    until: int | None          # inclusive upper bound, None = open
    fn: Callable
    layers: tuple[str, ...]    # Arm NN layer types it becomes (for the catalogue)
    check: Callable | None = None  # pre-scan: (node, ctx) -> reason string or None
    notes: str = ""
    needs: str = "19.02"       # the first target release whose format has the layers it needs

    def target_problem(self, target) -> tuple[str, str] | None:
        """(reason, hint) when `target` (armnn_import.target.Target) is older than `needs`."""
        if target.at_least(self.needs):
            return None
        return (f"needs the Arm NN {self.needs} format ({', '.join(self.layers)}); the {target} format "
                "has no exact lowering",
                f"convert with --target {self.needs} (read by Arm NN {self.needs} and later)")

    def covers(self, version: int) -> bool:
        return self.since <= version and (self.until is None or version <= self.until)

    @property
    def version_range(self) -> str:
        return f"{self.since}+" if self.until is None else f"{self.since}-{self.until}"


@dataclass
class OpRegistry:
    name: str
    _entries: dict[str, list[OpEntry]] = field(default_factory=dict)
    #: op -> the converters of the float operator on quantized inputs (ONNX QDQ models), by version
    _quantized: dict[str, list[OpEntry]] = field(default_factory=dict)

    def register(self, *ops: str, since: int = 1, until: int | None = None,
                 layers: tuple[str, ...] = (), check: Callable | None = None, notes: str = "",
                 needs: str = "19.02"):
        def deco(fn):
            fn = _named(fn, self.name, ops, since)
            for op in ops:
                entry = OpEntry(op, since, until, fn, tuple(layers), check, notes, needs)
                lst = self._entries.setdefault(op, [])
                if any(e.since == since for e in lst):
                    raise ValueError(f"{self.name}: {op} since {since} registered twice")
                lst.append(entry)
                lst.sort(key=lambda e: e.since)
            return fn
        return deco

    def register_quantized(self, *ops: str, since: int = 1, until: int | None = None,
                           layers: tuple[str, ...] = (), notes: str = ""):
        """The converter of float operators whose inputs are quantized (QDQ); listed by
        `armnn-import ops` as "<op> (quantized)"."""
        def deco(fn):
            fn = _named(fn, self.name, ops, since)
            for op in ops:
                lst = self._quantized.setdefault(op, [])
                lst.append(OpEntry(op, since, until, fn, tuple(layers), None, notes))
                lst.sort(key=lambda e: e.since)
            return fn
        return deco

    def lookup(self, op: str, version: int) -> OpEntry | None:
        return _find(self._entries, op, version)

    def lookup_quantized(self, op: str, version: int) -> OpEntry | None:
        return _find(self._quantized, op, version)

    def quantized_entries(self) -> list[OpEntry]:
        return [e for op in sorted(self._quantized) for e in self._quantized[op]]

    def ops(self) -> list[str]:
        return sorted(self._entries)

    def entries(self) -> list[OpEntry]:
        return [e for op in sorted(self._entries) for e in self._entries[op]]


def _named(fn, registry: str, ops, since: int):
    """A converter made by a lambda or a factory (``for op in ...: register(op)(make(op))``) gets
    a name of its own, ``<registry>_<op>_<since>``, so that tracebacks and profiles say which
    operator ran rather than ``<lambda>`` or ``convert``."""
    code = getattr(fn, "__code__", None)
    if code is None or (code.co_name != "<lambda>" and "<locals>" not in fn.__qualname__):
        return fn
    name = "_".join((registry, *(op.replace(".", "_") for op in ops), str(since)))
    fn.__code__ = code.replace(co_name=name, co_qualname=name)
    fn.__name__ = fn.__qualname__ = name
    return fn


def _find(table: dict, op: str, version: int) -> OpEntry | None:
    for e in reversed(table.get(op, [])):
        if e.covers(version):
            return e
    return None
