"""The exception hierarchy. Everything the library raises on bad input or a
model it cannot convert derives from ArmnnImportError; anything else escaping
from convert() is a bug."""
from __future__ import annotations

from dataclasses import dataclass

# The reason codes: a small closed set, one on every problem (a refused node, input or output),
# stable for scripts that sort refusals (the CLI line ends with "[code]", the JSON report and
# `armnn-import ops --json` carry it). Wording of the reasons may change; the codes do not.
REASON_CODES = {
    "unsupported-op": "no converter for this operator, operator version or domain",
    "inexpressible": "no exact lowering onto the Arm NN layers of the target format",
    "needs-target": "exact only in a newer Arm NN format: convert with --target",
    "bad-attribute": "an attribute or option value is invalid or out of range",
    "bad-model": "the model is invalid or inconsistent (missing inputs, contradicting tensors)",
    "dynamic-shape": "a shape is unknown before run time, or depends on the data",
    "needs-constant": "an input Arm NN needs as a constant (weights, shape parameters) is computed at run time",
    "unsupported-type": "a tensor type the Arm NN format cannot hold",
    "internal": "a bug of armnn-import while lowering, not a refusal of the model",
}


def check_code(code: str) -> str:
    """`code` if it is one of REASON_CODES (a typo in a converter fails at import, not in a report)."""
    if code not in REASON_CODES:
        raise ValueError(f"unknown reason code {code!r} (known: {', '.join(REASON_CODES)})")
    return code


def printable(text) -> str:
    """`text` with every non-printable character (newlines, escape sequences,
    bidirectional overrides, ...) written as its Python escape, so that names
    from a model cannot break or restyle the terminal's lines."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class ArmnnImportError(Exception):
    """Base class of every error armnn-import raises on purpose."""
    exit_code = 1
    # True when what went wrong is a bug of armnn-import, not the model (the CLI's exit code 4)
    internal = False
    # the reason code (REASON_CODES) of an error that refuses the model for one of those reasons
    # (e.g. a ConversionError on a symbolic input dimension: dynamic-shape); None for the rest
    code: str | None = None

    def lines(self) -> list[str]:
        """One line per problem, for the CLI."""
        return [f"{self} [{self.code}]" if self.code else str(self)]


class LoadError(ArmnnImportError):
    """The input file cannot be read or parsed (bad format, truncated, hostile)."""

    def __init__(self, message: str = "", code: str | None = None):
        super().__init__(message)
        if code is not None:  # e.g. bad-model: the file reads, but contradicts the format's rules
            self.code = check_code(code)


class ReadError(LoadError):
    """A .armnn file cannot be read back."""


@dataclass
class Problem:
    op: str
    node: str
    reason: str
    hint: str = ""
    code: str = ""          # one of REASON_CODES ("" -> "internal" or "inexpressible")
    internal: bool = False  # an unexpected exception while lowering: a bug, not a refusal

    def __post_init__(self):
        self.code = check_code(self.code or ("internal" if self.internal else "inexpressible"))

    def __str__(self):
        s = f"{printable(self.op)} (node {self.node!r}): {printable(self.reason)}"
        return f"{s}; hint: {printable(self.hint)}" if self.hint else s

    def line(self) -> str:
        """The CLI's line: the problem and its reason code."""
        return f"{self} [{self.code}]"

    def to_dict(self) -> dict:
        return {"op": self.op, "node": self.node, "code": self.code, "reason": self.reason, "hint": self.hint}


class UnsupportedModelError(ArmnnImportError):
    """The model uses operators or attributes that cannot be expressed exactly.
    `problems` lists every one of them, not only the first."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        n = len(self.problems)
        super().__init__(f"{n} unsupported node{'s' if n != 1 else ''}:\n" +
                         "\n".join(f"  {p}" for p in self.problems))

    def lines(self) -> list[str]:
        return [p.line() for p in self.problems]

    @property
    def internal(self) -> bool:
        return any(p.internal for p in self.problems)


class ConversionError(ArmnnImportError):
    """Conversion failed for a reason other than an unsupported operator
    (for example an unknown input dimension)."""

    def __init__(self, message: str = "", code: str | None = None):
        super().__init__(message)
        if code is not None:
            self.code = check_code(code)


class InputValueError(ConversionError):
    """An input fixed to a value (--input-value, convert(input_values=...)) that the model
    has no input of that name, or whose value does not fit the input's shape or dtype."""


class GraphError(ArmnnImportError):
    """The IR graph breaks an invariant (found by verify())."""


class SerializationError(ArmnnImportError):
    """The network cannot be written (for example it exceeds 2 GiB)."""


class OutputError(ArmnnImportError):
    """The output file cannot be written."""


class ExecutionError(ArmnnImportError):
    """The numpy executor cannot run a graph: bad inputs, or a layer whose Arm NN
    result is undefined (for example an out-of-range Gather index)."""
