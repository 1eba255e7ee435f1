"""The TFLite operator table: one converter per builtin operator and version
range, grouped by family. Importing this package fills REGISTRY."""
from armnn_import.registry import OpRegistry

REGISTRY = OpRegistry("tflite")

# Operators refused with a specific reason (anything else unregistered is refused as unsupported-op).
# (Keras 3's LSTM, GRU and SimpleRNN convert to a WHILE loop: one whose trip count is fixed at
# conversion time is unrolled before this, frontends/tflite/unroll.py)
REGISTRY.refuse("WHILE", reason="a WHILE loop whose trip count is not fixed at conversion time (its condition "
                "reads a run-time value, or over 4096 steps) has no Arm NN equivalent",
                hint="a Keras recurrent layer (LSTM, GRU, SimpleRNN) becomes a WHILE loop: give it a fixed "
                     "sequence length, or build it with unroll=True")
REGISTRY.refuse("IF", reason="control flow (IF over subgraphs) has no Arm NN equivalent")
REGISTRY.refuse("CALL_ONCE",
                reason="calls another subgraph (resource initialisation); only the main subgraph is converted")
REGISTRY.refuse("CALL", reason="calls another subgraph; only the main subgraph is converted")
REGISTRY.refuse("LSTM", reason="recurrent cells have no Arm NN layer in this format")
REGISTRY.refuse("SVDF", reason="no SVDF layer in this format")
REGISTRY.refuse("COS", reason="no cosine in any Arm NN release written (19.02, 20.08, 23.08: Sin only, from 23.08)")
REGISTRY.refuse("GELU", reason="no exact lowering (needs erf)")

from . import conv, elementwise, quantize, recurrent, reduce, resize, shape  # noqa: E402,F401
from . import gather, pad, space  # noqa: E402,F401  (split from shape.py)
from . import fully_connected, pool  # noqa: E402,F401  (split from conv.py)
from . import attention  # noqa: E402,F401  (BATCH_MATMUL, ARG_MAX/ARG_MIN)
from . import direct  # noqa: E402,F401  (LOG, SIN, POW, LOG_SOFTMAX: one layer of a richer format)
from . import conv3d  # noqa: E402,F401  (CONV_3D, the 23.08 target)
from . import logical  # noqa: E402,F401  (23.08: LOGICAL_AND/OR/NOT, REVERSE_V2)
from . import custom  # noqa: E402,F401  (mediapipe's Convolution2DTransposeBias)
from . import select  # noqa: E402,F401  (SELECT, SELECT_V2: float masks of comparisons)
