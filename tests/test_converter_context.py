"""One converter contract: the context a converter of either frontend gets satisfies
armnn_import.context.ConverterContext (caught inside a real conversion of a reference model),
and the per-operator facts TFLite's pre-scan reads are fields of the registry entries."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import armnn_import
from armnn_import.context import MEMBERS, ConverterContext, missing_members
from armnn_import.ir.graph import Port
from armnn_import.ir.types import TensorInfo
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
