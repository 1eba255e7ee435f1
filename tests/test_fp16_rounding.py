"""How each Arm NN runtime rounds a Float16 result, and the numpy executor beside it.

Arm NN 20.08's Float16 encoder (armnn::Half) rounds ties away from zero and overflows to inf;
23.08's (armnnUtils::FloatingPointConverter::ConvertFloat32To16) rounds ties to even and turns an
infinite result, an infinity included, into +-65504. The executor runs a 23.08 file as 23.08 does
and an older format as 20.08 does (executor/numeric.py HALF_23)."""
import numpy as np
import pytest

from armnn_import.executor.run import run as execute
from armnn_import.ir.graph import Graph
from armnn_import.ir.types import DataType, LayerType, TensorInfo
from armnn_import.lowering.builder import NetBuilder
from armnn_import.report import Report
from armnn_import.serialize.writer import write

F16 = np.float16
# a + b in float32 is a tie between two float16 neighbours (1 + 2^-11, its negative, 3 + 2^-10),
# is a tie both rules round up (1 + 3*2^-11), or overflows (65504 + 65504)
A = np.array([1, -1, 3, 1, 65504, -65504, 1], F16)
B = np.array([2 ** -11, -2 ** -11, 2 ** -10, 3 * 2 ** -11, 65504, -65504, 2 ** -12], F16)
AWAY = np.array([1 + 2 ** -10, -1 - 2 ** -10, 3 + 2 ** -9, 1 + 2 ** -9, np.inf, -np.inf, 1], F16)
EVEN = np.array([1, -1, 3, 1 + 2 ** -9, 65504, -65504, 1], F16)


def _addition(target):
    nb = NetBuilder(Graph(target), Report())
    a = nb.g.add_input("a", TensorInfo((A.size,), DataType.Float16))
    b = nb.g.add_input("b", TensorInfo((A.size,), DataType.Float16))
    nb.g.add_output("z", nb.add(LayerType.Addition, "z", [a, b]))
    return nb.g


def _bits(x):
    return np.asarray(x, F16).view(np.uint16)


@pytest.mark.parametrize("target, release, want", [("19.02", "20.08", AWAY), ("19.02", "23.08", EVEN),
                                                   ("20.08", "20.08", AWAY), ("23.08", "23.08", EVEN)])
def test_float16_results_round_as_the_runtime_does(target, release, want, armnn_runner_for):
    g = _addition(target)
    got, = armnn_runner_for(release)(write(g), [A, B])
    np.testing.assert_array_equal(_bits(got), _bits(want))
    mine, = execute(g, [A, B])  # as the release that reads this format first
    first = "23.08" if target == "23.08" else "20.08"
    if release == first:
        np.testing.assert_array_equal(_bits(mine), _bits(got))


def test_cast_to_float16_on_23_08(armnn_runner_for):
    """23.08's Cast (Float32 -> Float16) through the same encoder: ties to even, subnormal ties
    included, NaN kept, overflow and infinities saturated."""
    x = np.array([1 + 2 ** -11, 1 + 3 * 2 ** -11, 2 ** -25, 3 * 2 ** -25, 65519, 65520, 7e4, np.inf, -np.inf,
                  np.nan, -0.0, 0.1, -0.3], np.float32)
    nb = NetBuilder(Graph("23.08"), Report())
    nb.g.add_output("h", nb.cast(nb.g.add_input("x", TensorInfo((x.size,))), DataType.Float16, "h"))
    got, = armnn_runner_for("23.08")(write(nb.g), [x])
    with np.errstate(over="ignore"):
        want = x.astype(F16)  # numpy: ties to even
    want = np.where(np.isinf(want), np.copysign(F16(65504), want), want).astype(F16)
    np.testing.assert_array_equal(_bits(got), _bits(want))
    mine, = execute(nb.g, [x])
    np.testing.assert_array_equal(_bits(mine), _bits(got))
