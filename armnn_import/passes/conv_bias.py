"""Richer targets: a convolution takes the per-channel affine that follows it.

From the 20.08 format on, Convolution2d and DepthwiseConvolution2d carry their bias
(the 19.02 format cannot: NetBuilder.conv2d). So a float BatchNormalization fed only by
such a convolution, on the same channel axis, folds into it: the weights take the
scale, the bias becomes scale * bias + shift, and the BatchNormalization goes. The
arithmetic is the one a framework's own BatchNorm folding does, in float64 and rounded
once to float32, so the result is within float rounding of the two layers.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Graph
from ..ir.types import ConstTensor, DataType, LayerType
from ..report import Report
from .cleanup import bn_affine, float_bn, single_consumer

_CONVS = (LayerType.Convolution2d, LayerType.DepthwiseConvolution2d)


def fold_affine_into_conv(graph: Graph, report: Report) -> int:
    if not graph.target.at_least("20.08"):
        return 0
    n = 0
    for bn in list(graph.layers):
        if not float_bn(bn):
            continue
        conv = bn.inputs[0].layer
        if conv.type not in _CONVS or conv.outputs[0].dtype != DataType.Float32 \
                or conv.desc.data_layout != bn.desc.data_layout or not single_consumer(graph, conv):
            continue
        a, b = bn_affine(bn)
        w = conv.tensors["weights"].data.astype(np.float64)
        if conv.type == LayerType.DepthwiseConvolution2d:  # [M, C, kh, kw], out channel c*M + m
            m, c = w.shape[:2]
            w = w * a.reshape(c, m).T[:, :, None, None]
        else:  # [O, I, kh, kw] or [O, kh, kw, I]: output channels first
            w = w * a.reshape(-1, 1, 1, 1)
        old = conv.tensors["biases"].data.astype(np.float64) if conv.desc.bias_enabled else 0.0
        conv.tensors["weights"] = ConstTensor(w.astype(np.float32), conv.tensors["weights"].info)
        conv.tensors["biases"] = ConstTensor((a * old + b).astype(np.float32))
        conv.desc.bias_enabled = True
        graph.replace_uses(bn.out(), conv.out())
        graph.remove([bn])
        n += 1
    if n:
        report.decomposition("batch normalization after a convolution",
                             "folded into the convolution's weights and bias")
    return n



