"""From --target 23.08 the quantized ONNX GlobalAveragePool (QDQ, as onnxruntime quantize_static
writes it, and com.microsoft QLinearGlobalAveragePool) is an Average Pooling2d, and so are the
Means inside mean_half_even (lowering/qround.py). On Arm NN 23.08's CpuRef the Mean
(RefMeanWorkload.cpp -> Reduce.cpp) and the pool (Pooling2d.cpp) both decode to float, sum the
reduced elements in raster order, divide by the count once and encode the quotient with the
output's TensorInfo, so the levels are the same at any output quantization. Judged on the real
23.08 runtime, the files as the CLI writes them: bit for bit against the Mean form the same
model had before (the pool recipe switched off), and against onnxruntime in levels."""
from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

from armnn_import import cli
from armnn_import.ir.types import LayerType, PoolingAlgorithm
from armnn_import.serialize import read
from armnn_import.testing.armnn_runtime import harness_dir, run_armnn
from armnn_import.verify_cmd import Tolerance, verify

RUNNER = os.environ.get("ARMNN_RUNNER_23_08", str(harness_dir("23.08") / "armnn-run"))
QUANT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                     "test_models", "onnx_quant")
#: the quant reference models whose GlobalAveragePool was a Mean at 23.08 (qops_mix's is a pool
#: already: an AveragePool)
MODELS = sorted(f[:-5] for f in os.listdir(QUANT) if f.endswith(".onnx") and not f.startswith("qops_mix"))


def _need_runner():
    if not os.access(RUNNER, os.X_OK):
        pytest.skip(f"no Arm NN 23.08 runner at {RUNNER}")


def _convert(src, out, target="23.08", *extra):
    assert cli.main([str(src), "-o", str(out), "-q", "--target", target, *extra]) == 0
    return read(out.read_bytes())


def _mean_form(src, out, monkeypatch, *extra):
    """The file this model gave before: the same conversion with the pool recipe switched off."""
    from armnn_import.lowering import qround
    from armnn_import_frontends.onnx.ops import qpool
    with monkeypatch.context() as m:
        for mod in (qpool, qround):
            m.setattr(mod, "mean_as_pool", lambda *a, **k: None)
        g = _convert(src, out, "23.08", *extra)
    assert any(l.type == LayerType.Mean for l in g.layers)
    return out


def _levels(check, graph):
    """The largest error of the (only) output against onnxruntime, in levels of its quantization
    (a float output: of the Dequantize layer's input)."""
    info = graph.output_layers[0].inputs[0].info
    if info.dtype.is_quantized:
        return check.outputs[0].lsb
    deq = graph.output_layers[0].inputs[0].layer
    assert deq.type == LayerType.Dequantize
    return check.outputs[0].max_abs / deq.inputs[0].info.scale


@pytest.mark.parametrize("name", MODELS)
def test_quant_reference_model_pools_bit_identically(name, tmp_path, monkeypatch):
    src, out = os.path.join(QUANT, f"{name}.onnx"), tmp_path / "m.armnn"
    g = _convert(src, out)
    types = [l.type for l in g.layers]
    assert LayerType.Mean not in types
    assert any(l.type == LayerType.Pooling2d and l.desc.pool_type == PoolingAlgorithm.Average and
               l.outputs[0].shape[2:] == (1, 1) for l in g.layers)
    _need_runner()
    x = np.load(os.path.join(QUANT, f"{name}.npz"))["input_0"]
    ours = run_armnn(out, [x], runner=RUNNER)[0]
    theirs = run_armnn(_mean_form(src, tmp_path / "mean.armnn", monkeypatch), [x], runner=RUNNER)[0]
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape and ours.tobytes() == theirs.tobytes()
    check = verify(src, str(out), inputs=[x], tolerance=Tolerance(lsb=1), armnn_runtime=RUNNER)
    assert _levels(check, g) <= 1.001, check.format()


def _qlinear_gap(shape, out_shape, sx, zx, sy, zy, last=0, dtype=np.uint8):
    """x -> QuantizeLinear -> QLinearGlobalAveragePool -> DequantizeLinear -> y."""
    c = [nh.from_array(np.array(sx, np.float32), "sx"), nh.from_array(np.array(zx, dtype), "zx"),
         nh.from_array(np.array(sy, np.float32), "sy"), nh.from_array(np.array(zy, dtype), "zy")]
    nodes = [h.make_node("QuantizeLinear", ["x", "sx", "zx"], ["q"]),
             h.make_node("QLinearGlobalAveragePool", ["q", "sx", "zx", "sy", "zy"], ["p"], domain="com.microsoft",
                         channels_last=last),
             h.make_node("DequantizeLinear", ["p", "sy", "zy"], ["y"])]
    g = h.make_graph(nodes, "gap", [h.make_tensor_value_info("x", TP.FLOAT, shape)],
                     [h.make_tensor_value_info("y", TP.FLOAT, out_shape)], c)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 13), h.make_opsetid("com.microsoft", 1)])


def _qdq_gap(shape, out_shape, sx, zx, sy, zy):
    """QDQ: x -> Q -> DQ -> GlobalAveragePool -> Q -> DQ -> y (quantize_static's form)."""
    c = [nh.from_array(np.array(sx, np.float32), "sx"), nh.from_array(np.array(zx, np.uint8), "zx"),
         nh.from_array(np.array(sy, np.float32), "sy"), nh.from_array(np.array(zy, np.uint8), "zy")]
    nodes = [h.make_node("QuantizeLinear", ["x", "sx", "zx"], ["q"]), h.make_node("DequantizeLinear", ["q", "sx", "zx"], ["d"]),
             h.make_node("GlobalAveragePool", ["d"], ["p"]), h.make_node("QuantizeLinear", ["p", "sy", "zy"], ["pq"]),
             h.make_node("DequantizeLinear", ["pq", "sy", "zy"], ["y"])]
    g = h.make_graph(nodes, "gap", [h.make_tensor_value_info("x", TP.FLOAT, shape)],
                     [h.make_tensor_value_info("y", TP.FLOAT, out_shape)], c)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 13)])


SINGLE = {  # name: (model, input shape); the 2x2 and 6x4 maps into the input's own quantization
    # take mean_half_even (ties at even counts), the others the plain mean
    "ties_zp0": (lambda: _qlinear_gap([1, 64, 2, 2], [1, 64, 1, 1], 0.05, 0, 0.05, 0), [1, 64, 2, 2]),
    "ties_zp7": (lambda: _qlinear_gap([1, 64, 2, 2], [1, 64, 1, 1], 0.05, 7, 0.05, 7), [1, 64, 2, 2]),
    "ties_s8": (lambda: _qlinear_gap([1, 32, 6, 4], [1, 32, 1, 1], 0.04, -3, 0.04, -3, dtype=np.int8), [1, 32, 6, 4]),
    "requant": (lambda: _qlinear_gap([1, 16, 7, 5], [1, 16, 1, 1], 0.05, 3, 0.02, 100), [1, 16, 7, 5]),
    "odd_count": (lambda: _qlinear_gap([2, 8, 3, 3], [2, 8, 1, 1], 0.05, 10, 0.05, 10), [2, 8, 3, 3]),
    "channels_last": (lambda: _qlinear_gap([1, 5, 6, 24], [1, 1, 1, 24], 0.05, 0, 0.03, 4, last=1), [1, 5, 6, 24]),
    "qdq_requant": (lambda: _qdq_gap([1, 12, 9, 7], [1, 12, 1, 1], 0.05, 0, 0.03, 2), [1, 12, 9, 7]),
    "qdq_ties": (lambda: _qdq_gap([1, 24, 4, 4], [1, 24, 1, 1], 0.05, 0, 0.05, 0), [1, 24, 4, 4]),
    "qdq_3d": (lambda: _qdq_gap([1, 12, 15], [1, 12, 1], 0.05, 0, 0.03, 2), [1, 12, 15]),
}


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_single_quantized_gap_pools_bit_identically(name, tmp_path, monkeypatch):
    make, shape = SINGLE[name]
    src, out = tmp_path / "m.onnx", tmp_path / "m.armnn"
    onnx.save(make(), src)
    g = _convert(src, out)
    types = [l.type for l in g.layers]
    assert LayerType.Mean not in types
    assert types.count(LayerType.Pooling2d) == (2 if "ties" in name else 1)  # mean_half_even: two means
    _need_runner()
    x = np.random.default_rng(7).uniform(-1, 6, shape).astype(np.float32)
    ours = run_armnn(out, [x], runner=RUNNER)[0]
    theirs = run_armnn(_mean_form(src, tmp_path / "mean.armnn", monkeypatch), [x], runner=RUNNER)[0]
    assert ours.tobytes() == theirs.tobytes()
    check = verify(str(src), str(out), inputs=[x], tolerance=Tolerance(lsb=1), armnn_runtime=RUNNER)
    # the ties round to even as onnxruntime does: no level off there
    assert _levels(check, g) <= (1e-3 if "ties" in name else 1.001), check.format()


def test_20_08_keeps_the_mean(tmp_path):
    """20.08's Mean costs less than its Pooling2d there; the 19.02 and 20.08 files stay as they were."""
    src = tmp_path / "m.onnx"
    onnx.save(_qlinear_gap([1, 16, 7, 5], [1, 16, 1, 1], 0.05, 3, 0.02, 100), src)
    for target in ("19.02", "20.08"):
        types = [l.type for l in _convert(src, tmp_path / f"{target}.armnn", target).layers]
        assert LayerType.Mean in types and LayerType.Pooling2d not in types


def test_dequantized_gap_pools_too(tmp_path, monkeypatch):
    """Under --dequantize the QLinearGlobalAveragePool is a float mean: the float pool, bit for bit
    the Mean it was, and onnxruntime's levels within one step of the output's quantization."""
    src, out = tmp_path / "m.onnx", tmp_path / "m.armnn"
    onnx.save(_qlinear_gap([1, 16, 7, 5], [1, 16, 1, 1], 0.05, 3, 0.02, 100), src)
    g = _convert(src, out, "23.08", "--dequantize")
    assert LayerType.Mean not in [l.type for l in g.layers] and any(l.type == LayerType.Pooling2d for l in g.layers)
    _need_runner()
    x = np.random.default_rng(7).uniform(-1, 6, [1, 16, 7, 5]).astype(np.float32)
    ours = run_armnn(out, [x], runner=RUNNER)[0]
    theirs = run_armnn(_mean_form(src, tmp_path / "mean.armnn", monkeypatch, "--dequantize"), [x], runner=RUNNER)[0]
    assert ours.tobytes() == theirs.tobytes()
    check = verify(str(src), str(out), inputs=[x], tolerance=Tolerance(atol=0.02 * 1.001, rtol=0), armnn_runtime=RUNNER)
    assert check.ok, check.format()
