"""serialize.tables writes the bytes the stock flatbuffers.Builder and the generated bindings write."""
import flatbuffers
from hypothesis import given, settings, strategies as st

from armnn_import.serialize import tables
from armnn_import.serialize.compiled import compile_table
from armnn_import.serialize import armnn_schema_generated as fb
from armnn_import.serialize.writer import _Builder

u32 = st.integers(0, 2 ** 32 - 1)
i32 = st.integers(-(2 ** 31), 2 ** 31 - 1)
f32 = st.floats(width=32, allow_nan=False)
infos = st.tuples(st.lists(u32, max_size=6), st.integers(0, 8), f32, i32)
convs = st.tuples(*[u32] * 6, st.booleans(), st.integers(0, 1))
items = st.lists(st.one_of(infos.map(lambda x: ("info", x)), convs.map(lambda x: ("conv", x)),
                           st.tuples(u32, u32).map(lambda x: ("slot", x))), min_size=1, max_size=12)


def _stock(seq, size):
    b = flatbuffers.Builder(size)
    b.ForceDefaults(True)
    for kind, v in seq:
        if kind == "info":
            fb.TensorInfoStartDimensionsVector(b, len(v[0]))
            for d in reversed(v[0]):
                b.PrependUint32(d)
            dims = b.EndVector()
            fb.TensorInfoStart(b)
            fb.TensorInfoAddDimensions(b, dims)
            fb.TensorInfoAddDataType(b, v[1])
            fb.TensorInfoAddQuantizationScale(b, v[2])
            fb.TensorInfoAddQuantizationOffset(b, v[3])
            fb.TensorInfoEnd(b)
        elif kind == "conv":
            fb.Convolution2dDescriptorStart(b)
            for name, x in zip(_CONV, v):
                getattr(fb, f"Convolution2dDescriptorAdd{name}")(b, x)
            fb.Convolution2dDescriptorEnd(b)
        else:
            fb.InputSlotStart(b)
            fb.InputSlotAddIndex(b, 3)
            fb.InputSlotAddConnection(b, fb.CreateConnection(b, v[0], v[1]))
            fb.InputSlotEnd(b)
    return bytes(b.Bytes[b.Head():])


_CONV = ("PadLeft", "PadRight", "PadTop", "PadBottom", "StrideX", "StrideY", "BiasEnabled", "DataLayout")


def _fast(seq, size):
    b = _Builder(size)
    b.ForceDefaults(True)
    spec = lambda t, n: tables.field(fb, t, n)  # noqa: E731
    for kind, v in seq:
        if kind == "info":
            dims = tables.small_int_vector(b, v[0], "uint32")
            tables.table(b, tables.num_fields(fb, "TensorInfo"),
                         zip([spec("TensorInfo", n) for n in ("Dimensions", "DataType", "QuantizationScale",
                                                              "QuantizationOffset")], (dims, *v[1:])))
        elif kind == "conv":
            tables.table(b, tables.num_fields(fb, "Convolution2dDescriptor"),
                         zip([spec("Convolution2dDescriptor", n) for n in _CONV], v))
        else:
            tables.table(b, tables.num_fields(fb, "InputSlot"),
                         [(spec("InputSlot", "Index"), 3), (spec("InputSlot", "Connection"),
                                                           tables.connection(v[0], v[1]))])
    return bytes(b.Bytes[b.Head():])


@settings(max_examples=150, deadline=None)
@given(items, st.sampled_from([1, 64, 4096]))
def test_tables_match_the_stock_builder(seq, size):
    """Same bytes, deduplicated vtables included, whatever the buffer's growth (sizes 1 and 64 grow it)."""
    assert _fast(seq, size) == _stock(seq, size)


def test_out_of_range_is_refused_like_the_stock_builder():
    b = _Builder(64)
    b.ForceDefaults(True)
    spec = tables.field(fb, "LayerBase", "Index")
    try:
        tables.table(b, 5, [(spec, -1)])
    except TypeError as e:
        assert "bad number -1" in str(e)
    else:
        raise AssertionError("a negative uint32 was written")


def _compiled(seq, size):
    b = _Builder(size)
    b.ForceDefaults(True)

    def writer(table, names):
        return compile_table(tables.num_fields(fb, table), tuple(tables.field(fb, table, n) for n in names))
    info, conv, slot = (writer("TensorInfo", ("Dimensions", "DataType", "QuantizationScale", "QuantizationOffset")),
                        writer("Convolution2dDescriptor", _CONV), writer("InputSlot", ("Index", "Connection")))
    for kind, v in seq:
        if kind == "info":
            info(b, (tables.small_int_vector(b, v[0], "uint32"), *v[1:]))
        elif kind == "conv":
            conv(b, v)
        else:
            slot(b, (3, tables.connection(v[0], v[1])))
    return bytes(b.Bytes[b.Head():])


@settings(max_examples=150, deadline=None)
@given(items, st.sampled_from([1, 64, 4096]))
def test_compiled_tables_match_the_stock_builder(seq, size):
    """compile_table's one-pack writers: the same bytes as the stock builder, in every alignment."""
    assert _compiled(seq, size) == _stock(seq, size)


@given(st.sampled_from([-1, 2 ** 32]), st.sampled_from([2, -1]))
@settings(max_examples=8, deadline=None)
def test_compiled_tables_refuse_like_the_stock_builder(index, flag):
    """Out of range: a uint32 and a bool (which struct alone would pack) raise table()'s TypeError."""
    for names, values, bad in ((("Index", "Connection"), (index, tables.connection(0, 0)), index),
                               (_CONV, (0, 0, 0, 0, 1, 1, flag, 0), flag)):
        table = "InputSlot" if names[0] == "Index" else "Convolution2dDescriptor"
        write = compile_table(tables.num_fields(fb, table), tuple(tables.field(fb, table, n) for n in names))
        b = _Builder(64)
        b.ForceDefaults(True)
        try:
            write(b, values)
        except TypeError as e:
            assert f"bad number {bad}" in str(e)
        else:
            raise AssertionError(f"{bad} was written")
