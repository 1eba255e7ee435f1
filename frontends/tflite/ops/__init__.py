"""The TFLite operator table: one converter per builtin operator and version
range, grouped by family. Importing this package fills REGISTRY."""
from armnn_import.registry import OpRegistry

REGISTRY = OpRegistry("tflite")

from . import conv, elementwise, quantize, recurrent, reduce, resize, shape  # noqa: E402,F401
from . import attention  # noqa: E402,F401  (GATHER at run time, BATCH_MATMUL, CAST, ARG_MAX)
from . import conv3d  # noqa: E402,F401  (CONV_3D, the 23.08 target)
from . import logical  # noqa: E402,F401  (23.08: LOGICAL_AND/OR/NOT, REVERSE_V2)
