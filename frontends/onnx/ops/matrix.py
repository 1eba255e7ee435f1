"""Gemm and MatMul: FullyConnected for constant weights; two run-time
operands become a broadcast Multiplication and a Mean * K (exact up to the
order of the float summation)."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.graph import Port
from armnn_import.ir.types import DataType
from armnn_import.ir.types import LayerType as L
from armnn_import.lowering import Unsupported
from armnn_import.lowering.copies import repeat
from armnn_import.lowering.gather import MAX_RUNS, gather_const, index_runs
from armnn_import.lowering.matrix import fc_last

from ..registry import needs_const, register
from .common import binary, broadcast, norm_axes

MAX_BATCHED_FC = 64  # constant batched weights: one FullyConnected per batch entry up to this many


def _fc(ctx, x: Port, w_oi: np.ndarray, bias, name: str) -> Port:
    """x [..., K] @ w_oi.T -> [..., O] (the leading axes folded into the FC batch)."""
    return fc_last(ctx.b, x, np.ascontiguousarray(w_oi, np.float32), bias, name)


def matmul_runtime(ctx, a: Port, b: Port, name: str) -> Port:
    """a [..., M, K] @ b [..., K, N] for two run-time 2-D+ tensors."""
    sa, sb = a.info.shape, b.info.shape
    k = sa[-1]
    if sb[-2] != k:
        raise Unsupported(f"MatMul of {sa} and {sb}: inner dimensions differ (the model is invalid)", code="bad-model")
    batch = broadcast(sa[:-2], sb[:-2])
    if ctx.g.target.has(L.BatchMatMul) and a.info.dtype == b.info.dtype and \
            a.info.dtype in (DataType.Float32, DataType.Float16):
        # the 23.08 format: one BatchMatMul layer (float32 sums in index order, as CpuRef runs them)
        y = ctx.b.batch_matmul(a, b, name)
        return ctx.b.reshape(y, batch + (sa[-2], sb[-1]), f"{name}_shape")
    if len(batch) > 1:
        # one batch axis, so that the product is 4-D (Arm NN's Mean takes at most 4-D):
        # repeat broadcast batch axes, then merge them
        nb = int(np.prod(batch, dtype=np.int64))
        a, b = (_expand_batch(ctx, t, batch, f"{name}_{s}") for t, s in ((a, "a"), (b, "b")))
        a = ctx.b.reshape(a, (nb,) + sa[-2:], f"{name}_a3d")
        b = ctx.b.reshape(b, (nb,) + sb[-2:], f"{name}_b3d")
        sa, sb = a.info.shape, b.info.shape
    ctx.report.decomposition("MatMul", "two run-time operands: broadcast Multiplication [.., M, 1, K] x "
                                       "[.., 1, N, K], Mean over K, times K")
    bt = ctx.b.permute(b, tuple(range(len(sb) - 2)) + (len(sb) - 1, len(sb) - 2), f"{name}_bt")
    a4 = ctx.b.reshape(a, sa[:-1] + (1, k), f"{name}_a")
    b4 = ctx.b.reshape(bt, bt.info.shape[:-2] + (1,) + bt.info.shape[-2:], f"{name}_b")
    prod = ctx.b.binary(L.Multiplication, a4, b4, f"{name}_mul")
    m = ctx.b.mean(prod, [prod.info.rank - 1], False, f"{name}_mean")  # rank <= 4 here
    y = ctx.b.linear(m, float(k), 0.0, name) if k != 1 else m
    return ctx.b.reshape(y, batch + (sa[-2], sb[-1]), f"{name}_shape")


def _expand_batch(ctx, x: Port, batch, name: str) -> Port:
    shape = x.info.shape
    x = ctx.b.reshape(x, (1,) * (len(batch) + 2 - len(shape)) + shape, f"{name}_rank")
    for axis, d in enumerate(batch):
        if x.info.shape[axis] != d:
            x = repeat(ctx.b, x, axis, d, f"{name}_rep{axis}")
    return x


def matmul(ctx, a, b, name: str) -> Port:
    """numpy.matmul semantics for Ports or constants (one of them run-time)."""
    sa, sb = ctx.lshape(a), ctx.lshape(b)
    if not sa or not sb:
        raise Unsupported("MatMul of a scalar")
    a2 = sa if len(sa) > 1 else (1,) + tuple(sa)
    b2 = sb if len(sb) > 1 else tuple(sb) + (1,)
    out = list(broadcast(a2[:-2], b2[:-2])) + [a2[-2], b2[-1]]
    if len(sb) == 1:  # numpy drops the axes added to 1-D operands
        out.pop(-1)
    if len(sa) == 1:
        out.pop(-2 if len(sb) > 1 else -1)
    # 1-D operands: a [K] -> [1, K], b [K] -> [K, 1]
    if len(sa) == 1:
        a = a.reshape(1, -1) if isinstance(a, np.ndarray) else ctx.b.reshape(a, (1, sa[0]), f"{name}_a2d")
    if len(sb) == 1:
        b = b.reshape(-1, 1) if isinstance(b, np.ndarray) else ctx.b.reshape(b, (sb[0], 1), f"{name}_b2d")
    sa, sb = ctx.lshape(a) if isinstance(a, Port) else a.shape, ctx.lshape(b) if isinstance(b, Port) else b.shape
    if sa[-1] != sb[-2]:
        raise Unsupported(f"MatMul of {sa} and {sb}: inner dimensions differ (the model is invalid)", code="bad-model")
    if isinstance(a, Port) and isinstance(b, Port):
        y = matmul_runtime(ctx, a, b, name)
    elif isinstance(a, Port):
        y = _matmul_const_b(ctx, a, np.asarray(b, np.float32), name)
    else:
        # a @ b = (b^T @ a^T)^T
        rb = len(sb)
        swap = tuple(range(rb - 2)) + (rb - 1, rb - 2)
        bt = ctx.b.permute(b, swap, f"{name}_bt")
        at = np.swapaxes(np.asarray(a, np.float32), -1, -2)
        y = _matmul_const_b(ctx, bt, at, f"{name}_t")
        y = ctx.b.permute(y, tuple(range(y.info.rank - 2)) + (y.info.rank - 1, y.info.rank - 2), name)
    return ctx.to_shape(y, tuple(out), f"{name}_out")


def _matmul_const_b(ctx, a: Port, b: np.ndarray, name: str) -> Port:
    sa = a.info.shape
    if b.ndim == 2 or all(d == 1 for d in b.shape[:-2]):
        b2 = b.reshape(b.shape[-2:])
        y = _fc(ctx, a, b2.T, None, name)
        if b.ndim > len(sa):
            y = ctx.b.reshape(y, (1,) * (b.ndim - len(sa)) + y.info.shape, f"{name}_rank")
        return y
    batch = tuple(np.broadcast_shapes(sa[:-2], b.shape[:-2]))
    nb = int(np.prod(batch, dtype=np.int64))
    if (nb > MAX_BATCHED_FC or len(batch) + 2 > 4) and ctx.g.target.has(L.BatchMatMul) and \
            a.info.dtype == DataType.Float32:
        # the 23.08 format: the constant as a Constant layer read by a BatchMatMul
        bc = ctx.b.constant_layer(np.ascontiguousarray(b, np.float32), f"{name}_b")
        y = ctx.b.batch_matmul(a, bc, name)
        return ctx.b.reshape(y, batch + (sa[-2], b.shape[-1]), f"{name}_nd")
    if nb > MAX_BATCHED_FC:
        raise Unsupported(f"MatMul with a constant batched right operand of {nb} matrices "
                          f"(at most {MAX_BATCHED_FC} become separate FullyConnected layers)")
    if len(batch) + 2 > 4:
        raise Unsupported("MatMul with a constant batched right operand and more than 2 batch axes")
    ctx.report.decomposition("MatMul", "constant batched right operand: StridedSlice per batch entry, "
                                       "FullyConnected, Merger")
    a_full = a
    if sa[:-2] != batch:  # broadcast a's batch axes by repetition
        a_full = binary(ctx, L.Addition, a, np.zeros(batch + (1, 1), np.float32), f"{name}_abcast")
    bb = np.broadcast_to(b, batch + b.shape[-2:]).reshape((nb,) + b.shape[-2:])
    a3 = ctx.b.reshape(a_full, (nb,) + sa[-2:], f"{name}_a3d")
    parts = [_fc(ctx, ctx.b.take(a3, 0, i, i + 1, f"{name}_a{i}"), bb[i].T, None, f"{name}_fc{i}")
             for i in range(nb)]
    y = ctx.b.concat(parts, 0, f"{name}_cat")
    return ctx.b.reshape(y, batch + (sa[-2], b.shape[-1]), f"{name}_nd")


@register("MatMul", since=1, layers=("FullyConnected", "Multiplication", "Mean", "BatchMatMul", "Activation", "Merger", "Permute", "Reshape", "Addition", "StridedSlice", "Constant"),
          notes="two run-time operands: BatchMatMul from --target 23.08 on")
def matmul_(ctx, node):
    return matmul(ctx, ctx.val(node, 0), ctx.val(node, 1), ctx.name(node))

@register("Gemm", since=7, layers=("FullyConnected", "Permute", "Addition", "Activation", "Mean",
                  "Multiplication", "Reshape", "StridedSlice", "BatchMatMul"))
def gemm(ctx, node):
    n = ctx.name(node)
    a, b = ctx.val(node, 0), ctx.val(node, 1)
    alpha, beta = float(ctx.attr(node, "alpha", 1.0)), float(ctx.attr(node, "beta", 1.0))
    if len(ctx.lshape(a)) != 2 or len(ctx.lshape(b)) != 2:
        raise Unsupported("Gemm operands must be 2-D")
    if ctx.attr(node, "transA", 0):
        a = a.T if isinstance(a, np.ndarray) else ctx.b.permute(a, (1, 0), f"{n}_at")
    if ctx.attr(node, "transB", 0):
        b = b.T if isinstance(b, np.ndarray) else ctx.b.permute(b, (1, 0), f"{n}_bt")
    m, nn = ctx.lshape(a)[0], ctx.lshape(b)[1]
    if ctx.lshape(a)[1] != ctx.lshape(b)[0]:
        raise Unsupported(f"operands of shapes {ctx.lshape(a)} and {ctx.lshape(b)} (after transA/transB) "
                          "do not multiply (the model is invalid)", code="bad-model")
    c = ctx.val(node, 2)
    bias = None
    if isinstance(a, Port) and isinstance(b, np.ndarray):
        w = (np.asarray(b, np.float64) * alpha).T.astype(np.float32)  # [N, K] = [O, I]
        if c is not None and not isinstance(c, Port) and np.asarray(c).ndim <= 2 and \
                (np.asarray(c).ndim < 2 or np.asarray(c).shape[0] == 1):
            bias = np.broadcast_to(np.asarray(c, np.float64).reshape(-1) * beta, (nn,)).astype(np.float32)
            c = None
        y = ctx.b.fully_connected(a, w, bias, n if c is None else f"{n}_fc")
    else:
        y = matmul(ctx, a, b, n if c is None and alpha == 1.0 else f"{n}_mm")
        if alpha != 1.0:
            y = ctx.b.linear(y, alpha, 0.0, n if c is None else f"{n}_alpha")
    if c is not None and beta != 0.0:
        c = c if isinstance(c, Port) or beta == 1.0 else np.asarray(c, np.float32) * np.float32(beta)
        if isinstance(c, Port) and beta != 1.0:
            c = ctx.b.linear(c, beta, 0.0, f"{n}_beta")
        y = binary(ctx, L.Addition, y, c, n)
    return ctx.to_shape(y, (m, nn), f"{n}_shape")




fc_nd = _fc  # x [..., K] @ w.T through a FullyConnected, for the quantized operators (qmatrix.py)


@register("Trilu", since=14, layers=("Multiplication", "Constant", "Reshape", "Merger", "StridedSlice", "Gather",
                                    "Permute", "Transpose"), check=needs_const(1, what="k"),
          notes="int data times a constant 0/1 mask; float data picked from x and a zero (exact for inf and NaN)")
def trilu(ctx, node):
    """The upper (j - i >= k) or lower (j - i <= k) triangle of the last two axes, the rest zero. An
    integer tensor times the 0/1 mask is exact; a float one is not (an inf times 0 is NaN): there each
    element is gathered from x flattened with a 0 appended, the zeroed ones from that 0."""
    x, n = ctx.port(node, 0, dtypes=None), ctx.name(node)
    if x.info.dtype not in (DataType.Signed32, DataType.Float32):
        raise Unsupported(f"Trilu of a {x.info.dtype.name} tensor", code="unsupported-type")
    if x.info.rank < 2:
        raise Unsupported(f"Trilu of a {x.info.rank}-D tensor (needs 2-D or more)", code="bad-model")
    k = int(np.asarray(ctx.val(node, 1)).reshape(-1)[0]) if ctx.has(node, 1) else 0
    rows, cols = x.info.shape[-2:]
    d = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    mask = (d >= k) if ctx.attr(node, "upper", 1) else (d <= k)
    if x.info.dtype == DataType.Float32:
        return _pick_or_zero(ctx, x, mask, n)
    ctx.report.decomposition("Trilu", "x times a constant 0/1 mask (integer data: exact)")
    return ctx.b.binary(L.Multiplication, x, ctx.materialize(mask.astype(np.int32), f"{n}_mask"), n)


def _pick_or_zero(ctx, x, mask, n):
    """x where the constant mask of its last two axes holds, else 0, without arithmetic: a constant
    gather (StridedSlices, or a Gather layer from 20.08) of x flattened with a 0 (a Constant) appended."""
    shape, size = x.info.shape, mask.size
    idx = np.where(mask.reshape(-1), np.arange(size), size)
    if index_runs(idx, MAX_RUNS) is None and not ctx.b.target.at_least("20.08"):
        raise Unsupported(f"a float Trilu of {size} elements in more than {MAX_RUNS} runs (a selection matrix "
                          "would make NaN of an inf)", "convert with --target 20.08 (Gather)", code="needs-target")
    ctx.report.decomposition("Trilu", "float: a constant gather of x and a zero (exact for inf and NaN)")
    flat = ctx.b.reshape(x, shape[:-2] + (size,), f"{n}_flat")
    zero = ctx.b.constant_layer(np.zeros(shape[:-2] + (1,), np.float32), f"{n}_zero")
    y = ctx.b.concat([flat, zero], len(shape) - 2, f"{n}_padded")
    y = gather_const(ctx.b, y, len(shape) - 2, idx, f"{n}_pick", max_slices=MAX_RUNS)
    return ctx.b.reshape(y, shape, n)


MAX_ONE_HOT = 1024  # OneHot depth at the most (its table has 2 * depth + 2 rows of depth values)


@register("OneHot", since=9, layers=("Gather", "Constant", "Maximum", "Minimum", "Addition", "Multiplication", "Cast",
                                     "Reshape"), needs="20.08", check=needs_const(1, 2, what="depth and values"),
          notes="a Gather of constant rows; float indices from --target 23.08 (Cast)")
def one_hot(ctx, node):
    """Row clamp(i, -depth - 1, depth) + depth + 1 of a constant table [an off row, the one-hot rows of
    -depth..depth - 1, an off row] (int32 arithmetic, exact): a negative index counts from the end, one
    out of range gives a row of `off`, as ONNX says; the row's values laid along `axis`."""
    x, n = ctx.port(node, 0, dtypes=None), ctx.name(node)
    depth, values = int(np.asarray(ctx.val(node, 1)).reshape(-1)[0]), np.asarray(ctx.val(node, 2)).reshape(-1)
    if not 0 < depth <= MAX_ONE_HOT or values.dtype.kind not in "fiu" or values.size != 2:
        raise Unsupported(f"OneHot of depth {depth} (1 to {MAX_ONE_HOT}) with {values.dtype} values")
    off, on = values
    if x.info.dtype == DataType.Float32:  # ONNX casts float indices to int64 (truncating, as Cast does)
        if not ctx.g.target.has(L.Cast):
            raise Unsupported("OneHot of float indices (their int cast is a Cast layer)",
                              "convert with --target 23.08 (Cast)", code="needs-target")
        x = ctx.b.cast(x, DataType.Signed32, f"{n}_int")
    if x.info.dtype != DataType.Signed32 or (off.dtype.kind != "f" and np.abs(values).max() >= 2 ** 31):
        raise Unsupported(f"OneHot of {x.info.dtype.name} indices with values {values.tolist()}")
    table = np.full((2 * depth + 2, depth), off, np.float32 if off.dtype.kind == "f" else np.int32)
    table[np.arange(1, 2 * depth + 1), np.arange(-depth, depth) % depth] = on
    ishape = ctx.lshape(x)
    axis = norm_axes([ctx.attr(node, "axis", -1)], len(ishape) + 1)[0]
    out = ishape[:axis] + (depth,) + ishape[axis:]
    one = (1,) * max(len(ishape), 1)
    col = np.arange(depth, dtype=np.int32).reshape((1,) * axis + (depth,) + (1,) * (len(ishape) - axis))
    i = binary(ctx, L.Maximum, x, np.full(one, -depth - 1, np.int32), f"{n}_lo")
    i = binary(ctx, L.Minimum, i, np.full(one, depth, np.int32), f"{n}_hi")
    # the flat table's element (row, column): (i + depth + 1) * depth + column, the column along `axis`
    # (int32 broadcasting: CpuRef permutes no Signed32 tensor)
    i = binary(ctx, L.Addition, i, np.full(one, depth + 1, np.int32), f"{n}_row")
    i = binary(ctx, L.Multiplication, ctx.b.reshape(i, ishape[:axis] + (1,) + ishape[axis:], f"{n}_rows"),
               np.full((1,) * len(out), depth, np.int32), f"{n}_start")
    i = binary(ctx, L.Addition, i, col, f"{n}_index")
    # (a Constant layer: materialize's FullyConnected of a float input would let its NaN and inf through)
    y = ctx.b.gather(ctx.b.constant_layer(table.reshape(-1), f"{n}_table"), i, 0, f"{n}_gather")
    return ctx.to_shape(y, out, n)
