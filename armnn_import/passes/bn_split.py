"""Scaled float BatchNormalizations as Multiplication + Addition by constants (20.08 format on).

A BatchNormalization that no convolution absorbs and that is not a pure shift (passes/shifts.py
takes those) stays one in the 19.02 format, which has no Constant layer that every runtime
reads. Arm NN's CpuRef runs it channel-outermost (BatchNormImpl.cpp: for each channel, for
n, h, w: GetIndex, then mult * x + add), with a virtual decoder seek per element and, in NHWC,
a write stride of C: per element it costs several times a broadcast Multiplication or Addition
(ElementwiseFunction.cpp, an iterator walk). Arm NN's own TfLite parser keeps a MUL + ADD by
constants as Multiplication + Addition with Constant operands, and so do we from 20.08 on:

    y = (x * mult) + add,   mult = gamma / sqrtf(var + eps),   add = beta - mult * mean

with mult and add computed in float32 exactly as BatchNormImpl.cpp does (each operation rounded
once; numpy's float32 sqrt and division round correctly, as sqrtf and / do), so the runtime
computes the same two roundings, mult * x then + add, bit for bit (Arm NN's x86-64 build does
not contract them into a fused multiply-add; tests/passes/test_bn_split.py checks the bits on
both CpuRefs, NaN, infinities and signed zeros included). Where every add is zero (a pure
scale: NetBuilder.batchnorm's form of a MUL or PRELU by per-channel constants) the Addition is
left out: x * mult equals x * mult + 0 everywhere, and differs only in the sign of a zero result
(-0.0 where the BatchNormalization writes +0.0, as the source's x * c gives -0.0).

Constants: the 23.08 format's Constant layers are read as they are (weightsLayoutScheme 1), so
each operand is one Constant of the broadcast shape [1, C, 1, 1] or [1, 1, 1, C]. In the 20.08
format (no featureVersions: 23.08 would read a Constant as depthwise weights) each is
NetBuilder.constant_layer's [1, 1, 1, C] Constant + Reshape, the form both runtimes read
right (ir/compat.py). A Constant costs nothing per inference (20.08) or one C-float memcpy
(23.08); the Reshape of a C-float constant is a C-float copy.

Only where it pays on every runtime we have that reads the format (20.08 format: Arm NN 20.08
and 23.08; 23.08 format: 23.08). Fitted to callgrind's instructions per inference of one-layer
networks (benchmarks/bn_split_costs.py, 12 shapes, within 8 %), a BatchNormalization of N
elements costs a + b * N, the split form c + 218 * N + 268 * K, where K = d0 + d0*d1 + d0*d1*d2
counts the inner loops of the broadcast walk (Broadcast.hpp's Unroll recurses per dimension).
[1, H, W, C] pays from a few dozen elements (1x16x14x24 NHWC: 0.22 of the BatchNormalization's
instructions on 20.08, 0.37 on 23.08); the [N, C, 1, 1] form that NetBuilder.batchnorm gives
a recurrent or attention lowering's per-feature scale (a GRU's gate, an encoder's LayerNorm
gain) walks one inner loop per element: 0.70 of the cost on 20.08 but 1.17 on 23.08, so it
stays a BatchNormalization, as in 19.02.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Graph, Layer, Port
from ..ir.types import ConstTensor, DataLayout, LayerType
from ..lowering.builder import NetBuilder
from ..report import Report
from .cleanup import float_bn

#: CpuRef instructions per inference, by (format, runtime release): BatchNormalization (fixed, per
#: element), the split form (fixed, per element, per inner broadcast loop); benchmarks/bn_split_costs.py
COSTS = {("20.08", "20.08"): ((32305, 1087), (33185, 218, 268)),
         ("20.08", "23.08"): ((35072, 633), (38597, 218, 268)),  # (+ the constants' Reshapes)
         ("23.08", "23.08"): ((34976, 633), (36108, 218, 268))}
#: the runtimes that read each format, of those measured
READERS = {"20.08": ("20.08", "23.08"), "23.08": ("23.08",)}


def cpuref_affine(bn: Layer) -> tuple[np.ndarray, np.ndarray]:
    """(mult, add) per channel in float32, each operation rounded as BatchNormImpl.cpp rounds it."""
    t = {k: v.data.astype(np.float32).reshape(-1) for k, v in bn.tensors.items()}
    eps = np.float32(bn.desc.eps)
    with np.errstate(all="ignore"):  # a zero variance with eps 0 divides by 0, as on the runtime
        mult = t["gamma"] / np.sqrt(t["variance"] + eps)
        add = t["beta"] - mult * t["mean"]
    return mult.astype(np.float32), add.astype(np.float32)


def split_pays(shape, fmt: str) -> bool:
    """Whether Multiplication + Addition costs fewer instructions than the BatchNormalization on
    every measured runtime that reads files of format `fmt`."""
    n = int(np.prod(shape))
    loops = shape[0] + shape[0] * shape[1] + shape[0] * shape[1] * shape[2]
    for rel in READERS[fmt]:
        (a, b), (c, d, e) = COSTS[fmt, rel]
        if c + d * n + e * loops >= a + b * n:
            return False
    return True


def _operand(nb: NetBuilder, values: np.ndarray, layout: DataLayout, name: str) -> Port:
    shape = (1, values.size, 1, 1) if layout == DataLayout.NCHW else (1, 1, 1, values.size)
    if nb.target.at_least("23.08"):
        return nb.add(LayerType.Constant, name, [], tensors={"input": ConstTensor(values.reshape(shape))})
    return nb.constant_layer(values.reshape(shape), name)


def split_batchnorm(graph: Graph, nb: NetBuilder, bn: Layer) -> None:
    """bn (float, 4-D) as Multiplication (+ Addition) by constants, whatever it costs."""
    mult, add = cpuref_affine(bn)
    x, name, layout = bn.inputs[0], bn.name, bn.desc.data_layout
    keep_add = bool(np.any(add != 0))
    graph.remove([bn])
    y = nb.add(LayerType.Multiplication, f"{name}_mul" if keep_add else name,
               [x, _operand(nb, mult, layout, f"{name}_mult")])
    if keep_add:
        y = nb.add(LayerType.Addition, name, [y, _operand(nb, add, layout, f"{name}_add")])
    graph.replace_uses(bn.out(), y)


def split_batchnorms(graph: Graph, report: Report) -> int:
    fmt = next((r for r in sorted(READERS, reverse=True) if graph.target.at_least(r)), None)
    if fmt is None:  # the 19.02 format: no Constant layer that every release reads
        return 0
    nb = NetBuilder(graph, report)
    # (a pure shift, mult 1, is shifts_to_additions's, or kept by conv_bias="batchnorm")
    todo = [l for l in graph.layers if float_bn(l) and l.outputs[0].rank == 4
            and split_pays(l.outputs[0].shape, fmt) and not np.all(cpuref_affine(l)[0] == 1.0)]
    for bn in todo:
        split_batchnorm(graph, nb, bn)
    if todo:
        report.decomposition("scaled BatchNormalization", "Multiplication and Addition by Constant "
                             "layers, the same float32 roundings, which Arm NN's CpuRef runs faster")
    return len(todo)
