"""ONNX model -> IR graph.

1. load (external data confined to the model's folder), check the opset;
2. pin the input shapes (a symbolic batch dimension becomes 1); run ONNX
   shape inference (to cross-check our shapes and find empty tensors) and
   replace operators that have no converter but an ONNX function body by
   that body -- both in a child process, as onnx's C++ can crash on
   hostile models (isolate.py);
3. pre-scan: every node that cannot be converted is recorded (unknown
   operators, attribute values without an exact lowering, run-time tensors
   where Arm NN needs constants);
4. walk the nodes in order: fold those whose inputs are all constant (Shape,
   Size and EyeLike fold on any tensor, shapes being static), drop Identity and
   Dropout, lower the rest through the operator registry (ops/); problems
   found while lowering are added, and all of them raised together.

Converters see the conversion through LoweringContext (context.py).
"""
from __future__ import annotations

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from armnn_import.context import results
from armnn_import.errors import (ArmnnImportError, ConversionError, GraphError, LoadError, Problem,
                                 UnsupportedModelError)
from armnn_import.ir.graph import Graph, Port
from armnn_import.ir.types import DataType, LayerType
from armnn_import.limits import check_shape
from armnn_import.lowering import NetBuilder, Unsupported

from .analysis import analyse
from .analysis_view import portable
from .context import MAX_RANK, LoweringContext
from .control import constant_condition, inline_if
from .edges import add_inputs, add_outputs, fix_inputs
from .float16 import NOTE as FLOAT16_NOTE
from .float16 import (check_islands, exact_islands, float16_inside, float32_edges, half_casts, is_float16_model,
                      to_float32)
from .fold import fold, fold_size_guard, shape_value
from .isolate import isolated
from .loader import load_model
from .nodes import DEFAULT_DOMAINS, PASS_THROUGH, SHAPE_OPS, Node, sparse_to_dense, toposort
from .ops import REGISTRY
from .quant import QuantState
from .scan import scan
from .upgrade import upgrade_if_old

MIN_OPSET = 7
# TensorProto types whose raw_data numpy reads as it is (little-endian hosts only)
RAW_TYPES = {} if sys.byteorder != "little" else {
    TensorProto.FLOAT: np.float32, TensorProto.UINT8: np.uint8, TensorProto.INT8: np.int8,
    TensorProto.UINT16: np.uint16, TensorProto.INT16: np.int16, TensorProto.INT32: np.int32,
    TensorProto.INT64: np.int64, TensorProto.BOOL: np.bool_, TensorProto.FLOAT16: np.float16,
    TensorProto.DOUBLE: np.float64, TensorProto.UINT32: np.uint32, TensorProto.UINT64: np.uint64}


def convert(source, options, report) -> Graph:
    try:
        mapped: dict[str, np.ndarray] = {}
        model = load_model(source, mapped)
        with report.phase("onnx:upgrade"):
            model = upgrade_if_old(model, mapped, report)
        casts: set[str] = set()
        islands: set[str] = set()
        halves = half_casts(model)  # (before to_float32 rewrites them)
        # (from the 23.08 format every float32 part is Float32 between Cast layers, below it only
        # the exact one-node ones convert, in Float16)
        parts = not options.fp16 and Graph(options.target).target.has(LayerType.Cast)
        if edges := float16_inside(model):
            island_casts, islands = exact_islands(model) if not parts else (set(), set())
            casts = float32_edges(model, mapped, options, report, edges) - island_casts
        elif is_float16_model(model):
            island_casts, islands = exact_islands(model) if not parts else (set(), set())
            casts = to_float32(model, mapped, options.fp16) - island_casts
            report.float16_network = True
            report.warn(FLOAT16_NOTE)
        conv = Converter(model, options, report, mapped)
        conv.float32_casts = casts
        if casts and parts:
            conv.island_casts = halves
        graph = conv.run()
        if islands and not options.fp16:
            check_islands(graph, report, islands)
        return graph
    except (ArmnnImportError, RecursionError, LoweringBug):
        raise
    except MemoryError:
        raise ConversionError("model too large: memory ran out while converting it") from None
    except Exception as e:  # noqa: BLE001 - a malformed model must not escape as a traceback
        raise ConversionError(f"the ONNX model cannot be converted (internal error {type(e).__name__}: "
                              f"{str(e)[:300]})") from e


class LoweringBug(RuntimeError):
    """A converter produced something other than what ONNX defines: a bug of ours, never
    a refusal (it escapes convert(), so the CLI reports an internal error, exit code 4)."""


class Converter(LoweringContext):
    registry = REGISTRY  # (armnn_import.context.ConverterContext)

    def __init__(self, model: onnx.ModelProto, options, report, mapped: dict | None = None):
        self.model, self.options, self.report = model, options, report
        self.mapped = mapped or {}  # large initializers left out of the proto (see wire.py)
        self.opset = self._default_opset()
        self.g = Graph(options.target)
        self.b = NetBuilder(self.g, report)
        self.values: dict[str, object] = {}   # name -> np.ndarray | list (sequence) | Port
        self.scalars: set[Port] = set()       # ports that are rank-0 in ONNX (stored as [1])
        # booleans (see ops/logic.py): comparison sources, float 0/1 masks standing for booleans
        self.bool_src: dict[Port, tuple] = {}
        self.bool_cache: dict[Port, Port] = {}
        self.bool_float: set[Port] = set()
        self.inferred_types: dict[str, int] = {}
        self.inferred: dict[str, tuple] = {}
        self.anchor: Port | None = None       # a float input, to derive constants from
        self.guessed_dim0: set[str] = set()   # inputs whose symbolic first dimension was set to 1
        self.problems: list[Problem] = []
        self.float32_casts: set[str] = set()  # Casts to float32 in a float16 model (float16.py)
        self.island_casts: set[str] | None = None  # ... and its Casts to float16, when islands convert
        self.softplus_exp: set[Port] = set()  # Softplus read by Tanh alone, below 23.08 (ops/activation.py)
        self._entries: dict[tuple, object] = {}  # (op, opset) -> registry entry or None (registry_entry)

    # -- setup --------------------------------------------------------------
    def _default_opset(self) -> int:
        versions = [o.version for o in self.model.opset_import if o.domain in DEFAULT_DOMAINS]
        if not versions:
            if self.model.ir_version and self.model.ir_version < 3:
                versions = [1]
            else:
                raise LoadError("the model imports no opset of the default ONNX domain")
        v, newest = int(versions[0]), onnx.defs.onnx_opset_version()
        if v < MIN_OPSET:
            raise ConversionError(f"the model uses opset {v}; opsets {MIN_OPSET} to {newest} are supported "
                                  "(upgrade it with onnx.version_converter.convert_version(model, 13))")
        if v > newest:
            raise ConversionError(f"the model uses opset {v}, newer than the installed onnx "
                                  f"{onnx.__version__} knows ({newest}); upgrade the onnx package")
        return v

    def run(self) -> Graph:
        graph = self.model.graph
        if not graph.output:
            raise LoadError("the model has no outputs")
        for t in graph.initializer:
            cut = t.name in self.mapped and not t.HasField("raw_data")
            self.values[t.name] = self.mapped[t.name] if cut else self._tensor(t)
        for sp in graph.sparse_initializer:
            try:
                self.values[sp.values.name] = sparse_to_dense(sp)
            except MemoryError:  # never a refusal: convert() reports it
                raise
            except Exception as e:  # noqa: BLE001
                raise LoadError(f"sparse initializer {sp.values.name!r} cannot be read: {e}") from None
        self.model_opset = self.opset
        self.quant = QuantState(self.model, self.values, self.options, self.report)
        self.quant.float_edges = self.g.target.has(LayerType.Quantize)  # float I/O from 20.08 on
        fix_inputs(self)
        add_inputs(self)
        nodes = [Node(p, i, self.opset) for i, p in enumerate(graph.node)]
        with self.report.phase("onnx:shape-inference"):
            analysis = isolated(analyse, self, nodes, portable=lambda: portable(self))
        if analysis is None:
            self.report.warn("ONNX shape inference crashed on this model; converting without it")
        else:
            self.inferred, self.inferred_types, expanded = analysis
            if expanded is not None:
                nodes = [Node(onnx.NodeProto.FromString(data), i, opset) for i, (data, opset) in enumerate(expanded)]
        # (each Node already carries its position in `nodes` as its index: no second copy)
        self.nodes = toposort(self.model.graph, self.values, nodes)
        with self.report.phase("onnx:pre-scan"):
            flagged = scan(self)
        # Lower even when the pre-scan found problems, to add those only found while
        # lowering (value-dependent ones); flagged nodes and what depends on them are skipped.
        with self.report.phase("onnx:lower"):
            for node in self.nodes:
                if node.index not in flagged:
                    self._node(node)
            add_outputs(self)
            self.quant.note_outputs(self.g)
            self.quant.keep_int8(self.g, self.values, getattr(self, "inferred_types", None) or {})
        if self.problems:
            order = {n.name: i for i, n in enumerate(self.nodes)}
            self.problems.sort(key=lambda p: order.get(p.node, len(order)))
            raise UnsupportedModelError(self.problems)
        # inputs that feed nothing are dropped by passes.cleanup.drop_unused_inputs
        return self.g

    @staticmethod
    def _tensor(t) -> np.ndarray:
        check_shape(t.dims, f"tensor {t.name!r}")  # numpy would read a -1 as "infer this dimension"
        try:
            plain = RAW_TYPES.get(t.data_type) if t.data_location == TensorProto.DEFAULT else None
            if plain is not None and t.HasField("raw_data") and not t.HasField("segment"):
                # what to_array does for these (a view of the bytes), without its per-call lookups:
                # a model of many small layers has thousands of small initializers
                return np.frombuffer(t.raw_data, plain).reshape(t.dims)
            return numpy_helper.to_array(t)
        except MemoryError:  # never a refusal: convert() reports it
            raise
        except Exception as e:  # noqa: BLE001 - bad sizes, unknown types
            raise LoadError(f"tensor {t.name!r} cannot be read: {e}") from None

    def _node(self, node: Node) -> None:
        values = self.values
        ins = [i for i in (node.inputs + node.implicit if node.implicit else node.inputs) if i]
        for i in ins:
            if i not in values:
                return  # downstream of a node that failed: already reported
        self.opset = node.opset  # nodes from function bodies may use another opset
        try:
            self._lower(node, ins)
        except Unsupported as e:
            self.problems.append(Problem(node.op, node.name, e.reason, e.hint, code=e.code))
        except GraphError as e:
            self.problems.append(Problem(node.op, node.name, f"cannot be lowered: {e}"))
        except (ArmnnImportError, MemoryError, LoweringBug):  # MemoryError: never a refusal, convert() reports it
            raise
        except Exception as e:  # noqa: BLE001 - malformed attributes and the like: report, never crash
            self.problems.append(Problem(node.op, node.name, f"cannot be lowered (internal error "
                                         f"{type(e).__name__}: {str(e)[:200]})", internal=True))

    def _lower(self, node: Node, ins: list[str]) -> None:
        """Fold, pass through or lower one node; `ins`: the names it reads (none empty)."""
        values, op = self.values, node.op
        if op in PASS_THROUGH:
            return self._pass_through(node)
        if op in SHAPE_OPS and node.inputs and isinstance(values[node.inputs[0]], Port):
            shape = self.lshape(values[node.inputs[0]])
            return self._folded(node, [shape_value(node, shape, self._np_type(node.outputs[0]))])
        ports = [v for v in map(values.__getitem__, ins) if isinstance(v, Port)]  # the run-time inputs
        if not ports:
            fold_size_guard(node, values, self.inferred)
            return self._folded(node, fold(node, values, self.opset, node.implicit))
        if op == "If" and constant_condition(self, node):
            return inline_if(self, node)  # (its branches read run-time tensors: not folded)
        if op == "CastLike" and not isinstance(values[node.inputs[0]], Port):
            # only the type of input 1 matters; a run-time tensor here is float32, int32 or bool
            like = values[node.inputs[1]]
            dtype = {"Float32": np.float32, "Signed32": np.int32, "Boolean": np.bool_}[like.info.dtype.name]
            return self._folded(node, [np.asarray(values[node.inputs[0]]).astype(dtype)])
        inferred = self.inferred
        shapes = [inferred.get(o) for o in node.outputs if o]
        # (a huge dimension beside the 0 comes from a bad attribute: left to the converter to refuse)
        if shapes and all(s is not None and None not in s and 0 in s and max(s) < 1 << 31 for s in shapes):
            # empty results hold no data: constants, whatever the inputs
            return self._folded(node, [np.zeros(inferred[o], self._np_type(o)) if o else None
                                       for o in node.outputs])
        # float operators on quantized inputs (QDQ models) have quantized converters
        entry = self.quant.converter(self, node) or self.registry_entry(op, self.opset)
        if entry is None:  # the pre-scan refuses these; kept so a miss is never an internal error
            raise Unsupported(f"no lowering for {op} at opset {self.opset}")
        if entry.check is not None:
            r = entry.check(node, self)
            if r:
                raise Unsupported(*((r,) if isinstance(r, str) else r))  # (reason, hint[, code])
        first = len(self.g.layers)
        out = entry.fn(self, node)
        outs = results(out)  # the contract's return rule (armnn_import.context)
        if len(outs) < len(shapes):  # (shapes: one per named output)
            raise Unsupported("only the first output is supported")
        self._bind(node, outs, ports)
        self.report.record(node.name, op, self.g.layers[first:],
                           [v if isinstance(v, Port) else None for v in outs])

    def registry_entry(self, op: str, opset: int):
        """REGISTRY.lookup(op, opset), looked up once per operator and opset."""
        key = (op, opset)
        try:
            return self._entries[key]
        except KeyError:
            entry = self._entries[key] = REGISTRY.lookup(op, opset)
            return entry

    def _bind(self, node: Node, outs: list, ports: list) -> None:
        """The converter's results as the values of the node's outputs (Ports checked)."""
        scalars = self.scalars
        scalar_in = None
        for name, v in zip(node.outputs, outs):
            if name and v is not None:
                if isinstance(v, Port):
                    info = v.info
                    if info.shape == (1,):
                        # elementwise results of rank-0 tensors are rank 0 too (stored as [1])
                        want = self.inferred.get(name)
                        if scalar_in is None:
                            scalar_in = [p in scalars for p in ports]
                        if want == () or (want is None and scalar_in and all(scalar_in)):
                            scalars.add(v)
                    if info.dtype == DataType.Float32 and self.inferred_types.get(name) == TensorProto.BOOL:
                        self.bool_float.add(v)  # e.g. a Reshape of a mask
                    self._check_port(node, name, v)
                self.values[name] = v

    def _np_type(self, name):
        try:
            return helper.tensor_dtype_to_np_dtype(self.inferred_types.get(name, TensorProto.FLOAT))
        except Exception:  # noqa: BLE001 - undefined or exotic types
            return np.float32

    def _folded(self, node, outs) -> None:
        for name, v in zip(node.outputs, outs):
            if name:
                self.values[name] = v
        self.report.folded.append(node.name)

    def _pass_through(self, node) -> None:
        src = node.inputs[0] if node.inputs else ""
        if node.op == "Dropout":
            self._dropout_check(node)
            if len(node.outputs) > 1 and node.outputs[1]:
                v = self.values[src]
                shape = self.lshape(v) if isinstance(v, Port) else np.shape(v)
                self.values[node.outputs[1]] = np.ones(shape, np.bool_)
        self.values[node.outputs[0]] = self.values[src]
        self.report.folded.append(node.name)

    def _dropout_check(self, node) -> None:
        """Dropout is the identity unless training_mode is true and the ratio is not 0
        (then it is random). Both inputs must be known here; each is a scalar."""
        def scalar(i, default, what):
            v = self.values.get(node.inputs[i]) if len(node.inputs) > i and node.inputs[i] else default
            if isinstance(v, Port):
                return v
            a = np.asarray(v).reshape(-1)
            if a.size != 1:
                raise Unsupported(f"{what} has {a.size} elements; it must be a scalar (the model is invalid)",
                                  code="bad-model")
            return a[0]
        training = scalar(2, False, "training_mode")
        ratio = scalar(1, 0.5, "ratio")
        if not isinstance(ratio, Port) and float(ratio) == 0.0:
            return  # no element is dropped, whatever the mode
        if isinstance(training, Port):
            raise Unsupported("training_mode is computed at run time; it must be a constant",
                              "make training_mode an initializer (false at inference)")
        if bool(training):
            raise Unsupported("Dropout in training mode is random")

    def _check_port(self, node, name, p: Port) -> None:
        shape = p.info.shape
        if not 1 <= len(shape) <= MAX_RANK:
            raise Unsupported(f"produces a {len(shape)}-D tensor; Arm NN tensors have 1 to {MAX_RANK} dimensions")
        if p.info.num_elements >= 2 ** 31:
            raise Unsupported(f"produces a tensor of {p.info.num_elements} elements (Arm NN counts them in 32 bits)")
        want = self.inferred.get(name)
        have = self.lshape(p)
        if want is not None and None not in want and tuple(want) != tuple(have):
            if min(want, default=0) < 0:
                raise Unsupported(f"ONNX shape inference gives {name!r} the shape {tuple(want)} (the model is invalid)",
                                  code="bad-model")
            if name in self._declared():  # the model's own claim about the tensor is wrong
                raise Unsupported(f"the model declares {name!r} of shape {tuple(want)}, but {node.op} computes "
                                  f"{tuple(have)} (the model is invalid)", code="bad-model")
            raise LoweringBug(f"the lowering gives {name!r} the shape {have}, ONNX shape inference says {want}")

    def _declared(self) -> set[str]:
        """Names whose shape the model states (value_info and graph outputs with a shape)."""
        if not hasattr(self, "_declared_names"):
            g = self.model.graph
            self._declared_names = {vi.name for vi in list(g.value_info) + list(g.output)
                                    if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape")}
        return self._declared_names

