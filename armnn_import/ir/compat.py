"""Layers that are valid in the schema but that released Arm NN runtimes
misread or crash on (found with the real Arm NN 20.08 runtime; see
tests/layer_cases.py). convert() refuses to write a network with one of them:
a frontend must lower around these, never emit them."""
from __future__ import annotations

from .graph import Graph
from .types import ActivationFunction, LayerType, NormalizationAlgorithmMethod, PoolingAlgorithm


def runtime_problems(graph: Graph) -> list[str]:
    problems = []
    for l in graph.layers:
        why = None
        if l.type == LayerType.Gather:
            why = "the Arm NN 20.08 deserializer reads a Gather descriptor this schema lacks and crashes"
        elif l.type == LayerType.Activation and l.desc.function == ActivationFunction.SoftReLu:
            why = "the Arm NN 20.08 deserializer reads SoftReLu as Sigmoid"
        elif l.type == LayerType.Pooling2d and l.desc.pool_type == PoolingAlgorithm.L2:
            why = "the Arm NN 20.08 deserializer rejects L2 pooling"
        elif l.type == LayerType.Normalization and \
                l.desc.norm_method_type == NormalizationAlgorithmMethod.LocalContrast:
            why = "Arm NN's CpuRef leaves LocalContrast normalization's output unwritten"
        if why:
            problems.append(f"layer {l.name!r} ({l.type.name}): {why}")
    return problems
