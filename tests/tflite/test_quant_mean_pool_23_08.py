"""From --target 23.08 a quantized TFLite MEAN over H and/or W of a 4-D tensor is an Average
Pooling2d at any per-tensor output quantization, not only the input's (frontends/tflite/ops/reduce.py,
requant=True in lowering/pooling.py). On Arm NN 23.08's CpuRef the Reduce(Mean) this MEAN was
(RefReduceWorkload.cpp -> Reduce.cpp) and the pool (RefPooling2dWorkload.cpp -> Pooling2d.cpp)
both decode the 8-bit values with the input's TensorInfo (Dequantize), sum the window in raster
order (H outer, W inner) into one float, divide once by the float count and encode the quotient with
the output's TensorInfo (MakeEncoder -> Quantize<T>), so the levels are the same bit for bit.
Judged on the real 23.08 runtime, the files as the CLI writes them: against the Reduce form the
same model had before (the requantizing pool switched off) and against LiteRT in levels."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tfl_builder import ModelBuilder  # noqa: E402

from armnn_import import cli  # noqa: E402
from armnn_import.ir.types import LayerType, PoolingAlgorithm  # noqa: E402
from armnn_import.serialize import read  # noqa: E402
from armnn_import.testing.armnn_runtime import harness_dir, run_armnn  # noqa: E402
from armnn_import.verify_cmd import Tolerance, verify  # noqa: E402

RUNNER = os.environ.get("ARMNN_RUNNER_23_08", str(harness_dir("23.08") / "armnn-run"))

#: the reference models whose --target 23.08 files changed when a requantizing MEAN became a pool
#: (python /work/wt/tools/hash_target.py --target 23.08 --check: 17 entries, all TFLite quantized)
CHANGED = [f"tflite/models/{m}.tflite" for m in (
    "densenet_mini.int8", "efficientnet_mini.int8", "mobilenet_v1_025.int8", "mobilenet_v1_mini.int8",
    "mobilenet_v1_mini.int8floatio", "mobilenet_v1_mini.uint8", "mobilenet_v1_mini.uint8io",
    "mobilenet_v2_035.int8", "mobilenet_v3_small_075.int8", "resnet_mini.int8")] + [
    f"tflite/ops/{m}.tflite" for m in ("conv_fc.int8", "conv_fc.int8floatio", "conv_fc.uint8", "conv_fc.uint8io",
                                       "mean.int8", "mean.uint8", "mean.uint8io")]


def _need_runner():
    if not os.access(RUNNER, os.X_OK):
        pytest.skip(f"no Arm NN 23.08 runner at {RUNNER}")


def _convert(src, out):
    assert cli.main([str(src), "-o", str(out), "-q", "--target", "23.08"]) == 0
    return read(out.read_bytes())


def _reduce_form(src, out, monkeypatch):
    """The file this model gave before: the pool only where the output keeps the input's quantization."""
    from armnn_import_frontends.tflite.ops import reduce as tfl_reduce
    pool = tfl_reduce.mean_as_pool
    with monkeypatch.context() as m:
        m.setattr(tfl_reduce, "mean_as_pool", lambda *a, **k: pool(*a, **{**k, "requant": False}))
        g = _convert(src, out)
    assert LayerType.Reduce in [l.type for l in g.layers]
    return out


def _levels(check):
    """The largest error against LiteRT over the outputs: in levels where quantized, else absolute."""
    return max(c.lsb if c.lsb is not None else c.max_abs for c in check.outputs)


def _same_bits(new, old, inputs):
    a, b = run_armnn(new, inputs, runner=RUNNER), run_armnn(old, inputs, runner=RUNNER)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


def _reference(model_id):
    from reference_models import params
    return next(p.values for p in params() if p.values[0] == model_id)


@pytest.mark.parametrize("model_id", CHANGED)
def test_reference_model_pools_bit_identically(model_id, tmp_path, monkeypatch):
    from test_targets import RICH_NETWORK_LSB
    from test_verify_cmd import HYBRID_KERNEL_ATOL
    _, path, npz = _reference(model_id)
    new = tmp_path / "new.armnn"
    g = _convert(path, new)
    types = [l.type for l in g.layers]
    assert LayerType.Reduce not in types and LayerType.Mean not in types
    assert any(l.type == LayerType.Pooling2d and l.desc.pool_type == PoolingAlgorithm.Average for l in g.layers)
    _need_runner()
    old = _reduce_form(path, tmp_path / "old.armnn", monkeypatch)
    x = np.load(npz)["input_0"]
    rand = (np.random.default_rng(3).integers(np.iinfo(x.dtype).min, np.iinfo(x.dtype).max + 1, x.shape)
            .astype(x.dtype) if x.dtype.kind in "iu" else np.random.default_rng(3).uniform(-1, 1, x.shape).astype(x.dtype))
    for data in (x, rand):
        _same_bits(new, old, [data])
    # judged as tests/test_targets.py judges every reference model: verify's seeded inputs
    tol = Tolerance(atol=HYBRID_KERNEL_ATOL.get(model_id, 1e-4), lsb=RICH_NETWORK_LSB.get(model_id, 1))
    checks = [verify(str(path), str(f), tolerance=tol, armnn_runtime=RUNNER) for f in (new, old)]
    assert checks[0].ok, checks[0].format()
    assert _levels(checks[0]) <= _levels(checks[1])
    # the numpy executor follows the runtime (test_targets.py checked it while these held a Reduce)
    check = verify(str(path), str(new), tolerance=tol)
    assert check.ok, check.format()


# name: (dtype, input shape, axes, keep_dims, input quantization, output quantization)
SINGLE = {
    "s8_hw_keep": (np.int8, (1, 7, 5, 6), [1, 2], True, (0.02, -10), (0.011, 7)),
    "s8_hw": (np.int8, (2, 3, 5, 4), [1, 2], False, (0.05, 3), (0.03, -20)),
    "s8_h": (np.int8, (1, 6, 3, 5), [1], True, (0.02, 0), (0.015, 4)),
    "s8_w_negative": (np.int8, (1, 3, 7, 4), [-2], False, (0.03, -5), (0.02, 11)),
    "u8_hw_keep": (np.uint8, (1, 5, 3, 8), [1, 2], True, (0.04, 128), (0.025, 90)),
    "u8_hw": (np.uint8, (1, 6, 6, 3), [2, 1], False, (0.05, 10), (0.02, 200)),
    "u8_w": (np.uint8, (2, 4, 9, 2), [2], True, (0.02, 100), (0.03, 0)),
    "u8_h": (np.uint8, (1, 11, 2, 3), [1], False, (0.01, 0), (0.02, 5)),
    # the output step twice the input's over 2x2: sums in quarter levels, many quotients on a .5 tie
    "s8_ties": (np.int8, (1, 2, 2, 32), [1, 2], True, (0.25, 0), (0.5, 1)),
    "u8_ties": (np.uint8, (1, 2, 4, 16), [1, 2], False, (0.125, 128), (0.25, 128)),
}


def _single(dtype, shape, axes, keep, xq, yq):
    mb = ModelBuilder()
    x = mb.input("x", shape, dtype, xq)
    y = mb.op("MEAN", [x, mb.const("axes", np.array(axes, np.int32))], "ReducerOptions",
              out_quant=yq, version=2 if dtype == np.int8 else 1, keep_dims=keep)
    mb.output(y)
    return mb.build()


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_single_requantizing_mean_pools_bit_identically(name, tmp_path, monkeypatch):
    dtype, shape, axes, keep, xq, yq = SINGLE[name]
    src, new = tmp_path / "m.tflite", tmp_path / "m.armnn"
    src.write_bytes(_single(dtype, shape, axes, keep, xq, yq))
    g = _convert(src, new)
    types = [l.type for l in g.layers]
    assert LayerType.Reduce not in types and types.count(LayerType.Pooling2d) == 1
    pool = next(l for l in g.layers if l.type == LayerType.Pooling2d)
    assert (pool.out().info.scale, pool.out().info.offset) == (np.float32(yq[0]), yq[1])
    _need_runner()
    old = _reduce_form(src, tmp_path / "old.armnn", monkeypatch)
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    for seed in range(3):
        _same_bits(new, old, [np.random.default_rng(seed).integers(lo, hi + 1, shape).astype(dtype)])
    x = np.random.default_rng(7).integers(lo, hi + 1, shape).astype(dtype)
    checks = [verify(str(src), str(f), inputs=[x], tolerance=Tolerance(lsb=1), armnn_runtime=RUNNER) for f in (new, old)]
    assert checks[0].ok, checks[0].format()
    assert _levels(checks[0]) <= _levels(checks[1])
    check = verify(str(src), str(new), inputs=[x], tolerance=Tolerance(lsb=1))  # the numpy executor
    assert check.ok, check.format()


def test_20_08_and_19_02_keep_the_mean(tmp_path):
    """20.08's Pooling2d costs more than its Mean: before 23.08 the requantizing MEAN stays a Mean."""
    src = tmp_path / "m.tflite"
    src.write_bytes(_single(*SINGLE["s8_hw_keep"]))
    for target in ("19.02", "20.08"):
        out = tmp_path / f"{target}.armnn"
        assert cli.main([str(src), "-o", str(out), "-q", "--target", target]) == 0
        types = [l.type for l in read(out.read_bytes()).layers]
        assert LayerType.Mean in types and LayerType.Pooling2d not in types
