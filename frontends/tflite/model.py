"""Reading a .tflite file into plain Python objects, defensively.

The `tflite` package reads FlatBuffers without any verification: an offset
past the end raises struct.error, a bad vtable offset raises TypeError, and a
corrupted vector length can make a loop run for billions of iterations. So
every vector length is checked against the file size before it is iterated,
the total number of elements read is bounded by the file size, and every
exception the package can raise is turned into a LoadError. Semantic
references (tensor, buffer and opcode indices, buffer sizes) are checked too.
"""
from __future__ import annotations

import math
import mmap
import struct
from dataclasses import dataclass, field

import numpy as np

from armnn_import.errors import LoadError
from armnn_import.discovery import open_regular
from armnn_import.limits import ConstantBudget, check_file_size, check_shape

from . import bulk
from . import fasttable as FT
from .buffers import NP_TYPES, Source, constant, read_buffer, sparse_constant  # noqa: F401 (NP_TYPES: ops/shape.py)
from .fasttable import fast
from .options import known_custom_ops, read_options
from .sparse import bypass_densify, read_sparsity

TYPE_NAMES = {
    0: "FLOAT32", 1: "FLOAT16", 2: "INT32", 3: "UINT8", 4: "INT64", 5: "STRING", 6: "BOOL",
    7: "INT16", 8: "COMPLEX64", 9: "INT8", 10: "FLOAT64", 11: "COMPLEX128", 12: "UINT64",
    13: "RESOURCE", 14: "VARIANT", 15: "UINT32", 16: "UINT16", 17: "INT4", 18: "BFLOAT16",
}
SCHEMA_VERSION = 3
_INTS = [struct.Struct(f"<{n}i") for n in range(16)]  # shapes and operator tensor lists
_U32, _U64, _I8, _BOOL = struct.Struct("<I"), struct.Struct("<Q"), struct.Struct("<b"), struct.Struct("<?")
# Integer types and the zero points they can hold (their quantization is used; that of
# float tensors is ignored, as TFLite does).
ZERO_POINT_RANGE = {3: (0, 255), 9: (-128, 127), 7: (-32768, 32767), 2: (-(1 << 31), (1 << 31) - 1),
                    4: (-(1 << 63), (1 << 63) - 1), 16: (0, 65535), 15: (0, (1 << 32) - 1), 17: (-8, 7)}


@dataclass
class Quant:
    scale: np.ndarray       # float32, one per channel (or one)
    zero_point: np.ndarray  # int64, same length
    axis: int = 0

    @property
    def per_tensor(self) -> bool:
        return self.scale.size == 1


@dataclass
class Tensor:
    index: int
    name: str
    shape: tuple[int, ...]
    signature: tuple[int, ...] | None  # shape_signature (-1 = dynamic) if present
    type: int                          # tflite TensorType
    data: np.ndarray | None = None     # constant contents, shaped, or None
    quant: Quant | None = None
    is_variable: bool = False
    sparse: bool = False                # sparse and not densified (no data): refused
    densified: bool = False             # stored sparse in the file, data is the dense form

    @property
    def type_name(self) -> str:
        return TYPE_NAMES.get(self.type, f"type {self.type}")


@dataclass
class Operator:
    index: int
    op: str                       # builtin name, e.g. "CONV_2D", or "CUSTOM"
    version: int
    inputs: tuple[int, ...]       # -1 = optional input left out
    outputs: tuple[int, ...]
    options: dict = field(default_factory=dict)
    custom_code: str = ""
    intermediates: tuple[int, ...] = ()


@dataclass
class TFModel:
    tensors: list[Tensor]
    operators: list[Operator]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    num_subgraphs: int = 1
    description: str = ""
    densify_folded: int = 0  # DENSIFY operators replaced by their densified constant input
    subgraphs: dict = field(default_factory=dict)  # index -> TFModel: the WHILE loops' cond and body
    as_layers: set = field(default_factory=set)  # float constants read as computed tensors (unroll.py)


class _Budget:
    """Bounds the elements read, so that vectors shared between many tables
    (legal in FlatBuffers, absurd in a model) cannot make loading quadratic."""

    def __init__(self, size: int):
        self.size = size
        self.left = 4 * size + 4096

    def count(self, n: int, elem: int, what: str) -> int:
        if n < 0 or n * elem > self.size:
            raise LoadError(f"malformed TFLite file: {what} claims {n} entries, more than the file holds")
        self.left -= n
        if self.left < 0:
            raise LoadError("malformed TFLite file: its tables reference more data than the file holds")
        return n


def _numpy(getter, n: int, budget: _Budget, what: str) -> np.ndarray:
    budget.count(n, 1, what)
    if n == 0:
        return np.zeros(0)
    arr = getter()
    if not isinstance(arr, np.ndarray) or arr.size != n:
        raise LoadError(f"malformed TFLite file: cannot read {what}")
    return arr


def _text(raw) -> str:
    if raw is None:
        return ""
    return bytes(raw).decode("utf-8", "replace")


def load(source) -> TFModel:
    """Parse a TFLite model (bytes, or a tflite.Model) into a TFModel; LoadError if malformed."""
    try:
        return _load(source)
    except LoadError:
        raise
    except RecursionError:
        raise LoadError("malformed TFLite file: nesting too deep") from None
    except (struct.error, TypeError, ValueError, IndexError, OverflowError, AttributeError,
            UnicodeDecodeError, MemoryError, KeyError) as e:
        raise LoadError(f"malformed TFLite file: {type(e).__name__}: {e}") from None


def read_model_file(path):
    """The file's bytes: a read-only memory map (its weights are then used in
    place, never read into a copy), or bytes for an empty or unmappable file."""
    with open_regular(path) as f:  # never a FIFO or a device: they would block
        try:
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):  # empty, or a pipe / special file
            return f.read()


def _load(source) -> TFModel:
    model, buf = _root(source)
    check_file_size(len(buf), "TFLite file")
    budget = _Budget(len(buf))
    constants = ConstantBudget()
    version = model.Version()
    if version != SCHEMA_VERSION:
        raise LoadError(f"unsupported TFLite schema version {version} (expected {SCHEMA_VERSION})")
    codes = [_opcode(model.OperatorCodes(i), i) for i in range(budget.count(
        model.OperatorCodesLength(), 4, "the operator code list"))]
    nsub = budget.count(model.SubgraphsLength(), 4, "the subgraph list")
    if nsub == 0:
        raise LoadError("the TFLite model has no subgraph")
    nbuf = budget.count(model.BuffersLength(), 4, "the buffer list")
    src = Source(model, nbuf, budget, constants)
    tensors, ops, inputs, outputs = _subgraph(src, model, 0, codes)
    if not outputs:  # an Arm NN network without an Output layer does not load
        raise LoadError("the TFLite model has no outputs")
    ops, outputs, folded = bypass_densify(tensors, ops, outputs)
    result = TFModel(tensors, ops, inputs, outputs, nsub, _text(model.Description()), folded)
    for op in ops:  # the cond and body of WHILE loops (unroll.py), each read once
        for key in ("cond_subgraph_index", "body_subgraph_index") if op.op == "WHILE" else ():
            k = op.options.get(key)
            if isinstance(k, int) and 0 < k < nsub and k not in result.subgraphs:
                sub = _subgraph(src, model, k, codes)
                result.subgraphs[k] = TFModel(*sub, num_subgraphs=nsub)
    _release_pages(buf)
    return result


def _subgraph(src: Source, model, k: int, codes):
    """(tensors, operators, inputs, outputs) of subgraph k."""
    sg = fast(model.Subgraphs(k))
    if sg is None:
        raise LoadError(f"malformed TFLite file: subgraph {k} is missing")
    data, sg_fields = model._tab.Bytes, FT.fields(sg._tab.Bytes, sg._tab.Pos, 4)
    ntens = src.budget.count(sg.TensorsLength(), 4, "the tensor list")
    tensors = _tensors(src, sg._tab.Pos + sg_fields[0], ntens) if ntens else []
    refs = _refs(data, src.budget, ntens)
    inputs = refs(_at(sg._tab.Pos, sg_fields[1]), "the subgraph inputs")
    outputs = refs(_at(sg._tab.Pos, sg_fields[2]), "the subgraph outputs")
    nops = src.budget.count(sg.OperatorsLength(), 4, "the operator list")
    ops = _ops(src, sg._tab.Pos + sg_fields[3], nops, codes, refs, ntens) if nops else []
    known_custom_ops(data, sg._tab.Pos + sg_fields[3], ops)
    return tensors, ops, inputs, outputs


def _tensors(src: Source, at: int, ntens: int) -> list[Tensor]:
    """The subgraph's tensors: all at once (bulk.py) where the file is regular, else one at a
    time, from the same budgets, with the per-tensor reader's checks and errors."""
    left, total = src.budget.left, src.constants.total
    tensors = bulk.read_tensors(src, at, ntens, Tensor, _tensor)
    if tensors is None:
        src.budget.left, src.constants.total = left, total
        tensors = [_tensor(src, pos, i) for i, pos in enumerate(FT.tables(src.data, at))]
    return tensors


def _ops(src: Source, at: int, nops: int, codes, refs, ntens: int) -> list[Operator]:
    """The subgraph's operators: all at once (bulk.py) where the file is regular, else one at
    a time (_operators), from the same budget, with its checks and errors."""
    left = src.budget.left
    ops = bulk.read_operators(src, at, nops, codes, ntens, Operator, read_options)
    if ops is None:
        src.budget.left = left
        ops = _operators(src.data, FT.tables(src.data, at), codes, refs, src.budget)
    return ops


def _root(source):
    """(the tflite.Model, the file's bytes) of bytes, a memory map or an in-memory tflite.Model."""
    from tflite.Model import Model

    if not isinstance(source, (bytes, bytearray, memoryview, mmap.mmap)):
        return source, source._tab.Bytes
    buf = source if isinstance(source, mmap.mmap) else bytes(source)
    if len(buf) < 8:
        raise LoadError(f"not a TFLite file: only {len(buf)} bytes")
    if buf[4:8] != b"TFL3":
        raise LoadError("not a TFLite file: the FlatBuffers identifier is not 'TFL3'")
    root = struct.unpack_from("<I", buf, 0)[0]
    if root + 4 > len(buf):
        raise LoadError("malformed TFLite file: the root offset points past the end of the file")
    return fast(Model.GetRootAs(buf, 0)), buf


def _at(pos: int, off: int) -> int:  # where a table at `pos` keeps a field at offset `off` (0: absent)
    return pos + off if off else 0


def _refs(data, budget, ntens: int):
    """refs(at, what, allow_optional=False): the tensor indices of the int vector whose offset
    is at `at` (0: none), each checked to be a tensor of the subgraph (or -1 when optional)."""
    def refs(at, what, allow_optional=False):
        out = _ints(data, at, budget, what)
        if out and not (-1 if allow_optional else 0) <= min(out) <= max(out) < ntens:
            for v in out:
                if not (0 <= v < ntens or (allow_optional and v == -1)):
                    raise LoadError(f"malformed TFLite file: {what} references tensor {v}, "
                                    f"but the subgraph has {ntens} tensors")
        return out
    return refs


def _operators(data, positions, codes, refs, budget) -> list[Operator]:
    """The operators of the tables at `positions`, their opcodes, tensors and options checked."""
    ops, seen = [], {}
    for i, pos in enumerate(positions):
        # opcode_index, inputs, outputs, builtin_options_type, builtin_options, custom_options,
        # custom_options_format, mutating_variable_inputs, intermediates
        f = FT.fields(data, pos, 9)
        idx = _U32.unpack_from(data, pos + f[0])[0] if f[0] else 0
        if not 0 <= idx < len(codes):
            raise LoadError(f"malformed TFLite file: operator {i} uses opcode {idx}, "
                            f"but the model has {len(codes)} operator codes")
        name, ver, custom = codes[idx]
        ops.append(Operator(
            i, name, ver, refs(_at(pos, f[1]), f"operator {i} inputs", allow_optional=True),
            refs(_at(pos, f[2]), f"operator {i} outputs"), read_options(data, pos, f, budget, seen), custom,
            refs(_at(pos, f[8]), f"operator {i} intermediates")))
    return ops


def _release_pages(buf) -> None:
    """Drop the model file's pages, all read by now, from this process's resident set (a
    read-only map of the file: they stay in the page cache, and the large constants that
    alias the file fault theirs back in when the writer copies them). Otherwise a model of
    many small tensors stays resident twice, as the file and as the copies made of it."""
    if isinstance(buf, mmap.mmap) and hasattr(buf, "madvise") and len(buf) >= (1 << 20):
        buf.madvise(mmap.MADV_DONTNEED)


def _opcode(code, i) -> tuple[str, int, str]:
    from tflite.utils import BUILTIN_OPCODE2NAME

    if code is None:
        raise LoadError(f"malformed TFLite file: operator code {i} is missing")
    # Builtin codes above 127 live only in builtin_code; old files set only the deprecated field.
    builtin = max(int(code.BuiltinCode()), int(code.DeprecatedBuiltinCode()))
    name = BUILTIN_OPCODE2NAME.get(builtin, f"BUILTIN_{builtin}")
    return name, max(1, int(code.Version())), _text(code.CustomCode())


def _ints(buf, at: int, budget, what: str) -> tuple[int, ...]:
    """The int32 vector whose offset is stored at `at` (0: absent, empty), its length
    counted against the budget before it is read."""
    if not at:
        return ()
    start = at + _U32.unpack_from(buf, at)[0]  # (FT.vector, inlined: called per tensor and operator)
    return _ints_at(buf, start + 4, _U32.unpack_from(buf, start)[0], budget, what)


def _ints_at(buf, start: int, n: int, budget, what: str) -> tuple[int, ...]:
    """The n int32 values at `start` (a vector's data), n counted against the budget first."""
    budget.count(n, 1, what)
    if not n:
        return ()
    if start + 4 * n > len(buf):
        raise LoadError(f"malformed TFLite file: cannot read {what}")
    return (_INTS[n] if n < len(_INTS) else struct.Struct(f"<{n}i")).unpack_from(buf, start)


def _tensor(src: Source, pos: int, i: int) -> Tensor:
    data, budget, nbuf = src.data, src.budget, src.nbuf
    # shape, type, buffer, name, quantization, is_variable, sparsity, shape_signature
    f = FT.fields(data, pos, 8)
    shape, rank = (), 0
    if f[0]:  # each vector's length is read once, and the rank checked before the shape is read
        start, rank = FT.vector(data, pos + f[0])
        if rank > src.limits.max_rank:
            raise LoadError(f"tensor {i}: rank {rank} exceeds the limit of {src.limits.max_rank} dimensions")
        shape = _ints_at(data, start, rank, budget, f"tensor {i} shape")
    sig = None
    if f[7]:
        start, n = FT.vector(data, pos + f[7])
        if n:
            if n != rank:
                raise LoadError(f"malformed TFLite file: tensor {i} shape_signature has rank {n}, shape {rank}")
            sig = _ints_at(data, start, n, budget, f"tensor {i} signature")
    name = ""
    if f[3]:
        start, n = FT.vector(data, pos + f[3])
        name = bytes(data[start:start + n]).decode("utf-8", "replace")  # (FT.string, then _text)
    name = name or f"tensor_{i}"
    if shape and (min(shape) < 0 or math.prod(shape) > src.limits.max_elements):  # (the rank is checked)
        check_shape(shape, f"tensor {name!r}")  # raises what is wrong
    t = None
    if f[4] or f[6]:  # quantization or sparsity: read through the generated table
        from tflite.Tensor import Tensor as TensorTable  # (imported here: most tensors need none)
        t = TensorTable()
        t.Init(data, pos)
        t = fast(t)
    sparsity = t.Sparsity() if f[6] else None
    tensor = Tensor(i, name, shape, sig, _I8.unpack_from(data, pos + f[1])[0] if f[1] else 0,
                    is_variable=bool(_BOOL.unpack_from(data, pos + f[5])[0]) if f[5] else False,
                    sparse=sparsity is not None)
    q = t.Quantization() if f[4] else None
    if q is not None and q.ScaleLength():
        tensor.quant = _quant(q, tensor, budget)
    b = _U32.unpack_from(data, pos + f[2])[0] if f[2] else 0
    if not 0 <= b < max(nbuf, 1):
        raise LoadError(f"malformed TFLite file: tensor {name!r} uses buffer {b}, "
                        f"but the model has {nbuf} buffers")
    if b and nbuf:
        raw = read_buffer(src, b)
        if raw is not None and raw.size and sparsity is not None:
            tensor.data = sparse_constant(tensor, raw, read_sparsity(sparsity, budget, name), src.constants)
            tensor.sparse, tensor.densified = False, True
        elif raw is not None and raw.size:
            src.constants.add(raw.size, f"tensor {name!r}")
            tensor.data = constant(tensor, raw, alias=src.alias)
    return tensor


def _quant(q, tensor: Tensor, budget) -> Quant:
    """The quantization table `q` of `tensor` (one with scales), checked."""
    name, shape, n = tensor.name, tensor.shape, q.ScaleLength()
    scale = _numpy(q.ScaleAsNumpy, n, budget, f"tensor {name!r} scales").astype(np.float32)
    nz = q.ZeroPointLength()
    zp = _numpy(q.ZeroPointAsNumpy, nz, budget, f"tensor {name!r} zero points").astype(np.int64) \
        if nz else np.zeros(n, np.int64)
    if zp.size != n:
        raise LoadError(f"malformed TFLite file: tensor {name!r} has {n} scales but {zp.size} zero points")
    axis = int(q.QuantizedDimension())
    if n > 1 and not (0 <= axis < len(shape) and shape[axis] == n):
        raise LoadError(f"malformed TFLite file: tensor {name!r} has {n} scales for axis {axis} "
                        f"of shape {shape}")
    if tensor.type in ZERO_POINT_RANGE:  # the types whose quantization is used
        _check_quant(name, tensor.type, scale, zp)
    return Quant(scale, zp, axis)


def _check_quant(name: str, type_: int, scale: np.ndarray, zp: np.ndarray) -> None:
    # below float32's smallest normal number, scales lose precision and products of them vanish
    ok = np.isfinite(scale) & (scale >= np.finfo(np.float32).tiny)
    if not ok.all():
        raise LoadError(f"tensor {name!r}: quantization scale {scale[~ok][0]} is not a finite positive "
                        "(normal float32) number")
    lo, hi = ZERO_POINT_RANGE[type_]
    if ((zp < lo) | (zp > hi)).any():
        bad = zp[(zp < lo) | (zp > hi)][0]
        raise LoadError(f"tensor {name!r}: zero point {bad} is out of range for {TYPE_NAMES[type_]} "
                        f"[{lo}, {hi}]")
