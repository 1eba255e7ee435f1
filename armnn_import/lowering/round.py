"""Round half to even (ONNX Round, TFLite ROUND: TFLite's RoundToNearest is this algorithm) from
Floor, on every target:

    f = floor(x);  d = x - f
    r = f + [d > 0.5] + [d == 0.5] * (f - 2 floor(f / 2))

d is exact for |x| >= 1 and for 0 <= x < 1; for -1 < x < 0 it may round, but only towards a value
that gives r = 0, the right answer there. The 0/1 masks are steps of t = d - 0.5,
clamp(-floor(-t), 0, 1), whose BoundedReLu turns NaN into 0: an infinite x (d = inf - inf = NaN,
and f - 2 floor(f / 2) = NaN) gives r = f = x, a NaN stays NaN. Where IEEE gives -0 (-0.5 <= x <= -0)
this gives +0, equal as numbers.
"""
from __future__ import annotations

from ..ir.graph import Port
from ..ir.types import ActivationFunction as AF
from ..ir.types import LayerType as L
from .builder import NetBuilder


def step(b: NetBuilder, t: Port, name: str, negate: bool = False) -> Port:
    """1 where t > 0 else 0 (negate: 1 where t <= 0), as float, exact for finite t; 0 for NaN
    (also the float masks of ONNX booleans: frontends/onnx/ops/logic.py)."""
    f = b.add(L.Floor, f"{name}_floor", [b.linear(t, -1.0, 0.0, f"{name}_neg")])  # floor(-t)
    return b.clamp(b.linear(f, 1.0, 1.0, f"{name}_inc") if negate else b.linear(f, -1.0, 0.0, f"{name}_ceil"),
                   0.0, 1.0, name)


def round_half_even(b: NetBuilder, x: Port, name: str) -> Port:
    f = b.add(L.Floor, f"{name}_floor", [x])
    t = b.linear(b.add(L.Subtraction, f"{name}_frac", [x, f]), 1.0, -0.5, f"{name}_t")  # d - 0.5
    up = step(b, t, f"{name}_up")
    tie = step(b, b.activation(t, AF.Abs, f"{name}_abs"), f"{name}_tie", negate=True)
    even = b.linear(b.add(L.Floor, f"{name}_half", [b.linear(f, 0.5, 0.0, f"{name}_halve")]), 2.0, 0.0, f"{name}_even")
    odd = b.clamp(b.add(L.Subtraction, f"{name}_parity", [f, even]), 0.0, 1.0, f"{name}_odd")
    r = b.add(L.Addition, f"{name}_up_added", [f, up])
    b.report.decomposition("round", "round half to even from Floor: f + [d > 0.5] + [d == 0.5] * odd(f), "
                                    "d = x - floor(x)")
    return b.add(L.Addition, name, [r, b.add(L.Multiplication, f"{name}_tie_odd", [tie, odd])])
