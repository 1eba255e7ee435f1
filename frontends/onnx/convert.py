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
4. walk the nodes in order: fold those whose inputs are all constant (Shape
   and Size fold on any tensor, shapes being static), drop Identity and
   Dropout, lower the rest through the operator registry (ops/); problems
   found while lowering are added, and all of them raised together.

Converters see the conversion through LoweringContext (context.py).
"""
from __future__ import annotations

import functools
import heapq
import itertools

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from armnn_import.context import results
from armnn_import.errors import (ArmnnImportError, ConversionError, GraphError, LoadError, Problem,
                                 UnsupportedModelError, printable)
from armnn_import.ir.descriptors import ReshapeDescriptor
from armnn_import.ir.graph import Graph, Port
from armnn_import.ir.types import DataType, LayerType, TensorInfo
from armnn_import.limits import check_shape
from armnn_import.lowering import NetBuilder, Unsupported
from armnn_import.registry import Refusal

from .context import MAX_RANK, LoweringContext, check_size
from .float16 import NOTE as FLOAT16_NOTE
from .float16 import is_float16_model, to_float32
from .fold import fold, shape_of
from .isolate import isolated
from .loader import load_model
from .nodes import Node, sparse_to_dense
from .ops import REGISTRY
from .quant import QuantState
from .registry import RANDOM_OPS
from .upgrade import upgrade_if_old

DEFAULT_DOMAINS = ("", "ai.onnx")
PASS_THROUGH = ("Identity", "Dropout")
SHAPE_OPS = ("Shape", "Size")
MIN_OPSET = 7
INPUT_TYPES = {TensorProto.FLOAT: DataType.Float32, TensorProto.INT32: DataType.Signed32,
               TensorProto.INT64: DataType.Signed32, TensorProto.BOOL: DataType.Boolean}


def convert(source, options, report) -> Graph:
    try:
        mapped: dict[str, np.ndarray] = {}
        model = load_model(source, mapped)
        with report.phase("onnx:upgrade"):
            model = upgrade_if_old(model, mapped, report)
        casts: set[str] = set()
        if is_float16_model(model):
            casts = to_float32(model, mapped, options.fp16)
            report.float16_network = True
            report.warn(FLOAT16_NOTE)
        conv = Converter(model, options, report, mapped)
        conv.float32_casts = casts
        return conv.run()
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


@functools.lru_cache(maxsize=None)
def _schema_facts(op: str, opset: int):
    """(required single inputs as (index, name), required attributes, most inputs, every
    attribute's name) of an operator's ONNX schema, or None when there is none (worked out once
    per operator: the pre-scan asks for every node)."""
    try:
        schema = onnx.defs.get_schema(op, opset, "")
    except Exception:  # noqa: BLE001 - unknown operator: reported elsewhere
        return None
    single = onnx.defs.OpSchema.FormalParameterOption.Single
    inputs = tuple((i, p.name) for i, p in enumerate(schema.inputs) if p.option == single)
    attrs = tuple(a for a, spec in schema.attributes.items() if spec.required)
    return inputs, attrs, schema.max_input, frozenset(schema.attributes)


def _missing(node) -> list[str]:
    """Required inputs and attributes (per the ONNX schema) that the node lacks."""
    facts = _schema_facts(node.op, node.opset)
    if facts is None:
        return []
    inputs = [f"input {name!r}" for i, name in facts[0] if i >= len(node.inputs) or not node.inputs[i]]
    return inputs + [f"attribute {a!r}" for a in facts[1] if a not in node.attrs]


def _too_many_inputs(node) -> str | None:
    """Why a node has more inputs than its ONNX schema allows (the extra ones would be ignored)."""
    if node.domain not in DEFAULT_DOMAINS:
        return None
    facts = _schema_facts(node.op, node.opset)
    if facts is None:
        return None
    if len(node.inputs) > facts[2]:
        return f"{len(node.inputs)} inputs, but {node.op} takes at most {facts[2]} (the model is invalid)"
    unknown = sorted(a for a in node.attrs if a not in facts[3])
    if unknown:  # onnxruntime refuses these too; the operator of an older opset may have meant them
        return (f"{node.op} at opset {node.opset} has no attribute {', '.join(map(repr, unknown))} "
                "(the model is invalid)")
    return None


class ScanView:
    """What the pre-scan knows, with the interface checks use."""

    def __init__(self, conv: "Converter", const: set, values: dict):
        self.opset, self._const, self._values, self._inferred = conv.opset, const, values, conv.inferred
        self.target = conv.g.target  # the format written (armnn_import.target.Target)

    def has(self, node, i):
        return i < len(node.inputs) and node.inputs[i] != ""

    def is_const(self, node, i):
        return node.inputs[i] in self._const

    def attr(self, node, key, default=None):
        return node.attrs.get(key, default)

    def value(self, node, i):
        return self._values.get(node.inputs[i]) if self.has(node, i) else None

    def shape(self, node, i):
        """Inferred shape (a tuple with None for unknown dimensions), or None."""
        if not self.has(node, i):
            return None
        v = self._values.get(node.inputs[i])
        return v.shape if isinstance(v, np.ndarray) else self._inferred.get(node.inputs[i])


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
        self._inputs()
        nodes = [Node(p, i, self.opset) for i, p in enumerate(graph.node)]
        with self.report.phase("onnx:shape-inference"):
            analysis = isolated(self._analyse, nodes)
        if analysis is None:
            self.report.warn("ONNX shape inference crashed on this model; converting without it")
        else:
            self.inferred, self.inferred_types, expanded = analysis
            if expanded is not None:
                nodes = [Node(onnx.NodeProto.FromString(data), i, opset) for i, (data, opset) in enumerate(expanded)]
        # (each Node already carries its position in `nodes` as its index: no second copy)
        self.nodes = self._toposort(nodes)
        with self.report.phase("onnx:pre-scan"):
            flagged = self._scan()
        # Lower even when the pre-scan found problems, to add those only found while
        # lowering (value-dependent ones); flagged nodes and what depends on them are skipped.
        with self.report.phase("onnx:lower"):
            for node in self.nodes:
                if node.index not in flagged:
                    self._node(node)
            self._outputs()
            self.quant.note_outputs(self.g)
            self.quant.keep_int8(self.g, self.values, getattr(self, "inferred_types", None) or {})
        if self.problems:
            order = {n.name: i for i, n in enumerate(self.nodes)}
            self.problems.sort(key=lambda p: order.get(p.node, len(order)))
            raise UnsupportedModelError(self.problems)
        # inputs that feed nothing are dropped by passes.cleanup.drop_unused_inputs
        return self.g

    def _analyse(self, nodes: list[Node]):
        """Shape inference and function expansion: onnx C++ code, run in a child process
        (see isolate.py). Returns (shapes, element types, expanded nodes or None)."""
        self._infer_shapes()
        expanded = self._expand(nodes)
        changed = len(expanded) != len(nodes) or any(a is not b for a, b in zip(expanded, nodes))
        return (self.inferred, self.inferred_types,
                [(n.proto.SerializeToString(), n.opset) for n in expanded] if changed else None)

    def _expand(self, nodes: list[Node]) -> list[Node]:
        """Replace operators that have no converter, but an ONNX function body, by the body."""
        from .expand import MAX_ROUNDS, body_opset, function_body, inline

        for rnd in range(MAX_ROUNDS):
            out, changed = [], False
            for node in nodes:
                body = None
                if (node.domain in DEFAULT_DOMAINS and REGISTRY.refusal(node.op) is None
                        and node.op not in PASS_THROUGH + SHAPE_OPS + ("Constant",)
                        and REGISTRY.lookup(node.op, node.opset) is None
                        and not all(not i or isinstance(self.values.get(i), np.ndarray) for i in node.inputs)):
                    fp = function_body(node.proto, node.opset, [self._type_proto(i) for i in node.inputs])
                    body = fp and inline(node.proto, fp, f"{node.name}__f{rnd}_")
                if body:
                    opset = body_opset(fp, node.opset)
                    out.extend(Node(p, 0, opset) for p in body)
                    changed = True
                else:
                    out.append(node)
            nodes = out
            if not changed:
                break
        return nodes

    def _type_proto(self, name: str):
        from onnx import TypeProto

        from .expand import type_proto

        v = self.values.get(name)
        if isinstance(v, np.ndarray):
            try:
                return type_proto(helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
            except Exception:  # noqa: BLE001 - strings and other odd constants
                return TypeProto()
        if isinstance(v, Port):
            vi = next((i for i in self.model.graph.input if i.name == name), None)
            return vi.type if vi is not None else TypeProto()
        if name in self.inferred_types:
            return type_proto(self.inferred_types[name], self.inferred.get(name))
        return TypeProto()

    @staticmethod
    def _tensor(t) -> np.ndarray:
        check_shape(t.dims, f"tensor {t.name!r}")  # numpy would read a -1 as "infer this dimension"
        try:
            return numpy_helper.to_array(t)
        except MemoryError:  # never a refusal: convert() reports it
            raise
        except Exception as e:  # noqa: BLE001 - bad sizes, unknown types
            raise LoadError(f"tensor {t.name!r} cannot be read: {e}") from None

    def _toposort(self, nodes: list[Node]) -> list[Node]:
        g = self.model.graph
        available = {i.name for i in g.input} | set(self.values) | {""}
        producer: dict[str, int] = {}
        for n in nodes:
            for o in n.outputs:
                if o and (o in producer or o in available):
                    raise LoadError(f"tensor {o!r} is produced twice (node {n.name!r})")
                if o:
                    producer[o] = n.index
        users: dict[int, list[int]] = {n.index: [] for n in nodes}
        missing = {}
        for n in nodes:
            deps = set()
            for name in n.inputs + n.implicit:
                if name in producer:
                    deps.add(producer[name])
                elif name not in available:
                    raise LoadError(f"node {n.name!r} reads {name!r}, which no node, input or initializer provides")
            missing[n.index] = len(deps)
            for d in deps:
                users[d].append(n.index)
        heap = [i for i, k in missing.items() if k == 0]
        heapq.heapify(heap)
        order = []
        while heap:
            i = heapq.heappop(heap)
            order.append(nodes[i])
            for u in users[i]:
                missing[u] -= 1
                if missing[u] == 0:
                    heapq.heappush(heap, u)
        if len(order) != len(nodes):
            raise LoadError("the graph has a cycle")
        return order

    def _inputs(self) -> None:
        g, opts = self.model.graph, self.options
        pinned = dict(opts.input_shapes or {})
        runtime = [i for i in g.input if i.name not in self.values]
        names = [i.name for i in runtime]
        for k in pinned:
            if k not in names:
                raise ConversionError(f"--input-shape names {k!r}, which is not an input of the model "
                                      f"(inputs: {', '.join(names) or 'none'})")
        bad = []
        for vi in runtime:
            tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
            if tt is None:
                bad.append(Problem("input", vi.name, "is not a tensor (sequences, maps and optionals "
                                                      "cannot be network inputs)", code="unsupported-type"))
                continue
            dtype = INPUT_TYPES.get(tt.elem_type)
            if dtype is None:
                bad.append(Problem("input", vi.name, f"has element type "
                                   f"{TensorProto.DataType.Name(tt.elem_type) if tt.elem_type in TensorProto.DataType.values() else tt.elem_type}; "
                                   "Arm NN inputs here can be float32 (or int32/int64 indices, bool)",
                                   "convert the model to float32", code="unsupported-type"))
                continue
            if tt.elem_type == TensorProto.INT64:
                self.report.warn(f"input {vi.name!r} is int64 in ONNX; it becomes a Signed32 (int32) input")
            shape = self._input_shape(vi, tt, pinned.get(vi.name))
            if len(shape) > MAX_RANK:
                bad.append(Problem("input", vi.name, f"has {len(shape)} dimensions; Arm NN tensors have at most 5"))
                continue
            if any(d <= 0 for d in shape):
                bad.append(Problem("input", vi.name, f"has an empty shape {shape}"))
                continue
            # write the pinned shape back so that shape inference sees it
            del tt.shape.dim[:]
            for d in shape:
                tt.shape.dim.add().dim_value = d
            q = self.quant.input_quant(vi.name) if dtype == DataType.Float32 else None
            if q is not None:  # a float input feeding QuantizeLinear only: the network takes uint8
                dtype = DataType.QuantisedAsymm8
            port = self.g.add_input(vi.name, TensorInfo(shape or (1,), dtype, *(q or (1.0, 0))))
            if not shape:
                self.scalars.add(port)
            self.values[vi.name] = port
            if self.anchor is None and dtype == DataType.Float32 and len(shape) <= 4:
                self.anchor = port
        if bad:
            raise UnsupportedModelError(bad)

    def _input_shape(self, vi, tt, pinned) -> tuple[int, ...]:
        # (names are escaped: the hints must stay on one line, whatever the model calls its inputs)
        if pinned is not None:
            try:
                shape = tuple(int(d) for d in pinned)
            except (TypeError, ValueError):
                raise ConversionError(f"--input-shape {printable(vi.name)}: dimensions must be integers, "
                                      f"got {pinned!r}") from None
            if tt.HasField("shape") and len(tt.shape.dim) != len(shape):
                raise ConversionError(f"--input-shape {printable(vi.name)}: the input has {len(tt.shape.dim)} "
                                      f"dimensions, {len(shape)} given")
            if any(d <= 0 for d in shape):
                raise ConversionError(f"--input-shape {printable(vi.name)}: dimensions must be positive, got {shape}")
            for i, d in enumerate(tt.shape.dim if tt.HasField("shape") else []):
                if d.HasField("dim_value") and d.dim_value > 0 and d.dim_value != shape[i]:
                    raise ConversionError(f"--input-shape {printable(vi.name)}: dimension {i} is fixed to "
                                          f"{d.dim_value} in the model, {shape[i]} given")
            return shape
        if not tt.HasField("shape"):
            raise ConversionError(f"input {vi.name!r} has no shape in the model; give it with "
                                  f"--input-shape {printable(vi.name)}=d0,d1,...", code="dynamic-shape")
        shape = []
        for i, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                shape.append(int(d.dim_value))
            elif i == 0:
                what = f"symbolic ({d.dim_param!r})" if d.dim_param else "unknown"
                self.report.warn(f"input {vi.name!r}: the {what} batch dimension is set to 1 "
                                 f"(use --input-shape {printable(vi.name)}=... to choose another)")
                self.guessed_dim0.add(vi.name)
                shape.append(1)
            else:
                what = f"symbolic ({d.dim_param!r})" if d.dim_param else "unknown"
                raise ConversionError(f"input {vi.name!r}: dimension {i} is {what}; Arm NN needs static "
                                      f"shapes, give them with --input-shape {printable(vi.name)}=d0,d1,...",
                                      code="dynamic-shape")
        return tuple(shape)

    def _infer_shapes(self) -> None:
        try:
            inferred = onnx.shape_inference.infer_shapes(_without_weights(self.model, self.mapped), strict_mode=False,
                                                         data_prop=True)
        except Exception:  # noqa: BLE001 - shape inference is advisory
            return
        g = inferred.graph
        types, shapes = self.inferred_types, self.inferred
        for vi in itertools.chain(g.value_info, g.output):  # (one per tensor of the model)
            t = vi.type
            if not t.HasField("tensor_type"):
                continue
            tt, name = t.tensor_type, vi.name
            types[name] = tt.elem_type
            if tt.HasField("shape"):
                shapes[name] = tuple([int(d.dim_value) if d.HasField("dim_value") else None for d in tt.shape.dim])

    # -- pre-scan -----------------------------------------------------------
    def _scan(self) -> set[int]:
        """Check every node statically; record problems, return the indices of the failing nodes."""
        const = {n for n, v in self.values.items() if not isinstance(v, Port)} | {""}
        values = {n: v for n, v in self.values.items() if isinstance(v, np.ndarray)}
        view = ScanView(self, const, values)
        flagged = set()
        for node in self.nodes:
            ins = [i for i in node.inputs + node.implicit if i]
            self.opset = view.opset = node.opset
            problem = self._scan_node(node, view, const, ins)
            if problem:
                self.problems.append(Problem(node.op, node.name, *problem))  # (reason, hint, code)
                flagged.add(node.index)
            elif node.op == "Constant" and "value" in node.attrs and node.outputs:
                try:
                    values[node.outputs[0]] = numpy_helper.to_array(node.attrs["value"])
                except Exception:  # noqa: BLE001 - reported when folded
                    pass
            if problem is None and (all(i in const for i in ins) or node.op in SHAPE_OPS or
                                    (node.op in PASS_THROUGH + ("CastLike",) and node.inputs
                                     and node.inputs[0] in const)):
                const.update(node.outputs)
            elif node.op == "Dropout" and len(node.outputs) > 1:
                const.add(node.outputs[1])  # the mask is all true at inference
        self.opset = self.model_opset
        return flagged

    def _scan_node(self, node, view, const, ins):
        if node.domain not in DEFAULT_DOMAINS and not self.quant.allows_domain(node):
            return Refusal(f"operator domain {node.domain!r} is not supported",
                           "only operators of the default ONNX domain can be converted", "unsupported-op")
        if node.op in RANDOM_OPS:
            return REGISTRY.refusal(node.op)
        missing = _missing(node)
        if missing:
            return Refusal(f"required {', '.join(missing)} missing (the model is invalid)", code="bad-model")
        too_many = _too_many_inputs(node)
        if too_many:
            return Refusal(too_many, code="bad-model")
        if node.op in PASS_THROUGH or node.op in SHAPE_OPS or all(i in const for i in ins):
            return None
        if node.op == "CastLike" and node.inputs and node.inputs[0] in const:
            return None
        entry = REGISTRY.lookup(node.op, self.opset)
        if entry is None:
            if node.op in REGISTRY.ops():
                have = ", ".join(e.version_range for e in REGISTRY.entries() if e.op == node.op)
                return Refusal(f"not supported at opset {self.opset} (supported opsets: {have})",
                               code="unsupported-op")
            return REGISTRY.refusal(node.op) or Refusal("no exact lowering onto Arm NN's layers",
                                                        code="unsupported-op")
        if entry.target_problem(self.g.target):
            return entry.target_problem(self.g.target)
        if entry.check is not None:
            try:
                r = entry.check(node, view)
            except MemoryError:  # never a refusal: convert() reports it
                raise
            except Exception as e:  # noqa: BLE001 - e.g. an attribute of the wrong type
                r = Refusal(f"invalid node ({type(e).__name__}: {str(e)[:200]})", code="bad-attribute")
            if r:
                return Refusal(r) if isinstance(r, str) else Refusal(*r)
        return None

    # -- lowering -------------------------------------------------------------
    def _node(self, node: Node) -> None:
        if any(i and i not in self.values for i in node.inputs + node.implicit):
            return  # downstream of a node that failed: already reported
        self.opset = node.opset  # nodes from function bodies may use another opset
        try:
            self._lower(node)
        except Unsupported as e:
            self.problems.append(Problem(node.op, node.name, e.reason, e.hint, code=e.code))
        except GraphError as e:
            self.problems.append(Problem(node.op, node.name, f"cannot be lowered: {e}"))
        except (ArmnnImportError, MemoryError, LoweringBug):  # MemoryError: never a refusal, convert() reports it
            raise
        except Exception as e:  # noqa: BLE001 - malformed attributes and the like: report, never crash
            self.problems.append(Problem(node.op, node.name, f"cannot be lowered (internal error "
                                         f"{type(e).__name__}: {str(e)[:200]})", internal=True))

    def _lower(self, node: Node) -> None:
        ins = [i for i in node.inputs + node.implicit if i]
        if node.op in PASS_THROUGH:
            return self._pass_through(node)
        if node.op in SHAPE_OPS and node.inputs and isinstance(self.values[node.inputs[0]], Port):
            shape = self.lshape(self.values[node.inputs[0]])
            value = shape_of(node, shape) if node.op == "Shape" else np.array(int(np.prod(shape)), np.int64)
            return self._folded(node, [value])
        if all(not isinstance(self.values[i], Port) for i in ins):
            self._fold_size_guard(node)
            return self._folded(node, fold(node, self.values, self.opset, node.implicit))
        if node.op == "CastLike" and not isinstance(self.values[node.inputs[0]], Port):
            # only the type of input 1 matters; a run-time tensor here is float32, int32 or bool
            like = self.values[node.inputs[1]]
            dtype = {"Float32": np.float32, "Signed32": np.int32, "Boolean": np.bool_}[like.info.dtype.name]
            return self._folded(node, [np.asarray(self.values[node.inputs[0]]).astype(dtype)])
        shapes = [self.inferred.get(o) for o in node.outputs if o]
        # (a huge dimension beside the 0 comes from a bad attribute: left to the converter to refuse)
        if shapes and all(s is not None and None not in s and 0 in s and max(s) < 1 << 31 for s in shapes):
            # empty results hold no data: constants, whatever the inputs
            return self._folded(node, [np.zeros(self.inferred[o], self._np_type(o)) if o else None
                                       for o in node.outputs])
        # float operators on quantized inputs (QDQ models) have quantized converters
        entry = self.quant.converter(self, node) or REGISTRY.lookup(node.op, self.opset)
        if entry is None:  # the pre-scan refuses these; kept so a miss is never an internal error
            raise Unsupported(f"no lowering for {node.op} at opset {self.opset}")
        if entry.check is not None:
            r = entry.check(node, self)
            if r:
                raise Unsupported(*((r,) if isinstance(r, str) else r))  # (reason, hint[, code])
        first = len(self.g.layers)
        out = entry.fn(self, node)
        outs = results(out)  # the contract's return rule (armnn_import.context)
        if len(outs) < len([o for o in node.outputs if o]):
            raise Unsupported("only the first output is supported")
        scalar_in = [self.values[i] in self.scalars for i in ins if isinstance(self.values[i], Port)]
        for name, v in zip(node.outputs, outs):
            if name and v is not None:
                if isinstance(v, Port):
                    # elementwise results of rank-0 tensors are rank 0 too (stored as [1])
                    want = self.inferred.get(name)
                    if v.info.shape == (1,) and (want == () or (want is None and scalar_in and all(scalar_in))):
                        self.scalars.add(v)
                    if v.info.dtype == DataType.Float32 and self.inferred_types.get(name) == TensorProto.BOOL:
                        self.bool_float.add(v)  # e.g. a Reshape of a mask
                    self._check_port(node, name, v)
                self.values[name] = v
        self.report.record(node.name, node.op, self.g.layers[first:],
                           [v if isinstance(v, Port) else None for v in outs])

    def _fold_size_guard(self, node) -> None:
        """Refuse to fold into absurdly large constants (a hostile ConstantOfShape, Range,
        Expand or Tile would otherwise exhaust the memory)."""
        for o in node.outputs:
            if o and self.inferred.get(o) is not None and None not in self.inferred[o]:
                check_size(self.inferred[o], f"the folded value of {o!r}")
        v = [self.values.get(i) if i else None for i in node.inputs]
        try:
            if node.op == "ConstantOfShape" and v and isinstance(v[0], np.ndarray):
                check_size(v[0].reshape(-1).tolist(), "ConstantOfShape's result")
            elif node.op == "Range" and len(v) == 3 and all(isinstance(a, np.ndarray) for a in v):
                start, limit, delta = (float(np.asarray(a).reshape(-1)[0]) for a in v)
                if delta == 0 or not np.isfinite([start, limit, delta]).all():
                    raise Unsupported("Range with a zero or non-finite step or bound")
                check_size([max(np.ceil((limit - start) / delta), 0)], "Range's result")
            elif node.op in ("Expand", "Tile") and len(v) >= 2 and isinstance(v[1], np.ndarray):
                shape, arg = np.shape(v[0]), v[1].reshape(-1).astype(np.int64).tolist()
                if node.op == "Tile":
                    check_size([d * r for d, r in zip(shape, arg)], "Tile's result")
                else:
                    check_size(np.broadcast_shapes(tuple(shape), tuple(max(a, 0) for a in arg)), "Expand's result")
        except (ValueError, OverflowError, TypeError):
            raise Unsupported("invalid shape arguments") from None

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

    def _outputs(self) -> None:
        for vi in self.model.graph.output:
            v = self.values.get(vi.name)
            if self.problems:
                continue  # the conversion fails anyway: problems are what matters now
            if v is None:
                raise LoadError(f"graph output {vi.name!r} is produced by no node, input or initializer")
            if isinstance(v, list):
                self.problems.append(Problem("output", vi.name, "is a sequence; Arm NN outputs are tensors",
                                             code="unsupported-type"))
                continue
            try:
                if not isinstance(v, Port):
                    v = self.materialize(v, f"{vi.name}_value")
                elif v in self.bool_float:  # a float 0/1 mask standing for a boolean output
                    half = self.b.fill_like(v, 0.5, f"{vi.name}_half")
                    v = self.b.binary(LayerType.Greater, v, half, f"{vi.name}_bool")
                elif v.layer.type == LayerType.Input:
                    # Arm NN wants a layer between an input and an output
                    v = self.g.add(LayerType.Reshape, f"{vi.name}_copy", [v],
                                   ReshapeDescriptor(v.info.shape)).out()
            except Unsupported as e:
                self.problems.append(Problem("output", vi.name, e.reason, e.hint, code=e.code))
                continue
            except GraphError as e:
                self.problems.append(Problem("output", vi.name, f"cannot be produced: {e}"))
                continue
            self._free_name(vi.name)
            self.g.add_output(vi.name, v)

    def _free_name(self, name: str) -> None:
        """Output layers keep the ONNX output names: rename an inner layer that took one."""
        for layer in self.g.layers:
            if layer.name == name and layer.type not in (LayerType.Input, LayerType.Output):
                self.g.rename(layer, self.g.unique_name(f"{name}_op"))


def _add_value_info(field, name: str, elem_type: int, dims) -> None:
    """Append to `field` what onnx.helper.make_tensor_value_info(name, elem_type, list(dims)) makes
    (the same message, built in place: there is one per weight of a model)."""
    vi = field.add()
    vi.name = name
    tt = vi.type.tensor_type
    tt.elem_type = elem_type
    shape = tt.shape
    shape.dim.extend([])  # (an empty shape is still a shape, as make_tensor_type_proto makes it)
    for d in dims:
        shape.dim.add().dim_value = d


def _without_weights(model: onnx.ModelProto, mapped=(), keep_bytes: int = 4096) -> onnx.ModelProto:
    """A copy of `model` for shape inference: large initializers become typed
    graph inputs, so their data is neither serialized nor copied (shape
    inference only needs small constants, such as Reshape shapes, by value)."""
    src = model.graph
    g = onnx.GraphProto(name=src.name)
    g.node.extend(src.node)
    g.input.extend(src.input)
    g.output.extend(src.output)
    g.value_info.extend(src.value_info)
    declared = {i.name for i in src.input}
    for t in src.initializer:
        if t.ByteSize() <= keep_bytes and t.name not in mapped:
            g.initializer.append(t)
        elif t.name not in declared:
            _add_value_info(g.input, t.name, t.data_type, t.dims)
    m = onnx.ModelProto(ir_version=model.ir_version, producer_name=model.producer_name)
    m.opset_import.extend(model.opset_import)
    m.functions.extend(model.functions)
    m.graph.CopyFrom(g)
    return m

