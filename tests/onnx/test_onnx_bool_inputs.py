"""A bool model input used as numbers (a Cast, a Where condition, a Reshape, ...) is a uint8
network input of scale 1 (the caller feeds 0 or 1) with a Dequantize after it, from the 20.08
format on: the booleans' float 0/1 mask, exactly. A bool input that only Boolean layers read
(And/Or/Xor/Not/Equal) stays a Boolean input. Checked on the real runtimes against onnxruntime,
through files written by the CLI."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from armnn_import import cli
from armnn_import.serialize import read

PAIRS = [("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]


def _ort(m, feeds):
    import onnxruntime as ort
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _model(nodes, outs, inits=(), shape=(2, 6)):
    ins = [h.make_tensor_value_info("x", T.FLOAT, shape), h.make_tensor_value_info("m", T.BOOL, shape)]
    g = h.make_graph(nodes, "bool_input", ins, [h.make_tensor_value_info(o, t, None) for o, t in outs],
                     list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    return onnx.shape_inference.infer_shapes(m, strict_mode=True)


def _fill(v):
    return onnx.numpy_helper.from_array(np.array(v, np.float32), "fill")


MODELS = {
    # a padding mask cast to float and multiplied in
    "cast_mul": lambda: _model([h.make_node("Cast", ["m"], ["mf"], to=T.FLOAT), h.make_node("Mul", ["x", "mf"], ["y"])],
                               [("y", T.FLOAT)]),
    # masked_fill: the unselected branch holds inf and NaN
    "where": lambda: _model([h.make_node("Where", ["m", "x", "fill"], ["y"])], [("y", T.FLOAT)], [_fill(-1e9)]),
    # an attention mask: scores where the mask holds, -inf elsewhere, then Softmax
    "where_softmax": lambda: _model([h.make_node("Where", ["m", "x", "fill"], ["s"]),
                                     h.make_node("Softmax", ["s"], ["y"], axis=-1)], [("y", T.FLOAT)],
                                    [_fill(-np.inf)]),
    # Not, And with a comparison, the boolean itself as an output, and a Reshape of it
    "logic": lambda: _model([h.make_node("Not", ["m"], ["n"]), h.make_node("Greater", ["x", "zero"], ["p"]),
                             h.make_node("And", ["n", "p"], ["a"]), h.make_node("Cast", ["a"], ["y"], to=T.FLOAT),
                             h.make_node("Reshape", ["m", "shape"], ["r"])],
                            [("y", T.FLOAT), ("a", T.BOOL), ("r", T.BOOL)],
                            [onnx.numpy_helper.from_array(np.array(0, np.float32), "zero"),
                             onnx.numpy_helper.from_array(np.array([3, 4], np.int64), "shape")]),
}


def _inputs():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 6)).astype(np.float32)
    x[0, :3] = (np.inf, -np.inf, np.nan)
    m = rng.random((2, 6)) < 0.5
    m[0, :3] = False  # (the non-numbers sit where the mask drops them)
    m[1, 0] = True
    return x, m


def _convert(tmp_path, model, target, name="m"):
    src, out = tmp_path / f"{name}.onnx", tmp_path / f"{name}-{target}.armnn"
    onnx.save(model, src)
    assert cli.main([str(src), "-o", str(out), "-q", "--target", target]) == 0
    return out


@pytest.mark.parametrize("target, release", PAIRS)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_bool_input_used_as_numbers_on_the_runtime(name, target, release, tmp_path, armnn_runner_for):
    model = MODELS[name]()
    x, m = _inputs()
    if name == "cast_mul":
        x = np.nan_to_num(x)  # (inf * 0 is NaN in both; keep the check about the mask)
    out = _convert(tmp_path, model, target)
    net = read(out.read_bytes())
    info = {layer.name: layer.outputs[0] for layer in net.input_layers}["m"]
    assert info.dtype.name == "QuantisedAsymm8" and (info.scale, info.offset) == (1.0, 0)
    want = _ort(model, {"x": x, "m": m})
    got = armnn_runner_for(release)(str(out), [x, m.astype(np.uint8)])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.reshape(w.shape).astype(w.dtype), w)


def test_bool_input_read_by_boolean_layers_stays_boolean(tmp_path, armnn_runner_for):
    ins = [h.make_tensor_value_info("a", T.BOOL, [2, 3]), h.make_tensor_value_info("b", T.BOOL, [2, 3])]
    g = h.make_graph([h.make_node("Xor", ["a", "b"], ["y"])], "xor", ins, [h.make_tensor_value_info("y", T.BOOL, [2, 3])])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    out = _convert(tmp_path, model, "23.08")
    net = read(out.read_bytes())
    assert [layer.outputs[0].dtype.name for layer in net.input_layers] == ["Boolean", "Boolean"]
    a = np.array([[0, 1, 1], [0, 0, 1]], bool)
    b = np.array([[0, 0, 1], [1, 0, 1]], bool)
    (got,) = armnn_runner_for("23.08")(str(out), [a, b])
    np.testing.assert_array_equal(got.reshape(2, 3).astype(bool), a ^ b)


def test_bool_input_used_as_numbers_at_19_02_names_the_target(tmp_path, capsys):
    src = tmp_path / "m.onnx"
    onnx.save(MODELS["where"](), src)
    assert cli.main([str(src), "-o", str(tmp_path / "m.armnn")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Where" in err[0] and "--target 20.08" in err[0], err


def _masked_softmax_model():
    """ONNX Attention's fully-masked-row guard: Where(ReduceMax(s) == -inf, 0, Softmax(s))."""
    s = h.make_tensor_value_info("s", T.FLOAT, [3, 4])
    consts = [onnx.numpy_helper.from_array(np.array(-np.inf, np.float32), "ninf"),
              onnx.numpy_helper.from_array(np.array(0, np.float32), "zero"),
              onnx.numpy_helper.from_array(np.array([-1], np.int64), "axes")]
    nodes = [h.make_node("ReduceMax", ["s", "axes"], ["mx"], keepdims=1), h.make_node("Equal", ["mx", "ninf"], ["all"]),
             h.make_node("Softmax", ["s"], ["p"], axis=-1), h.make_node("Where", ["all", "zero", "p"], ["y"])]
    g = h.make_graph(nodes, "guard", [s], [h.make_tensor_value_info("y", T.FLOAT, [3, 4]),
                                            h.make_tensor_value_info("all", T.BOOL, [3, 1])], consts)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 18)])


@pytest.mark.parametrize("target, release", [("19.02", "20.08"), ("19.02", "23.08")] + PAIRS)
def test_max_of_a_row_of_minus_infinity_is_minus_infinity(target, release, tmp_path, armnn_runner_for):
    """CpuRef starts a max from -FLT_MAX; compared with -inf, the max is made exact (a row of
    -FLT_MAX is not fully masked, a row of -inf is)."""
    fmax = np.finfo(np.float32).max
    s = np.array([[-np.inf] * 4, [-fmax, -np.inf, -np.inf, -np.inf], [0.5, -np.inf, 2.0, -1.0]], np.float32)
    model = _masked_softmax_model()
    out = _convert(tmp_path, model, target)
    want = _ort(model, {"s": s})
    got = armnn_runner_for(release)(str(out), [s])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.reshape(w.shape).astype(w.dtype), w)
    assert want[1].reshape(-1).tolist() == [True, False, False]
