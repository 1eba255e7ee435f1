"""serialize.segments writes the bytes the table-by-table way writes (compiled tables, small vectors,
offset vectors), and the writer with segments writes the files it writes without them."""
import dataclasses

import pytest
from hypothesis import given, settings, strategies as st

from armnn_import import convert
from armnn_import.errors import SerializationError
from armnn_import.ir.types import LayerType
from armnn_import.serialize import armnn_schema_generated as fb, tables
from armnn_import.serialize.compiled import compile_table
from armnn_import.serialize.segments import compile_segment
from armnn_import.serialize.writer import _Builder, write_buffer

from reference_models import ROOT

u32 = st.integers(0, 2 ** 32 - 1)
f32 = st.floats(width=32, allow_nan=False)
_INFO = ("Dimensions", "DataType", "QuantizationScale", "QuantizationOffset")
_BASE = ("Index", "LayerName", "LayerType", "InputSlots", "OutputSlots")
_CONV = ("PadLeft", "PadRight", "PadTop", "PadBottom", "StrideX", "StrideY", "BiasEnabled", "DataLayout")


@st.composite
def programs(draw):
    """(program, its values): vectors, offset vectors and tables whose offsets point to earlier items
    or to the one earlier offset (a string)."""
    prog, values = [], []
    ref = lambda: ("e", 0) if not prog or draw(st.booleans()) else ("i", draw(st.integers(0, len(prog) - 1)))  # noqa
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["vec", "offs", "info", "slot", "base", "conv"]))
        if kind == "vec":
            code = draw(st.sampled_from("Ii"))
            v = draw(st.lists(u32 if code == "I" else st.integers(-(2 ** 31), 2 ** 31 - 1), max_size=6))
            prog.append(("vec", code, len(v)))
            values += v
        elif kind == "offs" and prog:
            prog.append(("offs", tuple(draw(st.lists(st.integers(0, len(prog) - 1), max_size=5)))))
        elif kind == "info":
            prog.append(("table", "TensorInfo", _INFO, (ref(), "v", "v", "v")))
            values += [draw(st.integers(0, 8)), draw(f32), draw(st.integers(-(2 ** 31), 2 ** 31 - 1))]
        elif kind == "slot":
            prog.append(("table", "InputSlot", ("Index", "Connection"), (("c", draw(u32)), "conn")))
            values += [draw(u32), draw(u32)]
        elif kind == "base":
            prog.append(("table", "LayerBase", _BASE, ("v", ref(), ("c", draw(st.integers(0, 60))), ref(), ref())))
            values.append(draw(u32))
        elif kind == "conv":
            prog.append(("table", "Convolution2dDescriptor", _CONV, ("v",) * 6 + ("v", ("c", draw(st.integers(0, 1))))))
            values += draw(st.lists(u32, min_size=6, max_size=6)) + [draw(st.booleans())]
    return prog, values


def _builder():
    b = _Builder(1)
    b.ForceDefaults(True)
    b.fb = fb
    return b


def _compiled(b, prog):
    return [it if it[0] != "table" else ("table", *tables.table_specs(b, it[1], it[2]), it[3]) for it in prog]


def _slow(b, prog, values, ext):
    """The program the writer's table-by-table way; its items' offsets."""
    offs, vals = [], iter(values)
    for it in prog:
        if it[0] == "vec":
            offs.append(tables.small_int_vector(b, [next(vals) for _ in range(it[2])], "uint32" if it[1] == "I" else "int32"))
        elif it[0] == "offs":
            offs.append(tables.offsets_vector(b, [offs[j] for j in it[1]]))
        else:
            args = []
            for src in it[3]:
                if src == "v":
                    args.append(next(vals))
                elif src == "conn":
                    args.append(tables.connection(next(vals), next(vals)))
                else:
                    args.append(src[1] if src[0] == "c" else offs[src[1]] if src[0] == "i" else ext[src[1]])
            offs.append(compile_table(*tables.table_specs(b, it[1], it[2]))(b, args))
    return offs


@settings(max_examples=200, deadline=None)
@given(programs(), st.integers(0, 7), st.integers(0, 5))
def test_segments_write_the_bytes_of_the_tables_one_by_one(prog_values, r, name_len):
    """From any start residue, in a buffer that grows (it starts at 1 byte); the segment is ready
    once the tables one by one have written its vtables (at most one round per table)."""
    prog, values = prog_values
    slow, fast, used = _builder(), _builder(), 0
    rounds = 2 + sum(it[0] == "table" for it in prog)
    for k in range(rounds):
        for b in (slow, fast):
            tables.room(b, 8)
            b.Pad((r - (len(b.Bytes) - b.head)) % 8)
        ext = tuple(tables.string(b, "n" * name_len) for b in (slow, fast))
        start = (len(fast.Bytes) - fast.head) & 7
        want = _slow(slow, prog, values, ext[:1])
        exports = tuple(range(len(prog)))
        fn = compile_segment(_compiled(fast, prog), start, fast.vtables, exports)
        if fn is None:
            got = _slow(fast, prog, values, ext[1:])
        else:
            got, used = list(fn(fast, values, ext[1:])), used + 1
        assert got == want
        assert bytes(fast.Bytes[fast.head:]) == bytes(slow.Bytes[slow.head:])
        assert fast.minalign == slow.minalign
    assert used, "the segment was never ready"


# convolutions, Splitter and Concat (view_origins), LSTM (its input params), per-axis int8 and
# depthwise weights (23.08's layout), Gather (no descriptor in 19.02: refused there)
_MODELS = ["onnx/mobilenetv2_small.onnx", "onnx/shufflenetv2_small.onnx", "onnx/lstm_2layer_bidir.onnx",
           "tflite/models/efficientnet_mini.int8.tflite", "tflite/models/embedding_keras.float32.tflite"]


@pytest.mark.parametrize("target", ["19.02", "20.08", "23.08"])
@pytest.mark.parametrize("model", _MODELS)
def test_the_writer_writes_the_same_file_with_segments(model, target, tmp_path):
    """The CLI's written file, and write_buffer with or without segments (a small first buffer
    makes it grow in the middle of segments)."""
    path = ROOT / model
    if not path.exists():
        pytest.skip(f"{model} is not in test_models/")
    try:
        g = convert(str(path), target=target).network
    except Exception as e:  # noqa: BLE001 - a model this target refuses: nothing to write
        pytest.skip(f"{model} at {target}: {type(e).__name__}")
    want = bytes(write_buffer(g, segments=False))
    assert bytes(write_buffer(g)) == want
    assert bytes(write_buffer(g, buffer_size=64)) == want
    out = tmp_path / "out.armnn"
    from armnn_import.cli import main
    assert main([str(path), "-o", str(out), "--target", target]) == 0
    assert out.read_bytes() == want


@pytest.mark.parametrize("change", [dict(stride_x=-1), dict(bias_enabled=2), dict(pad_left=2 ** 32)])
def test_a_value_the_format_cannot_hold_is_refused_the_same_way(change):
    g = convert(str(ROOT / "onnx/mobilenetv2_small.onnx"), target="20.08").network  # (bias_enabled: 20.08 on)
    conv = next(l for l in g.layers if l.type == LayerType.Convolution2d)
    conv.desc = desc = dataclasses.replace(conv.desc)
    for k, v in change.items():  # (past the descriptor's own conversions, as a bug would)
        object.__setattr__(desc, k, v)
    errors = []
    for segments in (False, True):
        with pytest.raises(SerializationError) as e:
            write_buffer(g, segments=segments)
        errors.append(str(e.value))
    assert errors[0] == errors[1] and conv.name in errors[0]
