"""A numpy executor of the IR that follows Arm NN 20.08 CpuRef semantics
(decode to float32, compute, encode; byte copies where Arm NN copies bytes).

run(graph, inputs) -> outputs in Output binding-id order;
run_all(graph, inputs) -> every output slot by Port; evaluate(layer, arrays)
-> one layer's outputs (used by constant folding).
"""
from .common import LAYER_FUNCTIONS  # noqa: F401
from . import layers, spatial  # noqa: F401  (register the 19.02 layers)
from . import releases  # noqa: F401  (registers the richer formats' layers)
from . import structural  # noqa: F401  (Concat, Transpose, Resize)
from . import attention  # noqa: F401  (Cast, BatchMatMul: the 23.08 format)
from . import layers23  # noqa: F401  (the 23.08 format's Reduce, LogicalBinary, Tile, ReverseV2)
from .run import evaluate, run, run_all  # noqa: F401
from . import recurrent  # noqa: F401,E402  (registers Lstm and UnidirectionalSequenceLstm)
from . import conv3d  # noqa: F401,E402  (registers Convolution3d and Pooling3d)
