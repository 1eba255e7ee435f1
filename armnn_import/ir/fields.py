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


_HINTS: dict[type, list] = {}  # class -> [(field, kind, type)]: get_type_hints is slow, and runs per layer
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
    # (A value already of its type, and floats 0 and 1, are kept as they are: the same result.)
    hints = _HINTS.get(type(self))
    if hints is None:
        hints = _HINTS[type(self)] = _kinds(type(self))
    for f, kind, tp in hints:
        v = getattr(self, f)
        if kind == _ENUM or kind == _BOOL or kind == _INT:
            if type(v) is tp:
                continue
            v = tp(v)
        elif kind == _FLOAT:
            if type(v) is float and (v == 0.0 or v == 1.0):
                continue
            v = float(np.float32(v))
        else:
            if type(v) is tuple and all([type(e) is int for e in v]):
                continue  # (a tuple of ints already, as most callers pass: the loop below would copy it)
            v = tuple(tuple(int(x) for x in e) if isinstance(e, (tuple, list, np.ndarray)) else int(e) for e in v)
        setattr(self, f, v)


def dataclass(cls):
    cls.__post_init__ = _canonical
    return dataclasses.dataclass(cls, slots=True)  # (slots: one per layer of networks of 100,000s)
