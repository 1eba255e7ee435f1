"""float16 models as users make them: onnxconverter-common's convert_float_to_float16 with
keep_io_types=True (float32 inputs and outputs, Casts to float16 and back at the edges) on our
reference models, through the CLI at --target 23.08 (Cast layers at the edges of a Float16
network), run on Arm NN 23.08 against onnxruntime on the float16 model."""
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import armnn_import
from armnn_import import cli
from armnn_import.errors import UnsupportedModelError

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "test_models", "onnx")
# measured (session 15): the 31 reference models onnxruntime can run as float16 all convert (36 tried),
# within 2.4e-3 of the largest output; these cover convolutions, attention, LSTM and GRU
MODELS = ["resnet_small", "mobilenetv2_small", "transformer_encoder", "lstm_dynamic_batch", "gru_states"]


def _float16(name):
    from onnxconverter_common import float16
    return float16.convert_float_to_float16(onnx.load(os.path.join(ROOT, f"{name}.onnx")), keep_io_types=True)


def _check(m16, name, tmp_path, runner, *args):
    import onnxruntime as ort
    src, out = tmp_path / f"{name}.fp16.onnx", tmp_path / f"{name}.armnn"
    onnx.save(m16, str(src))
    assert cli.main([str(src), "-o", str(out), "--target", "23.08", "-q", *args]) == 0
    ref = np.load(os.path.join(ROOT, f"{name}.npz"))
    s = ort.InferenceSession(m16.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {i.name: ref[f"input_{k}"] for k, i in enumerate(s.get_inputs())}
    assert all(i.type == "tensor(float)" for i in s.get_inputs() if feeds[i.name].dtype == np.float32)
    want = s.run(None, feeds)
    got = runner(str(out), list(feeds.values()))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype  # (float32, or float16 where the model's output is: resize_op10's)
        w = w.astype(np.float32)
        np.testing.assert_allclose(g.reshape(w.shape).astype(np.float32), w, rtol=0, atol=5e-3 * np.abs(w).max())


@pytest.mark.parametrize("name", MODELS)
def test_keep_io_types_model_on_23_08(name, tmp_path, armnn_runner_for):
    _check(_float16(name), name, tmp_path, armnn_runner_for("23.08"))


def test_resize_kept_in_float32(tmp_path, armnn_runner_for):
    """The converter's default op_block_list keeps Resize in float32 (a Cast to float32 before
    it, back to float16 after; the model's output stays float16): one Resize layer in Float16,
    which CpuRef computes in float32 and rounds once, as onnxruntime's Cast after it."""
    _check(_float16("resize_op10"), "resize_op10", tmp_path, armnn_runner_for("23.08"))


def _island(op_nodes, inits=(), opset=13):
    """x (float32) -> float16 Relu -> Cast to float32 -> the island -> Casts to float16 -> Relu -> float32."""
    nodes = [h.make_node("Cast", ["x"], ["xh"], to=TP.FLOAT16), h.make_node("Relu", ["xh"], ["r"]),
             h.make_node("Cast", ["r"], ["r32"], to=TP.FLOAT), *op_nodes,
             h.make_node("Cast", ["z"], ["zh"], to=TP.FLOAT16), h.make_node("Sigmoid", ["zh"], ["q"]),
             h.make_node("Cast", ["q"], ["y"], to=TP.FLOAT)]
    g = h.make_graph(nodes, "island", [h.make_tensor_value_info("x", TP.FLOAT, [1, 2, 5, 6])],
                     [h.make_tensor_value_info("y", TP.FLOAT, None)], list(inits))
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


SCALES = nh.from_array(np.array([1, 1, 2, 1.5], np.float32), "s")
ISLANDS = {
    "resize_linear_half_pixel": ([h.make_node("Resize", ["r32", "", "s"], ["z"], mode="linear")], [SCALES]),
    "resize_linear_align_corners": ([h.make_node("Resize", ["r32", "", "s"], ["z"], mode="linear",
                                                 coordinate_transformation_mode="align_corners")], [SCALES]),
    "resize_nearest_asymmetric": ([h.make_node("Resize", ["r32", "", "s"], ["z"], mode="nearest",
                                               coordinate_transformation_mode="asymmetric")], [SCALES]),
    # 0.3 is no float16 value: the float16 network compares with its rounding, the same result
    "max_of_a_float32_constant": ([h.make_node("Max", ["r32", "c"], ["z"])],
                                  [nh.from_array(np.full((6,), 0.3, np.float32), "c")]),
    "min_of_a_float32_constant": ([h.make_node("Min", ["r32", "c"], ["z"])],
                                  [nh.from_array(np.float32(0.7).reshape(()), "c")]),
}


@pytest.mark.parametrize("case", sorted(ISLANDS))
def test_one_node_float32_island_runs_in_float32(case, tmp_path, armnn_runner_for):
    """A Resize, Max or Min a float16 model keeps in float32 (onnxconverter-common's op_block_list)
    gives onnxruntime's numbers: from session 18 one Float32 layer between Casts (before, one
    Float16 layer, which CpuRef computes in float32 and rounds once; the 20.08 format still does)."""
    import onnxruntime as ort
    from armnn_import.serialize.reader import read
    nodes, inits = ISLANDS[case]
    m = _island(nodes, inits)
    src, out = tmp_path / "m.onnx", tmp_path / "m.armnn"
    onnx.save(m, str(src))
    assert cli.main([str(src), "-o", str(out), "--target", "23.08", "-q"]) == 0
    assert [l.type.name for l in read(out.read_bytes()).layers].count("Cast") == 4  # (2 edges, 2 island)
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((1, 2, 5, 6)).astype(np.float32)
        (want,) = s.run(None, {"x": x})
        got, = armnn_runner_for("23.08")(str(out), [x])
        np.testing.assert_allclose(got.reshape(want.shape), want, rtol=0, atol=1e-3)


def test_a_float32_island_that_becomes_other_layers_runs_in_float32(tmp_path, armnn_runner_for):
    """A cubic Resize is an interpolation matrix (FullyConnected) here: in a Float32 part of the
    network its weights stay float32 (session 18; before, refused: they would have been Float16)."""
    import onnxruntime as ort
    m = _island([h.make_node("Resize", ["r32", "", "s"], ["z"], mode="cubic")], [SCALES])
    x = np.random.default_rng(0).standard_normal((1, 2, 5, 6)).astype(np.float32)
    (want,) = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got, = armnn_runner_for("23.08")(armnn_import.convert(m, target="23.08").to_bytes(), [x])
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=0, atol=1e-3)


def test_a_float32_island_of_two_nodes_runs_in_float32(tmp_path, armnn_runner_for):
    """Neg then Max in float32 (session 18): a Float32 part of the network between a Cast to
    Float32 and one to Float16 (passes.fp16.float32_islands), so the Neg's result is not rounded
    to Float16 before the Max, as in onnxruntime."""
    import onnxruntime as ort
    from armnn_import.serialize.reader import read
    m = _island([h.make_node("Cast", ["r"], ["r32b"], to=TP.FLOAT), h.make_node("Neg", ["r32b"], ["n"]),
                 h.make_node("Max", ["r32", "n"], ["z"])])
    src, out = tmp_path / "m.onnx", tmp_path / "m.armnn"
    onnx.save(m, str(src))
    assert cli.main([str(src), "-o", str(out), "--target", "23.08", "-q"]) == 0
    layers = read(out.read_bytes()).layers
    kinds = {l.type.name: l.outputs[0].dtype.name for l in layers if l.type.name in ("Maximum", "Sigmoid", "Activation")}
    # (2 edges, and 2 island Casts: the two Casts of r to float32 are one layer)
    assert kinds["Maximum"] == "Float32" and [l.type.name for l in layers].count("Cast") == 4
    x = np.random.default_rng(0).standard_normal((1, 2, 5, 6)).astype(np.float32)
    (want,) = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got, = armnn_runner_for("23.08")(str(out), [x])
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=0, atol=1e-3)
    with pytest.raises(UnsupportedModelError, match="--target 23.08"):
        armnn_import.convert(m, target="20.08")
