"""The Python API: convert(), load(), and the ConversionResult."""
from __future__ import annotations

import os
from dataclasses import dataclass

from .errors import ArmnnImportError, ConversionError, LoadError
from .frontend import LAYOUTS, ConvertOptions
from .ir.graph import Graph
from .report import Report


@dataclass
class ConversionResult:
    network: Graph
    report: Report
    _bytes: bytes | None = None

    def to_bytes(self) -> bytes:
        if self._bytes is None:
            from .serialize import write
            self._bytes = write(self.network)
        return self._bytes

    def save(self, path) -> None:
        """Write atomically: a temporary file in the target folder, then rename."""
        from .output import write_atomic
        write_atomic(path, self.to_bytes())


def _pick_frontend(model):
    from .frontends import available_frontends

    fronts = {name: ep.load() for name, ep in available_frontends().items()}
    if isinstance(model, (str, os.PathLike)):
        try:
            with open(model, "rb") as f:
                head = f.read(64)
        except OSError as e:
            raise LoadError(f"{model}: cannot read: {e.strerror}") from None
    elif isinstance(model, (bytes, bytearray, memoryview)):
        head = bytes(model[:64])
    else:
        for fe in fronts.values():
            if fe.accepts(model):
                return fe
        raise LoadError(f"cannot convert a {type(model).__name__}: expected a path, bytes, "
                        "an onnx.ModelProto or a tflite.Model")
    if head[4:8] == b"ARMN":
        raise LoadError("the input is already an .armnn file")
    for fe in fronts.values():
        if fe.sniff(head):
            return fe
    raise LoadError("unrecognised model format (expected ONNX or TFLite)"
                    + ("" if fronts else "; no frontend is installed"))


def convert(model, *, input_shapes: dict | None = None, layout: str = "keep",
            keep_io_layout: bool = False, fp16: bool = False, dequantize: bool = False,
            report: Report | None = None) -> ConversionResult:
    """Convert an ONNX or TFLite model (path, bytes, onnx.ModelProto or
    tflite.Model) to an Arm NN network. Raises ArmnnImportError subclasses."""
    if layout not in LAYOUTS:
        raise ConversionError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    options = ConvertOptions(dict(input_shapes or {}), layout, keep_io_layout, fp16, dequantize)
    report = report or Report()
    if isinstance(model, (str, os.PathLike)):
        report.source = os.fspath(model)
    fe = _pick_frontend(model)
    report.format = fe.name
    try:
        with report.phase("frontend"):
            graph = fe.convert(model, options, report)
        from .passes import run_pipeline
        run_pipeline(graph, report)
        from .report import io_summary
        report.inputs, report.outputs = io_summary(graph)
    except ArmnnImportError:
        raise
    except RecursionError as e:
        raise ConversionError(f"model too deeply nested: {e}") from None
    return ConversionResult(graph, report)


def load(path) -> Graph:
    """Read a .armnn file into the IR."""
    from .serialize import read
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise LoadError(f"{path}: cannot read: {e.strerror}") from None
    return read(data)
