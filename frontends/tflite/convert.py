"""TFLite -> IR: the conversion state (tensors and their types, constants, quantization),
operator dispatch through the registry (armnn_import_frontends.tflite.ops) and the binding of
what each converter returns. The pre-scan is prescan.py, the model's inputs and outputs edges.py."""
from __future__ import annotations

import os
from collections import defaultdict

import numpy as np

from armnn_import.context import ContractError, results
from armnn_import.errors import ConversionError, GraphError, LoadError, Problem, UnsupportedModelError
from armnn_import.registry import OpEntry
from armnn_import.ir.graph import Graph, Port
from armnn_import.ir.types import DataType
from armnn_import.lowering import NetBuilder, Unsupported

from . import grid16 as G
from . import quant as Q
from .edges import Edges, fix_inputs
from .unroll import unroll
from .model import TFModel, Tensor, load, read_model_file
from .prescan import Prescan
from .types import BOOL, FLOAT32, INT8, INT16, INT32, INT64, UINT8

_NO_FACTS = OpEntry("", 1, None, None, ())  # an operator with no entry: the default facts
FUSED = {0: None, 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}
# (an Enum member's lookup costs ten times a global's: dtype_of runs several times per tensor)
_F32, _QA8 = DataType.Float32, DataType.QuantisedAsymm8
_OTHER_TYPES = {INT32: DataType.Signed32, BOOL: DataType.Boolean}
# The per-operator facts (required inputs, foldable, multi-output, type rule, state inputs) and
# the refused operators with their reasons are on the registry (armnn_import.registry), set
# where each operator is registered (ops/*.py).


def convert(source, options, report) -> Graph:
    if isinstance(source, (str, os.PathLike)):
        try:
            source = read_model_file(source)
        except OSError as e:
            raise LoadError(f"{os.fspath(source)}: cannot read: {e.strerror or e}") from None
    with report.phase("parse"):
        model = unroll(load(source), report)
    fix_inputs(model, options, report)
    ctx = Ctx(model, options, report)
    with report.phase("prescan"):
        ctx.prescan()
    ctx.build()
    return ctx.g


class Ctx(Prescan, Edges):
    """Conversion state: the model, the graph under construction, and the
    Port (runtime tensor) or constant behind every TFLite tensor."""

    def __init__(self, model: TFModel, options, report):
        from .ops import REGISTRY

        self.m, self.opts, self.report, self.registry = model, options, report, REGISTRY
        self.options = options
        self._facts, self._entries = {}, {}       # registry answers per (op, version)
        # the builder: `b`, as in ONNX's context (armnn_import.context.ConverterContext); `nb` is its old name
        self.b = self.nb = NetBuilder(Graph(options.target), report)
        self.g = self.nb.g
        self.dequantize = bool(options.dequantize)
        # 16x8 mode from the 20.08 format on (grid16.py): int16 tensors as float32 on their grid
        self.grid16 = not self.dequantize and self.g.target.has(DataType.QSymmS16)
        self.on_grid: dict[int, float] = {}       # int16 tensor -> the scale of the grid it is on
        self.mode16 = self.grid16 and any(t.type == INT16 and t.quant is not None for t in model.tensors)
        self.ports: dict[int, Port] = {}
        self.folded: dict[int, np.ndarray] = {}   # constants computed from constants
        self.producer: dict[int, int] = {}
        self.consumers: dict[int, list[int]] = defaultdict(list)
        for op in model.operators:
            for i in op.inputs:
                if i >= 0:
                    self.consumers[i].append(op.index)
            for i in op.outputs:
                self.producer.setdefault(i, op.index)
        self.static = self._static()              # tensors that will be constants
        self.skip: set[int] = set()               # ops absorbed at the model's edges
        self.wraps: dict[int, tuple[int, int]] = {}  # wrapped ids -> (ids, n): wrap.py
        self.input_alias: dict[int, list[int]] = {}  # float input -> QUANTIZE outputs it stands for
        self.out_source: dict[int, int] = {}      # model output -> quantized tensor behind its DEQUANTIZE
        self.shared: dict = {}                    # (tensor, shape) -> the Constant layer its readers share
        self.output_names = {model.tensors[i].name for i in model.outputs}
        self.overridden = False                   # True when input shapes differ from the file's
        dense = [t.name for t in model.tensors if t.densified]
        if dense:  # frontends/tflite/sparse.py
            report.decomposition("sparse constants", f"{len(dense)} densified at conversion (traversal order, "
                                 f"block map, DENSE/SPARSE_CSR levels); {model.densify_folded} DENSIFY folded")

    @property
    def target(self):
        """The Arm NN format written (armnn_import.target.Target)."""
        return self.g.target

    # -- tensors --------------------------------------------------------------------------
    def t(self, i: int) -> Tensor:
        return self.m.tensors[i]

    def _static(self) -> set[int]:
        """Tensors known before running the model: constants, and the results of
        foldable operators on them (and SHAPE, whose result is static here)."""
        static = {t.index for t in self.m.tensors if t.data is not None}
        for op in self.m.operators:
            ins = [i for i in op.inputs if i >= 0]
            if op.op == "SHAPE" or (self.facts(op).foldable and ins and all(i in static for i in ins)):
                static.update(op.outputs)
        return static

    def facts(self, op) -> OpEntry:
        """The registry entry that holds `op`'s per-operator facts (defaults when it has none)."""
        key = (op.op, op.version)
        got = self._facts.get(key)
        if got is None:  # asked once per kind of operator, not per operator
            got = self._facts[key] = self.registry.facts(op.op, op.version) or _NO_FACTS
        return got

    def entry(self, op) -> OpEntry | None:
        """The registry's converter of `op`, or None (the pre-scan and the build ask per operator)."""
        key = (op.op, op.version)
        if key in self._entries:
            return self._entries[key]
        got = self._entries[key] = self.registry.lookup(op.op, op.version)
        return got

    def is_const(self, i: int) -> bool:
        return i >= 0 and (i in self.folded or i in self.static)

    def is_quant(self, i: int) -> bool:
        """A per-tensor 8-bit quantized tensor that stays quantized in the network."""
        t = self.m.tensors[i]
        return (not self.dequantize and t.type in (UINT8, INT8) and t.quant is not None
                and t.quant.per_tensor and i not in self.folded)

    def qparams(self, i: int) -> tuple[float, int]:
        """(scale, uint8 offset) of a quantized tensor (int8 zero points move up by 128)."""
        t = self.m.tensors[i]
        zp = int(t.quant.zero_point[0]) + (128 if t.type == INT8 else 0)
        return float(np.float32(t.quant.scale[0])), zp

    def out_quant(self, op, k: int = 0):
        i = op.outputs[k]
        return self.qparams(i) if self.is_quant(i) else None

    def dtype_of(self, i: int) -> DataType | None:
        """The Arm NN data type of a runtime tensor, or None if it has none."""
        t = self.m.tensors[i]
        if t.type == FLOAT32:
            return _F32
        if t.type in (UINT8, INT8) or (t.type == INT16 and t.quant is not None):
            # (16-bit: the converter's 16x8 mode: --dequantize, or grid16.py)
            if (self.dequantize and t.quant is not None) or (t.type == INT16 and self.grid16 and G.fits(t)):
                return _F32
            return _QA8 if self.is_quant(i) else None
        if t.type == INT64 and i in self.producer and self.m.operators[self.producer[i]].op in ("ARG_MAX", "ARG_MIN"):
            # tf.argmax's default int64 indices: exact as Signed32 (Arm NN's ArgMinMax output), as in
            # the ONNX frontend
            return DataType.Signed32
        return _OTHER_TYPES.get(t.type)

    def const(self, i: int) -> np.ndarray:
        """A constant's real values as float32 (quantized data dequantized)."""
        if i in self.folded:
            return np.asarray(self.folded[i]).astype(np.float32)
        t = self.m.tensors[i]
        if t.data is None:
            raise Unsupported(f"tensor {t.name!r} must be a constant", code="needs-constant")
        if t.quant is not None and t.type in (INT8, UINT8, INT32, INT16, INT64):  # (int64: 16x8 biases)
            return Q.dequantize(t.data, t.quant, t.shape)
        return t.data.astype(np.float32, copy=False)  # read-only for large constants (they alias the file)

    def ints(self, i: int) -> np.ndarray:
        """A constant integer parameter (axes, shapes, paddings) as int64."""
        if i < 0 or not self.is_const(i):
            name = self.m.tensors[i].name if i >= 0 else "(missing)"
            raise Unsupported(f"parameter tensor {name!r} is not a constant", code="needs-constant")
        v = self.folded[i] if i in self.folded else self.m.tensors[i].data
        v = np.asarray(v)
        if v.dtype.kind not in "iub":
            raise Unsupported(f"parameter tensor {self.m.tensors[i].name!r} is not integer", code="bad-model")
        return v.astype(np.int64)

    def port(self, i: int) -> Port:
        if i in self.ports:
            return self.ports[i]
        t = self.m.tensors[i]
        if self.is_const(i) and i in self.m.as_layers and self.dtype_of(i) == DataType.Float32:
            self.ports[i] = self.nb.constant_layer(self.const(i), t.name)  # (an unrolled loop's start state)
            return self.ports[i]
        if self.is_const(i):
            raise Unsupported(f"constant tensor {t.name!r} is used where Arm NN needs a computed tensor",
                              code="inexpressible")
        raise ConversionError(f"tensor {t.name!r} is read before any operator computes it "
                              "(the model's operators are not in execution order)")

    def shape(self, i: int) -> tuple[int, ...]:
        """Shape of a tensor: the port's if computed, else the file's (scalars as [1])."""
        if i in self.ports:
            return self.ports[i].info.shape
        if i in self.folded:
            return tuple(np.shape(self.folded[i]))
        return self.m.tensors[i].shape

    def name(self, op, k: int = 0) -> str:
        """Base name of the layers made for `op`: its k-th output tensor's name,
        kept free for the Output layer when that tensor is a model output."""
        n = self.m.tensors[op.outputs[k]].name if op.outputs else f"op{op.index}"
        return n + "_value" if n in self.output_names else n

    def node(self, op) -> str:
        return self.m.tensors[op.outputs[0]].name if op.outputs else f"operator {op.index}"

    # -- results ---------------------------------------------------------------------------
    def _bind(self, op, out) -> None:
        """Bind what the converter of `op` returned (armnn_import.context.results: a Port, an
        np.ndarray for a constant computed at conversion time, or a sequence of them, None for
        an output not made) to its output tensors."""
        if type(out) is Port and op.outputs:  # the common case, as results() would give it
            self.ports[op.outputs[0]] = self._requantized(op, 0, out)
            return
        for k, v in enumerate(results(out)[:len(op.outputs)]):
            if isinstance(v, Port):
                self.ports[op.outputs[k]] = self._requantized(op, k, v)
            elif isinstance(v, np.ndarray):
                self.folded[op.outputs[k]] = v
            elif v is not None:
                raise ContractError(f"{op.op}'s converter returned a {type(v).__name__} for output {k}")

    def _requantized(self, op, k: int, port: Port) -> Port:
        """`port` as output k of `op`: requantized when Arm NN's output quantization differs
        from TFLite's, reshaped to TFLite's shape where only the shape differs."""
        i = op.outputs[k]
        t = self.m.tensors[i]
        want = self.dtype_of(i)
        info = port.info
        if want is not None and info.dtype != want:
            raise ConversionError(f"{op.op} (node {self.node(op)!r}): produced {info.dtype.name}, "
                                  f"expected {want.name} (converter bug)")
        q = self.out_quant(op, k)
        if q is not None and (info.scale, info.offset) != q:
            port = self.nb.linear(port, 1.0, 0.0, f"{self.name(op, k)}_requantize", quant=q)
            self.report.decomposition("requantize", "Activation Linear(a=1, b=0) with the new quantization")
        expected = t.shape or (1,)
        if t.signature and len(t.signature) == len(port.info.shape) and any(d < 0 for d in t.signature) and all(
                s < 0 or s == d for s, d in zip(t.signature, port.info.shape)):
            # a dynamic dimension's stored size is a placeholder (a RESHAPE to [tf.shape(x)[0], -1]
            # is stored [1, 1], signature [-1, -1]): the computed shape stands where it fits the static ones
            expected = tuple(port.info.shape)
        if not self.overridden and tuple(port.info.shape) != tuple(expected):
            if int(np.prod(expected)) != port.info.num_elements:
                raise ConversionError(f"{op.op} (node {self.node(op)!r}): Arm NN output shape "
                                      f"{port.info.shape} differs from TFLite's {t.shape}")
            port = self.nb.reshape(port, expected, f"{self.name(op, k)}_shape")
        if t.type == INT16 and self.grid16:
            port = G.round_to_grid(self, op, k, port)
        return port

    def fused(self, port: Port, code: int, name: str, quant=None) -> Port:
        """The fused activation of an op as its own layer (skipped when a
        quantized output's range already implies the clamp)."""
        act = FUSED.get(int(code), "unknown")
        if act is None:
            return port
        if act in ("TANH", "SIGN_BIT"):
            # TFLite's kernels derive a clamp range from the fused activation, and these two
            # give none: the runtime ignores them, and so does the conversion.
            self.report.warn(f"{name}: fused activation {act} is ignored, as TFLite's kernels do")
            return port
        bounds = {"RELU": (0.0, np.inf), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0)}.get(act)
        if bounds is None:
            raise Unsupported(f"fused activation {act} has no Arm NN equivalent")
        if quant is not None and port.info.dtype.is_quantized:
            # skip the clamp when it cannot change a quantized result: the bounds land
            # at or beyond the ends of the output's uint8 range
            scale, offset = quant
            if bounds[0] / scale + offset <= 0.5 and bounds[1] / scale + offset >= 254.5:
                return port
        return self.nb.clamp(port, bounds[0], bounds[1], f"{name}_{act.lower()}", quant=quant)

    # -- build -----------------------------------------------------------------------------
    def build(self) -> None:
        with self.report.phase("inputs"):
            self._inputs()
        problems, poisoned = [], set()
        for op in self.m.operators:
            if op.index in self.skip:
                continue
            if poisoned and any(i in poisoned for i in op.inputs):
                poisoned.update(op.outputs)
                continue
            entry = self.entry(op)
            before = len(self.g.layers)
            try:
                self._bind(op, entry.fn(self, op))
            except Unsupported as e:
                problems.append(Problem(op.op, self.node(op), e.reason, e.hint, code=e.code))
                poisoned.update(op.outputs)
                continue
            except GraphError as e:
                raise ConversionError(f"{op.op} (node {self.node(op)!r}): {e}") from None
            except (IndexError, ValueError, KeyError, TypeError, ZeroDivisionError, OverflowError) as e:
                # a model whose tensors contradict each other (shapes, ranks, counts)
                raise ConversionError(f"{op.op} (node {self.node(op)!r}): inconsistent model: "
                                      f"{type(e).__name__}: {e}", code="bad-model") from None
            for i in op.outputs:
                if i not in self.ports and i not in self.folded and self.consumers.get(i):
                    raise ConversionError(f"{op.op} (node {self.node(op)!r}) left output "
                                          f"{self.t(i).name!r} undefined (converter bug)")
            self.report.record(self.node(op), op.op, self.g.layers[before:],
                               [self.ports.get(i) for i in op.outputs])
        if problems:
            raise UnsupportedModelError(problems)
        self._outputs()
        self._keep_int8()

