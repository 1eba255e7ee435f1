"""The Python API: convert(), load(), and the ConversionResult."""
from __future__ import annotations

import os
from dataclasses import dataclass

from .errors import ArmnnImportError, ConversionError, LoadError, UnsupportedModelError
from .gcpolicy import fewer_collections
from .plugin import CONV_BIAS, LAYOUTS, ConvertOptions
from .ir.graph import Graph
from .ir.types import DataType
from .report import Report


@dataclass
class ConversionResult:
    network: Graph
    report: Report
    _buffer: memoryview | None = None

    @fewer_collections()
    def buffer(self) -> memoryview:
        """The .armnn file's bytes as a read-only view of the serializer's buffer
        (serialized once, timed as the report's "write" phase; no copy)."""
        if self._buffer is None:
            from .serialize.writer import write_buffer
            with self.report.phase("write"):
                self._buffer = write_buffer(self.network).toreadonly()
        return self._buffer

    @fewer_collections()
    def chunks(self):
        """(size, an iterator of the file's bytes in consecutive chunks), for writing a
        file: large weights come straight from their arrays (see serialize.write_chunks)."""
        if self._buffer is not None:
            return len(self._buffer), iter([self._buffer])
        from .serialize.writer import write_chunks
        with self.report.phase("write"):
            return write_chunks(self.network)

    def to_bytes(self) -> bytes:
        """The .armnn file's bytes (a copy of buffer())."""
        return bytes(self.buffer())

    def save(self, path) -> None:
        """Write atomically: a temporary file in the target folder, checked (size,
        identifier, root table), then renamed over `path` (see output.write_atomic)."""
        from .output import write_atomic
        size, data = self.chunks()
        with self.report.phase("write"):
            write_atomic(path, data, size=size, check=self.file_check())

    def file_check(self):
        """check(read_at, size) for output.write_atomic: does the written file read
        back as this network's .armnn file (identifier, root table, layer count)."""
        from .serialize.writer import check_file
        layers = len(self.network.layers)
        return lambda read_at, size: check_file(read_at, size, layers)


@fewer_collections()
def convert(model, *, input_shapes: dict | None = None, layout: str = "keep",
            keep_io_layout: bool = False, fp16: bool = False, dequantize: bool = False,
            conv_bias: str = "add", target: str | None = None, report: Report | None = None,
            fp16_force: bool = False, fp16_inputs=None, fp16_weights: bool = False,
            fp16_io: str = "float16", check_passes: bool | None = None, input_values: dict | None = None,
            layer_names: str = "auto") -> ConversionResult:
    """Convert an ONNX or TFLite model (path, bytes, onnx.ModelProto or
    tflite.Model) to an Arm NN network. Raises ArmnnImportError subclasses.

    conv_bias: a 19.02 float convolution's bias as "add" (an Addition, fastest on Arm NN 20.08) or
    "batchnorm" (a BatchNormalization, which Arm NN 20.11 and later fuse into the convolution).

    target: the Arm NN release whose format to write: "19.02" (the default, read by every release),
    "20.08" or "23.08" (read by that release and later ones). See armnn_import.target.

    fp16: the whole network in Float16, after a range check that runs the float network
    on `fp16_inputs` (arrays in input order or by name, or paths of .npy files / one .npz;
    None: seeded random) and refuses it when a layer exceeds 32,768 (fp16_range.SAFE_BOUND),
    unless `fp16_force`. fp16_io: its float inputs and outputs, "float16" or "float32" (a Cast at
    each: 23.08 on). fp16_weights: Float16 constants widened to Float32 at run time (refused).

    input_values: {input name: value} (a number, a sequence, an array or the CLI's text
    "v,v,..."): the input becomes a constant of that value in the model's shape and dtype,
    so what depends on it alone folds (an If on it). InputValueError on an unknown name or
    a value the input cannot hold.

    layer_names: "source" (the model's names), "short" (numbered; the report's nodes give them) or
    "auto": short from 23.08 on, whose runtime rebuilds each name per inference (passes/names.py).
    check_passes: verify the graph after every pass (--debug; default: the
    ARMNN_IMPORT_CHECK_PASSES environment variable), not only before and after them."""
    target = _checked_target(target, layout, conv_bias, fp16, fp16_weights, fp16_force, fp16_inputs, fp16_io)
    from .passes.names import check_policy
    check_policy(layer_names)
    options = ConvertOptions(dict(input_shapes or {}), layout, keep_io_layout, fp16, dequantize, conv_bias,
                             fp16_force=fp16_force, fp16_inputs=fp16_inputs, fp16_weights=fp16_weights,
                             fp16_io=fp16_io, target=target.release, input_values=dict(input_values or {}),
                             layer_names=layer_names)
    report = report or Report()
    report.target = target.release
    if isinstance(model, (str, os.PathLike)):
        report.source = os.fspath(model)
    from .discovery import frontend_of
    with report.phase("load"):
        fe = frontend_of(model)
    report.format = fe.name
    source_layout, io_layout = _edge_layouts(fe, options)
    try:
        with report.phase("frontend"):
            graph = fe.convert(model, options, report)
        _after_frontend(graph, report, options, check_passes, source_layout, io_layout)
    except UnsupportedModelError as e:
        report.problems = [p.to_dict() for p in e.problems]  # with their reason codes
        raise
    except ArmnnImportError:
        raise
    except RecursionError as e:
        raise ConversionError(f"model too deeply nested: {e}") from None
    except MemoryError:  # a refusal, not a crash, but never hidden among the unsupported operators
        raise ConversionError("model too large: memory ran out while converting it") from None
    return ConversionResult(graph, report)


def _checked_target(target, layout, conv_bias, fp16, fp16_weights, fp16_force, fp16_inputs, fp16_io):
    """The Target of `target`, once convert()'s options are found consistent (else ConversionError)."""
    from .target import get as get_target
    target = get_target(target)
    if layout not in LAYOUTS:
        raise ConversionError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    if conv_bias not in CONV_BIAS:
        raise ConversionError(f"conv_bias must be one of {', '.join(CONV_BIAS)}, not {conv_bias!r}")
    if fp16 and fp16_weights:
        raise ConversionError("fp16 and fp16_weights exclude each other: choose Float16 compute or Float16 weights")
    if not fp16 and (fp16_force or fp16_inputs is not None):
        raise ConversionError("fp16_force and fp16_inputs go with fp16=True (the range check of --fp16)")
    if fp16_weights:
        from .passes.fp16 import check_fp16_weights
        check_fp16_weights(target)  # refuses: no target has the layer yet (one that has it also needs the pass)
    _check_fp16_io(fp16_io, fp16, target)
    return target


FP16_IO = ("float16", "float32")
FP16_IO_NOTE = ("--fp16-io float32: Float32 inputs and outputs with a Cast layer at each (Arm NN 23.08's Cast "
                "saturates: an input beyond +-65504, inf included, is +-65504 inside the network)")


def _check_fp16_io(fp16_io: str, fp16: bool, target) -> None:
    if fp16_io not in FP16_IO:
        raise ConversionError(f"fp16_io must be one of {', '.join(FP16_IO)}, not {fp16_io!r}")
    if fp16_io == "float32" and not fp16:
        raise ConversionError("fp16_io goes with fp16=True (the inputs and outputs of a Float16 network)")
    if fp16_io == "float32" and not target.at_least("23.08"):
        raise ConversionError(f"--fp16-io float32: the Arm NN {target.release} format has no Cast layer to "
                              "convert Float32 inputs and outputs of a Float16 network; use --target 23.08, "
                              "or --fp16-io float16 (inputs and outputs in Float16)")


def _fp16_edges(graph: Graph, report: Report, options: ConvertOptions) -> None:
    """--fp16-io float32: every Float16 input and output of the network gets a Cast at its edge."""
    if options.fp16 and options.fp16_io == "float32":
        floats = [l.name for l in graph.input_layers if l.outputs[0].dtype == DataType.Float16]
        floats += [l.name for l in graph.output_layers if l.inputs[0].info.dtype == DataType.Float16]
        report.float32_edges = list(dict.fromkeys(report.float32_edges + floats))
        report.warn(FP16_IO_NOTE)
    if report.float32_edges:
        from .passes.fp16 import float32_edges
        float32_edges(graph, report.float32_edges)


def _after_frontend(graph: Graph, report: Report, options: ConvertOptions, check_passes,
                    source_layout: str | None, io_layout: str | None) -> None:
    """The frontend's graph checked, through the passes (the edge layout, --fp16), checked
    again for what Arm NN can run, and its inputs and outputs noted in the report."""
    from .limits import check_network
    check_network(graph)  # before constant folding allocates what the frontend only declared
    from .passes import pipeline, run_pipeline
    from .ir.axes import TO_NCHW, TO_NHWC
    from .passes.fp16 import to_float16
    from .passes.io_layout import set_io_layout
    with report.phase("passes"):
        if io_layout != source_layout:
            set_io_layout(graph, TO_NHWC if io_layout == "NHWC" else TO_NCHW, report)
        run_pipeline(graph, report, passes=pipeline(options.conv_bias, options.fp16 or report.float16_network),
                     check_each=check_passes)
        if options.fp16:
            _check_range(graph, report, options, permuted=io_layout != source_layout)
        if options.fp16 or report.float16_network:
            from .passes.fp16 import float32_islands
            keep = float32_islands(graph, *report.float32_islands) if report.float32_islands[0] else frozenset()
            to_float16(graph, report, keep)
        _fp16_edges(graph, report, options)
        from .passes.names import short_names, wants_short_names
        if wants_short_names(options.layer_names, graph.target):
            short_names(graph, report)
    from .ir.compat import runtime_problems
    problems = runtime_problems(graph)
    if problems:  # a frontend bug: these must be lowered around
        raise ConversionError("the network has layers Arm NN cannot run: " + "; ".join(problems))
    from .report import io_summary
    report.inputs, report.outputs = io_summary(graph)
    _note_layouts(report, source_layout, io_layout)


def _edge_layouts(fe, options: ConvertOptions) -> tuple[str | None, str | None]:
    """(the layout of the model's 4-D inputs and outputs, as its frontend declares it;
    the one they get in the .armnn network, as --layout asks)."""
    source = getattr(fe, "io_layout", None)
    if source not in (None, "NCHW", "NHWC"):
        raise LoadError(f"the {fe.name!r} frontend declares io_layout {source!r} (expected NCHW, NHWC or None)")
    if options.layout == "keep" or options.keep_io_layout:
        return source, source
    if source is None:
        raise ConversionError(f"--layout {options.layout}: the {getattr(fe, 'title', fe.name)} frontend "
                              "declares no layout for its models' 4-D inputs and outputs (use --layout keep)")
    return source, options.layout.upper()


def _check_range(graph: Graph, report: Report, options: ConvertOptions, permuted: bool) -> None:
    """The --fp16 range check on the float network (its inputs are in the
    model's layout unless --layout changed the network's: `permuted`)."""
    from .fp16_range import check_fp16_range
    with report.phase("pass:fp16_range"):
        check_fp16_range(graph, report, options.fp16_inputs, force=options.fp16_force, permuted=permuted)


def _note_layouts(report: Report, source: str | None, io: str | None) -> None:
    """Add "source_layout" and "layout" to the 4-D inputs and outputs of the
    report: the model's convention, and the one --layout asked for at the
    network's edges (`armnn-import verify` permutes its inputs with them)."""
    if source is None:
        return
    for entry in report.inputs + report.outputs:
        if len(entry["shape"]) == 4:
            entry["source_layout"], entry["layout"] = source, io


def load(path) -> Graph:
    """Read a .armnn file into the IR."""
    from .serialize import read
    from .discovery import open_regular
    try:
        with open_regular(path, ".armnn") as f:
            data = f.read()
    except OSError as e:
        raise LoadError(f"{path}: cannot read: {e.strerror}") from None
    return read(data)
