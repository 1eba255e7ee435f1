"""Malformed and hostile .tflite files: truncated, bit-flipped, bad offsets,
absurd vector lengths, dangling references. Every one must give a clear
armnn_import error (LoadError for a broken file), never a traceback, a hang or
a huge allocation; the CLI must exit with code 1 and one line per error."""
from __future__ import annotations

import importlib
import os
import struct
import subprocess
import sys
import time

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from tfl_builder import ModelBuilder  # noqa: E402

from armnn_import.errors import ArmnnImportError, LoadError  # noqa: E402
from armnn_import.plugin import ConvertOptions  # noqa: E402
from armnn_import.report import Report  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def convert(data):
    from armnn_import_frontends.tflite import FRONTEND
    return FRONTEND.convert(data, ConvertOptions(), Report())


def valid_model(**tweaks) -> bytes:
    """conv -> fully connected; `tweaks` corrupt the builder's tables."""
    rng = np.random.default_rng(7)
    mb = ModelBuilder()
    x = mb.input("x", (1, 4, 4, 2))
    w = mb.const("w", rng.standard_normal((3, 3, 3, 2)).astype(np.float32))
    b = mb.const("b", np.zeros(3, np.float32))
    y = mb.op("CONV_2D", [x, w, b], "Conv2DOptions", padding="VALID", stride_w=1, stride_h=1, out_shape=(1, 2, 2, 3))
    fw = mb.const("fw", rng.standard_normal((5, 12)).astype(np.float32))
    mb.output(mb.op("FULLY_CONNECTED", [y, fw, -1], "FullyConnectedOptions", out_shape=(1, 5)))
    for key, fn in tweaks.items():
        fn(mb)
    return mb.build(infer_shapes=False)


BASE = valid_model()


def test_base_model_converts():
    assert convert(BASE).summary()["FullyConnected"] == 1


def _tables(data):
    model_mod = importlib.import_module("tflite.Model")
    model = model_mod.Model.GetRootAs(data, 0)
    return model, model.Subgraphs(0)


def _vector_len_pos(table, vt_offset: int) -> int:
    """Position of the length word of the vector in field `vt_offset` of `table`."""
    o = table._tab.Offset(vt_offset)
    return table._tab.Vector(o) - 4


def _patch(data: bytes, pos: int, fmt: str, value) -> bytes:
    b = bytearray(data)
    struct.pack_into(fmt, b, pos, value)
    return bytes(b)


@pytest.mark.parametrize("data, message", [
    (b"", "only 0 bytes"),
    (b"\x10\x00\x00\x00TFL", "only 7 bytes"),
    (b"\x10\x00\x00\x00ONNX" + bytes(64), "identifier"),
    (b"\xf0\xff\xff\x7fTFL3" + bytes(8), "root offset"),
])
def test_not_a_model(data, message):
    with pytest.raises(LoadError, match=message):
        convert(data)


def test_every_truncation_is_a_load_error():
    # flatbuffers are written back to front: the end holds the weights (then only the
    # builder's alignment padding, which can go), the start the root
    end = len(BASE.rstrip(b"\0"))
    for n in list(range(0, end, max(1, end // 97))) + [end - 1]:
        with pytest.raises(LoadError):
            convert(BASE[:n])


def test_bit_flips_give_results_or_clear_errors():
    rng = np.random.default_rng(2024)
    outcomes = {"ok": 0, "error": 0}
    start = time.perf_counter()
    for _ in range(600):
        b = bytearray(BASE)
        for _ in range(rng.integers(1, 4)):
            b[rng.integers(0, len(b))] ^= 1 << int(rng.integers(0, 8))
        try:
            convert(bytes(b))
            outcomes["ok"] += 1
        except ArmnnImportError as e:
            assert str(e) and "\n" not in str(e).strip() or e.lines()
            outcomes["error"] += 1
    assert outcomes["error"] > 0 and outcomes["ok"] > 0  # flips in weight bytes are harmless
    assert time.perf_counter() - start < 120


def test_huge_vector_lengths_fail_fast():
    model, sg = _tables(BASE)
    cases = [
        _vector_len_pos(sg, 4),      # subgraph tensors
        _vector_len_pos(sg, 10),     # subgraph operators
        _vector_len_pos(model, 12),  # model buffers
        _vector_len_pos(sg.Tensors(0), 4),  # a tensor's shape
        _vector_len_pos(sg.Operators(0), 6),  # an operator's inputs
    ]
    for pos in cases:
        for n in (0x7FFFFFFF, 0xFFFFFFFF, len(BASE)):
            start = time.perf_counter()
            with pytest.raises(LoadError):
                convert(_patch(BASE, pos, "<I", n))
            assert time.perf_counter() - start < 2


def test_bad_table_offsets():
    model, sg = _tables(BASE)
    # the subgraph's offset in the model's subgraph vector: past the end, and backwards via vtable
    pos = _vector_len_pos(model, 8) + 4
    with pytest.raises(LoadError):
        convert(_patch(BASE, pos, "<I", len(BASE) * 2))
    # a vtable offset (soffset) pointing before the start of the file
    with pytest.raises(LoadError):
        convert(_patch(BASE, sg._tab.Pos, "<i", 0x7FFFFFF0))
    with pytest.raises(LoadError):
        convert(_patch(BASE, sg._tab.Pos, "<i", -0x7FFFFFF0))


def test_constant_buffer_past_the_end_of_the_file():
    model, _ = _tables(BASE)
    buf = model.Buffers(1)
    pos = buf._tab.Vector(buf._tab.Offset(4)) - 4
    with pytest.raises(LoadError):
        convert(_patch(BASE, pos, "<I", len(BASE)))


def _retype(index, **fields):
    def fn(mb):
        mb.tensors[index].update(fields)
    return fn


def test_dangling_references():
    with pytest.raises(LoadError, match="tensor 40"):
        convert(valid_model(bad=lambda mb: mb.ops[0][2].__setitem__(0, 40)))
    with pytest.raises(LoadError, match="subgraph outputs"):
        convert(valid_model(bad=lambda mb: mb.outputs.append(99)))
    # a constant whose buffer holds fewer bytes than its shape needs
    with pytest.raises(LoadError, match="216 bytes of data, but shape \\[3, 3, 3, 3\\] needs 324 bytes"):
        convert(valid_model(bad=_retype(1, shape=[3, 3, 3, 3])))


def test_missing_required_input_is_a_clear_error():
    # the FULLY_CONNECTED weights left out (-1)
    with pytest.raises(ArmnnImportError) as e:
        convert(valid_model(bad=lambda mb: mb.ops[1][2].__setitem__(1, -1)))
    assert "FULLY_CONNECTED" in str(e.value)


def test_absurd_shapes_are_refused_before_allocation():
    with pytest.raises(LoadError, match="elements"):
        convert(valid_model(bad=_retype(5, shape=[1 << 20, 1 << 20])))
    with pytest.raises(LoadError, match="rank"):
        convert(valid_model(bad=_retype(0, shape=[1] * 30)))
    with pytest.raises(LoadError, match="negative"):
        convert(valid_model(bad=_retype(0, shape=[1, -4, 4, 2])))


def test_wrong_schema_version():
    model, _ = _tables(BASE)
    o = model._tab.Offset(4)
    with pytest.raises(LoadError, match="schema version"):
        convert(_patch(BASE, model._tab.Pos + o, "<I", 2))


def _cli(*args, cwd):
    """armnn_import.cli.main in a subprocess, with this repository's TFLite
    frontend registered whether or not the package is installed."""
    code = ("import sys\n"
            "import armnn_import.discovery as F\n"
            "from importlib.metadata import EntryPoint\n"
            "F.available_frontends = lambda: {'tflite': EntryPoint('tflite', 'armnn_import_frontends.tflite:FRONTEND', F.GROUP)}\n"
            "from armnn_import.cli import main\n"
            "sys.exit(main())\n")
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("damage", ["truncate", "flip_root", "huge_vector"])
def test_cli_exits_1_with_one_line(tmp_path, damage):
    model, sg = _tables(BASE)
    data = {"truncate": BASE[: len(BASE) // 2],
            "flip_root": _patch(BASE, 0, "<I", len(BASE) + 100),
            "huge_vector": _patch(BASE, _vector_len_pos(sg, 4), "<I", 0x7FFFFFFF)}[damage]
    path = tmp_path / "bad.tflite"
    path.write_bytes(data)
    proc = _cli(str(path), "-o", str(tmp_path / "out.armnn"), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "bad.tflite" in lines[0]
    assert not (tmp_path / "out.armnn").exists()


def test_cli_converts_the_valid_model(tmp_path):
    path = tmp_path / "good.tflite"
    path.write_bytes(BASE)
    proc = _cli(str(path), "-o", str(tmp_path / "good.armnn"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "good.armnn").read_bytes()[4:8] == b"ARMN"
