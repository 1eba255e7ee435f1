"""Inputs fixed to a value (--input-value NAME=V, convert(input_values={...})): the frontend
makes the input a constant of the model's shape and dtype, so what depends on it alone
(an If on a sample rate, a shape computed from it) folds at conversion. The value is
checked: an integer input takes integers in its dtype's range (exact, never through a float),
a bool input 0/1/true/false, a float input values within its range (rounded to it, as
onnxruntime or LiteRT round what they are fed)."""
from __future__ import annotations

import numpy as np

from .errors import InputValueError, printable

BOOL_WORDS = {"true": True, "false": False, "1": True, "0": False}


def check_names(given: dict, inputs: list[str]) -> None:
    """InputValueError for a fixed name that is not an input of the model."""
    for name in given:
        if name not in inputs:
            raise InputValueError(f"input value for {printable(name)!r}, which is not an input of the model "
                                  f"(inputs: {', '.join(printable(n) for n in inputs) or 'none'})")


def fixed_value(name: str, given, dtype, shape) -> np.ndarray:
    """`given` (a number, a string "v" or "v,v,...", a sequence or an array) as an array of
    `dtype` and `shape` (None: unknown; a tuple whose unknown dimensions are None). One value
    fills the whole shape; otherwise the values fill it in order (a 1-D input of unknown
    length takes their count)."""
    dtype = np.dtype(dtype)
    flat = [_element(name, v, dtype) for v in _items(name, given)]
    if shape is None or any(d is None for d in shape):
        if shape is None or len(shape) != 1:
            raise InputValueError(f"input value for {printable(name)!r}: the input's shape is not known; "
                                  "give it with --input-shape")
        shape = (len(flat),)
    count = int(np.prod(shape, dtype=np.int64))
    if not shape and len(flat) != 1:
        raise InputValueError(f"input value for {printable(name)!r}: the input is a scalar, {len(flat)} values given")
    if len(flat) not in (1, count):
        raise InputValueError(f"input value for {printable(name)!r}: {len(flat)} values for shape "
                              f"{list(shape)} ({count} elements)")
    out = np.empty(count, dtype)
    out[:] = flat
    return out.reshape(shape)


def _items(name: str, given) -> list:
    if isinstance(given, str):
        items = [v.strip() for v in given.split(",")]
    else:
        items = np.asarray(given, dtype=object).reshape(-1).tolist()
    if not items or any(isinstance(v, str) and not v for v in items):
        raise InputValueError(f"input value for {printable(name)!r}: expected a value or a comma list, "
                              f"got {printable(given)!r}")
    return items


def _element(name: str, v, dtype: np.dtype):
    """One value, exactly in `dtype` (InputValueError when it cannot hold it)."""
    shown = repr(printable(v)) if isinstance(v, str) else v
    what = f"input value for {printable(name)!r}: {shown}"
    if dtype.kind == "b":
        key = str(v).strip().lower() if not isinstance(v, (bool, np.bool_)) else str(bool(v)).lower()
        if key not in BOOL_WORDS:
            raise InputValueError(f"{what} is not a boolean (true, false, 1, 0)")
        return BOOL_WORDS[key]
    try:
        x = _number(v)
    except (TypeError, ValueError):
        raise InputValueError(f"{what} is not a number") from None
    if dtype.kind in "iu":
        if isinstance(x, float):
            if not x.is_integer():
                raise InputValueError(f"{what} is not an integer; the input is {dtype.name}")
            x = int(x)
        info = np.iinfo(dtype)
        if not info.min <= x <= info.max:
            raise InputValueError(f"{what} is outside {dtype.name}'s range [{info.min}, {info.max}]")
        return x
    if dtype.kind == "f":
        try:
            f = float(x)
        except OverflowError:
            raise InputValueError(f"{what} is outside {dtype.name}'s range") from None  # (inf and nan are values a float holds; a finite value must not overflow)
        if np.isfinite(f) and abs(f) > float(np.finfo(dtype).max):
            raise InputValueError(f"{what} is outside {dtype.name}'s range")
        return f
    raise InputValueError(f"input value for {printable(name)!r}: an input of type {dtype.name} cannot be fixed")


def _number(v):
    """An int (kept exact: no float on the way) or a float, from a string or a number."""
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    text = str(v).strip()
    try:
        return int(text, 0) if text.lstrip("+-")[:2].lower() in ("0x", "0b", "0o") else int(text)
    except ValueError:
        return float(text)


def record(report, name: str, value: np.ndarray) -> None:
    """The report's note of a fixed input: its value (a list), shape and dtype."""
    report.input_values[name] = {"value": value.tolist(), "shape": list(value.shape), "dtype": value.dtype.name}


class FixedSource:
    """A verify_source.SourceRunner with the fixed inputs (the report's input_values) taken out of
    its inputs: run() and intermediates() put their values back in the model's input order, so
    verify feeds the source model what the network holds as constants."""

    def __init__(self, src, fixed: dict):
        self._src = src
        self._fixed = {k: np.asarray(v["value"], v["dtype"]).reshape(v["shape"]) for k, v in fixed.items()}
        self.inputs = [s for s in src.inputs if s.name not in self._fixed]

    def _full(self, arrays) -> list:
        given = iter(arrays)
        return [self._fixed[s.name] if s.name in self._fixed else next(given) for s in self._src.inputs]

    def run(self, arrays):
        return self._src.run(self._full(arrays))

    def intermediates(self, arrays):
        return self._src.intermediates(self._full(arrays))

    def __getattr__(self, name):  # runtime, outputs, nodes: the source's own
        return getattr(self._src, name)
