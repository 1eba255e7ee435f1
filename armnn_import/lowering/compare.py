"""a >= b, a <= b and a != b as Boolean tensors from the 19.02 layers (Maximum,
Minimum, Equal, Greater), exact for every value, NaN, infinities and signed zeros
included.

Arm NN's Maximum and Minimum are std::max / std::min (reference workloads
Maximum.hpp, Minimum.hpp): std::max(x, y) is (x < y) ? y : x, so whenever a NaN
is involved the result is the FIRST operand, NaN or not (measured on 20.08:
max(NaN, 1) = NaN, max(1, NaN) = 1). Equal and Greater are std::equal_to and
std::greater, false for NaN.

    a >= b  ==  Equal(Maximum(b, a), a)   b NaN: Equal(NaN, a); a NaN: Equal(b, NaN)
    a <= b  ==  Equal(Minimum(b, a), a)   (the same argument with std::min)

Equal(Maximum(a, b), a), the textbook form, is wrong when only b is NaN (it gives
Equal(a, a), true). a != b must be true for NaN, which neither Equal nor Greater
ever gives, so the NaNs are first made to order: with z = 0 * (sigmoid(a) +
sigmoid(b)), 0 where both are numbers and NaN otherwise (sigmoid maps +-inf to
1 and 0, NaN to NaN),

    a != b  ==  Greater(Minimum(+inf, Maximum(a, b) + z), Maximum(-inf, Minimum(a, b) + z))

where a NaN on either side makes the left +inf and the right -inf
(std::min(+inf, NaN) = +inf, std::max(-inf, NaN) = -inf), and otherwise z = 0
leaves max(a, b) > min(a, b), which is a != b (-0 and +0 compare equal).
Quantized and integer tensors hold no NaN: a != b is Greater(Maximum, Minimum).
"""
from __future__ import annotations

import numpy as np

from ..ir import descriptors as D
from ..ir.graph import Port
from ..ir.types import ActivationFunction as AF
from ..ir.types import ComparisonOperation, ConstTensor, DataType, LayerType
from .builder import NetBuilder, Unsupported


def safe_constant(nb: NetBuilder, like: Port, values, name: str) -> Port:
    """A float32 constant of `values`' shape, exact whatever `like` holds: one element
    of `like` clamped to 0 by BoundedReLu(0, 0) (std::max(0, NaN) is 0), then a
    FullyConnected with zero weights and the values as bias. (NetBuilder.constant
    multiplies the element itself by 0, which a NaN or inf turns into NaN.)"""
    values = np.asarray(values, np.float32)
    r = like.info.rank
    one = nb.reshape(nb.slice(like, [0] * r, [1] * r, [1] * r, f"{name}_pick"), (1, 1), f"{name}_flat")
    zero = nb.activation(one, AF.BoundedReLu, f"{name}_zero", 0.0, 0.0)
    fc = nb.add(LayerType.FullyConnected, name, [zero], D.FullyConnectedDescriptor(True, False),
                tensors={"weights": ConstTensor(np.zeros((1, max(values.size, 1)), np.float32)),
                         "biases": ConstTensor(values.reshape(-1))})
    nb.report.decomposition("constant", "FullyConnected with zero weights and the values as bias, "
                            "fed by BoundedReLu(0, 0) of one input element")
    return nb.reshape(fc, values.shape or (1,), f"{name}_shape")


def _quant(a: Port, b: Port):
    """The common quantization of two quantized operands (None for float/int)."""
    if not a.info.dtype.is_quantized:
        return None
    qa, qb = (a.info.scale, a.info.offset), (b.info.scale, b.info.offset)
    if qa != qb:
        raise Unsupported(f"a quantized comparison of operands with different quantization {qa} and {qb} "
                          "(Maximum/Minimum would requantize one of them)")
    return qa


def _direct(nb: NetBuilder, op: ComparisonOperation, a: Port, b: Port, name: str) -> Port | None:
    """From the 20.08 format on, one Comparison layer: std::greater_equal and friends on the
    decoded values, so NaN, infinities and operands of different quantizations are exact."""
    return nb.compare(op, a, b, name) if nb.target.at_least("20.08") else None


def _extreme_equals(nb: NetBuilder, op: ComparisonOperation, extreme: LayerType, a: Port, b: Port,
                    name: str, what: str) -> Port:
    """Equal(extreme(b, a), a): a >= b with Maximum, a <= b with Minimum (the NaN argument above)."""
    direct = _direct(nb, op, a, b, name)
    if direct is not None:
        return direct
    short = "max" if extreme == LayerType.Maximum else "min"
    m = nb.binary(extreme, b, a, f"{name}_{short}", quant=_quant(a, b))
    nb.report.decomposition(what, f"Equal({extreme.name}(b, a), a) (NaN-exact with std::{short})")
    return nb.binary(LayerType.Equal, m, a, name)


def greater_equal(nb: NetBuilder, a: Port, b: Port, name: str) -> Port:
    """a >= b: Equal(Maximum(b, a), a)."""
    return _extreme_equals(nb, ComparisonOperation.GreaterOrEqual, LayerType.Maximum, a, b, name, "greater-or-equal")


def less_equal(nb: NetBuilder, a: Port, b: Port, name: str) -> Port:
    """a <= b: Equal(Minimum(b, a), a)."""
    return _extreme_equals(nb, ComparisonOperation.LessOrEqual, LayerType.Minimum, a, b, name, "less-or-equal")


def not_equal(nb: NetBuilder, a: Port, b: Port, name: str) -> Port:
    """a != b: Greater(max, min), with NaNs first sent to +inf / -inf for float."""
    direct = _direct(nb, ComparisonOperation.NotEqual, a, b, name)
    if direct is not None:
        return direct
    q = _quant(a, b)
    hi = nb.binary(LayerType.Maximum, a, b, f"{name}_max", quant=q)
    lo = nb.binary(LayerType.Minimum, a, b, f"{name}_min", quant=q)
    if a.info.dtype != DataType.Float32:
        nb.report.decomposition("not-equal", "Greater(Maximum(a, b), Minimum(a, b))")
        return nb.binary(LayerType.Greater, hi, lo, name)
    s = nb.binary(LayerType.Addition, nb.activation(a, AF.Sigmoid, f"{name}_sa"),
                  nb.activation(b, AF.Sigmoid, f"{name}_sb"), f"{name}_s")
    z = nb.linear(s, 0.0, 0.0, f"{name}_nan")  # 0, or NaN where a or b is NaN
    hi = nb.binary(LayerType.Addition, hi, z, f"{name}_hi")
    lo = nb.binary(LayerType.Addition, lo, z, f"{name}_lo")
    rank = max(a.info.rank, b.info.rank)
    inf = safe_constant(nb, a, np.full((1,) * rank, np.inf, np.float32), f"{name}_pinf")
    ninf = nb.linear(inf, -1.0, 0.0, f"{name}_ninf")
    hi = nb.binary(LayerType.Minimum, inf, hi, f"{name}_hi_num")   # NaN -> +inf
    lo = nb.binary(LayerType.Maximum, ninf, lo, f"{name}_lo_num")  # NaN -> -inf
    nb.report.decomposition("not-equal", "Greater(min(+inf, max(a, b) + z), max(-inf, min(a, b) + z)), "
                            "z = 0 * (sigmoid(a) + sigmoid(b)) is NaN where an operand is NaN")
    return nb.binary(LayerType.Greater, hi, lo, name)


COMPARE = {"ge": greater_equal, "le": less_equal, "ne": not_equal}


def int_mask(nb: NetBuilder, kind: str, a: Port, b: Port, name: str) -> Port:
    """The float32 0/1 mask of a (kind) b for Signed32 tensors (the 23.08 format: its Cast takes
    no Boolean, so the mask is made in int32 and cast): a - b clamped to [0, 1] for gt (a - b + 1
    for ge, b - a + 1 for le), 1 - min(|a - b|, 1) for eq, min(|a - b|, 1) for ne. CpuRef's int32
    arithmetic wraps, so this is exact while a - b stays within int32 (operands within +-2^30)."""
    from ..ir.types import UnaryOperation
    rank = max(a.info.rank, b.info.rank)

    def k(v, tag):
        return nb.constant_layer(np.full((1,) * rank, v, np.int32), f"{name}_{tag}")
    d = nb.binary(LayerType.Subtraction, b if kind == "le" else a, a if kind == "le" else b, f"{name}_diff")
    if kind in ("ge", "le"):
        d = nb.binary(LayerType.Addition, d, k(1, "one_in"), f"{name}_plus1")
    if kind in ("eq", "ne"):
        d = nb.unary(d, UnaryOperation.Abs, f"{name}_abs")
    else:
        d = nb.binary(LayerType.Maximum, d, k(0, "zero"), f"{name}_pos")
    m = nb.binary(LayerType.Minimum, d, k(1, "one"), f"{name}_clamp")
    if kind == "eq":
        m = nb.binary(LayerType.Subtraction, k(1, "one_eq"), m, f"{name}_eq")
    return nb.cast(m, DataType.Float32, name)


def infinity_mask(nb: NetBuilder, x: Port, c, name: str) -> Port | None:
    """The float 0/1 mask of x == c for a constant c that is one infinity throughout (an attention
    row compared with -inf), else None: x - inf is NaN for x = inf, so [+-x - FLT_MAX > 0] instead,
    exact (NaN gives 0)."""
    from .round import step
    c = np.asarray(c)
    if c.size == 0 or not np.isinf(c).all() or len(np.unique(c)) != 1:
        return None
    sign = 1.0 if c.reshape(-1)[0] > 0 else -1.0
    return step(nb, nb.linear(x, sign, -float(np.finfo(np.float32).max), f"{name}_past_max"), name)


def exact_max_rows(nb: NetBuilder, y: Port, name: str, half: bool = False) -> Port:
    """y, a max over some axes (a Max Reduce or Max Pooling2d layer, through Reshapes), with -inf
    where every element it took is -inf. CpuRef starts a max from -FLT_MAX (Reduce.cpp,
    Pooling2d.cpp), so such a row gives -FLT_MAX, and x == -inf after it (ONNX Attention's
    fully masked rows) would be false. With h = clamp(x + FLT_MAX + 1, 0, 1) (0 for -inf only)
    maxed the same way into r (0 or 1): y - (1 - r) * FLT_MAX, which is y where r = 1 and
    -FLT_MAX - FLT_MAX = -inf where r = 0. Other values: y as it is. half: the network becomes
    Float16 after the conversion (a float16 model)."""
    from ..ir.types import PoolingAlgorithm, ReduceOperation
    reshapes, p = [], y
    while p.layer.type == LayerType.Reshape:
        reshapes.append(p.info.shape)
        p = p.layer.inputs[0]
    layer = p.layer
    if not ((layer.type == LayerType.Reduce and layer.desc.reduce_operation == ReduceOperation.Max)
            or (layer.type == LayerType.Pooling2d and layer.desc.pool_type == PoolingAlgorithm.Max)) \
            or p.info.dtype not in (DataType.Float32, DataType.Float16):
        return y
    if half or p.info.dtype == DataType.Float16:
        raise Unsupported("a Float16 max compared with -inf (a fully masked attention row): Float16 results "
                          "saturate at +-65504 on Arm NN, so no -inf can be told apart",
                          "make the mask a constant, or convert the model to float32")
    fmax = float(np.finfo(np.float32).max)
    t = nb.linear(nb.linear(layer.inputs[0], 1.0, fmax, f"{name}_lift"), 1.0, 1.0, f"{name}_lift1")
    r = nb.add(layer.type, f"{name}_any", [nb.clamp(t, 0.0, 1.0, f"{name}_number")], layer.desc)
    for k, shape in enumerate(reversed(reshapes)):
        r = nb.reshape(r, shape, f"{name}_any_shape{k}")
    return nb.binary(LayerType.Subtraction, y, nb.linear(r, -fmax, fmax, f"{name}_drop"), f"{name}_exact_max")
