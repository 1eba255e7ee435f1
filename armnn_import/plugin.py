"""What a frontend plugin provides. Frontends are found through the
entry-point group `armnn_import.frontends`; each entry point names an object
with this interface (see frontends/onnx and frontends/tflite)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .ir.graph import Graph
from .registry import OpRegistry
from .report import Report

LAYOUTS = ("keep", "nhwc", "nchw")
CONV_BIAS = ("add", "batchnorm")  # how a float convolution's bias is written (see passes/shifts.py)


@dataclass
class ConvertOptions:
    input_shapes: dict[str, tuple[int, ...]] | None = None
    layout: str = "keep"          # keep | nhwc | nchw
    keep_io_layout: bool = False
    fp16: bool = False
    dequantize: bool = False      # convert quantized models to an all-float network
    conv_bias: str = "add"        # add | batchnorm
    fp16_force: bool = False      # write an --fp16 network whose range check failed (with a warning)
    fp16_inputs: object = None    # sample inputs of the --fp16 range check (None: seeded random)
    fp16_weights: bool = False    # Float16 constants widened to Float32 at run time
    fp16_io: str = "float16"      # --fp16's float inputs and outputs: float16, or float32 (edge Casts, 23.08)
    target: str = "19.02"         # the Arm NN release whose format to write (armnn_import.target)
    # inputs fixed to a value, made constants by the frontend (armnn_import.input_values)
    input_values: dict | None = None
    # the layers' names: "source" (the model's node or tensor names), "short" (numbers; the report
    # maps them to the nodes) or "auto" (short where the target's runtime pays for names: target.py)
    layer_names: str = "auto"


class Frontend(Protocol):
    """A model format's facts and its conversion. The core asks these and knows no format."""
    name: str                     # the format's name: the entry point's, --format's, the report's
    title: str                    # how messages and the catalogue write it ("ONNX")
    version_word: str             # what an operator's version is called ("opset")
    extensions: tuple[str, ...]   # (".onnx",)
    registry: OpRegistry
    # The layout of the model's 4-D inputs and outputs ("NCHW" or "NHWC"): --layout adds
    # Permutes at the edges when it asks for the other one. None: the format has no such
    # convention, and --layout other than keep is refused.
    io_layout: str | None
    # (offset, bytes) that only this format's files have there, checked before any
    # plugin's sniff(); None when the format has no identifier.
    identifier: tuple[int, bytes] | None

    def sniff(self, head: bytes, complete: bool = False) -> bool:
        """True if the first bytes of a file look like this format (cheap, no heavy imports).
        `complete`: `head` is the whole file."""

    def accepts(self, obj) -> bool:
        """True if `obj` is an in-memory model of this format (e.g. onnx.ModelProto)."""

    def convert(self, source, options: ConvertOptions, report: Report) -> Graph:
        """source: a path (str/PathLike), bytes, or an in-memory model. Returns the IR in the
        model's own layout (io_layout at the edges), raising UnsupportedModelError listing
        every unsupported node at once."""

    def source_runner(self, source):
        """Optional, for `armnn-import verify`: the source model in the format's own runtime,
        a verify_source.SourceRunner (raise verify_source.MissingRuntimeError via
        need_runtime when the runtime, an optional extra, is missing)."""
