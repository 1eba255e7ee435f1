"""ONNX operator converters, one small function per operator, by family.
Importing this package fills REGISTRY."""
from ..registry import REGISTRY  # noqa: F401
from . import (activation, conv, einsum, elementwise, gathernd, logic, matrix, norm, qlinear, recurrent,  # noqa: F401
               reduce, resize, scatter, shape)
from . import qconv, qelementwise, qmatrix, qpool  # noqa: F401 (the quantized families, qlinear.py)
