"""Quantization helpers shared by the frontends. Arm NN's format has one 8-bit
type, QuantisedAsymm8 (uint8, one scale and offset per tensor): per-channel
weights are requantized per tensor (the error reported), and a quantized
convolution's bias, which the format's convolution cannot carry (see
NetBuilder.conv2d), is added inside it by extra taps reading a constant
(quant_conv2d_nchw), so that the output is rounded once. (The 20.08 format on has more:
int8 tensors as QAsymmS8, lowering/int8.py; per-axis weights, lowering/perchannel.py.)"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Port
from ..ir.types import ConstTensor, DataLayout, DataType, LayerType, TensorInfo
from ..report import Report

# Warn when a requantized weight is off by more than this fraction of its channel's range.
WEIGHT_WARN = 0.02
# At most this many constant input channels carry a convolution's bias (see quant_conv2d_nchw).
#: the hint of a refusal that --dequantize avoids (both frontends)
DEQUANTIZE_HINT = "--dequantize converts the whole model to float (quantize/dequantize pairs become identities)"
MAX_BIAS_PLANES = 16
MAX_GROUPS = 64  # grouped convolutions split into at most this many
# Per-channel 8-bit weights stay exact as at most this many convolutions, one per run of output
# channels sharing a scale, joined by a Merger (quant_conv2d_nchw); past it they are requantized.
MAX_CHANNEL_RUNS = 64
PER_CHANNEL_EXACT = ("per-channel 8-bit weights kept exact: one convolution per run of output channels "
                     "sharing a scale, joined by a Merger")


def requantize(real: np.ndarray) -> tuple[np.ndarray, float, int]:
    """Per-tensor asymmetric uint8 quantization of float values covering
    [min(x, 0), max(x, 0)] so that 0 is exact. Returns (q, scale, offset)."""
    lo, hi = min(float(real.min(initial=0.0)), 0.0), max(float(real.max(initial=0.0)), 0.0)
    scale = float(np.float32((hi - lo) / 255.0)) if hi > lo else 1.0
    offset = int(np.clip(np.round(-lo / scale), 0, 255))
    q = np.clip(np.round(real.astype(np.float64) / scale) + offset, 0, 255).astype(np.uint8)
    return q, scale, offset


def worst_error(real: np.ndarray, q: np.ndarray, scale: float, offset: int, axis: int) -> float:
    """Largest |w - dequantized w| relative to the range (max |w|) of its output channel."""
    err = np.abs((q.astype(np.float64) - offset) * scale - real.astype(np.float64))
    moved = np.moveaxis(err, axis, 0).reshape(err.shape[axis], -1)
    rng = np.moveaxis(np.abs(real.astype(np.float64)), axis, 0).reshape(err.shape[axis], -1).max(axis=1)
    rel = moved.max(axis=1) / np.where(rng > 0, rng, 1.0)
    return float(rel.max(initial=0.0))


def requantize_weights(report: Report, layer: str, tensor: str, real: np.ndarray, axis: int,
                       decision: str) -> tuple[np.ndarray, float, int]:
    """Float (or dequantized per-channel) weights as per-tensor uint8, with a
    report.quantization entry and a warning when a channel loses accuracy."""
    q, scale, offset = requantize(real)
    err = worst_error(real, q, scale, offset, axis)
    report.quantization.append({"layer": layer, "tensor": tensor, "decision": decision,
                                "scale": scale, "offset": offset, "worst_error": err})
    if err > WEIGHT_WARN:
        report.warn(f"{layer}: weights requantized per tensor are off by up to {err:.1%} of a "
                    "channel's range; accuracy is at risk (--dequantize keeps float weights)")
    return q, scale, offset


def bias_int32(real: np.ndarray, scale: float) -> ConstTensor:
    """A Signed32 bias with the given scale (input scale * weight scale), offset 0."""
    q = np.clip(np.round(real.astype(np.float64) / scale), -2 ** 31, 2 ** 31 - 1).astype(np.int32)
    return ConstTensor(q, TensorInfo(q.shape, DataType.Signed32, scale, 0))


def real_range(scale: float, offset: int) -> tuple[float, float]:
    """The real values a QuantisedAsymm8 tensor can hold."""
    return (0 - offset) * scale, (255 - offset) * scale


def covering_quant(lo: float, hi: float) -> tuple[float, int]:
    """(scale, offset) of a uint8 quantization covering [lo, hi] (widened to include 0)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi <= lo:
        return 1.0, 0
    scale = float(np.float32((hi - lo) / 255.0))
    return scale, int(np.clip(np.round(-lo / scale), 0, 255))


def mid_quant(x, w_real_oihw, bias, out_q):
    """Quantization of a quantized convolution's output before its bias (the
    bias is a separate BatchNormalization here): covers every pre-bias value
    that can still reach the output range, given the input's range."""
    lo_out, hi_out = real_range(*out_q)
    lo_in, hi_in = real_range(x.info.scale, x.info.offset)
    w = w_real_oihw.reshape(w_real_oihw.shape[0], -1).astype(np.float64)
    acc_hi = np.maximum(w * hi_in, w * lo_in).sum(axis=1)
    acc_lo = np.minimum(w * hi_in, w * lo_in).sum(axis=1)
    b = bias.astype(np.float64).reshape(-1)
    lo = np.maximum(acc_lo, lo_out - b).min()
    hi = np.minimum(acc_hi, hi_out - b).max()
    return covering_quant(float(lo), float(hi))


def quant_conv2d(nb, x, w_oihw: np.ndarray, w_quant: tuple[float, int], bias, out_q, name: str, *,
                 strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), groups: int = 1,
                 layout: DataLayout = DataLayout.NCHW):
    """A QuantisedAsymm8 convolution: uint8 weights (OIHW, one scale and offset),
    a float bias (or None) and the output quantization. With a bias, the
    convolution computes into a wider intermediate quantization and a
    BatchNormalization adds the bias into the output quantization."""
    w_oihw = np.ascontiguousarray(w_oihw)
    winfo = TensorInfo(w_oihw.shape, DataType.QuantisedAsymm8, *w_quant)
    geometry = dict(strides=strides, pads=pads, dilations=dilations, groups=groups, layout=layout)
    if nb.g.target.at_least("20.08"):  # the layer adds its int32 bias, rounding once
        return nb.conv2d(x, w_oihw, bias, name, quant=out_q, weight_info=winfo, **geometry)
    if bias is None or not np.any(bias):
        return nb.conv2d(x, w_oihw, None, name, quant=out_q, weight_info=winfo, **geometry)
    ws, wz = w_quant
    mid = mid_quant(x, (w_oihw.astype(np.float64) - wz) * ws, np.asarray(bias), out_q)
    y = nb.conv2d(x, w_oihw, None, name, quant=mid, weight_info=winfo, **geometry)
    nb.report.decomposition("quantized convolution bias",
                            "convolution into a wider intermediate quantization, then a "
                            "BatchNormalization adding the bias into the output quantization")
    axis = 3 if layout == DataLayout.NHWC else 1
    return nb.batchnorm(y, np.ones(np.size(bias)), bias, axis, f"{name}_bias", quant=out_q)


def channel_runs(scales, zero_point: int, cout: int, multiplier: int = 1) -> list | None:
    """[(first, end, scale)] runs of output channels sharing a per-channel weight scale (split
    at every `multiplier` channels, so that a depthwise run reads one input channel), or None
    when per-channel weights cannot stay exact: too many runs, or a scale that is not finite
    and positive."""
    s = np.asarray(scales, np.float32).reshape(-1)
    if s.size != cout or not np.all(np.isfinite(s)) or np.any(s <= 0) or not 0 <= zero_point <= 255:
        return None
    cuts = sorted({0, cout} | {i for i in range(1, cout) if s[i] != s[i - 1] or
                               (multiplier > 1 and i % multiplier == 0)})
    runs = [(a, b, float(s[a])) for a, b in zip(cuts[:-1], cuts[1:])]
    return runs if len(runs) <= MAX_CHANNEL_RUNS else None


def _runs(w_quant, cout: int) -> list:
    scale = w_quant[0]
    if np.ndim(scale):
        return channel_runs(scale, w_quant[1], cout)
    return [(0, cout, float(scale))]


MERGER_FAN_IN = 8  # CpuRef's Merger looks through every view for each element: join in a tree


def _joined(nb, parts: list, axis: int, name: str, out_q) -> Port:
    """One run's result as is; several joined by a Merger named after the node (a tree of
    Mergers of at most MERGER_FAN_IN inputs each: CpuRef runs it faster than one wide Merger)."""
    level = 0
    while len(parts) > MERGER_FAN_IN:
        parts = [parts[i] if len(parts[i:i + MERGER_FAN_IN]) == 1 else
                 nb.concat(parts[i:i + MERGER_FAN_IN], axis, f"{name}_join{level}_{i}", quant=out_q)
                 for i in range(0, len(parts), MERGER_FAN_IN)]
        level += 1
    return parts[0] if len(parts) == 1 else nb.concat(parts, axis, name, quant=out_q)


def quant_conv2d_nchw(nb, x, w_oihw: np.ndarray, w_quant: tuple, bias, out_q, name: str, *,
                      strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), groups: int = 1,
                      requantized=None):
    """quant_conv2d for NCHW x, adding the bias inside the layer where possible, so
    that the output is rounded once (as int32-bias runtimes do) instead of twice.
    w_quant = (scale, offset), or (per-output-channel scales, offset) with
    `requantized()` giving per-tensor (weights, (scale, offset)) as the fallback:
    per-channel weights stay exact as one convolution per run of channels sharing
    a scale (channel_runs), all reading the same prepared input, joined by a Merger
    (ungrouped and depthwise, undilated; else requantized). The lowerings:
    - a 1x1 convolution without padding is a FullyConnected (int32 bias) over the
      channels, strided by a StridedSlice first;
    - another ungrouped convolution gets extra input channels holding a constant
      (its zero padding made explicit first, so that the constant is everywhere)
      whose weights sum to the bias; Pad + Addition build them;
    - a depthwise convolution gets rows holding the constant interleaved with the
      input's rows (Reshape + Pad + Addition + Reshape), read by extra kernel rows;
    - a grouped convolution is one such convolution per group, joined by a Merger;
    - else (dilated, or a bias too large) quant_conv2d's intermediate quantization
      and BatchNormalization."""
    w_oihw = np.ascontiguousarray(w_oihw)
    bias = None if bias is None or not np.any(bias) else np.asarray(bias, np.float64).reshape(-1)
    cin = x.info.shape[1]
    if np.ndim(w_quant[0]):
        y = _per_channel(nb, x, w_oihw, w_quant, bias, out_q, name, strides, pads, dilations, groups)
        if y is not None:
            return y
        w_oihw, w_quant = requantized()
    y = None
    if bias is not None and tuple(dilations) == (1, 1) and not nb.g.target.at_least("20.08"):
        if groups == 1 and w_oihw.shape[2:] == (1, 1) and not any(pads):
            y = _pointwise_fc(nb, x, w_oihw, w_quant, bias, out_q, name, strides)
        elif groups == 1:
            y = _bias_channel_conv(nb, x, w_oihw, w_quant, bias, out_q, name, strides, pads)
        elif groups == cin and w_oihw.shape[1] == 1:
            y = _bias_rows_depthwise(nb, x, w_oihw, w_quant, bias, out_q, name, strides, pads)
        elif groups <= MAX_GROUPS:
            y = _grouped(nb, x, w_oihw, w_quant, bias, out_q, name, strides, pads, groups)
    if y is not None:
        return y
    return quant_conv2d(nb, x, w_oihw, w_quant, bias, out_q, name, strides=strides, pads=pads,
                        dilations=dilations, groups=groups)


def _pointwise_fc(nb, x, w_oihw, w_quant, bias, out_q, name, strides):
    if tuple(strides) != (1, 1):
        x = nb.slice(x, [None] * 4, [None] * 4, [1, 1, strides[0], strides[1]], f"{name}_stride")
    n, c, h, w = x.info.shape
    rows = nb.reshape(nb.permute(x, (0, 2, 3, 1), f"{name}_to_nhwc"), (n * h * w, c), f"{name}_rows")
    cout = w_oihw.shape[0]
    runs = _runs(w_quant, cout)
    parts = []
    for a, b, s in runs:
        weights = ConstTensor(w_oihw[a:b].reshape(b - a, c),
                              TensorInfo((b - a, c), DataType.QuantisedAsymm8, s, w_quant[1]))
        bb = bias_int32(bias[a:b], float(np.float32(x.info.scale) * np.float32(s)))
        parts.append(nb.fully_connected(rows, weights, bb, name if len(runs) == 1 else f"{name}_c{a}",
                                        quant=out_q))
    y = _joined(nb, parts, 1, name, out_q)
    nb.report.decomposition("quantized 1x1 convolution with bias", "FullyConnected over the channels "
                            "(int32 bias, one rounding) between Permutes")
    return nb.permute(nb.reshape(y, (n, h, w, cout), f"{name}_nhwc"), (0, 3, 1, 2), f"{name}_to_nchw")


def _bias_taps(bias, x, w_quant, taps: int, max_planes: int, warn):
    """How a constant input of m levels (q = offset + m) read by weights can add the bias:
    (m, the weights' levels above their zero point [cout, planes * taps], planes), or None.
    The smallest |m| is taken (m = 1 reproduces an int32 bias exactly) whose weight sums
    fit in at most max_planes planes of `taps` weights; warn(|m|, units off, real error) is
    told when |m| > 1."""
    ws, wz = w_quant
    xs, xoff = x.info.scale, x.info.offset
    up, down = 255 - wz, wz  # what one weight can add above / below its zero point
    ideal = bias / (np.float64(np.float32(xs)) * np.float64(np.float32(ws)))  # int32-bias units
    huge = 1 << 30
    for m in sorted((m for m in range(-xoff, 256 - xoff) if m), key=lambda m: (abs(m), m < 0)):
        t = np.round(ideal / m).astype(np.int64)
        hi, lo = int(t.max(initial=0)), int(-t.min(initial=0))
        planes = max(-(-hi // (taps * up)) if up else (huge if hi else 0),
                     -(-lo // (taps * down)) if down else (huge if lo else 0), 1)
        if planes <= max_planes:
            if abs(m) > 1:  # the bias is added in steps of |m| int32 units: say so (never silently)
                off = np.abs(ideal - m * t)  # per output channel, in int32 units (ws may be per channel)
                real = float((off * np.float64(np.float32(xs)) * np.float64(np.float32(ws))).max(initial=0.0))
                warn(abs(m), float(off.max(initial=0.0)), real)
            slot = np.arange(planes * taps)[None, :]
            levels = np.where(t[:, None] >= 0, np.clip(t[:, None] - up * slot, 0, up),
                              -np.clip(-t[:, None] - down * slot, 0, down))
            return m, levels, planes
    return None


COARSE_BIAS = "quantized convolution biases added in steps"


def _coarse_bias(report, layer: str, step: int, units: float, real: float) -> None:
    """Record a bias added in steps of `step` int32 units; one warning names the worst case."""
    report.quantization.append({"layer": layer, "tensor": "bias", "step": step, "units_off": units,
                                "real_error": real, "decision": f"bias added in steps of {step} int32 units"})
    rows = [q for q in report.quantization if q.get("tensor") == "bias" and "step" in q]
    worst = max(rows, key=lambda q: q["real_error"])
    report.warnings[:] = [w for w in report.warnings if not w.startswith(COARSE_BIAS)]
    report.warn(f"{COARSE_BIAS}: {len(rows)} convolution(s) in this format add their int32 bias in steps of up to "
                f"{max(q['step'] for q in rows)} units, off by up to {worst['real_error']:.3g} in real terms "
                f"(worst: {worst['layer']}); --target 20.08 adds every bias exactly")


def _explicit_pad(nb, x, pads, name):
    if not any(pads):
        return x
    from ..ir import descriptors as D
    pt, pl, pb, pr = pads
    if x.info.offset == 0:  # Pad fills raw 0, the real 0 here; CpuRef runs it faster than SpaceToBatchNd
        return nb.pad(x, [(0, 0), (0, 0), (pt, pb), (pl, pr)], f"{name}_pad")
    # SpaceToBatchNd with block 1 pads with the real value 0 (the zero point), as the convolution would
    return nb.add(LayerType.SpaceToBatchNd, f"{name}_pad", [x],
                  D.SpaceToBatchNdDescriptor((1, 1), (pt, pb, pl, pr), DataLayout.NCHW))


def _bias_channel_conv(nb, x, w_oihw, w_quant, bias, out_q, name, strides, pads):
    cout, cin, kh, kw = w_oihw.shape
    xoff = x.info.offset
    found = _bias_taps(bias, x, w_quant, kh * kw, MAX_BIAS_PLANES, lambda *e: _coarse_bias(nb.report, name, *e))
    if found is None:
        return None
    m, levels, planes = found
    extra = (levels + w_quant[1]).astype(np.uint8).reshape(cout, planes, kh, kw)
    w = np.concatenate([w_oihw, extra], axis=1)
    x = _explicit_pad(nb, x, pads, name)
    # the constant channels: a Pad adds them (raw 0 = -offset levels) and an Addition of
    # [0, ..., 0, m + offset, ...] lifts them to m (CpuRef runs a Merger far slower)
    padded = nb.pad(x, [(0, 0), (0, planes), (0, 0), (0, 0)], f"{name}_planes")
    lift = _levels_constant(nb, padded, [0] * cin + [m + xoff] * planes, (1, cin + planes, 1, 1), f"{name}_lift")
    xc = nb.binary(LayerType.Addition, padded, lift, f"{name}_with_const", quant=(x.info.scale, xoff))
    nb.report.decomposition("quantized convolution with bias", "extra input channels holding a constant "
                            "(Pad and Addition), whose weights sum to the bias (one rounding); padding "
                            "made explicit first")
    runs = _runs(w_quant, cout)
    return _joined(nb, [nb.conv2d(xc, w[a:b], None, name if len(runs) == 1 else f"{name}_c{a}", strides=strides,
                                  quant=out_q, weight_info=TensorInfo(w[a:b].shape, DataType.QuantisedAsymm8,
                                                                      s, w_quant[1]))
                        for a, b, s in runs], 1, name, out_q)


def _bias_rows_depthwise(nb, x, w_oihw, w_quant, bias, out_q, name, strides, pads):
    cout, _, kh, kw = w_oihw.shape
    # the constant rows come from a Pad (raw 0, real -offset) plus m + offset levels (see below)
    xoff = x.info.offset
    found = _bias_taps(bias, x, w_quant, kh * kw, MAX_BIAS_PLANES // 4, lambda *e: _coarse_bias(nb.report, name, *e))
    if found is None:
        return None
    m, levels, planes = found
    r = planes + 1  # every input row is followed by `planes` rows of the constant
    w = np.full((cout, 1, r * kh, kw), w_quant[1], np.uint8)
    w[:, :, ::r] = w_oihw
    extra = (levels + w_quant[1]).astype(np.uint8).reshape(cout, planes, kh, kw)
    for i in range(planes):
        w[:, 0, i + 1::r] = extra[:, i]
    x = _explicit_pad(nb, x, pads, name)
    n, c, h, wd = x.info.shape
    # [n, c, h, phase s, w] = [n, c, h * r, w]: x at phase 0, the constant (m levels) at the
    # others. A Pad adds the phases (raw 0 = -offset levels) and an Addition of
    # [0, m + offset, ...] per phase lifts them to m; both are exact. (CpuRef runs the
    # alternatives, Merger, BatchToSpaceNd or BatchNormalization, far slower:
    # benchmarks/layer_costs.py.)
    flat = nb.reshape(x, (1, n * c * h, 1, wd), f"{name}_flat")
    padded = nb.pad(flat, [(0, 0), (0, 0), (0, planes), (0, 0)], f"{name}_phases")
    lift = _levels_constant(nb, padded, [0] + [m + xoff] * planes, (1, 1, r, 1), f"{name}_lift")
    phases = nb.binary(LayerType.Addition, padded, lift, f"{name}_const", quant=(x.info.scale, xoff))
    rows = nb.reshape(phases, (n, c, h * r, wd), f"{name}_rows")
    nb.report.decomposition("quantized depthwise convolution with bias", "rows holding a constant "
                            "(Pad and Addition) interleaved with the input's, read "
                            "by extra kernel rows whose weights sum to the bias (one rounding)")
    return _depthwise_runs(nb, rows, w, w_quant, out_q, name, (r * strides[0], strides[1]))


def _depthwise_runs(nb, x, w, w_quant, out_q, name, strides, pads=(0, 0, 0, 0)):
    """A depthwise convolution of NCHW x, one per run of channels sharing a weight scale (on
    the input channels it reads), joined by a Merger."""
    c = x.info.shape[1]
    mult = w.shape[0] // c
    runs = [(0, w.shape[0], float(w_quant[0]))] if not np.ndim(w_quant[0]) else \
        channel_runs(w_quant[0], w_quant[1], w.shape[0], mult)
    parts = []
    for a, b, s in runs:
        i0, i1 = a // mult, (b - 1) // mult + 1
        xs = x if (i0, i1) == (0, c) else nb.take(x, 1, i0, i1, f"{name}_in{a}")
        parts.append(nb.conv2d(xs, w[a:b], None, name if len(runs) == 1 else f"{name}_c{a}", strides=strides,
                               pads=pads, groups=i1 - i0, quant=out_q,
                               weight_info=TensorInfo(w[a:b].shape, DataType.QuantisedAsymm8, s, w_quant[1])))
    return _joined(nb, parts, 1, name, out_q)


def _per_channel(nb, x, w, w_quant, bias, out_q, name, strides, pads, dilations, groups):
    """Exact per-channel weights (see quant_conv2d_nchw), or None."""
    cout, cin = w.shape[0], x.info.shape[1]
    depthwise = groups == cin and w.shape[1] == 1 and cout % cin == 0
    mult = cout // cin if depthwise else 1
    if tuple(dilations) != (1, 1) or not (groups == 1 or depthwise) or \
            channel_runs(w_quant[0], w_quant[1], cout, mult) is None:
        return None
    if bias is not None and groups == 1 and w.shape[2:] == (1, 1) and not any(pads):
        y = _pointwise_fc(nb, x, w, w_quant, bias, out_q, name, strides)
    elif bias is not None:
        y = (_bias_channel_conv if groups == 1 else _bias_rows_depthwise)(nb, x, w, w_quant, bias, out_q, name,
                                                                          strides, pads)
    elif groups == 1:
        y = _joined(nb, [nb.conv2d(x, w[a:b], None, f"{name}_c{a}", strides=strides, pads=pads, quant=out_q,
                                   weight_info=TensorInfo(w[a:b].shape, DataType.QuantisedAsymm8, s, w_quant[1]))
                         for a, b, s in _runs(w_quant, cout)], 1, name, out_q)
    else:
        y = _depthwise_runs(nb, x, w, w_quant, out_q, name, strides, pads)
    if y is not None:
        nb.report.decomposition("quantized convolution with per-channel weights", "one convolution per run of "
                                "output channels sharing a weight scale (exact 8-bit weights), joined by a Merger")
    return y


def _levels_constant(nb, x, levels, shape, name):
    """`shape` (len(levels) elements) holding levels[i] * x's scale, quantized with x's
    scale and offset 0 (every level from 0 to 255 fits): a FullyConnected with zero
    weights (scale 1) and the levels as its int32 bias, reading one element of x."""
    k = len(levels)
    one = nb.reshape(nb.slice(x, [0] * 4, [1] * 4, [1] * 4, f"{name}_pick"), (1, 1), f"{name}_flat")
    weights = ConstTensor(np.zeros((k, 1), np.uint8), TensorInfo((k, 1), DataType.QuantisedAsymm8, 1.0, 0))
    bias = ConstTensor(np.asarray(levels, np.int32), TensorInfo((k,), DataType.Signed32, x.info.scale, 0))
    fc = nb.fully_connected(one, weights, bias, name, quant=(x.info.scale, 0))
    return nb.reshape(fc, shape, f"{name}_4d")


def _grouped(nb, x, w_oihw, w_quant, bias, out_q, name, strides, pads, groups):
    gi, go = x.info.shape[1] // groups, w_oihw.shape[0] // groups
    parts = []
    for k in range(groups):
        xk = nb.take(x, 1, k * gi, (k + 1) * gi, f"{name}_in{k}")
        y = _bias_channel_conv(nb, xk, w_oihw[k * go:(k + 1) * go], w_quant, bias[k * go:(k + 1) * go], out_q,
                               f"{name}_g{k}", strides, pads)
        if y is None:
            return None
        parts.append(y)
    return nb.concat(parts, 1, name, quant=out_q)

