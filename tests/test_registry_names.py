"""No anonymous converters: every registry entry's function has a name of its own (a lambda or
a factory-made closure is named <registry>_<op>_<since> by OpRegistry.register), so that a
traceback or a profile says which operator ran."""
import traceback

import pytest

from armnn_import.registry import OpRegistry


def _registries():
    import armnn_import_frontends.onnx.ops  # noqa: F401
    from armnn_import_frontends.onnx.registry import REGISTRY as ONNX
    from armnn_import_frontends.tflite.ops import REGISTRY as TFLITE
    return {"onnx": ONNX, "tflite": TFLITE}


@pytest.mark.parametrize("fe", ["onnx", "tflite"])
def test_no_converter_is_anonymous(fe):
    anon = [e.op for e in _registries()[fe].entries()
            if e.fn.__code__.co_name in ("<lambda>", "convert", "wrapped") or "<locals>" in e.fn.__qualname__]
    assert not anon, anon


def test_a_lambda_converter_shows_its_operator_in_a_traceback():
    reg = OpRegistry("demo")
    for op in ("A", "B"):
        reg.register(op, since=3)(lambda ctx, node: 1 / 0)
    with pytest.raises(ZeroDivisionError) as e:
        reg.lookup("B", 3).fn(None, None)
    assert traceback.extract_tb(e.tb)[-1].name == "demo_B_3"
    assert reg.lookup("A", 3).fn.__name__ == "demo_A_3"


def shared(ctx, node):
    return None


def test_a_module_level_function_keeps_its_name():
    reg = OpRegistry("demo")
    reg.register("A", "B")(shared)
    assert reg.lookup("A", 1).fn is shared and reg.lookup("B", 1).fn is shared
    assert shared.__name__ == "shared"
