"""The --fp16 range check: run the float network on sample inputs before it
becomes Float16, and refuse it when a layer's values come near Float16's
largest value (65,504), beyond which the Float16 network outputs infinity.

The float network (after the passes, so the layers are the ones written) runs
in the numpy executor; every Float32 output slot's largest finite absolute
value is recorded. Values are freed as soon as their last reader has run, so
memory stays at a few activations. Non-float tensors (quantized, integer,
boolean) are not recorded: Float16 does not change them.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from .errors import ConversionError, ExecutionError, LoadError
from .ir.axes import TO_NCHW, TO_NHWC
from .ir.graph import Graph, Port
from .ir.types import DataLayout, DataType, LayerType, TensorInfo
from .report import Report

F16_MAX = float(np.finfo(np.float16).max)  # 65504
SAFE_BOUND = 32768.0   # half of Float16's range: headroom for inputs larger than the samples


@dataclass
class RangeCheck:
    inputs: str                      # how the sample inputs were made
    random: bool = False             # seeded random, not the model's real data
    bound: float = SAFE_BOUND
    layers: list[dict] = field(default_factory=list)   # {layer, type, max_abs[, non_finite]}, network order
    over: dict | None = None         # the first layer beyond the bound
    skipped: str = ""                # why the network could not be run

    def to_dict(self) -> dict:
        return {"inputs": self.inputs, "random": self.random, "bound": self.bound, "float16_max": F16_MAX,
                "over": self.over, "skipped": self.skipped, "layers": self.layers}


def check_fp16_range(graph: Graph, report: Report, inputs=None, *, force: bool = False,
                     permuted: bool = False, seed: int = 0) -> RangeCheck:
    """Run the float `graph` on `inputs` (None: seeded random; arrays in Input
    order or by name; or paths of .npy files / one .npz as `verify` takes them),
    record the ranges in `report.fp16_range` and raise ConversionError when a
    layer exceeds SAFE_BOUND, unless `force` (then a warning). `permuted`: the
    network's 4-D inputs have the other layout than the model's (--layout)."""
    if not any(o.dtype == DataType.Float32 for layer in graph.layers for o in layer.outputs):
        check = RangeCheck("none", skipped="the network has no float tensors")  # Float16 changes none of it
        report.fp16_range = check.to_dict()
        return check
    arrays, how = sample_inputs(graph, inputs, seed, permuted)
    check = RangeCheck(how, random=inputs is None)
    try:
        check.layers = layer_ranges(graph, arrays)
    except ExecutionError as e:
        check.skipped = f"the numpy executor cannot run the network: {e}"
        report.warn(f"fp16 range check skipped ({check.skipped}); the Float16 network may overflow unnoticed")
    check.over = next((d for d in check.layers if d["max_abs"] > check.bound), None)
    report.fp16_range = check.to_dict()
    if check.over is not None:
        msg = (f"layer {check.over['layer']!r} ({check.over['type']}) reaches {check.over['max_abs']:.6g} on "
               f"{how}, beyond the Float16 safe bound {check.bound:g} (Float16's largest value is {F16_MAX:g})")
        if not force:
            raise ConversionError(f"--fp16: {msg}: the Float16 network would overflow to inf; convert without "
                                  "--fp16, or with --fp16-weights where the target supports it, or add "
                                  "--fp16-force to write it anyway")
        report.warn(f"--fp16-force: {msg}; written anyway, its outputs may be inf")
    return check


def layer_ranges(graph: Graph, arrays: list[np.ndarray]) -> list[dict]:
    """Largest finite |value| of each Float32 output slot, in network order."""
    readers: dict[Port, int] = {}
    for layer in graph.layers:
        for p in layer.inputs:
            readers[p] = readers.get(p, 0) + 1
    values: dict[Port, np.ndarray] = {}
    ranges: list[dict] = []
    with np.errstate(all="ignore"):  # a float network's own inf or NaN is recorded, not printed
        _run(graph, arrays, readers, values, ranges)
    return ranges


def _run(graph, arrays, readers, values, ranges) -> None:
    from .executor import evaluate

    for layer, arr in zip(graph.input_layers, arrays):
        values[layer.out()] = arr
        _record(ranges, layer, 0, arr)
    for layer in graph.layers:
        if layer.type in (LayerType.Input, LayerType.Output):
            continue
        try:
            args = [values[p] for p in layer.inputs]
        except KeyError:
            raise ExecutionError(f"{layer.name}: an input is computed after it (the graph is not sorted)") from None
        for p in layer.inputs:
            readers[p] -= 1
            if readers[p] == 0:
                del values[p]
        fast = _FAST.get(layer.type)
        outs = fast(layer, args) if fast is not None and _all_float32(layer) else evaluate(layer, args)
        for slot, out in enumerate(outs):
            _record(ranges, layer, slot, out)
            if readers.get(Port(layer, slot)):
                values[Port(layer, slot)] = out


def _all_float32(layer) -> bool:
    return all(i.dtype == DataType.Float32 for i in [p.info for p in layer.inputs] + layer.outputs) and \
        all(t.info.dtype == DataType.Float32 for t in layer.tensors.values())


def _convolution2d(layer, ins) -> list[np.ndarray]:
    """A float Convolution2d by one matrix product per filter tap. The executor's
    accumulates one input channel at a time in Arm NN's order, exact to the bit
    and 10-100x slower; a range needs no bit-exactness (the order moves the sums
    by about 1e-7 relative)."""
    from .executor.common import const_of, from_nchw, input_nchw, to_nchw
    from .executor.spatial import bias_of, conv_input

    d, info = layer.desc, layer.outputs[0]
    w = const_of(layer, "weights")
    if d.data_layout == DataLayout.NHWC:
        w = w.transpose(0, 3, 1, 2)                     # [O, kH, kW, I] -> [O, I, kH, kW]
    x = input_nchw(layer, ins, [p.info for p in layer.inputs])
    out_shape = to_nchw(np.empty(info.shape, np.uint8), d.data_layout).shape
    n, o, oh, ow = out_shape
    xp, ys, xs = conv_input(x, layer, out_shape, w.shape[2], w.shape[3])
    acc = np.zeros((n, o, oh * ow), np.float32)
    for ky, rows in enumerate(ys):
        for kx, cols in enumerate(xs):
            acc += w[:, :, ky, kx] @ xp[:, :, rows, cols].reshape(n, xp.shape[1], oh * ow)
    acc = acc.reshape(out_shape)
    b = bias_of(layer)
    if b is not None:
        acc += b[None, :, None, None]
    return [np.ascontiguousarray(from_nchw(acc, d.data_layout))]


_FAST = {LayerType.Convolution2d: _convolution2d}


def _record(ranges: list, layer, slot: int, arr: np.ndarray) -> None:
    if layer.outputs[slot].dtype != DataType.Float32:
        return
    a = np.abs(arr)
    big = float(a.max()) if a.size else 0.0
    d = {"layer": layer.name if slot == 0 else f"{layer.name}:{slot}", "type": layer.type.name}
    if not np.isfinite(big):
        # already inf or NaN in Float32: Float16 makes it no worse; judge the finite values
        finite = a[np.isfinite(a)]
        big, d["non_finite"] = (float(finite.max()) if finite.size else 0.0), True
    d["max_abs"] = big
    ranges.append(d)


# -- sample inputs ------------------------------------------------------------------------

def sample_inputs(graph: Graph, inputs, seed: int, permuted: bool) -> tuple[list[np.ndarray], str]:
    """(arrays in Input binding-id order, a description for the report)."""
    layers = graph.input_layers
    if inputs is None:
        rng = np.random.default_rng(seed)
        arrays = [_random(rng, l.outputs[0]) for l in layers]
        return arrays, f"seeded random inputs (float N(0,1), seed {seed})"
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    if isinstance(inputs, dict):
        missing = [l.name for l in layers if l.name not in inputs]
        if missing:
            raise ConversionError(f"fp16 inputs: no array for input {missing[0]!r} (given: {', '.join(inputs)})")
        raw, how = [inputs[l.name] for l in layers], "the given inputs"
    elif all(isinstance(x, (str, os.PathLike)) for x in inputs):
        raw = read_arrays([os.fspath(x) for x in inputs], [l.name for l in layers])
        how = "the inputs " + ", ".join(os.fspath(x) for x in inputs)
    else:
        raw, how = list(inputs), "the given inputs"
    if len(raw) != len(layers):
        raise ConversionError(f"fp16 inputs: the network has {len(layers)} inputs, got {len(raw)} arrays")
    return [_fit(np.asarray(a), l.name, l.outputs[0], permuted) for a, l in zip(raw, layers)], how


def read_arrays(paths: list[str], names: list[str]) -> list[np.ndarray]:
    """One .npy per input, in order, or one .npz keyed by input name, input_0.. or arr_0.."""
    try:
        if len(paths) == 1 and paths[0].endswith(".npz"):
            with np.load(paths[0], allow_pickle=False) as z:
                data = {k: z[k] for k in z.files}
            out = []
            for i, name in enumerate(names):
                key = next((k for k in (name, f"input_{i}", f"arr_{i}") if k in data), None)
                if key is None:
                    raise LoadError(f"{paths[0]}: no array for input {name!r} (keys: {', '.join(sorted(data))})")
                out.append(data[key])
            return out
        if len(paths) != len(names):
            raise LoadError(f"--inputs: the network has {len(names)} inputs ({', '.join(names)}), "
                            f"got {len(paths)} files")
        return [np.load(p, allow_pickle=False) for p in paths]
    except (OSError, ValueError) as e:
        raise LoadError(f"--inputs: cannot read: {e}") from None


def _random(rng, info: TensorInfo) -> np.ndarray:
    if info.dtype in (DataType.Float32, DataType.Float16):
        return rng.standard_normal(info.shape).astype(info.dtype.np_dtype)
    if info.dtype == DataType.QuantisedAsymm8:
        return rng.integers(0, 256, info.shape).astype(np.uint8)
    if info.dtype == DataType.Signed32:
        return rng.integers(0, 10, info.shape).astype(np.int32)
    return rng.integers(0, 2, info.shape).astype(bool)


def _fit(a: np.ndarray, name: str, info: TensorInfo, permuted: bool) -> np.ndarray:
    """A model input as the network's Input takes it: NCHW <-> NHWC when
    --layout changed it, then the data type."""
    if permuted and a.ndim == 4:
        perm = next((p for p in (TO_NHWC, TO_NCHW) if tuple(a.shape[i] for i in p) == info.shape), None)
        if perm is not None:
            a = np.ascontiguousarray(a.transpose(perm))
    if tuple(a.shape) != info.shape:
        raise ConversionError(f"fp16 inputs: input {name!r} has shape {'x'.join(map(str, a.shape))}, the "
                              f"network takes {'x'.join(map(str, info.shape))}")
    dt = info.dtype
    if dt == DataType.Float32 and a.dtype.kind == "f":
        return a.astype(np.float32)
    if dt == DataType.QuantisedAsymm8 and a.dtype == bool:  # (a bool input used as numbers: 0 or 1)
        return a.astype(np.uint8)
    if dt == DataType.QuantisedAsymm8 and a.dtype in (np.uint8, np.int8):
        return a if a.dtype == np.uint8 else (a.astype(np.int16) + 128).astype(np.uint8)  # int8 -> uint8 + 128
    if dt == DataType.Signed32 and a.dtype.kind in "iu":
        return a.astype(np.int32)
    if dt == DataType.Boolean and a.dtype.kind in "bui":
        return a.astype(bool)
    raise ConversionError(f"fp16 inputs: input {name!r} holds {a.dtype} data, the network takes {dt.name}")
