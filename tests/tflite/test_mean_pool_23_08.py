"""From --target 23.08 a TFLite MEAN over H and/or W of a 4-D tensor is an Average Pooling2d whose
window is the reduced extent (frontends/tflite/ops/reduce.py): on Arm NN 23.08's CpuRef it takes
1/7-1/19 of the Reduce layer's instructions, and both sum in raster order and divide by the
count, so the outputs are the same bit for bit. Judged on the real 23.08 runtime against LiteRT
(the files as the CLI writes them), and against the Reduce form of the same MEAN."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from tfl_builder import ModelBuilder  # noqa: E402

from armnn_import import cli  # noqa: E402
from armnn_import.ir.types import LayerType, PoolingAlgorithm, ReduceOperation  # noqa: E402
from armnn_import.serialize import read, write  # noqa: E402
from armnn_import.testing.armnn_runtime import harness_dir, run_armnn  # noqa: E402
from armnn_import.verify_cmd import Tolerance, verify  # noqa: E402

RUNNER = os.environ.get("ARMNN_RUNNER_23_08", str(harness_dir("23.08") / "armnn-run"))
QX = (0.02, -10)
CASES = {  # name: (axes, keep_dims, input shape, quantized)
    "hw_keep": ([1, 2], True, (1, 6, 5, 8), False),
    "hw": ([1, 2], False, (2, 3, 7, 4), False),
    "h": ([1], True, (1, 4, 3, 2), False),
    "w_negative_axis": ([-2], False, (1, 3, 5, 2), False),
    "hw_int8": ([1, 2], True, (1, 4, 5, 3), True),
}


def _model(axes, keep, shape, quantized):
    mb = ModelBuilder()
    rng = np.random.default_rng(7)
    if quantized:  # output in the input's quantization (requantizing MEANs: test_quant_mean_pool_23_08.py)
        x = mb.input("x", shape, np.int8, QX)
        data = rng.integers(-128, 128, shape).astype(np.int8)
        y = mb.op("MEAN", [x, mb.const("axes", np.array(axes, np.int32))], "ReducerOptions",
                  out_quant=QX, version=2, keep_dims=keep)
    else:
        x = mb.input("x", shape)
        data = rng.uniform(-1, 1, shape).astype(np.float32)
        y = mb.op("MEAN", [x, mb.const("axes", np.array(axes, np.int32))], "ReducerOptions", keep_dims=keep)
    mb.output(y)
    return mb.build(), data


def _need_runner():
    if not os.access(RUNNER, os.X_OK):
        pytest.skip(f"no Arm NN 23.08 runner at {RUNNER}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_mean_is_an_average_pool_on_23_08(name, tmp_path):
    axes, keep, shape, quantized = CASES[name]
    model, data = _model(axes, keep, shape, quantized)
    src, out = tmp_path / "m.tflite", tmp_path / "m.armnn"
    src.write_bytes(model)
    assert cli.main([str(src), "-o", str(out), "-q", "--target", "23.08"]) == 0
    graph = read(out.read_bytes())
    types = [l.type for l in graph.layers]
    assert LayerType.Reduce not in types and LayerType.Mean not in types
    pool = next(l for l in graph.layers if l.type == LayerType.Pooling2d)
    assert pool.desc.pool_type == PoolingAlgorithm.Average
    _need_runner()
    check = verify(str(src), str(out), inputs=[data], tolerance=Tolerance(atol=1e-6, lsb=1), armnn_runtime=RUNNER)
    assert check.ok, check.format()
    # the Reduce form of the same MEAN (what 23.08 files held before) gives the same bits
    reduce_graph = read(out.read_bytes())
    for layer in list(reduce_graph.layers):
        if layer.type == LayerType.Pooling2d:
            _as_reduce(reduce_graph, layer, axes, shape)
    assert LayerType.Reduce in [l.type for l in reduce_graph.layers]
    ours = run_armnn(out, [data], runner=RUNNER)[0]
    theirs = run_armnn(write(reduce_graph), [data], runner=RUNNER)[0]
    assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)


def _as_reduce(graph, pool, axes, shape):
    """Replace the pooling layer with a Reduce(Mean) over the same axes (keep_dims: same shape)."""
    from armnn_import.lowering.builder import NetBuilder
    from armnn_import.report import Report
    nb = NetBuilder(graph, Report())
    x = pool.inputs[0]
    info = pool.out().info
    q = (info.scale, info.offset) if info.dtype.is_quantized else None
    y = nb.reduce(x, tuple(a % 4 for a in axes), True, ReduceOperation.Mean, "as_reduce", quant=q)
    graph.replace_uses(pool.out(), y)
    graph.remove([pool])
    graph.toposort()


def test_20_08_keeps_mean_and_19_02_is_unchanged(tmp_path):
    """20.08's Mean costs less than its Pooling2d on 20.08's CpuRef: its files keep Mean."""
    model, _ = _model([1, 2], True, (1, 6, 5, 8), False)
    src = tmp_path / "m.tflite"
    src.write_bytes(model)
    for target in ("19.02", "20.08"):
        out = tmp_path / f"{target}.armnn"
        assert cli.main([str(src), "-o", str(out), "-q", "--target", target]) == 0
        assert LayerType.Mean in [l.type for l in read(out.read_bytes()).layers]


#: the reference models whose --target 23.08 files changed when MEAN became a Pooling2d (all
#: their MEANs are over H and W; python /work/wt/tools/hash_target.py --target 23.08 --check)
MEAN_MODELS = [f"tflite/models/{m}.tflite" for m in (
    "densenet_mini.float32", "efficientnet_mini.float32", "mobilenet_v1_025.float32", "mobilenet_v1_mini.float32",
    "mobilenet_v2_035.float32", "mobilenet_v3_small_075.float32", "pruned_convnet.sparse",
    "pruned_convnet.sparsefp16", "resnet_mini.float32")] + [
    f"tflite/ops/{m}.tflite" for m in ("conv_fc.dynamic", "conv_fc.float32", "conv_fc.fp16w", "mean.float32")]


def _mean_models():
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from reference_models import params
    return [p for p in params() if p.values[0] in MEAN_MODELS]


@pytest.mark.parametrize("model_id, path, npz", _mean_models())
def test_reference_models_with_a_mean_on_the_23_08_runtime(model_id, path, npz, tmp_path):
    """Every TFLite reference model whose MEAN becomes a Pooling2d under --target 23.08 matches
    LiteRT on Arm NN 23.08 as the CLI writes it, as before."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from test_targets import RICH_NETWORK_LSB
    from test_verify_cmd import HYBRID_KERNEL_ATOL
    out = tmp_path / "model.armnn"
    assert cli.main([str(path), "-o", str(out), "-q", "--target", "23.08"]) == 0
    types = [l.type for l in read(out.read_bytes()).layers]
    assert LayerType.Pooling2d in types and LayerType.Reduce not in types and LayerType.Mean not in types
    _need_runner()
    tol = Tolerance(atol=HYBRID_KERNEL_ATOL.get(model_id, 1e-4), lsb=RICH_NETWORK_LSB.get(model_id, 1))
    check = verify(str(path), str(out), tolerance=tol, armnn_runtime=RUNNER)
    assert check.ok, check.format()
