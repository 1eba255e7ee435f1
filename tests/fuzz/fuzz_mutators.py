"""Mutations of the reference models, and the check every mutant must pass.
Shared by the fuzz tests (tests/fuzz) and benchmarks/fuzz_long.py.

A mutant is named by (format, seed model, mutation kind, seed): mutate()
rebuilds it deterministically, so any failure can be replayed with
`python benchmarks/fuzz_long.py --replay FMT MODEL KIND SEED`.
"""
from __future__ import annotations

import contextlib
import functools
import glob
import os
import random
import resource
import signal
import struct
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

BYTE_KINDS = ("truncate", "bitflip", "bytes", "chunk")
TFLITE_KINDS = BYTE_KINDS + ("u32", "u32swap", "field", "fieldswap")
ONNX_KINDS = BYTE_KINDS + ("dims", "dtype", "raw_len", "attr", "dangling", "cycle", "op_type", "input_shape",
                           "drop", "swap_inputs", "opset", "output")
KINDS = {"onnx": ONNX_KINDS, "tflite": TFLITE_KINDS}

# Values that break naive bounds checks, as unsigned 32-bit words.
EDGE_U32 = (0, 1, 2, 3, 4, 7, 8, 15, 16, 127, 128, 255, 256, 1023, 4096, 0x7FFF, 0x8000, 0xFFFF, 0x10000,
            0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF)
EDGE_I64 = (0, 1, -1, 2, 3, -2, 7, 255, 256, 1 << 15, 1 << 16, (1 << 31) - 1, 1 << 31, -(1 << 31), 1 << 32,
            1 << 40, (1 << 62), (1 << 63) - 1, -(1 << 63))


def seed_models(fmt: str) -> list[str]:
    """Reference models of a format, as paths relative to the repository."""
    pattern = {"onnx": "test_models/onnx/*.onnx", "tflite": "test_models/tflite/**/*.tflite"}[fmt]
    return sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, pattern), recursive=True))


@functools.lru_cache(maxsize=None)
def model_bytes(rel: str) -> bytes:
    with open(os.path.join(REPO, rel), "rb") as f:
        return f.read()


def mutate(fmt: str, data: bytes, kind: str, rng: random.Random) -> bytes:
    if len(data) < 8:  # already cut to nothing by a stacked truncation
        return data
    if kind in BYTE_KINDS:
        return _BYTE[kind](bytearray(data), rng)
    if fmt == "tflite":
        try:
            return _TFLITE[kind](bytearray(data), rng)
        except Exception:  # noqa: BLE001 - a stacked mutation: the fields of broken bytes cannot be found
            return _u32(bytearray(data), rng)
    return _onnx_mutate(data, kind, rng)


def mutant(fmt: str, rel: str, kind: str, seed: int) -> bytes:
    """The mutant named by (fmt, rel, kind, seed), rebuilt deterministically."""
    rng = random.Random(f"{fmt}:{rel}:{kind}:{seed}")
    data = model_bytes(rel)
    # Stack a second mutation now and then: single mutations rarely reach the
    # code behind the first check that catches them.
    data = mutate(fmt, data, kind, rng)
    if rng.random() < 0.2:
        data = mutate(fmt, data, rng.choice(KINDS[fmt]), rng)
    return data


# -- byte level ---------------------------------------------------------------------------------
def _truncate(b: bytearray, rng) -> bytes:
    n = len(b)
    cut = rng.choice([rng.randrange(n), rng.randrange(min(n, 64)), n - 1 - rng.randrange(min(n, 64)),
                      (rng.randrange(n) // 4) * 4])
    return bytes(b[:cut])


def _bitflip(b: bytearray, rng) -> bytes:
    for _ in range(rng.choice((1, 1, 2, 4, 8))):
        pos = rng.randrange(len(b))
        b[pos] ^= 1 << rng.randrange(8)
    return bytes(b)


def _bytes(b: bytearray, rng) -> bytes:
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(len(b))
        n = rng.randint(1, 16)
        fill = rng.choice([bytes(rng.getrandbits(8) for _ in range(n)), b"\xff" * n, b"\x00" * n, b"\x7f" * n])
        b[pos:pos + n] = fill[:len(b) - pos]
    return bytes(b)


def _chunk(b: bytearray, rng) -> bytes:
    """Delete, duplicate or move a chunk (shifts every offset after it)."""
    n = len(b)
    a = rng.randrange(n)
    e = min(n, a + rng.choice((1, 4, 8, 64, 1024)))
    piece = bytes(b[a:e])
    op = rng.randrange(3)
    if op == 0:
        del b[a:e]
    elif op == 1:
        b[a:a] = piece
    else:
        del b[a:e]
        p = rng.randrange(len(b) + 1)
        b[p:p] = piece
    return bytes(b)


_BYTE = {"truncate": _truncate, "bitflip": _bitflip, "bytes": _bytes, "chunk": _chunk}


# -- TFLite: 32-bit words and schema fields -----------------------------------------------------
def _u32_value(rng, old: int, size: int) -> int:
    return rng.choice([rng.choice(EDGE_U32), old + rng.choice((-8, -4, -1, 1, 4, 8)), size, size - 4,
                       size + 4, old * 2, rng.getrandbits(32)]) & 0xFFFFFFFF


def _u32(b: bytearray, rng) -> bytes:
    for _ in range(rng.choice((1, 1, 2, 3))):
        pos = rng.randrange(len(b) // 4) * 4
        old = struct.unpack_from("<I", b, pos)[0]
        struct.pack_into("<I", b, pos, _u32_value(rng, old, len(b)))
    return bytes(b)


def _u32swap(b: bytearray, rng) -> bytes:
    words = len(b) // 4
    i, j = rng.randrange(words) * 4, rng.randrange(words) * 4
    b[i:i + 4], b[j:j + 4] = b[j:j + 4], b[i:i + 4]
    return bytes(b)


@functools.lru_cache(maxsize=16)
def _tflite_fields(data: bytes) -> tuple:
    """(position, struct format, group) of the schema fields that hold counts,
    indices, offsets, types and shapes in a valid model."""
    from tflite.Model import Model

    out = []

    def field(tab, slot, fmt, group):
        o = tab.Offset(slot)
        if o:
            out.append((tab.Pos + o, fmt, group))

    def vector(tab, slot, fmt, group):
        o = tab.Offset(slot)
        if o:
            start = tab.Vector(o)
            n = tab.VectorLen(o)
            out.append((start - 4, "<I", "length"))
            step = struct.calcsize(fmt)
            out.extend((start + k * step, fmt, group) for k in range(min(n, 64)))

    def table_fields(tab, group):
        # every field of a table whose layout we do not spell out (builtin options);
        # the width is a guess: a 4-byte write over a 1-byte field hits its neighbours too
        vt = tab.Pos - struct.unpack_from("<i", tab.Bytes, tab.Pos)[0]
        vsize = struct.unpack_from("<H", tab.Bytes, vt)[0]
        for k in range(4, vsize, 2):
            o = struct.unpack_from("<H", tab.Bytes, vt + k)[0]
            if o:
                pos = tab.Pos + o
                out.append((pos, "<i" if pos % 4 == 0 and pos + 4 <= len(data) else "<b", group))

    m = Model.GetRootAs(data, 0)
    t = m._tab
    field(t, 4, "<I", "version")
    vector(t, 6, "<I", "offset")
    vector(t, 8, "<I", "offset")
    vector(t, 12, "<I", "offset")
    for i in range(m.OperatorCodesLength()):
        c = m.OperatorCodes(i)._tab
        field(c, 4, "<b", "opcode")
        field(c, 8, "<i", "version")
        field(c, 10, "<i", "opcode")
    for i in range(m.BuffersLength()):
        bt = m.Buffers(i)._tab
        field(bt, 6, "<Q", "u64")
        field(bt, 8, "<Q", "u64")
        o = bt.Offset(4)
        if o:
            start, n = bt.Vector(o), bt.VectorLen(o)
            out.append((start - 4, "<I", "length"))
            if n <= 64 and n % 4 == 0:  # small buffers hold parameters: shapes, axes, paddings
                out.extend((start + k, "<i", "data") for k in range(0, n, 4))
    sg = m.Subgraphs(0)
    st = sg._tab
    vector(st, 4, "<I", "offset")
    vector(st, 6, "<i", "tensor")
    vector(st, 8, "<i", "tensor")
    vector(st, 10, "<I", "offset")
    for i in range(sg.TensorsLength()):
        tt = sg.Tensors(i)
        tab = tt._tab
        vector(tab, 4, "<i", "dim")
        field(tab, 6, "<b", "type")
        field(tab, 8, "<I", "buffer")
        vector(tab, 18, "<i", "dim")
        q = tt.Quantization()
        if q is not None:
            vector(q._tab, 8, "<f", "scale")
            vector(q._tab, 10, "<q", "i64")
            field(q._tab, 16, "<i", "axis")
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        tab = op._tab
        field(tab, 4, "<I", "opcode_index")
        vector(tab, 6, "<i", "tensor")
        vector(tab, 8, "<i", "tensor")
        field(tab, 10, "<B", "options_type")
        opts = op.BuiltinOptions()
        if opts is not None:
            table_fields(opts, "option")
    return tuple(out)


def _field_value(rng, fmt: str, old, size: int):
    if fmt == "<f":
        return rng.choice([0.0, -1.0, 1e-45, 1e38, float("inf"), float("nan"), -old, old * 1e6])
    bits = struct.calcsize(fmt) * 8
    signed = fmt[1].islower()
    v = rng.choice([rng.choice(EDGE_I64), old + rng.choice((-2, -1, 1, 2)), size, size - 4, size + 4, -old,
                    old * 2, rng.getrandbits(bits)])
    v &= (1 << bits) - 1
    if signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _field(b: bytearray, rng) -> bytes:
    fields = _tflite_fields(bytes(b))
    for _ in range(rng.choice((1, 1, 2))):
        pos, fmt, _ = rng.choice(fields)
        if pos + struct.calcsize(fmt) <= len(b):
            old = struct.unpack_from(fmt, b, pos)[0]
            struct.pack_into(fmt, b, pos, _field_value(rng, fmt, old, len(b)))
    return bytes(b)


def _fieldswap(b: bytearray, rng) -> bytes:
    """Swap two fields of the same kind: two tensors' buffers, two offsets, two dims..."""
    fields = _tflite_fields(bytes(b))
    pos, fmt, group = rng.choice(fields)
    same = [f for f in fields if f[1] == fmt and f[2] == group and f[0] != pos]
    if same:
        other = rng.choice(same)[0]
        n = struct.calcsize(fmt)
        b[pos:pos + n], b[other:other + n] = b[other:other + n], b[pos:pos + n]
    return bytes(b)


_TFLITE = {"u32": _u32, "u32swap": _u32swap, "field": _field, "fieldswap": _fieldswap}


# -- ONNX: protobuf fields through onnx.ModelProto ----------------------------------------------
ONNX_OPS = ("Conv", "Relu", "Add", "MatMul", "Gemm", "Reshape", "Transpose", "Concat", "Gather", "Slice",
            "Softmax", "MaxPool", "AveragePool", "BatchNormalization", "Resize", "Pad", "Split", "Squeeze",
            "Unsqueeze", "ReduceMean", "Mul", "Sub", "Div", "Sigmoid", "Flatten", "Expand", "Where", "Loop",
            "If", "Shape", "Cast", "ConstantOfShape", "Range", "Tile", "NonZero", "TopK", "Einsum", "Identity")


@functools.lru_cache(maxsize=32)
def _onnx_parsed(data: bytes):
    import onnx
    m = onnx.ModelProto()
    m.ParseFromString(data)
    return m


def _onnx_mutate(data: bytes, kind: str, rng) -> bytes:
    import onnx
    m = onnx.ModelProto()
    try:
        m.CopyFrom(_onnx_parsed(data))
    except Exception:  # a stacked mutation after a byte mutation: the bytes no longer parse
        return _bitflip(bytearray(data), rng)
    _ONNX[kind](m, rng)
    try:
        return m.SerializeToString()
    except Exception:  # noqa: BLE001 - e.g. an invalid UTF-8 string: fall back to a byte mutation
        return _bitflip(bytearray(data), rng)


def _pick(seq, rng):
    return seq[rng.randrange(len(seq))] if len(seq) else None


def _edge_int(rng, old: int = 1) -> int:
    return rng.choice([rng.choice(EDGE_I64), old + rng.choice((-1, 1)), -old, old * 1000, rng.randint(-5, 10)])


def _m_dims(m, rng):
    t = _pick(m.graph.initializer, rng)
    if t is None:
        return _m_input_shape(m, rng)
    op = rng.randrange(3)
    if op == 0 and len(t.dims):
        t.dims[rng.randrange(len(t.dims))] = _edge_int(rng, t.dims[0])
    elif op == 1:
        t.dims.append(rng.choice((0, 1, 2, 1 << 20, 1 << 40)))
    elif len(t.dims):
        del t.dims[rng.randrange(len(t.dims))]


def _m_dtype(m, rng):
    t = _pick(m.graph.initializer, rng)
    if t is not None:
        t.data_type = rng.choice(list(range(0, 27)) + [1 << 20, -1 & 0x7FFFFFFF])


def _m_raw_len(m, rng):
    ts = [t for t in m.graph.initializer if t.raw_data] or list(m.graph.initializer)
    t = _pick(ts, rng)
    if t is None:
        return
    raw = t.raw_data
    op = rng.randrange(4)
    if op == 0:
        t.raw_data = raw[:rng.randrange(len(raw) + 1)]
    elif op == 1:
        t.raw_data = raw + bytes(rng.choice((1, 3, 4, 8, 4096)))
    elif op == 2:
        t.raw_data = b""
        del t.float_data[:]
    else:  # data both inline and in raw_data, or in the wrong typed field
        t.int64_data.extend([rng.choice(EDGE_I64) for _ in range(rng.randint(1, 5))])


def _m_attr(m, rng):
    import onnx
    nodes = [n for n in m.graph.node if n.attribute]
    n = _pick(nodes, rng)
    if n is None:
        return _m_dangling(m, rng)
    a = _pick(n.attribute, rng)
    op = rng.randrange(6)
    if a.type == onnx.AttributeProto.INT:
        a.i = _edge_int(rng, a.i)
    elif a.type == onnx.AttributeProto.INTS and len(a.ints) and op < 4:
        a.ints[rng.randrange(len(a.ints))] = _edge_int(rng, a.ints[0])
    elif a.type == onnx.AttributeProto.INTS and op == 4:
        a.ints.append(_edge_int(rng))
    elif a.type == onnx.AttributeProto.INTS and len(a.ints):
        del a.ints[rng.randrange(len(a.ints))]
    elif a.type == onnx.AttributeProto.FLOAT:
        a.f = rng.choice([0.0, -1.0, float("nan"), float("inf"), 1e30, -a.f])
    elif a.type == onnx.AttributeProto.STRING:
        a.s = rng.choice([b"", b"bogus", b"\xff\xfe", b"NOTSET", b"SAME_UPPER", b"VALID", a.s[::-1]])
    elif a.type == onnx.AttributeProto.TENSOR:
        if len(a.t.dims):
            a.t.dims[0] = _edge_int(rng, a.t.dims[0])
        else:
            a.t.dims.append(rng.choice((0, 2, 1 << 40)))
    if rng.random() < 0.15:  # wrong attribute type for its name
        a.type = rng.choice((1, 2, 3, 4, 5, 6, 7, 8))


def _m_dangling(m, rng):
    n = _pick([n for n in m.graph.node if n.input], rng)
    if n is not None:
        n.input[rng.randrange(len(n.input))] = rng.choice(("does_not_exist", "", n.output[0] if n.output else "x"))


def _m_cycle(m, rng):
    nodes = m.graph.node
    if len(nodes) < 2:
        return _m_dangling(m, rng)
    i = rng.randrange(len(nodes) - 1)
    j = rng.randrange(i, len(nodes))
    if nodes[i].input and nodes[j].output:
        nodes[i].input[rng.randrange(len(nodes[i].input))] = nodes[j].output[0]


def _m_op_type(m, rng):
    n = _pick(m.graph.node, rng)
    if n is not None:
        n.op_type = rng.choice(ONNX_OPS)
        if rng.random() < 0.1:
            n.domain = rng.choice(("com.microsoft", "ai.onnx.ml", "bogus"))


def _m_input_shape(m, rng):
    vi = _pick(m.graph.input, rng)
    if vi is None or not vi.type.HasField("tensor_type"):
        return
    tt = vi.type.tensor_type
    op = rng.randrange(4)
    if op == 0 and len(tt.shape.dim):
        d = tt.shape.dim[rng.randrange(len(tt.shape.dim))]
        d.dim_value = _edge_int(rng, d.dim_value)
    elif op == 1:
        tt.shape.dim.add().dim_value = rng.choice((1, 2, 1 << 20))
    elif op == 2:
        tt.elem_type = rng.randrange(0, 27)
    elif len(tt.shape.dim):
        tt.shape.dim[rng.randrange(len(tt.shape.dim))].dim_param = "N"


def _m_drop(m, rng):
    coll = rng.choice([m.graph.node, m.graph.initializer, m.graph.input, m.graph.output])
    if len(coll):
        del coll[rng.randrange(len(coll))]


def _m_swap_inputs(m, rng):
    n = _pick([n for n in m.graph.node if len(n.input) > 1], rng)
    if n is not None:
        i, j = rng.randrange(len(n.input)), rng.randrange(len(n.input))
        n.input[i], n.input[j] = n.input[j], n.input[i]


def _m_opset(m, rng):
    o = _pick(m.opset_import, rng)
    if o is not None:
        o.version = rng.choice((0, 1, 6, 7, 9, 11, 13, 17, 21, 23, 24, 99, 1 << 40))
    if rng.random() < 0.3:
        m.ir_version = rng.choice((0, 1, 3, 7, 10, 1 << 40))


def _m_output(m, rng):
    o = _pick(m.graph.output, rng)
    if o is None:
        return
    op = rng.randrange(3)
    if op == 0:
        o.name = "does_not_exist"
    elif op == 1:
        m.graph.output.add().CopyFrom(o)  # the same output twice
    else:
        src = _pick(m.graph.input, rng) or _pick(m.graph.initializer, rng)
        if src is not None:
            o.name = src.name  # an output that is an input or a constant


_ONNX = {"dims": _m_dims, "dtype": _m_dtype, "raw_len": _m_raw_len, "attr": _m_attr, "dangling": _m_dangling,
         "cycle": _m_cycle, "op_type": _m_op_type, "input_shape": _m_input_shape, "drop": _m_drop,
         "swap_inputs": _m_swap_inputs, "opset": _m_opset, "output": _m_output}


# -- the check ----------------------------------------------------------------------------------
class Crash(AssertionError):
    """An exception outside armnn_import's hierarchy, or an invalid written file."""


class Timeout(BaseException):
    """Raised by bounded() when time is up; a BaseException so that no
    `except Exception` in the code under test can swallow it."""


@contextlib.contextmanager
def bounded(seconds: float, memory_bytes: int = 3 << 30):
    """Run the body with a wall-clock bound (Timeout) and at most
    `memory_bytes` of new address space (MemoryError instead of exhausting the
    machine). Main thread only (SIGALRM)."""
    def on_alarm(signum, frame):
        raise Timeout(f"over {seconds} s")

    old_handler = signal.signal(signal.SIGALRM, on_alarm)
    old_limit = resource.getrlimit(resource.RLIMIT_AS)
    cap = _vm_size() + memory_bytes
    if old_limit[1] == resource.RLIM_INFINITY or cap < old_limit[1]:
        resource.setrlimit(resource.RLIMIT_AS, (cap, old_limit[1]))
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        resource.setrlimit(resource.RLIMIT_AS, old_limit)


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def check(data: bytes, out_path: str | None = None) -> dict:
    """Convert `data`; return {"outcome": "converted"|"refused", "error": type name,
    "seconds": ..., "bytes": the .armnn bytes or None, "internal": whether the
    refusal wraps an internal error (a bug hidden as a refusal), "message"}. Raises Crash for any
    exception outside ArmnnImportError, and for a written file that fails
    verify(), does not read back to the same bytes, or (with out_path) differs
    on disk from to_bytes()."""
    import armnn_import
    from armnn_import.errors import ArmnnImportError
    from armnn_import.ir.verify import verify
    from armnn_import.serialize import read, write

    t0 = time.perf_counter()
    try:
        result = armnn_import.convert(data)
        out = result.to_bytes()
    except ArmnnImportError as e:
        text = str(e)
        if "MemoryError" in text:  # a frontend that wraps every exception hides this one
            raise Crash(f"a MemoryError inside {type(e).__name__}: {text[:300]}") from e
        return {"outcome": "refused", "error": type(e).__name__, "seconds": time.perf_counter() - t0,
                "bytes": None, "internal": "internal error" in text,
                "message": _internal_line(text) or _first_reason(text)}
    except (KeyboardInterrupt, Timeout):
        raise
    except BaseException as e:  # noqa: BLE001 - that is what we are looking for
        raise Crash(f"{type(e).__name__} escaped convert(): {e}") from e
    seconds = time.perf_counter() - t0
    try:
        if out_path is not None:
            result.save(out_path)
            with open(out_path, "rb") as f:
                if f.read() != out:
                    raise Crash("the saved file differs from to_bytes()")
        g = read(out)
        verify(g)
        # Compared as bytes: rewriting what was read must give the same file
        # (graph_differences would call NaN weights different from themselves).
        if write(g) != out:
            raise Crash("the file reads back differently: write(read(file)) != file")
    except ArmnnImportError as e:
        raise Crash(f"the converted network does not verify or read back: {type(e).__name__}: {e}") from e
    return {"outcome": "converted", "error": None, "seconds": seconds, "bytes": out, "internal": False,
            "message": ""}


def _first_reason(text: str) -> str:
    """The first line that says something ("2 unsupported nodes:" does not)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].endswith(":"):
        return lines[1][:200]
    return lines[0][:200] if lines else ""


def _internal_line(text: str) -> str:
    """The first line that reports an internal error hidden in a refusal."""
    return next((line.strip()[:300] for line in text.splitlines() if "internal error" in line), "")


def runtime_inputs(armnn_bytes: bytes, rng) -> list:
    """Inputs for the network in `armnn_bytes` (binding id order): random
    floats, zeros for integer and boolean inputs (they are indices or masks)."""
    import numpy as np

    from armnn_import.serialize import read

    g = read(armnn_bytes)
    arrays = []
    for layer in sorted(g.input_layers, key=lambda l: l.binding_id):
        info = layer.outputs[0]
        dt = np.dtype(info.dtype.np_dtype)
        if dt.kind == "f":
            arrays.append(rng.standard_normal(info.shape).astype(dt))
        elif dt == np.uint8:
            arrays.append(rng.integers(0, 256, info.shape, dtype=np.uint8))
        else:
            arrays.append(np.zeros(info.shape, dt))
    return arrays
