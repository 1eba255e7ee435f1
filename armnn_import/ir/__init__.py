"""The typed IR of Arm NN layers."""
from .descriptors import *  # noqa: F401,F403
from .kinds import LAYER_KINDS, LayerKind, BINARY_LAYERS, COMPARISON_LAYERS  # noqa: F401
from .graph import Graph, Layer, Port  # noqa: F401
from .types import (ActivationFunction, ConstTensor, ConstTensorData, DataLayout, DataType,  # noqa: F401
                    LayerType, NormalizationAlgorithmChannel, NormalizationAlgorithmMethod,
                    OutputShapeRounding, PaddingMethod, PoolingAlgorithm, TensorInfo)
