"""shifts_to_additions: a convolution's bias (a scale-1 BatchNormalization) becomes an
Addition of a generated [1, C, 1, 1] constant. On the real runtime the result equals
onnxruntime's, NaN and infinity in the input included (the constant is built from an
input element clamped to 0, so it stays exact)."""
import numpy as np
import pytest
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import armnn_import
from armnn_import.ir.types import LayerType


def _conv_model(rng):
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 10, 12])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 10, 12])
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])
    g = helper.make_graph([node], "g", [x], [y], [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


def test_bias_is_an_addition_and_exact_with_nan_and_inf_inputs(armnn_runner):
    rng = np.random.default_rng(0)
    data = _conv_model(rng)
    result = armnn_import.convert(data)
    kinds = result.network.summary()
    assert kinds.get("BatchNormalization", 0) == 0 and kinds["Addition"] == 1 and "Constant" not in kinds
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    for special in (None, np.nan, np.inf, -np.inf):
        x = rng.standard_normal((1, 3, 10, 12)).astype(np.float32)
        if special is not None:
            x[0, 0, 0, 0] = special  # the element the bias constant is built from
            x[0, 2, 5, 6] = special
        want = sess.run(None, {"x": x})[0]
        got = armnn_runner(result.to_bytes(), [x])[0].reshape(want.shape)
        assert np.array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
        finite = np.isfinite(want)
        assert finite.sum() > want.size // 2  # the constant did not poison the whole output


def test_quantized_and_input_less_networks_keep_batchnorm():
    """Without a float input to build the constant from (a uint8 network), shifts stay."""
    from armnn_import.ir.types import DataType, TensorInfo
    from armnn_import.lowering import NetBuilder
    from armnn_import.passes import run_pipeline

    nb = NetBuilder()
    x = nb.g.add_input("x", TensorInfo((1, 4, 3, 3), DataType.QuantisedAsymm8, 0.1, 10))
    nb.g.add_output("y", nb.batchnorm(x, np.ones(4), np.arange(4) * 0.1, 1, "bn", quant=(0.1, 10)))
    run_pipeline(nb.g)
    assert [l.type for l in nb.g.layers].count(LayerType.BatchNormalization) == 1


def test_conv_bias_batchnorm_option_keeps_batchnorms_with_the_same_results(armnn_runner, tmp_path):
    """conv_bias="batchnorm" (CLI --conv-bias batchnorm) writes each bias as a BatchNormalization,
    which Arm NN 20.11+ fuses into the convolution; the numbers are the same bit for bit."""
    import os
    import subprocess
    import sys

    from armnn_import.serialize import read

    model = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                         "test_models", "onnx", "resnet_small.onnx")
    add, bn = armnn_import.convert(model), armnn_import.convert(model, conv_bias="batchnorm")
    convs = add.network.summary()["Convolution2d"]
    assert bn.network.summary().get("BatchNormalization") == convs and add.network.summary().get(
        "BatchNormalization", 0) == 0
    x = np.random.default_rng(1).standard_normal(add.network.input_layers[0].outputs[0].shape).astype(np.float32)
    np.testing.assert_array_equal(armnn_runner(bn.to_bytes(), [x])[0], armnn_runner(add.to_bytes(), [x])[0])
    out = tmp_path / "bn.armnn"
    subprocess.run([sys.executable, "-m", "armnn_import", model, "-o", str(out), "-q", "--conv-bias", "batchnorm"],
                   check=True)
    assert read(out.read_bytes()).summary().get("BatchNormalization") == convs
    with pytest.raises(armnn_import.ConversionError):
        armnn_import.convert(model, conv_bias="fused")


def _shared_shift_model(b):
    """([2, 5, 6] + b) squared, + b: two per-channel shifts on a 3-D tensor, with the same values."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5, 6])
    nodes = [helper.make_node("Add", ["x", "b"], ["a"]), helper.make_node("Mul", ["a", "a"], ["r"]),
             helper.make_node("Add", ["r", "b"], ["y"])]
    g = helper.make_graph(nodes, "g", [x], [y], [numpy_helper.from_array(b, "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


@pytest.mark.parametrize("target, release", [("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")])
def test_shifts_on_the_tensors_own_rank_share_one_constant(target, release, armnn_runner_for):
    """From the 20.08 format a shift of a 3-D tensor is an Addition on its own rank (no Reshapes
    to and from 4-D), and equal shifts read one Constant (20.08 format: Constant + Reshape). One
    float32 addition per element, as onnxruntime's: equal bit for bit, NaN and infinity included."""
    rng = np.random.default_rng(2)
    data = _shared_shift_model(rng.standard_normal(6).astype(np.float32))
    net = armnn_import.convert(data, target=target).network
    kinds = net.summary()
    assert kinds["Addition"] == 2 and kinds["Constant"] == 1 and kinds.get("Reshape", 0) == (target == "20.08")
    assert "BatchNormalization" not in kinds and "StridedSlice" not in kinds
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    x = (rng.standard_normal((2, 5, 6)) * 4).astype(np.float32)
    x[0, 0, :3] = [np.nan, np.inf, -np.inf]
    want = sess.run(None, {"x": x})[0]
    got = armnn_runner_for(release)(armnn_import.convert(data, target=target).to_bytes(), [x])[0]
    np.testing.assert_array_equal(got.reshape(want.shape), want)
