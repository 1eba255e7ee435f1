"""One converter contract: the context a converter of either frontend gets satisfies
armnn_import.context.ConverterContext (caught inside a real conversion of a reference model),
converters of both frontends return their outputs by one rule (armnn_import.context.results),
and the per-operator facts TFLite's pre-scan reads are fields of the registry entries."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import armnn_import
from armnn_import import cli
from armnn_import.context import MEMBERS, ContractError, ConverterContext, missing_members, results
from armnn_import.ir.graph import Graph, Port
from armnn_import.ir.types import DataType, TensorInfo
from armnn_import.lowering import NetBuilder

MODELS = Path(__file__).resolve().parents[1] / "test_models"


def _spy(monkeypatch, registry, op, inspect):
    """Wrap op's converters so that `inspect(ctx, node)` runs before each (the conversion goes on)."""
    def wrap(fn):
        def spy(ctx, node):
            inspect(ctx, node)
            return fn(ctx, node)
        return spy
    monkeypatch.setitem(registry._entries, op, [dataclasses.replace(e, fn=wrap(e.fn)) for e in registry._entries[op]])


def _check(ctx, seen, port, const=None):
    assert isinstance(ctx, ConverterContext) and missing_members(ctx) == []
    assert isinstance(ctx.b, NetBuilder) and ctx.b.g is ctx.g
    assert ctx.target is ctx.g.target and ctx.target.release == "19.02"
    assert isinstance(port, Port) and isinstance(port.info, TensorInfo)
    if const is not None:
        assert isinstance(const, np.ndarray)
    seen.append(type(ctx).__name__)


def test_the_onnx_converter_context_satisfies_the_protocol(monkeypatch):
    from armnn_import_frontends.onnx.ops import REGISTRY
    seen = []

    def inspect(ctx, node):
        assert ctx.registry is REGISTRY and ctx.options.target == "19.02"
        assert not hasattr(ctx, "fold")  # a converter returns a folded constant (armnn_import.context)
        const = ctx.const(node, 1) if ctx.is_const(node, 1) else None
        _check(ctx, seen, ctx.port(node, 0), const)
        assert len(ctx.shape(node, 0)) == 4 and ctx.name(node).startswith(node.name)
    _spy(monkeypatch, REGISTRY, "Conv", inspect)
    result = armnn_import.convert(MODELS / "onnx" / "resnet_small.onnx")
    assert result.to_bytes()[4:8] == b"ARMN" and seen and set(seen) == {"Converter"}


def test_the_tflite_context_satisfies_the_protocol(monkeypatch):
    from armnn_import_frontends.tflite.ops import REGISTRY
    seen = []

    def inspect(ctx, op):
        assert ctx.registry is REGISTRY and ctx.options.target == "19.02" and ctx.nb is ctx.b  # nb: the old name
        assert ctx.is_const(op.inputs[1])
        _check(ctx, seen, ctx.port(op.inputs[0]), ctx.const(op.inputs[1]))
        assert len(ctx.shape(op.inputs[0])) == 4 and ctx.name(op)
    _spy(monkeypatch, REGISTRY, "CONV_2D", inspect)
    result = armnn_import.convert(MODELS / "tflite" / "ops" / "conv_2d.float32.tflite")
    assert result.to_bytes()[4:8] == b"ARMN" and seen == ["Ctx"]


def test_the_protocol_lists_what_both_have():
    class Half:
        g = b = report = None
    assert not isinstance(Half(), ConverterContext)
    assert missing_members(Half()) == [m for m in MEMBERS if m not in ("g", "b", "report")]


def test_frontends_alias_layer_type_as_L():
    import re
    root = Path(__file__).resolve().parents[1] / "frontends"
    aliases = {m for f in root.rglob("*.py") for m in re.findall(r"LayerType as (\w+)", f.read_text())}
    assert aliases == {"L"}


def test_tflite_per_op_facts_are_on_the_entries():
    from armnn_import_frontends.tflite import convert
    from armnn_import_frontends.tflite.ops import REGISTRY
    for table in ("REQUIRED_INPUTS", "FOLDABLE", "MULTI_OUTPUT", "TYPE_CHANGING", "COMPARISONS", "ALL_DATA",
                  "DATA_INPUT", "REFUSED", "STATE_INPUTS"):
        assert not hasattr(convert, table), table
    e = {op: REGISTRY.lookup(op, 1) for op in ("ADD", "EQUAL", "CAST", "SPLIT", "TRANSPOSE_CONV", "RELU",
                                                 "UNIDIRECTIONAL_SEQUENCE_RNN", "STRIDED_SLICE")}
    assert (e["ADD"].inputs, e["ADD"].foldable, e["ADD"].types) == (2, True, "all")
    assert (e["EQUAL"].types, e["CAST"].types, e["RELU"].types) == ("compare", "free", "same")
    assert (e["SPLIT"].multi_output, e["SPLIT"].data_input, e["TRANSPOSE_CONV"].data_input) == (True, 1, 2)
    assert e["UNIDIRECTIONAL_SEQUENCE_RNN"].state_inputs == (4,) and e["STRIDED_SLICE"].inputs == 4
    assert (e["RELU"].inputs, e["RELU"].foldable, e["RELU"].multi_output) == (1, False, False)
    assert REGISTRY.refusal("WHILE").code == "inexpressible" and REGISTRY.refusal("ADD") is None
    with pytest.raises(ValueError, match="type rule"):
        REGISTRY.register("NEW_OP", types="sometimes")


def test_results_is_the_return_rule_of_both_frontends():
    x = Graph().add_input("x", TensorInfo((1, 2), DataType.Float32))
    a = np.arange(2, dtype=np.int32)
    assert results(x) == [x] and results(a)[0] is a
    (s,) = results(np.float32(3.0))  # a numpy scalar (a ufunc of 0-d constants) is a 0-d constant
    assert isinstance(s, np.ndarray) and s.shape == () and s == 3.0
    many = results((x, None, a))
    assert len(many) == 3 and many[0] is x and many[1] is None and many[2] is a
    assert [type(v) for v in results(iter([x, np.int64(1)]))] == [Port, np.ndarray]
    for bad in (None, "x", 3, {"x": x}):
        with pytest.raises(ContractError, match="returns its outputs"):
            results(bad)


def _tflite_model():
    """x -> SPLIT into 2 -> ADD(part 0, RESHAPE(constant)) and part 1: a folded constant, a
    multi-output operator and ordinary ones, built with LiteRT's shapes (tests/tflite/tfl_builder)."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent / "tflite"))
    from tfl_builder import ModelBuilder
    mb = ModelBuilder()
    x = mb.input("x", [1, 4, 3])
    axis = mb.const("axis", np.array([1], np.int32))
    parts = mb.op("SPLIT", [axis, x], "SplitOptions", outputs=2, out_dtype=np.float32, num_splits=2)
    c = mb.op("RESHAPE", [mb.const("c", np.arange(6, dtype=np.float32)), mb.const("shape", np.array([1, 2, 3],
                                                                                              np.int32))])
    mb.output(mb.op("ADD", [parts[0], c], "AddOptions"))
    mb.output(parts[1])
    return mb.build()


def test_tflite_converters_return_their_outputs(monkeypatch, tmp_path):
    from armnn_import_frontends.tflite.ops import REGISTRY
    returned = {}

    def wrap(fn):
        def spy(ctx, op):
            assert not hasattr(ctx, "set") and not hasattr(ctx, "fold")  # the driver binds what is returned
            out = fn(ctx, op)
            returned[op.op] = out
            return out
        return spy
    for op in ("SPLIT", "RESHAPE", "ADD"):
        monkeypatch.setitem(REGISTRY._entries, op, [dataclasses.replace(e, fn=wrap(e.fn))
                                                    for e in REGISTRY._entries[op]])
    src, dst = tmp_path / "m.tflite", tmp_path / "m.armnn"
    src.write_bytes(_tflite_model())
    assert cli.main(["-q", str(src), "-o", str(dst)]) == 0 and dst.read_bytes()[4:8] == b"ARMN"
    assert isinstance(returned["RESHAPE"], np.ndarray)  # folded: RESHAPE of a constant
    assert returned["RESHAPE"].tolist() == [[[0, 1, 2], [3, 4, 5]]]
    assert len(returned["SPLIT"]) == 2 and all(isinstance(p, Port) for p in returned["SPLIT"])
    assert isinstance(returned["ADD"], Port) and returned["ADD"].info.shape == (1, 2, 3)


@pytest.mark.parametrize("fe", ["onnx", "tflite"])
def test_a_converter_that_returns_nothing_is_an_internal_error(fe, monkeypatch, tmp_path, capsys):
    """Returning None (a converter written for the old `ctx.set`) is a bug of armnn-import,
    never a refusal of the model: the CLI's exit code 4."""
    if fe == "onnx":
        from armnn_import_frontends.onnx.ops import REGISTRY
        op, model = "Conv", MODELS / "onnx" / "resnet_small.onnx"
    else:
        from armnn_import_frontends.tflite.ops import REGISTRY
        op, model = "CONV_2D", MODELS / "tflite" / "ops" / "conv_2d.float32.tflite"

    def wrap(fn):
        def returns_nothing(ctx, node):
            fn(ctx, node)
        return returns_nothing
    monkeypatch.setitem(REGISTRY._entries, op, [dataclasses.replace(e, fn=wrap(e.fn)) for e in REGISTRY._entries[op]])
    assert cli.main([str(model), "-o", str(tmp_path / "out.armnn")]) == 4
    err = capsys.readouterr().err
    assert "ContractError" in err and "returned NoneType" in err and "internal error" in err, err
    assert not (tmp_path / "out.armnn").exists()
