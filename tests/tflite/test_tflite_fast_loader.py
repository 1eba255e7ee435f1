"""model.load reads tensors, operators and options straight from the vtables (fasttable.fields,
one unpack each, options cached per distinct bytes): it must give what the `tflite` package's
generated objects read from the same files (the independent reference)."""
import glob
import os

import numpy as np
import pytest


tflite = pytest.importorskip("tflite")

from armnn_import_frontends.tflite.model import load  # noqa: E402
from armnn_import_frontends.tflite.options import snake  # noqa: E402

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "test_models", "tflite")
FILES = sorted(glob.glob(os.path.join(ROOT, "**", "*.tflite"), recursive=True))[::12]


def _stock_options(op):
    from tflite.BuiltinOptions import BuiltinOptions
    import importlib

    table = op.BuiltinOptions()
    names = {v: k for k, v in vars(BuiltinOptions).items() if isinstance(v, int)}
    name = names.get(op.BuiltinOptionsType())
    if table is None or name in (None, "NONE"):
        return {}
    cls = getattr(importlib.import_module(f"tflite.{name}"), name)
    opts = cls()
    opts.Init(table.Bytes, table.Pos)
    out = {}
    for attr, fn in vars(cls).items():
        if callable(fn) and not attr.startswith(("GetRootAs", "Init")) and fn.__code__.co_argcount == 1 \
                and not attr.endswith(("Length", "IsNone", "AsNumpy", "BufferHasIdentifier")) \
                and not hasattr(cls, attr + "AsNumpy"):
            v = fn(opts)
            if isinstance(v, (int, float, bool)):
                out[snake(attr)] = v
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.relpath(p, ROOT))
def test_load_reads_what_the_generated_objects_read(path):
    data = open(path, "rb").read()
    m = load(data)
    sg = tflite.Model.GetRootAs(data, 0).Subgraphs(0)
    assert len(m.tensors) == sg.TensorsLength()
    for t in m.tensors:
        ref = sg.Tensors(t.index)
        assert t.shape == tuple(int(d) for d in ref.ShapeAsNumpy()) if ref.ShapeLength() else t.shape == ()
        assert t.type == ref.Type() and t.is_variable == bool(ref.IsVariable())
        assert t.name == ((ref.Name() or b"").decode("utf-8", "replace") or f"tensor_{t.index}")
        if ref.ShapeSignatureLength():
            assert t.signature == tuple(int(d) for d in ref.ShapeSignatureAsNumpy())
        else:
            assert t.signature is None
    ops = [sg.Operators(i) for i in range(sg.OperatorsLength())]
    assert tuple(int(i) for i in sg.InputsAsNumpy()) == m.inputs
    if m.densify_folded == 0:
        assert len(m.operators) == len(ops)
        for op, ref in zip(m.operators, ops):
            for mine, n, get in ((op.inputs, ref.InputsLength(), ref.InputsAsNumpy),
                                 (op.outputs, ref.OutputsLength(), ref.OutputsAsNumpy),
                                 (op.intermediates, ref.IntermediatesLength(), ref.IntermediatesAsNumpy)):
                assert mine == (tuple(int(i) for i in get()) if n else ())
            scalars = {k: v for k, v in op.options.items() if not isinstance(v, np.ndarray) and k != "_type"}
            assert scalars == _stock_options(ref)


def test_options_cache_gives_each_operator_its_own_dict():
    """Operators with the same option bytes share a cache entry, never a dict."""
    m = load(open(os.path.join(ROOT, "models", "mobilenet_v1_mini.float32.tflite"), "rb").read())
    convs = [op for op in m.operators if op.op == "CONV_2D"]
    same = [(a, b) for i, a in enumerate(convs) for b in convs[i + 1:] if a.options == b.options]
    assert same, "the model has no two convolutions with the same options"
    a, b = same[0]
    assert a.options is not b.options
    a.options["stride_h"] = 99
    assert b.options["stride_h"] != 99
