"""Descriptor fields coerced to their declared types (ir/fields.py): the coercion compiled per
class gives what the field-by-field loop it replaced gives, for every descriptor class, on
values of the types callers pass (numpy scalars, lists, bools, floats off float32)."""
import dataclasses
import typing
from enum import IntEnum

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from armnn_import.ir import descriptors as D
from armnn_import.limits import Limits, check_network

CLASSES = sorted((c for c in vars(D).values() if isinstance(c, type) and dataclasses.is_dataclass(c)),
                 key=lambda c: c.__name__)


def _loop_coercion(cls, values: dict) -> dict:
    """The coercion as the loop over fields did it before (the reference)."""
    out = dict(values)
    for f, tp in typing.get_type_hints(cls).items():
        v = out[f]
        if isinstance(tp, type) and issubclass(tp, IntEnum) or tp in (bool, int):
            out[f] = v if type(v) is tp else tp(v)
        elif tp is float:
            out[f] = v if type(v) is float and v in (0.0, 1.0) else float(np.float32(v))
        elif typing.get_origin(tp) is tuple:
            out[f] = v if type(v) is tuple and all(type(e) is int for e in v) else tuple(
                tuple(int(x) for x in e) if isinstance(e, (tuple, list, np.ndarray)) else int(e) for e in v)
    return out


def _value(draw, tp, default):
    if isinstance(tp, type) and issubclass(tp, IntEnum):
        m = draw(st.sampled_from(list(tp)))
        return draw(st.sampled_from([m, int(m), np.int64(m)]))
    if tp is bool:
        return draw(st.sampled_from([True, False, 0, 1, np.bool_(True)]))
    if tp is int:
        n = draw(st.integers(0, 2 ** 31 - 1))
        return draw(st.sampled_from([n, np.int32(n % 2 ** 31), True]))
    if tp is float:
        return draw(st.sampled_from([0.0, 1.0, 0.1, -2.5e-7, 1, np.float64(1 / 3), float("inf")]))
    if typing.get_origin(tp) is tuple:
        if default and isinstance(default[0], tuple):  # (a vector of vectors: view origins)
            return [tuple(draw(st.lists(st.integers(0, 9), max_size=4))) for _ in range(draw(st.integers(0, 3)))]
        xs = draw(st.lists(st.integers(0, 2 ** 31 - 1), max_size=5))
        return draw(st.sampled_from([tuple(xs), list(xs), np.asarray(xs, np.int64), tuple(np.int64(x) for x in xs)]))
    return default


@st.composite
def descriptor_values(draw):
    cls = draw(st.sampled_from(CLASSES))
    hints = typing.get_type_hints(cls)
    values = {f.name: _value(draw, hints[f.name], f.default if f.default is not dataclasses.MISSING else None)
              for f in dataclasses.fields(cls) if f.name in hints}
    return cls, values


@settings(max_examples=300, deadline=None)
@given(descriptor_values())
def test_compiled_coercion_matches_the_loop(case):
    cls, values = case
    want = _loop_coercion(cls, values)
    got = cls(**values)
    for name, v in want.items():
        g = getattr(got, name)
        assert type(g) is type(v) and (g == v or (g != g and v != v)), (cls.__name__, name, g, v)


def test_check_network_rank_and_negative_dimensions():
    """The fast path of check_network still sends a shape over the rank limit, or with a
    negative dimension, to check_shape's message."""
    import pytest

    from armnn_import.errors import LoadError
    from armnn_import.ir.graph import Graph
    from armnn_import.ir.types import DataType, LayerType, TensorInfo

    g = Graph()
    x = g.add_input("x", TensorInfo((1, 2, 3), DataType.Float32))
    g.add_output("y", g.add(LayerType.Activation, "relu", [x]).out())
    check_network(g)
    with pytest.raises(LoadError, match="layer 'x' .*rank 3 exceeds the limit of 2"):
        check_network(g, Limits(max_rank=2))
    neg = Graph()
    x = neg.add_input("x", TensorInfo((2, -1, -3), DataType.Float32))  # (a positive product)
    neg.add_output("y", neg.add(LayerType.Activation, "relu", [x], outputs=[x.info]).out())
    with pytest.raises(LoadError, match="negative dimension"):
        check_network(neg)
