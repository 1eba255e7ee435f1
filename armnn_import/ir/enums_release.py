"""Enums of the layers that the 20.08 and 23.08 formats add (values = those schemas'); re-exported
by ir/types.py."""
from __future__ import annotations

from enum import IntEnum


class ArgMinMaxFunction(IntEnum):
    Min = 0
    Max = 1


class ResizeMethod(IntEnum):
    NearestNeighbor = 0
    Bilinear = 1


class PaddingMode(IntEnum):  # the 23.08 format (PadDescriptor.paddingMode)
    Constant = 0
    Reflect = 1
    Symmetric = 2


class ComparisonOperation(IntEnum):
    Equal = 0
    Greater = 1
    GreaterOrEqual = 2
    Less = 3
    LessOrEqual = 4
    NotEqual = 5


class UnaryOperation(IntEnum):
    Abs = 0
    Rsqrt = 1
    Sqrt = 2
    Exp = 3
    Neg = 4
    LogicalNot = 5  # the 23.08 format on (ENUM_SINCE)
    Log = 6
    Sin = 7
    Ceil = 8


class ReduceOperation(IntEnum):
    """The 23.08 format's ReduceOperation (the whole enum is as new as the Reduce layer)."""
    Sum = 0
    Max = 1
    Mean = 2
    Min = 3
    Prod = 4


class LogicalBinaryOperation(IntEnum):
    LogicalAnd = 0
    LogicalOr = 1


class BinaryOperation(IntEnum):
    """The 23.08 format's ElementwiseBinary operations (the whole enum is as new as the layer;
    the IR writes the older operations as their own layers, and uses this one for Power)."""
    Add = 0
    Div = 1
    Maximum = 2
    Minimum = 3
    Mul = 4
    Sub = 5
    SqDiff = 6
    Power = 7
