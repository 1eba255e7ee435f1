"""A mean over the spatial axes of a 4-D tensor as one Average Pooling2d (from the 23.08 target).

Arm NN 23.08's CpuRef runs Mean and Reduce(Mean) at ~640 instructions per input element and
its Average Pooling2d at ~45 NHWC (benchmarks/mean_pool_costs.py), ~29-36 NCHW (ONNX ReduceMean
over (1,64,14,14), (1,16,96,130), (1,1280,7,7): 0.046-0.056 of the Reduce's, callgrind). Both sum the reduced elements in
raster order (H outer, W inner) into a float and divide by the count once, so with the window set
to the reduced extent, no padding and stride 1 the outputs are bit-identical (on the runtime:
tests/tflite/test_mean_pool_23_08.py, tests/onnx/test_reduce_mean_pool.py). 20.08's Mean is
cheaper than its Pooling2d, so before 23.08 this returns None and the caller keeps Mean."""
from __future__ import annotations

from ..ir.graph import Port
from ..ir.types import DataLayout, DataType, PoolingAlgorithm

#: the types 23.08's CpuRef pools (RefLayerSupport::IsPooling2dSupported; not QSymmS8)
POOL_TYPES = (DataType.Float32, DataType.Float16, DataType.QAsymmS8, DataType.QuantisedAsymm8)


def spatial_axes(layout: DataLayout) -> tuple[int, int]:
    """The (H, W) axes of a 4-D tensor in `layout`."""
    return (1, 2) if layout == DataLayout.NHWC else (2, 3)


def _same_quant(info, quant) -> bool:
    """A pool writes its input's levels: a quantized mean qualifies only with the input's own
    (per-tensor) quantization."""
    if not info.dtype.is_quantized:
        return True
    return quant is not None and not info.per_axis_quantized and \
        (float(quant[0]), int(quant[1])) == (float(info.scale), info.offset)


def mean_pools(b, x: Port, axes, layout: DataLayout, quant=None) -> bool:
    """Whether the mean of x over `axes` is an exact Average Pooling2d on b's target."""
    info = x.info
    return b.target.at_least("23.08") and info.rank == 4 and bool(axes) and \
        set(axes) <= set(spatial_axes(layout)) and info.dtype in POOL_TYPES and _same_quant(info, quant)


def mean_as_pool(b, x: Port, axes, keep: bool, name: str, *, layout: DataLayout, quant=None) -> Port | None:
    """The mean of x over `axes` (H and/or W) as an Average Pooling2d whose window is the reduced
    extent, reshaped to drop the axes without `keep`; None where that is not exact here."""
    if not mean_pools(b, x, axes, layout, quant):
        return None
    shape = x.info.shape
    kernel = tuple(shape[a] if a in axes else 1 for a in spatial_axes(layout))
    y = b.pool2d(x, PoolingAlgorithm.Average, kernel, name, layout=layout, quant=quant)
    out = tuple(1 if a in axes else n for a, n in enumerate(shape)) if keep else \
        tuple(n for a, n in enumerate(shape) if a not in axes)
    return b.reshape(y, out, f"{name}_shape")
