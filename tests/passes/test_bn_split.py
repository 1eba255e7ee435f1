"""split_batchnorms (passes/bn_split.py): from the 20.08 format on, a scaled float
BatchNormalization becomes Multiplication + Addition by Constant layers where CpuRef runs that
faster. On the real runtimes the split network writes the same bits as the BatchNormalization
(mean, variance and eps of any value; NaN, infinities, signed zeros and subnormals in the input),
for the 20.08 format on Arm NN 20.08 and 23.08 and for the 23.08 format on 23.08; a TFLite
MUL + ADD by per-channel constants, as the CLI writes it, matches LiteRT bit for bit."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from armnn_import import cli
from armnn_import.executor import run
from armnn_import.ir import descriptors as D
from armnn_import.ir.graph import Graph
from armnn_import.ir.types import ConstTensor, DataLayout, LayerType, TensorInfo
from armnn_import.passes import run_pipeline
from armnn_import.passes.bn_split import split_pays
from armnn_import.report import Report
from armnn_import.serialize import read, write

FORMATS = {"20.08": ("20.08", "23.08"), "23.08": ("23.08",)}  # format -> runtimes that read it


def _bn_graph(target, shape, layout, rng, zero_shift=False):
    """x -> BatchNormalization (random mean, variance, eps, gamma of both signs) -> y."""
    c = shape[1 if layout == DataLayout.NCHW else 3]
    f = lambda v: ConstTensor(np.asarray(v, np.float32))  # noqa: E731
    gamma = rng.standard_normal(c) * 3
    mean, var, beta = rng.standard_normal(c), rng.uniform(0.01, 4, c), rng.standard_normal(c)
    if zero_shift:  # a pure scale: add = 0 - mult * 0 = 0
        mean, beta = np.zeros(c), np.zeros(c)
    g = Graph(target)
    x = g.add_input("x", TensorInfo(shape))
    bn = g.add(LayerType.BatchNormalization, "bn", [x], D.BatchNormalizationDescriptor(1e-3, layout),
               tensors={"mean": f(mean), "variance": f(var), "beta": f(beta), "gamma": f(gamma)})
    g.add_output("y", bn.out())
    return g


def _input(shape, rng):
    x = (rng.standard_normal(shape) * 100).astype(np.float32)
    x.flat[:8] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, np.finfo(np.float32).max]
    return x


def _types(graph):
    return [l.type for l in graph.layers]


@pytest.mark.parametrize("shape, layout", [((1, 6, 5, 7), DataLayout.NHWC), ((1, 7, 6, 5), DataLayout.NCHW)])
def test_split_is_bit_for_bit_the_batchnormalization(shape, layout, armnn_release_runner):
    rng = np.random.default_rng(3)
    x = _input(shape, rng)
    for fmt, readers in FORMATS.items():
        if armnn_release_runner.release not in readers:
            continue
        kept = run_pipeline(_bn_graph(fmt, shape, layout, np.random.default_rng(5)), Report(), passes=())
        split = run_pipeline(_bn_graph(fmt, shape, layout, np.random.default_rng(5)), Report())
        types = _types(split)
        assert LayerType.BatchNormalization not in types, (fmt, types)
        assert types.count(LayerType.Multiplication) == types.count(LayerType.Addition) == 1
        assert types.count(LayerType.Constant) == 2
        data = write(split)
        assert write(read(data)) == data
        want, = armnn_release_runner(write(kept), [x])
        got, = armnn_release_runner(data, [x])
        assert want.shape == got.shape == shape
        assert np.array_equal(want.view(np.uint32), got.view(np.uint32)), (fmt, armnn_release_runner.release)
        # the numpy executor computes the split network's numbers too
        ours, = run(split, [x])
        assert np.array_equal(ours.view(np.uint32), got.view(np.uint32))


def test_a_zero_shift_is_a_multiplication_only(armnn_release_runner):
    """mean 0, beta 0: no Addition; equal to the BatchNormalization everywhere (zeros of
    either sign compare equal), each zero with the sign of x * mult."""
    shape, layout = (1, 6, 5, 7), DataLayout.NHWC
    fmt = "23.08" if armnn_release_runner.release == "23.08" else "20.08"
    x = _input(shape, np.random.default_rng(4))
    kept = run_pipeline(_bn_graph(fmt, shape, layout, np.random.default_rng(6), True), Report(), passes=())
    split = run_pipeline(_bn_graph(fmt, shape, layout, np.random.default_rng(6), True), Report())
    assert LayerType.Addition not in _types(split) and LayerType.Multiplication in _types(split)
    want, = armnn_release_runner(write(kept), [x])
    got, = armnn_release_runner(write(split), [x])
    np.testing.assert_array_equal(got, want)
    zeros = got == 0
    assert zeros.any()
    mult = next(l for l in split.layers if l.type == LayerType.Constant).tensors["input"].data.reshape(-1)
    with np.errstate(over="ignore"):
        assert np.array_equal(np.signbit(got[zeros]), np.signbit((x * mult)[zeros]))


def test_where_it_does_not_pay_the_batchnormalization_stays():
    """[N, C, 1, 1] (a recurrent or attention lowering's per-feature scale) walks one broadcast loop
    per element: dearer than the BatchNormalization on Arm NN 23.08 (bn_split.COSTS), so kept on
    both formats; the 19.02 format keeps every BatchNormalization."""
    rng = np.random.default_rng(0)
    assert split_pays((1, 16, 14, 24), "20.08") and split_pays((1, 16, 14, 24), "23.08")
    assert not split_pays((12, 32, 1, 1), "20.08") and not split_pays((12, 32, 1, 1), "23.08")
    for fmt in FORMATS:
        g = run_pipeline(_bn_graph(fmt, (12, 32, 1, 1), DataLayout.NCHW, rng), Report())
        assert LayerType.BatchNormalization in _types(g)
    g = run_pipeline(_bn_graph("19.02", (1, 6, 5, 7), DataLayout.NHWC, rng), Report())
    assert LayerType.BatchNormalization in _types(g) and LayerType.Constant not in _types(g)


def _mul_add_model(c):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tflite"))
    from tfl_builder import ModelBuilder
    rng = np.random.default_rng(9)
    mb = ModelBuilder()
    x = mb.input("x", [1, 8, 6, c])
    y = mb.op("MUL", [x, mb.const("a", (rng.standard_normal(c) * 2).astype(np.float32))], "MulOptions")
    mb.output(mb.op("ADD", [y, mb.const("b", rng.standard_normal(c).astype(np.float32))], "AddOptions"))
    return mb.build()


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_tflite_mul_add_by_constants_as_the_cli_writes_it_matches_litert(fmt, armnn_runner_for, tmp_path):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tflite"))
    from tfl_builder import run_litert
    src, out = tmp_path / "m.tflite", tmp_path / "m.armnn"
    src.write_bytes(_mul_add_model(5))
    assert cli.main([str(src), "-o", str(out), "-q", "--target", fmt]) == 0
    graph = read(out.read_bytes())
    assert LayerType.BatchNormalization not in _types(graph)
    x = _input((1, 8, 6, 5), np.random.default_rng(2))
    x[np.abs(x) > 1e30] = 0  # (LiteRT clamps a float MUL's or ADD's result to +-FLT_MAX)
    want = run_litert(src.read_bytes(), [x])[0]
    for rel in FORMATS[fmt]:
        got = armnn_runner_for(rel)(str(out), [x])[0].reshape(want.shape)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), rel


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_float16_network_keeps_its_batchnormalization(fmt, armnn_runner_for):
    """--fp16: Multiplication + Addition would round to Float16 twice where the BatchNormalization
    rounds once, so the network keeps the BatchNormalization (and runs on the release's CpuRef)."""
    import armnn_import
    data = _mul_add_model(5)
    types = _types(armnn_import.convert(data, target=fmt).network)
    assert LayerType.BatchNormalization not in types and LayerType.Multiplication in types
    result = armnn_import.convert(data, target=fmt, fp16=True)
    types = _types(result.network)
    assert LayerType.BatchNormalization in types and LayerType.Multiplication not in types
    x = np.random.default_rng(2).standard_normal((1, 8, 6, 5)).astype(np.float16)
    got = armnn_runner_for(fmt)(result.to_bytes(), [x])[0]
    from tfl_builder import run_litert
    want = run_litert(data, [x.astype(np.float32)])[0]
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.reshape(want.shape).astype(np.float32), want, rtol=2e-3, atol=4e-3)
