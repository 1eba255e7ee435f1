"""Normalizations and Softmax."""
from __future__ import annotations

import numpy as np

from armnn_import.ir import descriptors as D
from armnn_import.ir.graph import Port
from armnn_import.ir.types import ActivationFunction as AF
from armnn_import.ir.types import ArgMinMaxFunction
from armnn_import.ir.types import DataLayout, DataType
from armnn_import.ir.types import LayerType as L
from armnn_import.lowering import Unsupported

from ..registry import needs_const, register
from .common import binary, mean, norm_axes


def _bn_check(node, ctx):
    if ctx.attr(node, "training_mode", 0):
        return ("training_mode=1 (batch statistics) is not an inference operation", "")
    if ctx.attr(node, "spatial", 1) == 0:
        return ("spatial=0 (per-element statistics) is not supported", "")
    return needs_const(1, 2, 3, 4, what="scale/bias/mean/var")(node, ctx)


@register("BatchNormalization", since=7, layers=("BatchNormalization",), check=_bn_check)
def batch_norm(ctx, node):
    if any(o for o in node.outputs[1:]):
        raise Unsupported("the running statistics outputs are only produced in training")
    x = ctx.port(node, 0)
    if x.info.rank < 2:
        raise Unsupported("a 1-D input has no channel axis")
    scale, bias, mean, var = (ctx.const(node, i).astype(np.float64).reshape(-1) for i in (1, 2, 3, 4))
    c = x.info.shape[1]
    if any(v.size != c for v in (scale, bias, mean, var)):
        raise Unsupported(f"scale/bias/mean/var have {[v.size for v in (scale, bias, mean, var)]} values "
                          f"for {c} channels (the model is invalid)", code="bad-model")
    eps = float(ctx.attr(node, "epsilon", 1e-5))
    denom = var + np.float64(np.float32(eps))
    bad = int(np.count_nonzero(~(denom > 0)))
    if bad:  # ONNX's results are NaN or infinite there too: keep them, but say so (no numpy warning)
        ctx.report.warn(f"BatchNormalization {node.name!r}: variance + epsilon is zero, negative or NaN in "
                        f"{bad} of {c} channels; their outputs are NaN or infinite (the model's statistics "
                        "are invalid)")
    with np.errstate(invalid="ignore", divide="ignore"):
        mul = scale / np.sqrt(denom)
        shift = bias - mean * mul
    return ctx.b.batchnorm(x, mul, shift, 1, ctx.name(node))


def normalize(ctx, x: Port, axes, eps: float, name: str, stats=False):
    """(x - mean) / sqrt(var + eps) over `axes` (population variance);
    with stats, also the mean and 1/sqrt(var + eps) (axes kept as 1)."""
    b = ctx.b
    mu = mean(ctx, x, axes, f"{name}_mean")
    d = b.binary(L.Subtraction, x, mu, f"{name}_centred")
    var = mean(ctx, b.activation(d, AF.Square, f"{name}_sq"), axes, f"{name}_var")
    if eps:
        var = b.linear(var, 1.0, eps, f"{name}_eps")
    inv = b.add(L.Rsqrt, f"{name}_rsqrt", [var])
    y = b.binary(L.Multiplication, d, inv, f"{name}_norm")
    return (y, mu, inv) if stats else y


def _affine(ctx, y: Port, scale, shift, axis, name):
    """y * scale + shift with constants varying along `axis` (BatchNormalization),
    or full constants (Multiplication/Addition) otherwise."""
    if scale is None and shift is None:
        return y
    s = np.ones(1, np.float32) if scale is None else np.asarray(scale, np.float32)
    t = np.zeros(1, np.float32) if shift is None else np.asarray(shift, np.float32)
    if axis is not None and s.size in (1, y.info.shape[axis]) and t.size in (1, y.info.shape[axis]):
        return ctx.b.batchnorm(y, s.reshape(-1), t.reshape(-1), axis, name)
    if scale is not None:
        y = binary(ctx, L.Multiplication, y, s, f"{name}_scale" if shift is not None else name)
    if shift is not None:
        y = binary(ctx, L.Addition, y, t, name)
    return y


@register("InstanceNormalization", since=6, layers=("Mean", "Subtraction", "Rsqrt", "BatchNormalization",
                                                   "InstanceNormalization", "Activation", "Multiplication", "Reshape"),
          check=needs_const(1, 2, what="scale/bias"),
          notes="one InstanceNormalization (float) and the per-channel scale and bias from the 20.08 format on")
def instance_norm(ctx, node):
    x, n = ctx.port(node, 0), ctx.name(node)
    if x.info.rank < 3:
        raise Unsupported("InstanceNormalization needs N, C and spatial axes")
    eps = float(ctx.attr(node, "epsilon", 1e-5))
    if ctx.b.target.has(L.InstanceNormalization) and x.info.dtype in (DataType.Float32, DataType.Float16):
        return _instance_norm_layer(ctx, x, eps, ctx.const(node, 1).reshape(-1), ctx.const(node, 2).reshape(-1), n)
    ctx.report.decomposition("InstanceNormalization", "Mean, Subtraction, Square, Mean, Linear(+eps), Rsqrt, "
                                                      "Multiplication, per-channel BatchNormalization")
    y = normalize(ctx, x, range(2, x.info.rank), float(ctx.attr(node, "epsilon", 1e-5)), n)
    return _affine(ctx, y, ctx.const(node, 1).reshape(-1), ctx.const(node, 2).reshape(-1), 1, n)


def _instance_norm_layer(ctx, x: Port, eps: float, scale, shift, n: str) -> Port:
    """InstanceNorm.cpp over H and W of an NCHW view (other spatial ranks folded into H), the
    scale and bias in the layer when they are one value, else a per-channel BatchNormalization."""
    shape = x.info.shape
    view = shape if len(shape) == 4 else (shape[0], shape[1], int(np.prod(shape[2:], dtype=np.int64)), 1)
    s, t = np.asarray(scale, np.float32), np.asarray(shift, np.float32)
    uniform = s.size >= 1 and t.size >= 1 and bool((s == s[0]).all() and (t == t[0]).all())
    y = ctx.b.reshape(x, view, f"{n}_4d")
    y = ctx.b.instance_norm(y, eps, n if uniform and view == shape else f"{n}_norm",
                            float(s[0]) if uniform else 1.0, float(t[0]) if uniform else 0.0)
    if not uniform:
        y = _affine(ctx, y, s, t, 1, n if view == shape else f"{n}_affine")
    return ctx.b.reshape(y, shape, n)


@register("LayerNormalization", since=17, layers=("Mean", "Subtraction", "Rsqrt", "Multiplication",
                  "Activation", "BatchNormalization", "Reshape", "Addition", "FullyConnected",
                  "StridedSlice"),
          check=needs_const(1, 2, what="scale/bias"))
def layer_norm(ctx, node):
    x, n = ctx.port(node, 0), ctx.name(node)
    rank = len(ctx.lshape(x))
    axis = norm_axes([ctx.attr(node, "axis", -1)], rank)[0]
    ctx.report.decomposition("LayerNormalization", "Mean, Subtraction, Square, Mean, Linear(+eps), Rsqrt, "
                                                   "Multiplication, then scale/shift")
    y, mu, inv = normalize(ctx, x, range(axis, rank), float(ctx.attr(node, "epsilon", 1e-5)), n, stats=True)
    scale = ctx.const(node, 1, "scale")
    shift = ctx.const(node, 2, "bias") if ctx.has(node, 2) else None
    last = rank - 1 if axis == rank - 1 or (scale.size == y.info.shape[-1] and
                                            (shift is None or shift.size == y.info.shape[-1])
                                            and all(d == 1 for d in scale.shape[:-1])) else None
    if last is not None:
        y = _affine(ctx, y, scale.reshape(-1), None if shift is None else shift.reshape(-1), rank - 1, n)
    else:
        y = _affine(ctx, y, scale, shift, None, n)
    return [y, mu, inv]


@register("GroupNormalization", since=18, layers=("Reshape", "Mean", "Rsqrt", "BatchNormalization",
                  "Activation", "Multiplication", "Subtraction"),
          check=needs_const(1, 2, what="scale/bias"))
def group_norm(ctx, node):
    x, n = ctx.port(node, 0), ctx.name(node)
    shape = x.info.shape
    g = int(ctx.attr(node, "num_groups"))
    if len(shape) < 3 or shape[1] % g:
        raise Unsupported(f"{shape[1] if len(shape) > 1 else 0} channels do not split into {g} groups")
    c = shape[1]
    ctx.report.decomposition("GroupNormalization", "Reshape [N, G, rest], normalize over rest, Reshape, "
                                                   "per-channel BatchNormalization")
    grouped = ctx.b.reshape(x, (shape[0], g, int(np.prod(shape[1:])) // g), f"{n}_groups")
    y = normalize(ctx, grouped, [2], float(ctx.attr(node, "epsilon", 1e-5)), n)
    y = ctx.b.reshape(y, shape, f"{n}_back")
    scale, shift = ctx.const(node, 1).reshape(-1), ctx.const(node, 2).reshape(-1)
    if scale.size == g and c != g:  # opset 18: one value per group
        scale, shift = np.repeat(scale, c // g), np.repeat(shift, c // g)
    return _affine(ctx, y, scale, shift, 1, f"{n}_affine")


@register("MeanVarianceNormalization", since=9, layers=("Mean", "Subtraction", "Rsqrt", "Activation", "Division"))
def mvn(ctx, node):
    x, n = ctx.port(node, 0), ctx.name(node)
    axes = norm_axes(ctx.attr(node, "axes", [0, 2, 3]), x.info.rank)
    ctx.report.decomposition("MeanVarianceNormalization", "Mean, Subtraction, Square, Mean, Rsqrt, Multiplication")
    # the ONNX function body: (x - mean) / (sqrt(var) + 1e-9)
    b = ctx.b
    mu = mean(ctx, x, axes, f"{n}_mean")
    d = b.binary(L.Subtraction, x, mu, f"{n}_centred")
    var = mean(ctx, b.activation(d, AF.Square, f"{n}_sq"), axes, f"{n}_var")
    std = b.linear(b.activation(var, AF.Sqrt, f"{n}_std"), 1.0, 1e-9, f"{n}_eps")
    return b.binary(L.Division, d, std, n)


@register("LpNormalization", since=1, layers=("Activation", "Mean", "Division"))
def lp_norm(ctx, node):
    x, n = ctx.port(node, 0), ctx.name(node)
    p = int(ctx.attr(node, "p", 2))
    if p not in (1, 2):
        raise Unsupported(f"p={p} (ONNX allows 1 and 2)")
    axis = norm_axes([ctx.attr(node, "axis", -1)], x.info.rank)[0]
    count = x.info.shape[axis]
    ctx.report.decomposition("LpNormalization", "x / max(Mean(|x| or x^2) * N (then Sqrt), FLT_MIN): no "
                                                "epsilon as in ONNX; a zero vector stays zero")
    b = ctx.b
    t = b.activation(x, AF.Square if p == 2 else AF.Abs, f"{n}_pow")
    s = b.linear(mean(ctx, t, [axis], f"{n}_mean"), float(count), 0.0, f"{n}_sum")
    if p == 2:
        s = b.activation(s, AF.Sqrt, f"{n}_norm")
    s = b.clamp(s, float(np.finfo(np.float32).tiny), np.inf, f"{n}_nonzero")  # 0/0 -> 0, as ONNX does
    return b.binary(L.Division, x, s, n)


def _lrn_check(node, ctx):
    size = ctx.attr(node, "size", 1)
    if not isinstance(size, int) or not 1 <= size < 1 << 31:
        return f"size {size!r} must be a positive integer below 2^31"
    if size % 2 == 0:
        return ("an even size has an asymmetric window in ONNX; Arm NN's window is symmetric", "")
    return None


@register("LRN", since=1, layers=("Normalization",), check=_lrn_check)
def lrn(ctx, node):
    x, n = ctx.port(node, 0), ctx.name(node)
    size = int(ctx.attr(node, "size"))
    shape = x.info.shape
    if len(shape) < 3 or len(shape) > 4:
        raise Unsupported(f"a {len(shape)}-D input (Arm NN normalizes 4-D tensors)")
    y = ctx.b.reshape(x, shape + (1,) * (4 - len(shape)), f"{n}_4d")
    desc = D.NormalizationDescriptor(D.NormalizationAlgorithmChannel.Across,
                                     D.NormalizationAlgorithmMethod.LocalBrightness, size,
                                     float(ctx.attr(node, "alpha", 1e-4)) / size, float(ctx.attr(node, "beta", 0.75)),
                                     float(ctx.attr(node, "bias", 1.0)), DataLayout.NCHW)
    y = ctx.b.add(L.Normalization, n, [y], desc)
    return ctx.b.reshape(y, shape, f"{n}_back")


def _on_2d(ctx, node, apply):
    """Opsets < 13 of Softmax and LogSoftmax: `apply(flat, name)` to x flattened to 2-D at `axis`."""
    x, n = ctx.port(node, 0), ctx.name(node)
    shape = ctx.lshape(x)
    axis = norm_axes([ctx.attr(node, "axis", 1)], len(shape))[0]
    flat = ctx.b.reshape(x, (int(np.prod(shape[:axis], dtype=np.int64)), int(np.prod(shape[axis:], dtype=np.int64))),
                         f"{n}_2d")
    return ctx.to_shape(apply(flat, n), shape, f"{n}_nd")


@register("Softmax", since=1, until=12, layers=("Softmax", "Reshape"))
def softmax_flat(ctx, node):
    return _on_2d(ctx, node, lambda flat, n: ctx.b.softmax(flat, -1, 1.0, n))


@register("Softmax", since=13, layers=("Softmax", "Permute"),
          notes="any axis in the Softmax layer from the 23.08 format on")
def softmax(ctx, node):
    x = ctx.port(node, 0)
    axis = norm_axes([ctx.attr(node, "axis", -1)], x.info.rank)[0]
    return ctx.b.softmax(x, axis, 1.0, ctx.name(node))


@register("LogSoftmax", since=1, until=12, layers=("LogSoftmax", "Reshape"), needs="20.08")
def log_softmax_flat(ctx, node):
    return _on_2d(ctx, node, lambda flat, n: ctx.b.log_softmax(flat, -1, n))


@register("LogSoftmax", since=13, layers=("LogSoftmax",), needs="20.08")
def log_softmax(ctx, node):
    x = ctx.port(node, 0)
    return ctx.b.log_softmax(x, norm_axes([ctx.attr(node, "axis", -1)], x.info.rank)[0], ctx.name(node))


def _hardmax(ctx, x: Port, axis: int, n: str) -> Port:
    """One-hot of the first largest value along `axis`, as ONNX says: the ArgMinMax index (the first
    of a tie) picks a row of the identity matrix by a Gather (copies of 0.0 and 1.0, exact), and a
    Permute moves that row's axis from the end back to `axis`."""
    if x.info.dtype != DataType.Float32:
        raise Unsupported(f"Hardmax of a {x.info.dtype.name} tensor (only float32)", code="unsupported-type")
    shape = x.info.shape
    if len(shape) == 1:
        return ctx.b.reshape(_hardmax(ctx, ctx.b.reshape(x, (1,) + shape, f"{n}_2d"), 1, n + "_row"), shape, n)
    rank = len(shape)
    idx = ctx.b.arg_min_max(x, axis, ArgMinMaxFunction.Max, f"{n}_arg")
    eye = ctx.b.constant_layer(np.eye(shape[axis], dtype=np.float32), f"{n}_eye")
    rows = ctx.b.gather(eye, idx, 0, n if axis == rank - 1 else f"{n}_rows")
    ctx.report.decomposition("Hardmax", "ArgMax, then a Gather of identity-matrix rows")
    return ctx.b.permute(rows, tuple(range(axis)) + (rank - 1,) + tuple(range(axis, rank - 1)), n)


@register("Hardmax", since=1, layers=("ArgMinMax", "Gather", "Constant", "Permute", "Reshape"), needs="20.08",
          notes="the first largest value of a tie, as ONNX says; before opset 13 on x flattened to 2-D at axis")
def hardmax(ctx, node):
    if ctx.opset < 13:
        return _on_2d(ctx, node, lambda flat, n: _hardmax(ctx, flat, 1, n))
    x = ctx.port(node, 0)
    return _hardmax(ctx, x, norm_axes([ctx.attr(node, "axis", -1)], x.info.rank)[0], ctx.name(node))
