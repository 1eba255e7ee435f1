"""What single layers cost on Arm NN 20.08's CpuRef, per run, on a 1x32x56x56 tensor.

    python benchmarks/layer_costs.py

Each case is a one-layer network (plus what it needs to be fed) built with NetBuilder,
run by the harness (`armnn-run --repeat`): the figure is (time of 21 runs - time of
1 run) / 20, best of 3, so loading is left out. These figures chose some lowerings:
a convolution's bias is an Addition, not a BatchNormalization (passes/shifts.py), and
the quantized depthwise bias rows are not built with a Merger (lowering/quant.py).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from armnn_import.ir import descriptors as D  # noqa: E402
from armnn_import.ir.types import DataLayout, DataType, LayerType, TensorInfo  # noqa: E402
from armnn_import.lowering.builder import NetBuilder  # noqa: E402
from armnn_import.serialize import write  # noqa: E402
from armnn_import.testing.armnn_runtime import build_harness  # noqa: E402

SHAPE = (1, 32, 56, 56)
Q = (0.05, 3)
RNG = np.random.default_rng(0)
DW = RNG.standard_normal((32, 1, 3, 3)).astype(np.float32)
PW = RNG.standard_normal((32, 32, 1, 1)).astype(np.float32)
DW_Q = RNG.integers(0, 256, (32, 1, 3, 3)).astype(np.uint8)


def _bias_add(nb, x):
    return nb.binary(LayerType.Addition, x, nb.constant(x, np.ones((1, 32, 1, 1), np.float32), "c"), "add")


FLOAT = {
    "BatchNormalization": lambda nb, x: nb.batchnorm(x, np.ones(32), np.full(32, 0.1), 1, "bn"),
    "Addition, [1,C,1,1] constant": _bias_add,
    "Activation Linear": lambda nb, x: nb.linear(x, 1.0, 0.15, "lin"),
    "Permute NCHW->NHWC": lambda nb, x: nb.permute(x, (0, 2, 3, 1), "perm"),
    "DepthwiseConvolution2d 3x3": lambda nb, x: nb.conv2d(x, DW, None, "dw", pads=(1, 1, 1, 1), groups=32),
    "Convolution2d 1x1 32->32": lambda nb, x: nb.conv2d(x, PW, None, "pw"),
}
QUANT = {
    "BatchNormalization": lambda nb, x: nb.batchnorm(x, np.ones(32), np.full(32, 0.1), 1, "bn", quant=Q),
    "Activation Linear": lambda nb, x: nb.linear(x, 0.0, 0.15, "lin", quant=Q),
    "Pad (axis 1, x2)": lambda nb, x: nb.pad(x, [(0, 0), (0, 32), (0, 0), (0, 0)], "pad"),
    "Merger (axis 0, x2)": lambda nb, x: nb.concat([x, x], 0, "cat"),
    "SpaceToBatchNd (block 1, pad 1)": lambda nb, x: nb.add(
        LayerType.SpaceToBatchNd, "s2b", [x], D.SpaceToBatchNdDescriptor((1, 1), (1, 1, 1, 1), DataLayout.NCHW)),
    "DepthwiseConvolution2d 3x3": lambda nb, x: nb.conv2d(
        x, DW_Q, None, "dw", pads=(1, 1, 1, 1), groups=32, quant=Q,
        weight_info=TensorInfo(DW_Q.shape, DataType.QuantisedAsymm8, 0.01, 128)),
}


def _network(build, dtype) -> bytes:
    nb = NetBuilder()
    info = TensorInfo(SHAPE, dtype, *Q) if dtype == DataType.QuantisedAsymm8 else TensorInfo(SHAPE)
    nb.g.add_output("y", build(nb, nb.g.add_input("x", info)))
    return write(nb.g)


def _seconds(runner: str, model: str, inp: str, out: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run([runner, "--repeat", str(repeat), model, out, inp], check=True, capture_output=True)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    runner = build_harness()
    with tempfile.TemporaryDirectory() as tmp:
        for title, cases, dtype, x in (
                ("Float32", FLOAT, DataType.Float32, RNG.standard_normal(SHAPE).astype(np.float32)),
                ("QuantisedAsymm8", QUANT, DataType.QuantisedAsymm8, RNG.integers(0, 256, SHAPE).astype(np.uint8))):
            inp, model = os.path.join(tmp, "x.npy"), os.path.join(tmp, "m.armnn")
            np.save(inp, x)
            print(f"\n{title}, {'x'.join(map(str, SHAPE))}         ms per run")
            for name, build in cases.items():
                with open(model, "wb") as f:
                    f.write(_network(build, dtype))
                ms = (_seconds(runner, model, inp, tmp, 21) - _seconds(runner, model, inp, tmp, 1)) / 20 * 1000
                print(f"  {name:36s} {ms:8.2f}")


if __name__ == "__main__":
    main()
