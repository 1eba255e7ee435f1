"""Layers that are valid in the schema but that released Arm NN runtimes
misread or crash on, found with the real Arm NN 20.08 and 23.08 runtimes (see
tests/layer_cases.py, tests/onnx/expected_failures.py, tests/armnn_runtime/README.md).
convert() refuses to write a network with one of the layers runtime_problems()
names: a frontend must lower around these, never emit them.

Arm NN 20.08 runs wrong a Pad read directly by a Convolution2d: its optimizer's
FoldPadIntoConvolution2d (src/armnn/optimizations/FoldPadIntoConvolution2d.hpp,
the only Pad fold in Network.cpp's Optimize() list) folds every such connection
unchecked. It drops the Pad's value, overwrites the convolution's own padding
instead of adding to it, and ignores pads on N and C. The pad_fold pass folds
every zero Pad that a convolution can take exactly. passes/pad_guard.py puts
an identity Reshape between every other Pad and its Convolution2d readers in
files of the 19.02 and 20.08 formats; 20.08 keeps a lone Reshape. 23.08's
FoldPadIntoLayer2d checks before folding.

What 23.08 reads differently from 20.08 in files of the 19.02 and 20.08 formats
(which have no weightsLayoutScheme, so 23.08 takes it as 0):
- Constant: with weightsLayoutScheme 0, 23.08's deserializer takes every Constant
  layer for depthwise weights [M,I,H,W] and permutes it to [1,H,W,I*M]; a
  non-4-D constant fails an assertion, a 4-D one changes shape. The frontends'
  default output has no Constant layers, so it loads on both; convert() does not
  refuse Constant yet (20.08 runs it, and some options emit it). Files of the 23.08
  target say weightsLayoutScheme 1 (serialize/layouts.py), and 23.08 reads their
  Constant layers as they are.
- L2 pooling: 23.08 reads it (20.08 rejects it).
- Output bindings: 23.08 looks the source's output slot up as a layer index
  (GetLayerIndexInVector(outputSlotIndex)); right only while every layer's
  `index` equals its position, which the writer guarantees.
- Float16 arithmetic rounds ties to even on 23.08, away from zero on 20.08
  (FLOAT16_TIES); the numpy executor follows 20.08.
"""
from __future__ import annotations

from .graph import Graph
from .types import ActivationFunction, DataType, LayerType, NormalizationAlgorithmMethod, PoolingAlgorithm

#: how CpuRef rounds a float16 result exactly halfway between two float16 values
FLOAT16_TIES = {"20.08": "away from zero", "23.08": "to even"}


# the layer types _why can flag (asked first: nearly every layer is of none of them)
_FLAGGED = frozenset({LayerType.Gather, LayerType.Activation, LayerType.Normalization, LayerType.Permute,
                      LayerType.Pooling2d, LayerType.Constant, LayerType.Stack})


def _why(layer, release: str, fmt=None, graph=None) -> str | None:
    if layer.type == LayerType.Gather and (fmt is None or not fmt.at_least("20.08")):
        return "the Arm NN 20.08 and 23.08 deserializers read a Gather descriptor this schema lacks and crash"
    if layer.type == LayerType.Gather and release == "20.08" and not (fmt is not None and fmt.at_least("23.08")) \
            and layer.desc.axis % layer.inputs[0].info.rank:  # (a 23.08-format file never meets 20.08)
        return "Arm NN 20.08's CpuRef gathers on axis 0 only"
    if layer.type == LayerType.Activation and layer.desc.function == ActivationFunction.SoftReLu:
        return "the Arm NN 20.08 and 23.08 deserializers read SoftReLu as Sigmoid"
    if layer.type == LayerType.Normalization and \
            layer.desc.norm_method_type == NormalizationAlgorithmMethod.LocalContrast:
        return "Arm NN's CpuRef leaves LocalContrast normalization's output unwritten"
    if layer.type == LayerType.Permute and layer.outputs and layer.outputs[0].dtype == DataType.Boolean:
        return "Arm NN's CpuRef has no Boolean Permute (change the layout of a Boolean tensor: keep its layout)"
    if release == "20.08" and layer.type == LayerType.Stack and layer.desc.axis == 0 \
            and layer.outputs[0].dtype not in (DataType.Float32, DataType.Signed32) \
            and not (fmt is not None and fmt.at_least("23.08")):
        return "Arm NN 20.08's CpuRef copies an axis-0 Stack as float32 words, past the end of smaller types"
    if release == "20.08" and layer.type == LayerType.Pooling2d and layer.desc.pool_type == PoolingAlgorithm.L2:
        return "the Arm NN 20.08 deserializer rejects L2 pooling"
    if release == "23.08" and layer.type == LayerType.Constant and not (fmt is not None and fmt.at_least("23.08")) \
            and not (graph is not None and reads_as_written_by_23_08(graph, layer)):
        return "the Arm NN 23.08 deserializer reads a Constant of a file without featureVersions as depthwise weights"
    return None


def reads_as_written_by_23_08(graph: Graph, layer) -> bool:
    """A Constant layer that Arm NN 23.08 reads right in a file with weightsLayoutScheme 0: its
    permutation [M, I, H, W] -> [H, W, I, M] -> [1, H, W, I*M] keeps the element order when
    M = I = 1, so a [1, 1, H, W] Constant read by Reshapes only gives those Reshapes the same
    values (lowering.builder.NetBuilder.constant_layer makes such constants)."""
    shape = layer.outputs[0].shape if layer.outputs else ()
    users = graph.consumers(layer.out()) if layer.outputs else []
    return (len(shape) == 4 and shape[:2] == (1, 1) and bool(users)
            and all(u.type == LayerType.Reshape for u, _ in users))


def release_problems(graph: Graph, release: str) -> list[str]:
    """The layers of `graph` that Arm NN `release` ("20.08" or "23.08") misreads or cannot run."""
    if release not in FLOAT16_TIES:
        raise ValueError(f"unknown Arm NN release {release!r}")
    fmt = getattr(graph, "target", None)
    return [f"layer {l.name!r} ({l.type.name}): {why}" for l in graph.layers
            if l.type in _FLAGGED and (why := _why(l, release, fmt, graph)) is not None]


def runtime_problems(graph: Graph) -> list[str]:
    """What convert() refuses: the layers Arm NN 20.08 misreads or cannot run."""
    return release_problems(graph, "20.08")
