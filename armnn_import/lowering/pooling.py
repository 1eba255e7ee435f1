"""A mean over the spatial axes of a 4-D tensor as one Average Pooling2d (from the 23.08 target).

Arm NN 23.08's CpuRef runs Mean and Reduce(Mean) at ~640 instructions per input element and
its Average Pooling2d at ~45 NHWC (benchmarks/mean_pool_costs.py), ~29-36 NCHW (ONNX ReduceMean
over (1,64,14,14), (1,16,96,130), (1,1280,7,7): 0.046-0.056 of the Reduce's, callgrind). Both sum the reduced elements in
raster order (H outer, W inner) into a float and divide by the count once, so with the window set
to the reduced extent, no padding and stride 1 the outputs are bit-identical (on the runtime:
tests/tflite/test_mean_pool_23_08.py, tests/onnx/test_reduce_mean_pool.py). 20.08's Mean is
cheaper than its Pooling2d, so before 23.08 this returns None and the caller keeps Mean.

A quantized mean is the same pool at any output quantization (`requant`): both workloads decode to
float and encode the quotient with the output's TensorInfo (RefMeanWorkload.cpp, Pooling2d.cpp).
A channels-first tensor of another rank (3-D [N,C,L], 5-D [N,C,D,H,W]) whose mean is over a trailing
run of its spatial axes is pooled through a 4-D view whose H and W hold the reduced elements in
raster order: Reshape, pool, Reshape costs 0.06-0.14 of the Mean's instructions on 23.08
(benchmarks/mean_pool_costs.py --views), and a Reshape next to another one is merged
(passes/cleanup.py merge_reshapes)."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Port
from ..ir.types import DataLayout, DataType, PoolingAlgorithm

#: the types 23.08's CpuRef pools (RefLayerSupport::IsPooling2dSupported; not QSymmS8)
POOL_TYPES = (DataType.Float32, DataType.Float16, DataType.QAsymmS8, DataType.QuantisedAsymm8)


def spatial_axes(layout: DataLayout) -> tuple[int, int]:
    """The (H, W) axes of a 4-D tensor in `layout`."""
    return (1, 2) if layout == DataLayout.NHWC else (2, 3)


def _same_quant(info, quant, requant: bool) -> bool:
    """A quantized mean qualifies with a per-tensor input quantization, and, unless `requant`, only
    with the input's own for the output (the first rule; the quantized callers now pass requant=True)."""
    if not info.dtype.is_quantized:
        return True
    if requant:
        return not info.per_axis_quantized
    return quant is not None and not info.per_axis_quantized and \
        (float(quant[0]), int(quant[1])) == (float(info.scale), info.offset)


def view4(shape, axes, layout: DataLayout):
    """The 4-D channels-first view (N, C and the kept spatial extent, the reduced extent but the last
    axis, the last axis) of a 3-D or 5-D tensor whose mean is over a trailing run of its
    spatial axes (from axis 2); None for other shapes and axes."""
    rank, axes = len(shape), sorted(axes)
    if layout != DataLayout.NCHW or rank < 3 or rank == 4 or not axes or axes[0] < 2 or \
            axes != list(range(axes[0], rank)):
        return None
    first = axes[0]
    return (shape[0], int(np.prod(shape[1:first])), int(np.prod(shape[first:-1])), shape[-1])


def mean_pools(b, x: Port, axes, layout: DataLayout, quant=None, requant: bool = False) -> bool:
    """Whether the mean of x over `axes` is an exact Average Pooling2d on b's target."""
    info = x.info
    shaped = (info.rank == 4 and bool(axes) and set(axes) <= set(spatial_axes(layout))) or \
        view4(info.shape, axes, layout) is not None
    return b.target.at_least("23.08") and shaped and info.dtype in POOL_TYPES and _same_quant(info, quant, requant)


def mean_as_pool(b, x: Port, axes, keep: bool, name: str, *, layout: DataLayout, quant=None,
                 requant: bool = False) -> Port | None:
    """The mean of x over `axes` (H and/or W, or a trailing run of a view4) as an Average Pooling2d
    whose window is the reduced extent, reshaped to drop the axes without `keep`; None where that is
    not exact here."""
    if not mean_pools(b, x, axes, layout, quant, requant):
        return None
    shape = x.info.shape
    view = view4(shape, axes, layout)
    if view is not None:
        x = b.reshape(x, view, f"{name}_view")
        kernel = view[2:]
    else:
        kernel = tuple(shape[a] if a in axes else 1 for a in spatial_axes(layout))
    y = b.pool2d(x, PoolingAlgorithm.Average, kernel, name, layout=layout, quant=quant)
    out = tuple(1 if a in axes else n for a, n in enumerate(shape)) if keep else \
        tuple(n for a, n in enumerate(shape) if a not in axes)
    return b.reshape(y, out, f"{name}_shape")
