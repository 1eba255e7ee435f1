"""FULLY_CONNECTED: float, per-tensor quantized, or per-channel int8 kept exact (one layer per
run of output channels sharing a scale, or the rich targets' per-axis weights)."""
from __future__ import annotations

import numpy as np

from armnn_import.ir.types import ConstTensor, DataType, TensorInfo
from armnn_import.lowering import Unsupported
from armnn_import.lowering import perchannel
from armnn_import.lowering.quant import PER_CHANNEL_EXACT, channel_runs

from .. import quant as Q
from . import REGISTRY
from .weights import const_weights as _const_weights
from .weights import bias_values, float_kernel, per_axis_weights, per_channel_weights, quant_weights


def _check_fc(op, ctx):
    if op.options.get("weights_format", 0) != 0:
        return "shuffled (packed) weights format"
    return _const_weights(op, ctx)


@REGISTRY.register("FULLY_CONNECTED", since=1, until=13, inputs=2, check=_check_fc,
                   layers=("FullyConnected", "Reshape", "Merger", "Activation", "Convolution2d",
                           "Constant"),  # (an unrolled loop's constant start state: unroll.py)
                   notes="keep_num_dims; optional bias; per-channel int8 weights exact as one FullyConnected "
                         "per run of channels sharing a scale (up to 64)")
def fully_connected(ctx, op):
    o, nb, name = op.options, ctx.b, ctx.name(op)
    x = ctx.port(op.inputs[0])
    wi = op.inputs[1]
    bi = op.inputs[2] if len(op.inputs) > 2 else -1
    if len(ctx.shape(wi)) != 2 or 0 in ctx.shape(wi):
        raise Unsupported(f"weights of shape {list(ctx.shape(wi))}")
    out_c, in_c = ctx.shape(wi)
    if bi >= 0 and int(np.prod(ctx.shape(bi))) != out_c:
        raise Unsupported(f"bias of shape {list(ctx.shape(bi))} for {out_c} outputs")
    if x.info.num_elements % in_c:
        raise Unsupported(f"input of {x.info.num_elements} elements is not a multiple of {in_c}")
    rows = x.info.num_elements // in_c
    x2 = nb.reshape(x, (rows, in_c), f"{name}_flatten")
    q = ctx.out_quant(op)
    if q is None:
        w, bias = float_kernel(ctx, op, wi, bi, name, 0)
        y = nb.fully_connected(x2, w, bias, name)
    elif nb.g.target.at_least("20.08") and (pa := per_axis_weights(ctx, wi, bi, 0, x.info.scale)) is not None \
            and (y := perchannel.fully_connected(nb, x2, pa[0], pa[1], pa[2], q, name)) is not None:
        pass  # per-channel int8 weights kept exact where the target's CpuRef runs them
    else:
        y = _quant_fc(ctx, op, x2, wi, bi, name, q)
    shape = x.info.shape[:-1] + (out_c,) if o.get("keep_num_dims") else (rows, out_c)
    y = nb.reshape(y, shape, f"{name}_shape")
    return ctx.fused(y, o["fused_activation_function"], name, q)


def _quant_fc(ctx, op, x2, wi, bi, name, q):
    """A quantized FULLY_CONNECTED: per-channel int8 weights exact as one FullyConnected per run
    of output channels sharing a scale (joined by a Merger), else per-tensor weights."""
    nb = ctx.b
    exact = per_channel_weights(ctx, wi, 0)
    runs = None if exact is None else channel_runs(exact[1], exact[2], exact[0].shape[0])
    if runs is None:
        wq, ws, wz = quant_weights(ctx, wi, 0, name)
        runs = [(0, wq.shape[0], ws)]
    else:
        wq, _, wz = exact
        ctx.report.quantization.append({"layer": name, "tensor": ctx.t(wi).name, "decision": PER_CHANNEL_EXACT})
    bias = None if bi < 0 else Q.finite(bias_values(ctx, op, wi, bi), f"bias {ctx.t(bi).name!r}").reshape(-1)
    parts = []
    for a, b, s in runs:
        w = ConstTensor(wq[a:b], TensorInfo(wq[a:b].shape, DataType.QuantisedAsymm8, s, wz))
        bb = None if bias is None else Q.bias_int32(bias[a:b], float(np.float32(x2.info.scale * s)))
        parts.append(nb.fully_connected(x2, w, bb, name if len(runs) == 1 else f"{name}_c{a}", quant=q))
    return parts[0] if len(parts) == 1 else nb.concat(parts, 1, name, quant=q)
