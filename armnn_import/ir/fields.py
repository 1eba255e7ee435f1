"""How a descriptor's fields are declared (vectors, fields a later release added) and coerced to
their declared types, so that equal descriptors compare equal after a round trip."""
import dataclasses
import typing
from dataclasses import field
from enum import IntEnum

import numpy as np


def tuple_field(default=(), elem="uint32"):
    """A vector field; `elem` is the schema's element type ([uint] or [int])."""
    return field(default=tuple(default), metadata={"elem": elem})


def since_field(release: str, default):
    """A field that the format of `release` added: not written for older targets,
    where it must keep its default."""
    return field(default=default, metadata={"since": release})


_HINTS: dict[type, object] = {}  # class -> its coercion (_coercer): get_type_hints is slow, and runs per layer
_ENUM, _FLOAT, _BOOL, _INT, _TUPLE = range(5)


def _kinds(cls) -> list:
    out = []
    for f, tp in typing.get_type_hints(cls).items():
        if isinstance(tp, type) and issubclass(tp, IntEnum):
            out.append((f, _ENUM, tp))
        elif tp is float:
            out.append((f, _FLOAT, tp))
        elif tp is bool:
            out.append((f, _BOOL, tp))
        elif tp is int:
            out.append((f, _INT, tp))
        elif typing.get_origin(tp) is tuple:
            out.append((f, _TUPLE, tp))
    return out


def _canonical(self):
    # Coerce every field to its declared type (enums, float32-rounded floats,
    # tuples of ints), so equal descriptors compare equal after a round trip.
    fn = _HINTS.get(type(self))
    if fn is None:
        fn = _HINTS[type(self)] = _coercer(type(self))
    fn(self)


def _coercer(cls):
    """The coercion of cls's fields, as one function without a loop (it runs per layer made).
    A value already of its type, and floats 0 and 1, are kept as they are: the same result."""
    lines, env = ["def coerce(self):"], {"_f32": np.float32, "_tuple": _as_int_tuple}
    for i, (f, kind, tp) in enumerate(_kinds(cls)):
        env[f"T{i}"] = tp
        lines.append(f"    v = self.{f}")
        if kind == _FLOAT:
            lines.append(f"    if type(v) is not float or (v != 0.0 and v != 1.0): self.{f} = float(_f32(v))")
        elif kind == _TUPLE:  # (a tuple of ints already, as most callers pass: kept, not copied)
            lines.append(f"    if type(v) is not tuple or not all([type(e) is int for e in v]): "
                         f"self.{f} = _tuple(v)")
        else:
            lines.append(f"    if type(v) is not T{i}: self.{f} = T{i}(v)")
    lines.append("    return None")
    exec("\n".join(lines), env)
    return env["coerce"]


def _as_int_tuple(v) -> tuple:
    return tuple(tuple(int(x) for x in e) if isinstance(e, (tuple, list, np.ndarray)) else int(e) for e in v)


def dataclass(cls):
    cls.__post_init__ = _canonical
    return dataclasses.dataclass(cls, slots=True)  # (slots: one per layer of networks of 100,000s)
