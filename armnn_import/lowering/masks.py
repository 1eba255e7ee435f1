"""Float 0/1 masks of comparisons, and a select on them, exact for every float32 value (NaN,
infinities and signed zeros included).

No Arm NN layer turns a Boolean into a number (23.08's Cast takes none: RefLayerSupport
IsCastSupported), so a condition used as a number (a select, a Cast to float) is computed again
from the comparison's operands:

    gt(a, b) = step(a - b)                     step(t) = clamp(-floor(-t), 0, 1) (lowering.round)
    ge(a, b) = num(a) num(b) - gt(b, a)        eq(a, b) = num(a) num(b) - gt(a, b) - gt(b, a)
    ne = 1 - eq,   lt(a, b) = gt(b, a),   le(a, b) = ge(b, a)

step gives 0 for NaN, so gt is exact everywhere: a NaN operand makes a - b NaN (false), two equal
infinities too (false, as a > a is), any other pair a difference of the right sign (an overflow
to inf keeps it). The difference cannot tell a NaN operand from two equal infinities, which ge and
eq need, so they take the NaN test num(x) = clamp(0 * sigmoid(x) + 1, 0, 1): 1 for every number
(sigmoid maps +-inf to 1 and 0), 0 for NaN (BoundedReLu is std::min(1, std::max(0, x)), and
std::max(0, NaN) is 0). -0 and +0 differ by -0, whose step is 0: equal, as IEEE says.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Port
from ..ir.types import ActivationFunction as AF
from ..ir.types import LayerType as L
from .builder import NetBuilder, Unsupported
from .compare import safe_constant
from .round import step

KINDS = ("gt", "lt", "ge", "le", "eq", "ne")


def constant(nb: NetBuilder, values, like: Port, name: str) -> Port:
    """A float32 constant as a Port that no NaN or inf of `like` reaches: a Constant layer in the
    23.08 format (read as written), else lowering.compare.safe_constant."""
    values = np.asarray(values, np.float32)
    if nb.target.at_least("23.08"):
        return nb.constant_layer(values.reshape(values.shape or (1,)), name)
    return safe_constant(nb, like, values, name)


def _diff(nb: NetBuilder, a, b, name: str) -> Port:
    """a - b for Ports or float constants (a scalar constant folds into a Linear activation)."""
    if isinstance(a, Port) and isinstance(b, Port):
        return nb.binary(L.Subtraction, a, b, name)
    x, c, first = (a, b, False) if isinstance(a, Port) else (b, a, True)
    c = np.asarray(c, np.float32)
    if c.size == 1:
        y = nb.linear(x, -1.0, float(c.reshape(-1)[0]), name) if first else \
            nb.linear(x, 1.0, -float(c.reshape(-1)[0]), name)
        shape = np.broadcast_shapes(x.info.shape, c.shape)
        return y if y.info.shape == shape else nb.reshape(y, shape, f"{name}_shape")
    k = constant(nb, c, x, f"{name}_const")
    return nb.binary(L.Subtraction, k, x, name) if first else nb.binary(L.Subtraction, x, k, name)


def _number(nb: NetBuilder, v, name: str):
    """num(v): a 0/1 Port for a Port, None for a constant (refused if it holds a NaN)."""
    if not isinstance(v, Port):
        if np.isnan(np.asarray(v, np.float32)).any():
            raise Unsupported("a comparison with a NaN constant used as a number",
                              "replace the NaN constant (every comparison with it is false, != true)")
        return None
    s = nb.activation(v, AF.Sigmoid, f"{name}_sigmoid")
    return nb.clamp(nb.linear(s, 0.0, 1.0, f"{name}_nan"), 0.0, 1.0, name)


def float_mask(nb: NetBuilder, kind: str, a, b, name: str) -> Port:
    """The float32 0/1 mask of `a (kind) b` (kind in KINDS), a and b float32 Ports or constants,
    at least one a Port; its shape is the operands' broadcast."""
    if kind in ("lt", "le"):
        return float_mask(nb, {"lt": "gt", "le": "ge"}[kind], b, a, name)
    if kind == "gt":
        nb.report.decomposition("float mask", "gt(a, b) = step(a - b), step(t) = clamp(-floor(-t), 0, 1)")
        return step(nb, _diff(nb, a, b, f"{name}_d"), name)
    nb.report.decomposition("float mask", "ge/eq from steps of a - b and b - a, less the NaN test "
                                          "clamp(0 * sigmoid(x) + 1, 0, 1) of each operand")
    nums = [n for n in (_number(nb, a, f"{name}_num_a"), _number(nb, b, f"{name}_num_b")) if n is not None]
    num = nums[0] if len(nums) == 1 else nb.binary(L.Multiplication, nums[0], nums[1], f"{name}_num")
    m = nb.binary(L.Subtraction, num, float_mask(nb, "gt", b, a, f"{name}_lt"), f"{name}_ge")
    if kind == "ge":
        return m
    eq = nb.binary(L.Subtraction, m, float_mask(nb, "gt", a, b, f"{name}_gt"), f"{name}_eq")
    return eq if kind == "eq" else nb.linear(eq, -1.0, 1.0, name)


def select(nb: NetBuilder, m, x, y, name: str) -> Port:
    """where(m, x, y) for a 0/1 float mask m (Port) or a boolean constant, float32 x and y (Ports or
    constants; at least one of the three a Port), without multiplying by the mask (inf * 0 and
    NaN * 0 would leak the unselected branch): with P = +inf where m holds and -inf elsewhere,
        base = max(min(P, x), min(-P, y))
    Arm NN's min/max are std::min/std::max, so min(-inf, NaN) is -inf: a NaN or inf in the
    unselected branch is dropped exactly. A NaN in the selected branch becomes +inf there
    (min(+inf, NaN) is +inf), so it is put back: with s = 1 where the selected value is a number
    and 0 where it is NaN (the num() test above, selected by 0/1 arithmetic),
        where(m, x, y) = base - 0 / s
    (0 / 1 = 0 keeps every value, -0 included; 0 / 0 = NaN). Constants become Ports by constant()
    beside the first Port operand."""
    like = next(v for v in (m, x, y) if isinstance(v, Port))

    def const(v, n):
        return constant(nb, v, like, n)
    nb.report.decomposition("select", "max(min(P, x), min(-P, y)) with P = +-inf from the condition, "
                                      "less 0 / [the selected value is a number]")
    inf = np.float32(np.inf)
    if not isinstance(m, Port):
        m = np.asarray(m).astype(bool)
        p_pos = np.where(m, inf, -inf).astype(np.float32)
        p_neg = -p_pos
    else:
        fmax = float(np.finfo(np.float32).max)
        half = nb.linear(m, fmax, -fmax / 2, f"{name}_half")
        p_pos = nb.linear(half, 4.0, 0.0, f"{name}_pinf")  # +-FLT_MAX/2 * 4 overflows to +-inf
        p_neg = nb.linear(p_pos, -1.0, 0.0, f"{name}_ninf")

    def pick(p, v, part):
        if not isinstance(p, Port) and not isinstance(v, Port):
            return const(np.where(p > 0, np.asarray(v, np.float32), -inf).astype(np.float32), f"{part}c")
        p = p if isinstance(p, Port) else const(p, f"{part}_mask")
        v = v if isinstance(v, Port) else const(np.asarray(v, np.float32), f"{part}_value")
        return nb.binary(L.Minimum, p, v, part)  # std::min(P, v): P's value unless v < P

    s = _selected_number(nb, m, x, y, name, const)
    base = nb.binary(L.Maximum, pick(p_pos, x, f"{name}_x"), pick(p_neg, y, f"{name}_y"),
                     name if s is None else f"{name}_base")
    if s is None:
        return base
    nan = nb.binary(L.Division, nb.linear(s, 0.0, 0.0, f"{name}_zero"), s, f"{name}_nan")  # 0, or NaN
    return nb.binary(L.Subtraction, base, nan, name)


def _selected_number(nb: NetBuilder, m, x, y, name: str, const):
    """1 where the selected value is a number, 0 where it is NaN (None: never NaN, constants)."""
    def num(v, tag):
        if isinstance(v, Port):
            return _number(nb, v, f"{name}_num_{tag}")
        bad = np.isnan(np.asarray(v, np.float32))
        return const((~bad).astype(np.float32), f"{name}_num_{tag}") if bad.any() else None
    nx, ny = num(x, "x"), num(y, "y")
    if nx is None and ny is None:
        return None
    m = m if isinstance(m, Port) else const(m.astype(np.float32), f"{name}_cond")
    if nx is not None and ny is not None:  # ny + m (nx - ny)
        d = nb.binary(L.Subtraction, nx, ny, f"{name}_num_d")
        return nb.binary(L.Addition, ny, nb.binary(L.Multiplication, m, d, f"{name}_num_md"), f"{name}_num")
    if nx is not None:  # 1 - m (1 - nx)
        t = nb.binary(L.Multiplication, m, nb.linear(nx, -1.0, 1.0, f"{name}_nan_x"), f"{name}_num_m")
    else:  # 1 - (1 - m)(1 - ny)
        t = nb.binary(L.Multiplication, nb.linear(m, -1.0, 1.0, f"{name}_not"),
                      nb.linear(ny, -1.0, 1.0, f"{name}_nan_y"), f"{name}_num_m")
    return nb.linear(t, -1.0, 1.0, f"{name}_num")
