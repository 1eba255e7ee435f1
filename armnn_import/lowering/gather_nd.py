"""GatherND (ONNX GatherND, TFLite GATHER_ND), exactly: index tuples known at conversion time
become one gather of rows of the data flattened over the indexed dimensions (every target);
run-time index tuples take Arm NN's GatherNd layer (the 23.08 format)."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Port
from ..ir.types import DataType, LayerType
from .builder import NetBuilder, Unsupported
from .gather import gather_const


def batch_grid(batch: tuple[int, ...], inner: tuple[int, ...]) -> np.ndarray:
    """The coordinates of each batch position, shaped batch + inner + (len(batch),): prepended
    to index tuples, they make a batch_dims GatherND one without batch dimensions."""
    grid = np.indices(batch, dtype=np.int64)  # [len(batch), *batch]
    grid = np.moveaxis(grid, 0, -1).reshape(batch + (1,) * len(inner) + (len(batch),))
    return np.broadcast_to(grid, batch + inner + (len(batch),))


def gather_nd_const(nb: NetBuilder, x: Port, idx: np.ndarray, name: str, *, max_slices: int = 32) -> Port:
    """x[tuple(idx[..., :])] for constant index tuples (negative ones from the end): x reshaped
    to [K, *rest] (K the indexed dimensions' product), gathered on axis 0 by the flat row
    numbers (armnn_import.lowering.gather), reshaped to idx.shape[:-1] + rest."""
    shape, nd = x.info.shape, idx.shape[-1]
    if not 1 <= nd <= len(shape):
        raise Unsupported(f"index tuples of {nd} for a {len(shape)}-D input")
    dims = np.asarray(shape[:nd], np.int64)
    idx = idx.reshape(-1, nd).astype(np.int64)
    if idx.size == 0:
        raise Unsupported("empty indices")
    if ((idx < -dims) | (idx >= dims)).any():
        raise Unsupported(f"a GatherND index is outside the input's dimensions {tuple(shape[:nd])}")
    flat = np.ravel_multi_index(tuple(np.where(idx < 0, idx + dims, idx).T), tuple(dims))
    rest = tuple(shape[nd:])
    rows = nb.reshape(x, (int(dims.prod()),) + rest, f"{name}_rows") if nd > 1 else x
    if x.info.dtype in (DataType.Signed32, DataType.Boolean):
        # CpuRef slices neither (StridedSlice, 20.08 and 23.08); its Gather moves Signed32
        if x.info.dtype == DataType.Boolean or not nb.target.at_least("20.08"):
            raise Unsupported(f"gathering {x.info.dtype.name} data needs a Gather layer (CpuRef slices no "
                              f"{x.info.dtype.name} tensor)", "convert with --target 20.08 or later"
                              if x.info.dtype == DataType.Signed32 else "")
        return nb.gather(rows, nb.constant_layer(flat.astype(np.int32), f"{name}_indices"), 0, name)
    return gather_const(nb, rows, 0, flat, name, max_slices=max_slices)


def gather_nd_runtime(nb: NetBuilder, x: Port, idx: Port, name: str) -> Port:
    """A GatherNd layer for Signed32 index tuples computed at run time (the 23.08 format). Its
    CpuRef flattens each tuple unchecked: every component must lie in [0, dim)."""
    if not nb.target.has(LayerType.GatherNd):
        raise Unsupported("index tuples computed at run time need Arm NN's GatherNd layer (the 23.08 format)")
    nd = idx.info.shape[-1]
    if not 1 <= nd <= x.info.rank:
        raise Unsupported(f"index tuples of {nd} for a {x.info.rank}-D input")
    out = tuple(idx.info.shape[:-1]) + tuple(x.info.shape[nd:])
    if not out:  # (one tuple of every dimension: a scalar, which Arm NN's shapes do not have)
        idx = nb.reshape(idx, (1, nd), f"{name}_tuple")
    if x.info.dtype == DataType.Boolean:
        raise Unsupported("gathering a boolean tensor (CpuRef's GatherNd moves no Boolean data)")
    if x.info.dtype == DataType.Signed32:
        nb.report.warn(f"{name}: Arm NN's GatherNd moves int32 data through float32: exact for values "
                       "within +-2^24")
    nb.report.warn(f"{name}: run-time GatherND indices must lie in [0, dim) per component: Arm NN's "
                   "GatherNd flattens them unchecked (another element for a negative one); the executor "
                   "(armnn-import verify) refuses them")
    return nb.gather_nd(x, idx, name)
