"""The 23.08 format's Reduce, LogicalBinary, Tile, ReverseV2, GatherNd and ElementwiseBinary layers, following
Arm NN 23.08's CpuRef (src/backends/reference/workloads/Reduce.cpp, RefLogicalBinaryWorkload.cpp,
Tile.cpp, ReverseV2Impl.cpp): every one but LogicalBinary decodes to float32 and encodes
the result into the output's type."""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError
from ..ir.types import BinaryOperation, LayerType, LogicalBinaryOperation, ReduceOperation
from .common import cpp_max, cpp_min, layer_fn
from .numeric import F32, decode, encode

_FLT_MAX = F32(np.finfo(np.float32).max)
_START = {ReduceOperation.Sum: F32(0), ReduceOperation.Mean: F32(0), ReduceOperation.Prod: F32(1),
          ReduceOperation.Max: -_FLT_MAX, ReduceOperation.Min: _FLT_MAX}


@layer_fn(LayerType.Reduce)
def reduce_layer(layer, ins, infos):
    # Reduce.cpp: one float accumulator per output element, visited in the input's row-major
    # order (= the reduced axes' own order once they are moved last); Max/Min start at -/+FLT_MAX
    # and take a value only if it is strictly greater/less (a NaN is never taken); Mean divides
    # the sum by the element count at the end.
    d, x = layer.desc, decode(ins[0], infos[0])
    axes = sorted(d.axis) if d.axis else list(range(x.ndim))
    kept = [a for a in range(x.ndim) if a not in axes]
    r = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    flat = x.transpose(kept + axes).reshape(-1, r)
    op = d.reduce_operation
    acc = np.full(flat.shape[0], _START[op], F32)
    with np.errstate(all="ignore"):
        for j in range(r):
            v = flat[:, j]
            if op in (ReduceOperation.Sum, ReduceOperation.Mean):
                acc = (acc + v).astype(F32)
            elif op == ReduceOperation.Prod:
                acc = (acc * v).astype(F32)
            elif op == ReduceOperation.Max:
                acc = np.where(v > acc, v, acc)
            else:
                acc = np.where(v < acc, v, acc)
        if op == ReduceOperation.Mean and r > 0:
            acc = (acc / F32(r)).astype(F32)
    return [encode(acc.reshape(layer.outputs[0].shape), layer.outputs[0])]


@layer_fn(LayerType.LogicalBinary)
def logical_binary(layer, ins, infos):
    a, b = (np.asarray(v, bool) for v in ins)
    if a.ndim != b.ndim:
        raise ExecutionError(f"{layer.name}: inputs have ranks {a.ndim} and {b.ndim}")
    fn = np.logical_and if layer.desc.operation == LogicalBinaryOperation.LogicalAnd else np.logical_or
    return [fn(a, b)]


@layer_fn(LayerType.Tile)
def tile(layer, ins, infos):
    return [encode(np.tile(decode(ins[0], infos[0]), tuple(layer.desc.m_multiples)), layer.outputs[0])]


@layer_fn(LayerType.ReverseV2)
def reverse_v2(layer, ins, infos):
    # ReverseV2Impl.cpp: negative axes count from the end; an axis given twice is reversed once
    x = decode(ins[0], infos[0])
    axes = {int(a) + x.ndim if int(a) < 0 else int(a) for a in np.asarray(ins[1]).reshape(-1)}
    if any(not 0 <= a < x.ndim for a in axes):
        raise ExecutionError(f"{layer.name}: axes {sorted(axes)} out of range for rank {x.ndim}")
    return [encode(np.flip(x, tuple(sorted(axes))) if axes else x, layer.outputs[0])]


@layer_fn(LayerType.GatherNd)
def gather_nd(layer, ins, infos):
    # RefGatherNdWorkload.cpp: each index tuple is flattened with the params' row-major strides,
    # unchecked per component, then Gather.cpp takes row (flat) of params as [K, C]: a negative
    # flat index wraps once, one past K fails. A component out of its range would give another
    # element, so the executor refuses it instead.
    params, idx = ins[0], np.asarray(ins[1]).astype(np.int64)
    nd = idx.shape[-1]
    dims = np.asarray(params.shape[:nd], np.int64)
    if idx.size and ((idx < 0) | (idx >= dims)).any():
        raise ExecutionError(f"{layer.name}: GatherNd index outside params {params.shape[:nd]} "
                             "(Arm NN flattens the components unchecked and gathers another element)")
    flat = np.ravel_multi_index(tuple(idx.reshape(-1, nd).T), tuple(dims)) if idx.size else np.zeros(0, np.int64)
    rows = decode(params, infos[0]).reshape(int(np.prod(dims)), -1)[flat]
    return [encode(rows.reshape(layer.outputs[0].shape), layer.outputs[0])]


_BINARY_OPS = {BinaryOperation.Add: np.add, BinaryOperation.Div: np.divide, BinaryOperation.Maximum: cpp_max,
               BinaryOperation.Minimum: cpp_min, BinaryOperation.Mul: np.multiply,
               BinaryOperation.Sub: np.subtract, BinaryOperation.SqDiff: lambda a, b: (a - b) * (a - b),
               BinaryOperation.Power: np.power}  # (Power.hpp: std::pow of two floats, as numpy's float32 power)


@layer_fn(LayerType.ElementwiseBinary)
def elementwise_binary(layer, ins, infos):
    # RefElementwiseBinaryWorkload.cpp: both inputs decoded to float, broadcast, the result encoded
    a, b = (decode(v, i) for v, i in zip(ins, infos))
    if a.ndim != b.ndim:
        raise ExecutionError(f"{layer.name}: inputs have ranks {a.ndim} and {b.ndim}")
    with np.errstate(all="ignore"):
        r = _BINARY_OPS[layer.desc.operation](a, b).astype(F32)
    return [encode(r, layer.outputs[0])]
