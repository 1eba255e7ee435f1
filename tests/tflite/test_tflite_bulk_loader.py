"""bulk.py reads a subgraph's tensors and operators at once; where a file is irregular it
gives up and the per-tensor reader reads them with its checks. Both ways must give the same
model for every reference file, and the same model or the same error for damaged files
(seeded byte damage). test_tflite_fast_loader.py checks load() against the generated objects."""
import glob
import os
import random
import struct

import pytest

from armnn_import.errors import LoadError
from armnn_import_frontends.tflite import bulk
from armnn_import_frontends.tflite.model import load

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "test_models", "tflite")
FILES = sorted(glob.glob(os.path.join(ROOT, "**", "*.tflite"), recursive=True))
SMALL = [p for p in FILES if os.path.getsize(p) < 3000]


def _summary(data):
    """Everything load() gives, as comparable values (or the error's type and text)."""
    try:
        m = load(data)
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e).__name__, str(e)
    tensors = [(t.index, t.name, t.shape, t.signature, t.type, t.is_variable, t.sparse, t.densified,
                None if t.data is None else (t.data.dtype.str, t.data.shape, t.data.flags.writeable,
                                             t.data.tobytes()),
                None if t.quant is None else (t.quant.scale.tobytes(), t.quant.zero_point.tobytes(), t.quant.axis))
               for t in m.tensors]
    ops = [(o.index, o.op, o.version, o.inputs, o.outputs, repr(o.options), o.custom_code, o.intermediates)
           for o in m.operators]
    types = {type(v) for t in m.tensors for v in (t.index, t.type, *t.shape)}
    return tensors, ops, m.inputs, m.outputs, m.densify_folded, types


def _per_tensor(monkeypatch, data):
    with monkeypatch.context() as mp:
        mp.setattr(bulk, "read_tensors", lambda *a: None)
        mp.setattr(bulk, "read_operators", lambda *a: None)
        return _summary(data)


def test_every_reference_file_is_read_at_once_and_the_same(monkeypatch):
    calls, subgraphs = [], 0
    real = bulk._read
    monkeypatch.setattr(bulk, "_read", lambda *a: calls.append(1) or real(*a))
    for path in FILES:
        data = open(path, "rb").read()
        got = _summary(data)
        assert got == _per_tensor(monkeypatch, data), path
        assert got[-1] == {int}, path  # plain ints, as struct gives them
        subgraphs += 1 + len(load(data).subgraphs)  # (the main one, and a WHILE's cond and body)
    assert len(calls) == 2 * subgraphs  # one per subgraph read (_summary and load): none fell back


@pytest.mark.parametrize("seed", range(4))
def test_damaged_files_give_the_same_model_or_error(monkeypatch, seed):
    rng = random.Random(seed)
    outcomes = set()
    for _ in range(150):
        data = bytearray(open(rng.choice(SMALL), "rb").read())
        for _ in range(rng.choice([1, 2, 4, 8])):
            data[rng.randrange(len(data))] = rng.randrange(256)
        data = bytes(data)
        got = _summary(data)
        assert got == _per_tensor(monkeypatch, data)
        outcomes.add(isinstance(got[0], str))
    assert outcomes == {True, False}  # some loaded, some were refused


def _tensor_vector_len_at(data: bytes, tensor: int, field: int) -> int:
    """Where the length of `field` (0: shape, 3: name) of tensor `tensor` is stored."""
    from armnn_import_frontends.tflite import fasttable as FT
    model = struct.unpack_from("<I", data, 0)[0]
    mf = FT.fields(data, model, 5)
    sg = FT.tables(data, model + mf[2])[0]
    pos = FT.tables(data, sg + FT.fields(data, sg, 4)[0])[tensor]
    at = pos + FT.fields(data, pos, 8)[field]
    return at + struct.unpack_from("<I", data, at)[0]


@pytest.mark.parametrize("field, message", [(0, "rank"), (3, "")])
def test_a_huge_vector_length_is_refused_without_allocating(field, message):
    """A length of 2^31 - 1 (bounded by the file before any array is made): the shape's is the
    per-tensor reader's rank error; a name's past the end is cut, as the per-tensor reader does."""
    data = open(os.path.join(ROOT, "models", "mobilenet_v1_mini.float32.tflite"), "rb").read()
    at = _tensor_vector_len_at(data, 0, field)
    bad = data[:at] + struct.pack("<I", 0x7FFFFFFF) + data[at + 4:]
    if field == 0:
        with pytest.raises(LoadError, match=message):
            load(bad)
    else:
        assert load(bad).tensors[0].name  # the name runs to the end of the file
    assert bulk.read_tensors(_source(bad), *_tensor_vector(bad)) is None


def _source(data):
    from tflite.Model import Model

    from armnn_import.limits import ConstantBudget
    from armnn_import_frontends.tflite.buffers import Source
    from armnn_import_frontends.tflite.model import _Budget
    model = Model.GetRootAs(data, 0)
    return Source(model, model.BuffersLength(), _Budget(len(data)), ConstantBudget())


def _tensor_vector(data):
    from armnn_import_frontends.tflite import fasttable as FT
    from armnn_import_frontends.tflite.model import Tensor, _tensor
    model = struct.unpack_from("<I", data, 0)[0]
    sg = FT.tables(data, model + FT.fields(data, model, 5)[2])[0]
    at = sg + FT.fields(data, sg, 4)[0]
    n = struct.unpack_from("<I", data, at + struct.unpack_from("<I", data, at)[0])[0]
    return at, n, Tensor, _tensor


def test_large_constants_still_alias_the_file():
    """Read at once, a constant of at least 64 KiB is a read-only view of the file's bytes."""
    from armnn_import_frontends.tflite.buffers import ALIAS_MIN_BYTES
    sizes = {p: os.path.getsize(p) for p in FILES}
    path = max(sizes, key=sizes.get)
    m = load(open(path, "rb").read())
    big = [t for t in m.tensors if t.data is not None and t.data.nbytes >= ALIAS_MIN_BYTES]
    assert big, path
    assert all(not t.data.flags.writeable for t in big)  # views of the (immutable) bytes
    small = [t for t in m.tensors if t.data is not None and t.data.nbytes < ALIAS_MIN_BYTES]
    assert small and all(t.data.flags.writeable for t in small)  # copies
