"""The per-layer-type rules of verify() for the 19.02 and 20.08 formats' layers (after the
Validate methods of Arm NN 20.08's WorkloadData.cpp): rule(layer, input infos) -> problems."""
from __future__ import annotations

import math

from .geometry import hw_axes
from .types import DataLayout, DataType, LayerType

_CONV = (LayerType.Convolution2d, LayerType.DepthwiseConvolution2d)


def no_rule(layer, ins):
    return []


def _bias_dtype(dtype: DataType) -> DataType:
    # WorkloadData.cpp GetBiasDataType
    return DataType.Signed32 if dtype.is_quantized else dtype


def _weighted(layer, ins):
    """Convolution2d, DepthwiseConvolution2d, FullyConnected: weight and bias shapes and types."""
    x, w = ins[0], layer.tensors["weights"].info
    d = layer.desc
    if layer.type in _CONV:
        if x.rank != 4 or w.rank != 4:
            return [f"needs a 4-D input and 4-D weights, got input {x.shape} and weights {w.shape}"]
        if d.stride_x < 1 or d.stride_y < 1:
            return [f"strides ({d.stride_x}, {d.stride_y}) must be >= 1"]
        c = x.shape[hw_axes(d.data_layout)[0]]
        if layer.type == LayerType.DepthwiseConvolution2d:
            w_in, out_c, wname = w.shape[1], w.shape[0] * w.shape[1], "[M, C, kH, kW]"
        elif d.data_layout == DataLayout.NCHW:
            w_in, out_c, wname = w.shape[1], w.shape[0], "[O, I, kH, kW]"
        else:
            w_in, out_c, wname = w.shape[3], w.shape[0], "[O, kH, kW, I]"
        if w_in != c:
            return [f"weights {w.shape} ({wname}) are for {w_in} input channels, the input {x.shape} "
                    f"has {c} ({d.data_layout.name})"]
    else:
        if w.rank != 2:
            return [f"weights must be 2-D, got {w.shape}"]
        if x.rank not in (2, 4):
            return [f"input must have 2 or 4 dimensions, got {x.shape}"]
        n_in = math.prod(x.shape[1:])
        w_in, out_c = (w.shape[1], w.shape[0]) if d.transpose_weights_matrix else w.shape
        if w_in != n_in:
            layout = "[O, I]" if d.transpose_weights_matrix else "[I, O]"
            return [f"weights {w.shape} ({layout}) take {w_in} inputs, the input {x.shape} gives {n_in}"]
    problems = []
    if w.scales is not None:
        return problems + _per_axis_weighted(layer, x, w, out_c)
    if x.dtype.is_quantized:
        if w.dtype != (DataType.QAsymmS8 if x.dtype == DataType.QAsymmS8 else DataType.QuantisedAsymm8):
            problems.append(f"weights are {w.dtype.name}; a {x.dtype.name} input needs weights of its type")
    elif w.dtype != x.dtype:
        problems.append(f"weights are {w.dtype.name}, the input is {x.dtype.name}; they must match")
    if "biases" in layer.tensors:
        b = layer.tensors["biases"].info
        if b.shape != (out_c,):
            problems.append(f"biases must be 1-D of the {out_c} output channels, got {b.shape}")
        if b.dtype != _bias_dtype(x.dtype):
            problems.append(f"biases are {b.dtype.name}; a {x.dtype.name} input needs "
                            f"{_bias_dtype(x.dtype).name} biases")
        elif x.dtype.is_quantized:
            want = float(x.scale * w.scale)
            # Arm NN allows 1e-6 absolute; the relative bound matters for small scales.
            err = abs(b.scale - want)
            if b.offset != 0 or err > 1e-6 or err > 1e-5 * want:
                problems.append(f"biases have quantization ({b.scale:g}, {b.offset}); they must be "
                                f"(input scale * weight scale = {want:g}, 0)")
    return problems


def _batchnorm(layer, ins):
    x, d = ins[0], layer.desc
    if x.rank != 4:
        return [f"needs a 4-D input, got {x.shape}"]
    c = x.shape[hw_axes(d.data_layout)[0]]
    return [f"'{k}' must be 1-D of the {c} channels ({d.data_layout.name}), got {ct.shape}"
            for k, ct in layer.tensors.items() if ct.shape != (c,)]


def _pool(layer, ins):
    d = layer.desc
    if d.stride_x < 1 or d.stride_y < 1 or d.pool_width < 1 or d.pool_height < 1:
        return [f"pool size ({d.pool_width}, {d.pool_height}) and strides ({d.stride_x}, {d.stride_y}) "
                "must be >= 1"]
    return []


def _permute(layer, ins):
    m = layer.desc.dim_mappings
    if sorted(m) != list(range(ins[0].rank)):
        return [f"dim_mappings {tuple(m)} is not a permutation of 0..{ins[0].rank - 1}"]
    return []


def _strided_slice(layer, ins):
    d, rank = layer.desc, ins[0].rank
    lens = (len(d.begin), len(d.end), len(d.stride))
    if lens != (rank,) * 3:
        return [f"begin/end/stride have lengths {lens}; the input {ins[0].shape} needs {rank} each"]
    if 0 in d.stride:
        return [f"stride {d.stride} contains 0"]
    x, y = ins[0], layer.outputs[0]
    if x.dtype.is_quantized and y.dtype.is_quantized and (x.scale, x.offset) != (y.scale, y.offset):
        # StridedSliceQueueDescriptor::Validate: ValidateTensorQuantizationSpace
        return [f"output quantization ({y.scale:g}, {y.offset}) differs from the input's "
                f"({x.scale:g}, {x.offset}); Arm NN requires them equal"]
    return []


def _reshape(layer, ins):
    target = tuple(layer.desc.target_shape)
    if math.prod(target) != ins[0].num_elements:
        return [f"target shape {target} has {math.prod(target)} elements, "
                f"the input {ins[0].shape} has {ins[0].num_elements}"]
    return []


def _gather(layer, ins):
    if ins[1].dtype != DataType.Signed32:
        return [f"indices (input 1) are {ins[1].dtype.name}; Arm NN needs Signed32"]
    return []


def merger_rule(layer, ins):
    d, rank = layer.desc, ins[0].rank
    if d.num_views != len(ins):
        return [f"num_views is {d.num_views}, but it has {len(ins)} inputs"]
    if d.num_dimensions != rank:
        return [f"num_dimensions is {d.num_dimensions}, the inputs have rank {rank}"]
    if not 0 <= d.concat_axis < rank:
        return [f"concat_axis {d.concat_axis} is out of range for rank {rank}"]
    if any(i.rank != rank for i in ins):
        return [f"inputs have different ranks: {[i.shape for i in ins]}"]
    want, at = [], 0
    for i in ins:
        want.append(tuple(at if k == d.concat_axis else 0 for k in range(rank)))
        at += i.shape[d.concat_axis]
    if tuple(d.view_origins) != tuple(want):
        return [f"view_origins {tuple(d.view_origins)} do not match the inputs; "
                f"concatenating along axis {d.concat_axis} needs {tuple(want)}"]
    return []


def _quantize_rule(layer, ins):
    """RefLayerSupport IsQuantizeSupported / IsDequantizeSupported (20.08)."""
    # (the file can hold any input type; what CpuRef runs is in tests/layer_cases.py)
    y = layer.outputs[0]
    if layer.type == LayerType.Quantize and not y.dtype.is_quantized:
        return [f"output is {y.dtype.name}; Quantize gives a quantized tensor"]
    return []


RULES = {
    LayerType.Quantize: _quantize_rule, LayerType.Dequantize: _quantize_rule,
    LayerType.Convolution2d: _weighted, LayerType.DepthwiseConvolution2d: _weighted,
    LayerType.FullyConnected: _weighted, LayerType.BatchNormalization: _batchnorm,
    LayerType.Pooling2d: _pool, LayerType.Permute: _permute, LayerType.StridedSlice: _strided_slice,
    LayerType.Reshape: _reshape, LayerType.Gather: _gather, LayerType.Merger: merger_rule,
}


def _lstm_tensors(layer) -> dict[str, tuple]:
    """The constant tensors an LSTM layer's flags call for, with their shapes given the
    cell size C, the input size I and the output size O (as strings to fill in)."""
    d = layer.desc
    want = {f"{a}_to_{g}_weights": ("C", "I" if a == "input" else "O")
            for a in ("input", "recurrent") for g in ("forget", "cell", "output")}
    want.update({f"{g}_bias": ("C",) for g in ("forget_gate", "cell", "output_gate")})
    if not d.cifg_enabled:
        want.update({"input_to_input_weights": ("C", "I"), "recurrent_to_input_weights": ("C", "O"),
                     "input_gate_bias": ("C",)})
        if d.peephole_enabled or layer.type == LayerType.Lstm:
            # (20.08's ParseLstm reads cellToInputWeights whenever CIFG is off, peepholes or not)
            want["cell_to_input_weights"] = ("C",)
    if d.peephole_enabled:
        want.update({"cell_to_forget_weights": ("C",), "cell_to_output_weights": ("C",)})
    if d.projection_enabled:  # (both releases' deserializers read the bias whenever projection is on)
        want.update({"projection_weights": ("O", "C"), "projection_bias": ("O",)})
    if d.layer_norm_enabled:
        want.update({f"{g}_layer_norm_weights": ("C",) for g in ("forget", "cell", "output")})
        if not d.cifg_enabled:
            want["input_layer_norm_weights"] = ("C",)
    return want


def _lstm_rule(layer, ins):
    """LstmLayer / UnidirectionalSequenceLstmLayer (ValidateTensorShapesFromInputs, LstmQueueDescriptor
    Validate) on float32: the tensors the flags need, of matching shapes; an activation code
    LstmUtils knows."""
    d, problems = layer.desc, []
    if d.activation_func not in (0, 1, 3, 4, 6):
        problems.append(f"activation_func {d.activation_func} is not one of LstmUtils' 0, 1, 3, 4, 6")
    rank = 2 if layer.type == LayerType.Lstm else 3
    x, h, c = ins
    if x.rank != rank or h.rank != 2 or c.rank != 2:
        return problems + [f"inputs are {x.shape}, {h.shape}, {c.shape}; expected rank {rank}, 2, 2"]
    types = {i.dtype for i in ins} | {t.info.dtype for t in layer.tensors.values()}
    if len(types) != 1 or not types <= {DataType.Float32, DataType.Float16}:
        problems.append(f"inputs and constants are {sorted(t.name for t in types)}; one float type "
                        "(Float32 or Float16) is taken")
    want = _lstm_tensors(layer)
    problems += [f"missing constant tensor '{k}'" for k in want if k not in layer.tensors]
    problems += [f"constant tensor '{k}' is not used with these flags" for k in layer.tensors if k not in want]
    if problems:
        return problems
    cells = layer.tensors["input_to_output_weights"].info.shape[0]
    batch = x.shape[1] if getattr(d, "time_major", False) else x.shape[0]
    sizes = {"C": cells, "I": x.shape[-1], "O": h.shape[1]}
    for k, dims in want.items():
        shape = tuple(sizes[v] for v in dims)
        if layer.tensors[k].info.shape != shape:
            problems.append(f"constant '{k}' is {layer.tensors[k].info.shape}, expected {shape}")
    if h.shape != (batch, sizes["O"]) or c.shape != (batch, cells):
        problems.append(f"states {h.shape} and {c.shape} do not fit batch {batch}, output {sizes['O']} "
                        f"and {cells} cells")
    if not d.projection_enabled and sizes["O"] != cells:
        problems.append(f"output size {sizes['O']} differs from the {cells} cells without a projection")
    return problems


RULES.update({LayerType.Lstm: _lstm_rule, LayerType.UnidirectionalSequenceLstm: _lstm_rule})


def _per_axis_weighted(layer, x, w, out_c) -> list[str]:
    """Per-axis QSymmS8 weights (20.08 on): a quantized input and output of one type, one weight
    scale per output channel (depthwise [M, C, kH, kW]: C * M, in output order c * M + m, which
    CpuRef's ConvImpl indexes by output channel), and a Signed32 bias with per-axis scales
    input scale * weight scale."""
    y = layer.outputs[0]
    problems = []
    if w.dtype != DataType.QSymmS8 or not x.dtype.is_quantized or x.dtype != y.dtype:
        problems.append(f"per-axis {w.dtype.name} weights need QSymmS8 weights and a quantized input and "
                        f"output of one type (input {x.dtype.name}, output {y.dtype.name})")
    if len(w.scales) != out_c:
        problems.append(f"weights have {len(w.scales)} per-axis scales for {out_c} output channels")
    b = layer.tensors.get("biases")
    if b is not None:
        b = b.info
        want = [float(x.scale) * s for s in w.scales]
        if (b.dtype != DataType.Signed32 or b.scales is None or b.shape != (out_c,) or len(b.scales) != out_c
                or any(abs(g - v) > max(1e-6, 1e-5 * v) for g, v in zip(b.scales, want))):
            problems.append(f"biases must be Signed32 [{out_c}] with per-axis scales input scale * weight "
                            f"scale, got {b}")
    return problems
