"""TFLite -> IR: pre-scan, tensors and their types, quantization decisions,
operator dispatch through the registry (armnn_import_frontends.tflite.ops)."""
from __future__ import annotations

import os
from collections import defaultdict

import numpy as np

from armnn_import.errors import (ConversionError, GraphError, LoadError, Problem,
                                 UnsupportedModelError)
from armnn_import.registry import OpEntry, Refusal
from armnn_import.ir.graph import Graph, Port
from armnn_import.ir.types import DataType, LayerType, TensorInfo
from armnn_import.lowering import NetBuilder, Unsupported

from . import quant as Q
from .model import TFModel, Tensor, load, read_model_file
from .types import BOOL, FLOAT16, FLOAT32, INT8, INT16, INT32, INT64, UINT8  # noqa: F401

_NO_FACTS = OpEntry("", 1, None, None, ())  # an operator with no entry: the default facts
FUSED = {0: None, 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}
# The per-operator facts (required inputs, foldable, multi-output, type rule, state inputs) and
# the refused operators with their reasons are on the registry (armnn_import.registry), set
# where each operator is registered (ops/*.py).
# Integer options and their valid ranges (None: unbounded). A file can hold any int32 there,
# and Arm NN's descriptor fields are unsigned; values that fit but make no sense for the
# tensors at hand (a stride past the output, a dilation past the input) are checked by the
# converters.
OPTION_RANGES = {"stride_h": (1, None), "stride_w": (1, None), "dilation_h_factor": (1, None),
                 "dilation_w_factor": (1, None), "filter_height": (1, None), "filter_width": (1, None),
                 "block_size": (1, None), "radius": (0, None), "num_splits": (1, None), "padding": (0, 1),
                 "mode": (0, 1)}


def convert(source, options, report) -> Graph:
    if isinstance(source, (str, os.PathLike)):
        try:
            source = read_model_file(source)
        except OSError as e:
            raise LoadError(f"{os.fspath(source)}: cannot read: {e.strerror or e}") from None
    with report.phase("parse"):
        model = load(source)
    ctx = Ctx(model, options, report)
    with report.phase("prescan"):
        ctx.prescan()
    ctx.build()
    return ctx.g


def _option_problem(op):
    """Why an option value is out of range, or None."""
    for key, value in op.options.items():
        if isinstance(value, float) and not np.isfinite(value):
            return f"option {key} is {value}"
        bounds = OPTION_RANGES.get(key)
        if bounds is None or not isinstance(value, int):
            continue
        lo, hi = bounds
        if value < lo or (hi is not None and value > hi):
            return f"option {key} = {value} is out of range" + (f" [{lo}, {hi}]" if hi is not None
                                                                    else f" (at least {lo})")
    return None


class Ctx:
    """Conversion state: the model, the graph under construction, and the
    Port (runtime tensor) or constant behind every TFLite tensor."""

    def __init__(self, model: TFModel, options, report):
        from .ops import REGISTRY

        self.m, self.opts, self.report, self.registry = model, options, report, REGISTRY
        self.options = options
        # the builder: `b`, as in ONNX's context (armnn_import.context.ConverterContext); `nb` is its old name
        self.b = self.nb = NetBuilder(Graph(options.target), report)
        self.g = self.nb.g
        self.dequantize = bool(options.dequantize)
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
        self.input_alias: dict[int, list[int]] = {}  # float input -> QUANTIZE outputs it stands for
        self.out_source: dict[int, int] = {}      # model output -> quantized tensor behind its DEQUANTIZE
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
        return self.registry.facts(op.op, op.version) or _NO_FACTS

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
            return DataType.Float32
        if t.type in (UINT8, INT8):
            if self.dequantize and t.quant is not None:
                return DataType.Float32
            return DataType.QuantisedAsymm8 if self.is_quant(i) else None
        return {INT32: DataType.Signed32, BOOL: DataType.Boolean}.get(t.type)

    def const(self, i: int) -> np.ndarray:
        """A constant's real values as float32 (quantized data dequantized)."""
        if i in self.folded:
            return np.asarray(self.folded[i]).astype(np.float32)
        t = self.m.tensors[i]
        if t.data is None:
            raise Unsupported(f"tensor {t.name!r} must be a constant", code="needs-constant")
        if t.quant is not None and t.type in (INT8, UINT8, INT32, INT16):
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
    def set(self, op, k: int, port: Port) -> None:
        """Bind output k of `op` to `port`, requantizing when Arm NN's output
        quantization differs from TFLite's."""
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
        self.ports[i] = port

    def fold(self, op, k: int, value) -> None:
        """Record output k of `op` as a constant computed at conversion time."""
        self.folded[op.outputs[k]] = np.asarray(value)

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

    # -- pre-scan --------------------------------------------------------------------------
    def prescan(self) -> None:
        """Find every operator the conversion would refuse, and report them all at once."""
        self._edges()
        problems = []
        if self.m.num_subgraphs > 1:
            self.report.warn(f"the model has {self.m.num_subgraphs} subgraphs; only the main one "
                             "is converted (operators that call others are refused)")
        for i in self.m.inputs:
            reason = self._io_reason(i)
            if reason:
                problems.append(Problem("input", self.t(i).name, reason, code="unsupported-type"))
        for op in self.m.operators:
            if op.index in self.skip:
                continue
            r = self._check(op)
            if r:
                reason, hint, code = _refusal(r)
                problems.append(Problem(op.op, self.node(op), reason, hint, code=code))
        if problems:
            raise UnsupportedModelError(problems)

    def _io_reason(self, i):
        t = self.t(i)
        if i in self.input_alias:
            return None
        if self.dtype_of(i) is None:
            return self._type_reason(t)
        return None

    def _type_reason(self, t: Tensor):
        if t.type in (UINT8, INT8) and t.quant is None:
            return f"8-bit tensor {t.name!r} has no quantization parameters"
        if t.type in (UINT8, INT8) and not t.quant.per_tensor:
            return f"tensor {t.name!r} is quantized per channel; Arm NN tensors have one scale"
        if t.type == INT16:
            return f"16-bit quantized tensor {t.name!r}: Arm NN's format has only 8-bit quantization"
        if t.type == FLOAT16:
            return f"float16 activations ({t.name!r}) would need Float16 and Float32 in one network"
        return f"tensor {t.name!r} has type {t.type_name}, which Arm NN's format cannot hold"

    def _check(self, op):
        if op.op == "CUSTOM":
            return Refusal(f"custom operator {op.custom_code!r} has no Arm NN equivalent", code="unsupported-op")
        entry = self.registry.lookup(op.op, op.version)
        if entry is None:
            versions = [e for e in self.registry.entries() if e.op == op.op]
            if versions:
                return Refusal(f"operator version {op.version} is not supported "
                               f"(known: {', '.join(e.version_range for e in versions)})", code="unsupported-op")
            return self.registry.refusal(op.op) or Refusal("no exact lowering onto Arm NN's 32 layer types",
                                                           code="unsupported-op")
        if entry.target_problem(self.nb.g.target):
            return entry.target_problem(self.nb.g.target)
        r = self._structure_problem(op, entry)
        if r:
            return Refusal(r, code="bad-model")
        for i in op.inputs + op.outputs:
            if i < 0:
                continue
            t = self.t(i)
            if t.sparse:
                return Refusal(f"tensor {t.name!r} is sparse but holds no constant data (only constants are "
                               "densified)", code="unsupported-type")
            if t.is_variable and i not in [op.inputs[k] for k in entry.state_inputs if k < len(op.inputs)]:
                return f"tensor {t.name!r} is a variable (stateful models are not supported)"
            if not self.is_const(i) and self.dtype_of(i) is None:
                return Refusal(self._type_reason(t), code="unsupported-type")
        r = _option_problem(op)
        if r:
            return Refusal(r, code="bad-attribute")
        r = self._type_problem(op, entry)
        if r:
            return Refusal(r, code="unsupported-type")
        if entry.check is not None:
            try:
                return entry.check(op, self)
            except Unsupported as e:
                return Refusal(e.reason, e.hint, e.code)
            except (IndexError, ValueError, KeyError, TypeError) as e:
                return Refusal(f"inconsistent operator: {type(e).__name__}: {e}", code="bad-model")
        return None

    def _structure_problem(self, op, entry):
        """Why the operator's inputs and outputs make no sense (the model is invalid), or None."""
        need = entry.inputs
        if len(op.inputs) < need or any(i < 0 for i in op.inputs[:need]):
            return f"needs {need} input tensors, has {sum(i >= 0 for i in op.inputs[:need])}"
        if not op.outputs:
            return "has no output tensor"
        if len(op.outputs) > 1 and not entry.multi_output:
            return f"has {len(op.outputs)} output tensors, not 1"
        for o in op.outputs:
            t = self.t(o)
            if t.data is not None:
                return f"writes to the constant tensor {t.name!r}"
            if self.producer[o] != op.index or op.outputs.count(o) > 1:
                return f"tensor {t.name!r} is written by more than one operator output"
            if o in self.m.inputs:
                return f"writes to the model input {t.name!r}"
        return None

    def _type_problem(self, op, entry):
        """Arm NN layers take one data type and give it back (comparisons give Boolean):
        runtime data inputs of different types, or an output of another type, cannot be
        built (only QUANTIZE and friends change types, and they have their own rules)."""
        if entry.types == "free":
            return None
        every = entry.types in ("all", "compare")
        ins = op.inputs if every else op.inputs[entry.data_input:entry.data_input + 1]
        types = {self.dtype_of(i) for i in ins if i >= 0 and not self.is_const(i)}
        if len(types) > 1:
            return "inputs mix data types " + ", ".join(sorted(t.name for t in types))
        if not types:
            return None
        want = DataType.Boolean if entry.types == "compare" else types.pop()
        for o in op.outputs:
            if o not in self.static and self.dtype_of(o) != want:
                return (f"output {self.t(o).name!r} is {self.dtype_of(o).name} for "
                        f"{'inputs' if every else 'an input'} of type {want.name}"
                        if entry.types != "compare" else
                        f"output {self.t(o).name!r} is {self.dtype_of(o).name}, not Boolean")
        return None

    def _edges(self) -> None:
        """Float inputs that only feed QUANTIZE ops become quantized inputs, and
        outputs made by DEQUANTIZE become the quantized tensors: Arm NN's
        format has no Quantize or Dequantize layer. (From the 20.08 format on the network keeps
        the model's float interface, with Quantize and Dequantize layers: ops/quantize.py.)"""
        if self.dequantize or self.nb.g.target.has(LayerType.Quantize):
            return
        ops = self.m.operators
        for i in self.m.inputs:
            users = self.consumers.get(i, [])
            if self.t(i).type != FLOAT32 or not users or any(ops[u].op != "QUANTIZE" for u in users):
                continue
            outs = [ops[u].outputs[0] for u in users]
            if all(self.is_quant(o) for o in outs) and len({self.qparams(o) for o in outs}) == 1:
                self.skip.update(users)
                self.input_alias[i] = outs
        for o in self.m.outputs:
            p = self.producer.get(o)
            if p is None or ops[p].op != "DEQUANTIZE" or self.consumers.get(o):
                continue
            src = ops[p].inputs[0]
            if src >= 0 and self.is_quant(src) and not self.is_const(src):
                self.skip.add(p)
                self.out_source[o] = src

    # -- build -----------------------------------------------------------------------------
    def build(self) -> None:
        with self.report.phase("inputs"):
            self._inputs()
        problems, poisoned = [], set()
        for op in self.m.operators:
            if op.index in self.skip:
                continue
            if any(i in poisoned for i in op.inputs):
                poisoned.update(op.outputs)
                continue
            entry = self.registry.lookup(op.op, op.version)
            before = len(self.g.layers)
            try:
                entry.fn(self, op)
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

    def _keep_int8(self) -> None:
        """From the 20.08 format on, the model's int8 tensors become QAsymmS8 (lowering/int8.py)."""
        from armnn_import.lowering.int8 import keep_int8
        seeds = {port: self.t(i).type == INT8 for i, port in self.ports.items()
                 if self.is_quant(i) and port.info.dtype == DataType.QuantisedAsymm8}
        keep_int8(self.g, seeds, self.report)

    def _input_shape(self, t: Tensor) -> tuple[int, ...]:
        given = (self.opts.input_shapes or {}).get(t.name)
        if given is not None:
            given = tuple(int(d) for d in given)
            if len(given) != len(t.shape) or any(d <= 0 for d in given) or any(
                    s not in (-1, d) for s, d in zip(t.signature or t.shape, given)):
                raise ConversionError(f"input {t.name!r}: shape {list(given)} does not fit the model's "
                                      f"{list(t.signature or t.shape)}")
            if given != t.shape:
                self.overridden = True
            return given
        if t.signature and any(d < 0 for d in t.signature):
            self.report.warn(f"input {t.name!r} has dynamic dimensions {list(t.signature)}; using "
                             f"{list(t.shape)} (set --input-shape to choose)")
        if any(d == 0 for d in t.shape):
            raise ConversionError(f"input {t.name!r} has an empty dimension {list(t.shape)}")
        return t.shape or (1,)

    def _add_input(self, name: str, info: TensorInfo) -> Port:
        # in the model's NHWC: --layout nchw is the core's (the plugin's io_layout, passes/io_layout.py)
        return self.g.add_input(name, info)

    def _inputs(self) -> None:
        for i in self.m.inputs:
            t = self.t(i)
            shape = self._input_shape(t)
            if i in self.input_alias:
                q_out = self.input_alias[i][0]
                scale, offset = self.qparams(q_out)
                port = self._add_input(t.name, TensorInfo(shape, DataType.QuantisedAsymm8, scale, offset))
                for o in self.input_alias[i]:
                    self.ports[o] = port
                self.report.quantization.append({
                    "tensor": t.name, "decision": "float32 model input replaced by the quantized tensor "
                    "its QUANTIZE op made: feed uint8 values", "scale": scale, "offset": offset})
                continue
            dtype = self.dtype_of(i)
            q = self.qparams(i) if self.is_quant(i) else (1.0, 0)
            self.ports[i] = self._add_input(t.name, TensorInfo(shape, dtype, *q))
            self._note_io(i, "input")

    def _note_io(self, i: int, kind: str) -> None:
        t = self.t(i)
        if t.type == INT8 and self.is_quant(i):
            scale, offset = self.qparams(i)
            self.report.quantization.append({
                "tensor": t.name, "decision": f"int8 model {kind} becomes uint8 (value + 128)",
                "scale": scale, "offset": offset})
        elif t.type in (INT8, UINT8) and self.dequantize:
            self.report.quantization.append({
                "tensor": t.name, "decision": f"quantized model {kind} becomes float32 (--dequantize)"})

    def _outputs(self) -> None:
        for o in self.m.outputs:
            t = self.t(o)
            src = self.out_source.get(o, o)
            if src not in self.ports:
                if src in self.folded and np.size(self.folded[src]) == 0:
                    raise UnsupportedModelError([Problem(
                        "output", t.name, f"the output is empty (shape {list(np.shape(self.folded[src]))}, "
                        "as TFLite computes it); Arm NN tensors have no zero-size dimension", code="inexpressible")])
                if self.is_const(src):
                    raise UnsupportedModelError([Problem("output", t.name, "the output is a constant; "
                                                         "Arm NN networks compute every output",
                                                         code="inexpressible")])
                raise ConversionError(f"output {t.name!r} is not computed by any operator")
            port = self.ports[src]
            if port.layer.type == LayerType.Input:  # Arm NN wants a layer between Input and Output
                port = self.nb.linear(port, 1.0, 0.0, f"{t.name}_identity")
            self.g.add_output(t.name, port)
            if src != o:
                scale, offset = self.qparams(src)
                self.report.quantization.append({
                    "tensor": t.name, "decision": "float32 model output left quantized (its DEQUANTIZE "
                    "op is dropped): read uint8 values", "scale": scale, "offset": offset})
                if self.t(src).type == INT8:
                    self.report.quantization[-1]["decision"] += " (int8 + 128)"
            else:
                self._note_io(o, "output")


def _refusal(r) -> Refusal:
    """A check's answer (a reason, (reason, hint) or a Refusal) as a Refusal."""
    if isinstance(r, Refusal):
        return r
    return Refusal(r) if isinstance(r, str) else Refusal(*r)
