"""TFLite CONV_3D (float32) as one Convolution3d layer (--target 23.08), on the real Arm NN 23.08
runtime against LiteRT, and the numpy executor; the earlier targets refuse it with the target
that has the layer."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from tfl_builder import ModelBuilder, run_litert  # noqa: E402

from armnn_import import cli  # noqa: E402
from armnn_import.executor import run  # noqa: E402
from armnn_import.ir.types import LayerType as L  # noqa: E402
from armnn_import.serialize import read  # noqa: E402

RNG = np.random.default_rng(11)
CASES = {  # input [N, D, H, W, C], filter [kD, kH, kW, I, O], options, bias
    "valid": ((1, 4, 5, 6, 3), (2, 3, 2, 3, 4), dict(padding="VALID"), True),
    "same-strided-relu": ((2, 5, 4, 6, 2), (3, 3, 3, 2, 3), dict(padding="SAME", stride_d=2, stride_w=2,
                                                               fused_activation_function="RELU"), True),
    "dilated-no-bias": ((1, 6, 5, 5, 2), (2, 2, 2, 2, 2), dict(padding="VALID", dilation_d_factor=2,
                                                              dilation_h_factor=2), False),
}


def conv3d_model(x_shape, w_shape, opts, bias):
    mb = ModelBuilder()
    x = mb.input("x", x_shape)
    w = mb.const("w", RNG.standard_normal(w_shape).astype(np.float32) * 0.5)
    b = mb.const("b", RNG.standard_normal(w_shape[4]).astype(np.float32)) if bias else -1
    full = dict(padding="VALID", stride_d=1, stride_h=1, stride_w=1, dilation_d_factor=1, dilation_h_factor=1,
                dilation_w_factor=1, fused_activation_function="NONE")
    full.update(opts)
    mb.output(mb.op("CONV_3D", [x, w, b], "Conv3DOptions", **full))
    return mb.build()


@pytest.mark.parametrize("name", CASES)
def test_conv3d_on_armnn_23_08(name, armnn_runner_for, tmp_path):
    runner = armnn_runner_for("23.08")
    x_shape, w_shape, opts, bias = CASES[name]
    src, out = tmp_path / "m.tflite", tmp_path / "m.armnn"
    src.write_bytes(conv3d_model(x_shape, w_shape, opts, bias))
    assert cli.main([str(src), "-o", str(out), "-q", "--target", "23.08"]) == 0
    graph = read(out.read_bytes())
    assert [l.type for l in graph.layers].count(L.Convolution3d) == 1
    x = RNG.standard_normal(x_shape).astype(np.float32)
    (want,) = run_litert(src.read_bytes(), [x])
    for got in (runner(out.read_bytes(), [x])[0], run(graph, [x])[0]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", ["19.02", "20.08"])
def test_conv3d_needs_the_23_08_target(target, tmp_path, capsys):
    src = tmp_path / "m.tflite"
    src.write_bytes(conv3d_model(*CASES["valid"]))
    assert cli.main([str(src), "-o", str(tmp_path / "m.armnn"), "--target", target]) == 1
    assert "--target 23.08" in capsys.readouterr().err
