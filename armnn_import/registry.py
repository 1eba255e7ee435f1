"""Operator registries: one small converter function per operator, keyed by
op name and version range (opset for ONNX, operator version for TFLite).

    ONNX = OpRegistry("onnx")

    @ONNX.register("Relu", since=6, layers=("Activation",))
    def relu(ctx, node): ...

`lookup(op, version)` picks the entry with the largest `since` <= version,
as tf2onnx and TVM do; the catalogue (`armnn-import ops`) reads `entries()`.

Every per-operator fact lives on the entry, set where the operator is registered (the
required input count, whether it folds, its outputs, its type rule), and operators that
are refused on purpose are registered as refusals with their reason and reason code
(`refuse`), so that the frontends and `armnn-import ops` read one source.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .errors import check_code

# Type rules (TFLite's pre-scan): how an operator's data types relate.
#   same:    the data input (`data_input`) and the outputs share one type
#   all:     every input is data, all of one type, and the outputs have it (ADD, CONCATENATION)
#   compare: every input is data, all of one type; the outputs are Boolean (EQUAL)
#   free:    the output type may differ from the input's (CAST, QUANTIZE, SHAPE)
TYPE_RULES = ("same", "all", "compare", "free")


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
    inputs: int = 1            # inputs it cannot do without (the rest optional, or absent in old versions)
    foldable: bool = False     # evaluated at conversion time when all its inputs are constants
    multi_output: bool = False  # may have more than one output tensor
    types: str = "same"        # its type rule (TYPE_RULES)
    data_input: int = 0        # the input that holds the data, for the "same" rule
    state_inputs: tuple[int, ...] = ()  # variable tensors it reads as its initial state

    def target_problem(self, target) -> Refusal | None:
        """Why `target` (armnn_import.target.Target) cannot take it: older than `needs`."""
        if target.at_least(self.needs):
            return None
        return Refusal(f"needs the Arm NN {self.needs} format ({', '.join(self.layers)}); the {target} format "
                       "has no exact lowering",
                       f"convert with --target {self.needs} (read by Arm NN {self.needs} and later)", "needs-target")

    def covers(self, version: int) -> bool:
        return self.since <= version and (self.until is None or version <= self.until)

    @property
    def version_range(self) -> str:
        return f"{self.since}+" if self.until is None else f"{self.since}-{self.until}"


class Refusal(tuple):
    """(reason, hint, code): why an operator or node is refused. A tuple, so that the checks'
    older answers ((reason, hint)) and this one are read alike, and `Problem(op, node, *r)`
    takes all three."""

    def __new__(cls, reason: str, hint: str = "", code: str = "inexpressible"):
        return super().__new__(cls, (reason, hint, check_code(code)))

    reason = property(lambda self: self[0])
    hint = property(lambda self: self[1])
    code = property(lambda self: self[2])


@dataclass
class OpRegistry:
    name: str
    _entries: dict[str, list[OpEntry]] = field(default_factory=dict)
    #: op -> the converters of the float operator on quantized inputs (ONNX QDQ models), by version
    _quantized: dict[str, list[OpEntry]] = field(default_factory=dict)
    #: op -> why it is refused (operators with no exact lowering, named on purpose)
    _refused: dict[str, Refusal] = field(default_factory=dict)

    def register(self, *ops: str, since: int = 1, until: int | None = None,
                 layers: tuple[str, ...] = (), check: Callable | None = None, notes: str = "",
                 needs: str = "19.02", inputs: int = 1, foldable: bool = False, multi_output: bool = False,
                 types: str = "same", data_input: int = 0, state_inputs: tuple[int, ...] = ()):
        if types not in TYPE_RULES:
            raise ValueError(f"{self.name}: {ops}: type rule {types!r} is not one of {TYPE_RULES}")

        def deco(fn):
            fn = _named(fn, self.name, ops, since)
            for op in ops:
                entry = OpEntry(op, since, until, fn, tuple(layers), check, notes, needs, inputs, foldable,
                                multi_output, types, data_input, tuple(state_inputs))
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

    def refuse(self, *ops: str, reason: str, code: str = "inexpressible", hint: str = "") -> None:
        """Refuse `ops` with this reason (they have no converter: a registered one wins)."""
        for op in ops:
            if op in self._refused:
                raise ValueError(f"{self.name}: {op} refused twice")
            self._refused[op] = Refusal(reason, hint, code)

    def refusal(self, op: str) -> Refusal | None:
        return self._refused.get(op)

    def refusals(self) -> dict[str, Refusal]:
        return dict(sorted(self._refused.items()))

    def lookup(self, op: str, version: int) -> OpEntry | None:
        return _find(self._entries, op, version)

    def facts(self, op: str, version: int) -> OpEntry | None:
        """The entry of (op, version), else the newest of op's: the per-op facts (inputs,
        foldable, type rule, ...) hold for every version, and the pre-scan needs them even for
        a version it will refuse."""
        return _find(self._entries, op, version) or (self._entries[op][-1] if op in self._entries else None)

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
