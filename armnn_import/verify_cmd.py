"""`armnn-import verify SOURCE FILE.armnn`: does the .armnn file compute what
its source model computes?

The source model runs in its own runtime (the runner its frontend plugin's
source_runner() makes: onnxruntime, or LiteRT; the optional extra
`armnn-import[verify]`), the .armnn network in the numpy
executor of the IR (or a real Arm NN runner), on the same inputs. Each output
is compared: max abs error, max relative error and, for quantized tensors,
the error in quantization steps (LSBs), against tolerances.

    from armnn_import.verify_cmd import verify
    result = verify("model.onnx", "model.armnn")
    print(result.format()); assert result.ok
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field

import numpy as np

from .errors import ArmnnImportError
from .ir.axes import TO_NCHW, TO_NHWC
from .ir.graph import Graph
from .ir.types import DataType, LayerType, TensorInfo
from .verify_compare import Comparison, Tolerance, apply_way, compare, real_values, reshapings
from .verify_source import IoSpec, MissingRuntimeError, VerifyError, model_bytes  # noqa: F401 (the API's errors)


class VerificationFailed(VerifyError):
    """The .armnn network's outputs differ from the source model's beyond the tolerances."""


@dataclass
class VerifyResult:
    outputs: list[Comparison]
    tolerance: Tolerance
    inputs: str                          # how the inputs were made
    engines: str                         # what ran the two models
    layers: list[Comparison] | None = None   # --per-layer: each compared intermediate tensor
    first_divergence: Comparison | None = None
    uncompared: int = 0                  # --per-layer: source nodes without a matching .armnn tensor
    skipped: dict = field(default_factory=dict)  # --per-layer: reason -> the source nodes not compared
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.outputs)

    def failure(self) -> str:
        bad = [c for c in self.outputs if not c.ok]
        parts = [f"output {c.name!r} off by {c.lsb:g} LSB" if c.lsb is not None else
                 f"output {c.name!r} max abs error {c.max_abs:.3g}" for c in bad]
        s = f"verify failed ({self.tolerance}): " + ", ".join(parts)
        if self.first_divergence is not None:
            s += f"; first diverging layer {self.first_divergence.name!r}"
        return s

    def format(self) -> str:
        head = ("output", "shape", "max abs err", "max rel err", "LSB err", "result")
        rows = [(c.name,) + c.cells() for c in self.outputs]
        widths = [max(len(r[k]) for r in rows + [head]) for k in range(len(head))]
        lines = [f"inputs: {self.inputs}", f"compared: {self.engines}"] + self.notes
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head] + rows]
        if self.layers is not None:
            lines.append(f"per layer: {len(self.layers)} tensors compared, {self.uncompared} source nodes "
                         "not compared" + (":" if self.skipped else ""))
            for reason, names in self.skipped.items():
                shown = ", ".join(repr(n) for n in names[:5]) + (f", ... ({len(names) - 5} more)"
                                                                 if len(names) > 5 else "")
                lines.append(f"  {len(names)} {reason}: {shown}")
            d = self.first_divergence
            lines.append("first diverging layer: " + (
                "none" if d is None else
                f"{d.name!r} ({d.layer_type}), output of node {d.node!r} ({d.op})"
                + (f" fused with {', '.join(repr(n) for n in d.fused)}" if d.fused else "") + ": max abs err "
                f"{d.max_abs:.3g}" + ("" if d.max_rel is None else f", max rel err {d.max_rel:.3g}")
                + ("" if d.lsb is None else f", {d.lsb:g} LSB")))
        lines.append(f"verify: {'PASS' if self.ok else 'FAIL'} ({self.tolerance})")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["ok"] = self.ok
        return d


# -- the source model in its own runtime -----------------------------------------------

def source_model(source, fmt: str | None = None):
    """The source model in its format's runtime: the runner its frontend plugin's
    source_runner() makes (`fmt`: the frontend's name, else told from `source`)."""
    from .discovery import format_of, load_frontend
    fmt = fmt or format_of(source)
    if fmt == "armnn":
        raise VerifyError("the source model is an .armnn file; give the model it came from")
    fe = load_frontend(fmt)
    if not hasattr(fe, "source_runner"):
        raise VerifyError(f"the {fmt!r} frontend cannot run its models for verify (it has no source_runner)")
    return fe.source_runner(source)


# -- inputs -----------------------------------------------------------------------------

def _fits(shape, spec_shape) -> bool:
    return len(shape) == len(spec_shape) and all(s is None or s == d for s, d in zip(spec_shape, shape))


def _source_shape(spec: IoSpec, info: TensorInfo) -> tuple:
    """The concrete source shape for an input whose .armnn twin has `info`."""
    if all(d is not None for d in spec.shape):
        return spec.shape
    shape = info.shape
    for cand in [shape] + ([tuple(shape[p] for p in perm) for perm in (TO_NHWC, TO_NCHW)] if len(shape) == 4 else []):
        if _fits(cand, spec.shape):
            return cand
    raise VerifyError(f"input {spec.name!r}: the model's shape {_dims(spec.shape)} does not fit the "
                      f".armnn input {_dims(shape)}")


def _dims(shape) -> str:
    return "x".join("?" if d is None else str(d) for d in shape) or "scalar"


def random_inputs(specs: list[IoSpec], infos: list[TensorInfo], seed: int = 0) -> list[np.ndarray]:
    """Seeded inputs: float N(0, 1); 8-bit integers over their whole range
    (the input's quantization range); other integers in [0, 10); booleans."""
    rng = np.random.default_rng(seed)
    out = []
    for spec, info in zip(specs, infos):
        shape, dt = _source_shape(spec, info), spec.dtype
        if dt.kind == "f":
            out.append(rng.standard_normal(shape).astype(dt))
        elif dt in (np.uint8, np.int8):
            lim = np.iinfo(dt)
            out.append(rng.integers(lim.min, lim.max, shape, endpoint=True).astype(dt))
        elif dt.kind in "iu":
            out.append(rng.integers(0, 10, shape).astype(dt))
        else:
            out.append(rng.integers(0, 2, shape).astype(bool))
    return out


def load_inputs(paths: list, specs: list[IoSpec]) -> list[np.ndarray]:
    """Inputs from .npy files (one per model input, in order) or one .npz
    (keyed by input name, input_0.., or arr_0..)."""
    if len(paths) == 1 and str(paths[0]).endswith(".npz"):
        try:
            with np.load(paths[0], allow_pickle=False) as z:
                data = {k: z[k] for k in z.files}
        except (OSError, ValueError) as e:
            raise VerifyError(f"{paths[0]}: cannot read: {e}") from None
        arrays = []
        for i, s in enumerate(specs):
            key = next((k for k in (s.name, f"input_{i}", f"arr_{i}") if k in data), None)
            if key is None:
                raise VerifyError(f"{paths[0]}: no array for input {s.name!r} (keys: {', '.join(sorted(data))})")
            arrays.append(data[key])
    else:
        if len(paths) != len(specs):
            raise VerifyError(f"the model has {len(specs)} inputs ({', '.join(s.name for s in specs)}), "
                              f"got {len(paths)} files")
        arrays = []
        for p in paths:
            try:
                arrays.append(np.load(p, allow_pickle=False))
            except (OSError, ValueError) as e:
                raise VerifyError(f"{p}: cannot read: {e}") from None
    return [_check_input(a, s) for a, s in zip(arrays, specs)]


def _check_input(a: np.ndarray, spec: IoSpec) -> np.ndarray:
    if a.dtype != spec.dtype:
        same_kind = (a.dtype.kind == "f") == (spec.dtype.kind == "f") and a.dtype.kind != "b"
        fits = same_kind and (spec.dtype.kind == "f" or (
            a.size == 0 or (a.min() >= np.iinfo(spec.dtype).min and a.max() <= np.iinfo(spec.dtype).max)))
        if not fits:
            raise VerifyError(f"input {spec.name!r}: {a.dtype} data, the model takes {spec.dtype}")
        a = a.astype(spec.dtype)
    if not _fits(a.shape, spec.shape):
        raise VerifyError(f"input {spec.name!r}: shape {_dims(a.shape)}, the model takes {_dims(spec.shape)}")
    return a


def _layouts(report: dict | None, key: str) -> dict:
    """name -> True when the report says the .armnn tensor's layout differs from the model's."""
    return {d["name"]: d.get("layout") != d.get("source_layout")
            for d in (report or {}).get(key, []) if d.get("layout") and d.get("source_layout")}


def adapt_input(a: np.ndarray, spec: IoSpec, info: TensorInfo, permuted: bool = False) -> np.ndarray:
    """A source input as the .armnn input `info` takes it: the layout
    (a known NCHW <-> NHWC permutation), then the data type (int8 + 128
    for QuantisedAsymm8, int8 as it is for QAsymmS8, else quantized with the .armnn input's
    parameters)."""
    ways = reshapings(a.shape, info.shape, permuted)
    if not ways:
        raise VerifyError(f"input {spec.name!r}: shape {_dims(a.shape)} does not fit the .armnn input "
                          f"{_dims(info.shape)} (convert with --input-shape)")
    a = apply_way(a, ways[0], info.shape)
    if info.dtype == DataType.QuantisedAsymm8:
        if spec.quant == (info.scale, info.offset) and a.dtype == np.uint8:
            return a
        if spec.quant is not None and a.dtype == np.int8 and spec.quant[1] + 128 == info.offset \
                and np.float32(spec.quant[0]) == np.float32(info.scale):
            return (a.astype(np.int16) + 128).astype(np.uint8)
        from .executor.numeric import quantize
        return quantize(real_values(a, spec.quant).astype(np.float32), info.scale, info.offset)
    if info.dtype == DataType.QAsymmS8:  # int8 kept as int8 (the 20.08 format on)
        if spec.quant is not None and a.dtype == np.int8 and spec.quant[1] == info.offset \
                and np.float32(spec.quant[0]) == np.float32(info.scale):
            return a
        from .executor.numeric import quantize
        return quantize(real_values(a, spec.quant).astype(np.float32), info.scale, info.offset, -128, 127).astype(np.int8)
    if info.dtype in (DataType.Float32, DataType.Float16):
        return real_values(a, spec.quant).astype(info.dtype.np_dtype)
    if info.dtype == DataType.Signed32:
        if a.dtype.kind in "iu" and a.size and (a.min() < -2 ** 31 or a.max() >= 2 ** 31):
            # an int64 model input is a Signed32 input of the .armnn network: never wrap silently
            bad = int(a.min()) if a.min() < -2 ** 31 else int(a.max())
            raise VerifyError(f"input {spec.name!r}: value {bad} does not fit the .armnn input's int32 "
                              f"(the {a.dtype} model input becomes Signed32)")
        return a.astype(np.int32)
    return a.astype(bool)


# -- the .armnn side --------------------------------------------------------------------

def _armnn(armnn) -> tuple[Graph, object]:
    """(graph, what a runner can load) from a path, bytes or a Graph."""
    from .serialize import read, write
    if isinstance(armnn, Graph):
        return armnn, write(armnn)
    data = model_bytes(armnn)
    try:
        graph = read(data)
    except ArmnnImportError as e:
        raise type(e)(f"{armnn if isinstance(armnn, (str, os.PathLike)) else 'the .armnn data'}: {e}") from e
    return graph, data


def _run_runtime(runner: str, data, arrays) -> list[np.ndarray]:
    from .testing.armnn_runtime import ArmnnRuntimeError, run_armnn
    if not (os.path.isfile(runner) and os.access(runner, os.X_OK)):
        raise VerifyError(f"--armnn-runtime {runner}: not an executable file")
    try:
        return run_armnn(data, arrays, runner=runner)
    except ArmnnRuntimeError as e:
        raise VerifyError(f"the Arm NN runner failed: {e}") from None


def _match(specs: list[IoSpec], layers, what: str) -> list:
    """The .armnn layer for each source input or output: by name, else in order."""
    by_name = {l.name: l for l in layers}
    if len(specs) != len(layers):
        raise VerifyError(f"the source model has {len(specs)} {what}, the .armnn network {len(layers)}")
    if all(s.name in by_name for s in specs):
        return [by_name[s.name] for s in specs]
    return list(layers)


def verify(source, armnn, *, inputs=None, seed: int = 0, tolerance: Tolerance | None = None,
           per_layer: bool = False, report=None, armnn_runtime: str | None = None,
           source_format: str | None = None) -> VerifyResult:
    """Run `source` (path, bytes, onnx.ModelProto or tflite.Model) in its runtime and `armnn`
    (path, bytes or Graph) in the numpy executor, or with the Arm NN runner at
    `armnn_runtime`, and compare their outputs. `inputs`: arrays in the source
    model's input order, or paths of .npy files / one .npz; default seeded
    random. `report`: the conversion report (Report, its dict, or a JSON path),
    for layouts and, with per_layer, the node -> layers map. `tolerance`: its rtol and atol left
    None are the network's defaults (verify_compare.FLOAT32, or FLOAT16 for a Float16 network)."""
    report = _report_dict(report)
    src = source_model(source, source_format)
    if (report or {}).get("input_values"):  # inputs the conversion fixed: fed their values, not random ones
        from .input_values import FixedSource
        src = FixedSource(src, report["input_values"])
    graph, data = _armnn(armnn)
    tolerance = (tolerance or Tolerance()).resolved(float16=_computes_float16(graph))
    in_layers = _match(src.inputs, graph.input_layers, "inputs")
    out_layers = _match(src.outputs, graph.output_layers, "outputs")
    arrays, how = _source_inputs(src.inputs, [l.outputs[0] for l in in_layers], inputs, seed)
    permuted = _layouts(report, "inputs")
    feed = [adapt_input(a, s, l.outputs[0], permuted.get(l.name, False))
            for a, s, l in zip(arrays, src.inputs, in_layers)]
    # the executor's inputs go in binding-id order
    order = {id(l): i for i, l in enumerate(in_layers)}
    feed = [feed[order[id(l)]] for l in graph.input_layers]

    ref = src.run(arrays)
    notes, nodes = [], None
    if per_layer:
        nodes = (report or {}).get("nodes")
        if not nodes:
            notes.append("per layer: node -> layers map from converting the source again (default options)")
            from .api import convert
            nodes = convert(source).report.to_dict()["nodes"]
    got, values, engines = _run_armnn(graph, data, feed, out_layers, armnn_runtime, per_layer, nodes)
    engines = f"{src.runtime} vs {engines}"
    comps = _compare_outputs(src.outputs, out_layers, ref, got, _layouts(report, "outputs"), tolerance)
    result = VerifyResult(comps, tolerance, how, engines, notes=notes)
    if per_layer:
        from .verify_layers import per_layer as _per_layer
        _per_layer(result, src, arrays, graph, values, nodes, tolerance, (report or {}).get("folded", []))
    return result


def _source_inputs(specs: list[IoSpec], infos: list[TensorInfo], inputs, seed: int) -> tuple[list, str]:
    """(the source model's input arrays, how they were made): seeded random, read from
    .npy/.npz paths, or the arrays given."""
    if inputs is None:
        arrays = random_inputs(specs, infos, seed)
        how = f"random, seed {seed}: " + ", ".join(
            f"{s.name} {_dims(a.shape)} {a.dtype} {'N(0,1)' if a.dtype.kind == 'f' else 'uniform'}"
            for s, a in zip(specs, arrays))
    elif all(isinstance(x, (str, os.PathLike)) for x in inputs):
        arrays = load_inputs(list(inputs), specs)
        how = ", ".join(os.fspath(x) for x in inputs)
    else:
        if len(inputs) != len(specs):
            raise VerifyError(f"the model has {len(specs)} inputs, got {len(inputs)} arrays")
        arrays = [_check_input(np.asarray(a), s) for a, s in zip(inputs, specs)]
        how = "given arrays"
    return arrays, how


def _run_armnn(graph: Graph, data, feed, out_layers, armnn_runtime: str | None, per_layer: bool,
               nodes) -> tuple[list, dict | None, str]:
    """(the .armnn network's outputs for out_layers, every tensor's value where known, what ran
    it): the Arm NN runner at `armnn_runtime`, else the numpy executor. With per_layer, a runner gets
    every tensor compared with a source node as an extra network output."""
    values = None
    if armnn_runtime and per_layer:
        from .verify_layers import probed_ports, runtime_values
        values = runtime_values(lambda d: _run_runtime(armnn_runtime, d, feed), graph,
                                probed_ports(graph, nodes), feed)
        return [values[l.inputs[0]] for l in out_layers], values, f"Arm NN runner {armnn_runtime}"
    if armnn_runtime:
        got_all = _run_runtime(armnn_runtime, data, feed)
        return [got_all[graph.output_layers.index(l)] for l in out_layers], values, f"Arm NN runner {armnn_runtime}"
    from .executor import run_all
    try:
        values = run_all(graph, feed)
    except ArmnnImportError as e:
        raise VerifyError(f"the numpy executor cannot run the .armnn network: {e}") from None
    return [values[l.inputs[0]] for l in out_layers], values, "the numpy executor"


def _compare_outputs(specs: list[IoSpec], out_layers, ref, got, out_perm: dict, tolerance: Tolerance) -> list:
    """One Comparison per output: the source model's `ref` against the .armnn network's `got`."""
    comps = []
    for spec, layer, r, g in zip(specs, out_layers, ref, got):
        info = layer.inputs[0].info
        ways = reshapings(np.shape(r), g.shape, out_perm.get(layer.name, False))
        if not ways:
            raise VerifyError(f"output {spec.name!r}: shape {_dims(np.shape(r))} vs the .armnn output "
                              f"{_dims(g.shape)}")
        if layer.name in out_perm:
            ways = ways[:1]  # the report says which layout the output has
        comps.append(compare(spec.name, r, spec.quant, g, info, tolerance, ways, _dequantized_step(layer.inputs[0])))
    return comps


def _computes_float16(graph: Graph) -> bool:
    return any(o.dtype == DataType.Float16 for l in graph.layers for o in l.outputs)


def _dequantized_step(port) -> float | None:
    """The scale of the quantized tensor that a Dequantize layer made this float output of (a
    quantized model with float I/O, 20.08 on): the source's float output is on that grid too, so
    its error counts in steps (--lsb), as the same model's quantized output does under 19.02."""
    src = port.layer
    if src.type == LayerType.Dequantize and src.inputs and src.inputs[0].info.dtype.is_quantized:
        return float(src.inputs[0].info.scale)
    return None


def _report_dict(report) -> dict | None:
    if report is None or isinstance(report, dict):
        return report
    if hasattr(report, "to_dict"):
        return report.to_dict()
    import json
    try:
        with open(report) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        raise VerifyError(f"{report}: cannot read the report: {e}") from None
    if not isinstance(d, dict) or "nodes" not in d:
        raise VerifyError(f"{report}: not a conversion report of one model (armnn-import --report)")
    return d
