"""float16 models as users make them: onnxconverter-common's convert_float_to_float16 with
keep_io_types=True (float32 inputs and outputs, Casts to float16 and back at the edges) on our
reference models, through the CLI at --target 23.08 (Cast layers at the edges of a Float16
network), run on Arm NN 23.08 against onnxruntime on the float16 model."""
import os

import numpy as np
import onnx
import pytest

from armnn_import import cli

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "test_models", "onnx")
# measured (session 15): every reference model onnxruntime can run as float16 converts, 26 of them,
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


def test_float32_island_needs_fp16(tmp_path, armnn_runner_for, capsys):
    """The converter's default op_block_list keeps Resize in float32 (a Cast to float32 before
    it, back to float16 after; its output stays float16): refused with the --fp16 hint; with --fp16 the Resize runs in
    Float16, which CpuRef computes in float32 and rounds once, as onnxruntime's Cast after it."""
    m16 = _float16("resize_op10")
    src = tmp_path / "r.onnx"
    onnx.save(m16, str(src))
    assert cli.main([str(src), "-o", str(tmp_path / "never.armnn"), "--target", "23.08"]) == 1
    err = capsys.readouterr().err
    assert "a Cast to float32 inside a float16 model" in err and "--fp16" in err and "Traceback" not in err
    _check(m16, "resize_op10", tmp_path, armnn_runner_for("23.08"), "--fp16")
