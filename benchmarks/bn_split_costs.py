"""What a scaled BatchNormalization costs on CpuRef against its split form (passes/bn_split.py).

    python benchmarks/bn_split_costs.py [--quick]

Each case is a one-layer network x -> BatchNormalization(scale, shift) -> y, written once as
it is and once split by bn_split.split_batchnorm (Multiplication + Addition by Constants) for
the 20.08 and the 23.08 format, and run on the CpuRef of each release that reads the format.
The figure is callgrind's instruction count per inference, (count of 3 runs - count of 1) / 2,
so loading and optimizing the network are left out, and it does not depend on the machine's load.
These figures set bn_split.SPLIT_MIN_ELEMENTS.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from armnn_import.ir.graph import Graph  # noqa: E402
from armnn_import.ir.types import LayerType, TensorInfo  # noqa: E402
from armnn_import.lowering.builder import NetBuilder  # noqa: E402
from armnn_import.passes.bn_split import split_batchnorm  # noqa: E402
from armnn_import.report import Report  # noqa: E402
from armnn_import.serialize import write  # noqa: E402

HARNESS = "/var/cache/armnn-import-harness"
RUNTIMES = {"20.08": ("20.08", "23.08"), "23.08": ("23.08",)}  # format -> releases that read it
SHAPES = [(2, 16, 1, 1, 1), (12, 32, 1, 1, 1), (1, 4, 4, 8, 3), (1, 7, 9, 5, 3), (1, 8, 8, 16, 3),
          (1, 16, 14, 24, 3), (1, 32, 28, 32, 3), (1, 1, 1, 64, 3), (48, 32, 1, 1, 1), (1, 16, 8, 8, 1),
          (1, 24, 14, 16, 1), (1, 3, 5, 2, 3)]  # N, ..., channel axis (1: NCHW, 3: NHWC)


def network(target: str, shape, axis: int, split: bool) -> bytes:
    rng = np.random.default_rng(0)
    nb = NetBuilder(Graph(target), Report())
    c = shape[axis]
    y = nb.batchnorm(nb.g.add_input("x", TensorInfo(shape)), rng.uniform(0.5, 2, c), rng.standard_normal(c), axis, "bn")
    nb.g.add_output("y", y)
    if split:  # (whether or not split_batchnorms would: the costs are what decides that)
        split_batchnorm(nb.g, nb, next(l for l in nb.g.layers if l.type == LayerType.BatchNormalization))
    return write(nb.g)


def instructions(runner: str, model: str, inp: str, repeat: int) -> int:
    with tempfile.TemporaryDirectory() as out:
        cg = os.path.join(out, "cg.out")
        p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg}", runner,
                            "--repeat", str(repeat), model, out, inp], capture_output=True, text=True)
        m = re.search(r"Collected : (\d+)", p.stderr)
        if p.returncode or not m:
            raise RuntimeError(p.stderr[-2000:])
        return int(m.group(1))


def per_inference(runner: str, data: bytes, x: np.ndarray) -> float:
    with tempfile.TemporaryDirectory() as d:
        model, inp = os.path.join(d, "m.armnn"), os.path.join(d, "x.npy")
        with open(model, "wb") as f:
            f.write(data)
        np.save(inp, x)
        return (instructions(runner, model, inp, 3) - instructions(runner, model, inp, 1)) / 2


def main() -> None:
    shapes = SHAPES[:3] if "--quick" in sys.argv else SHAPES
    print(f"{'format':6s} {'runtime':7s} {'shape':18s} {'layout':6s} {'elements':>8s} "
          f"{'BN instr':>10s} {'split instr':>11s} {'ratio':>6s}")
    for target, releases in RUNTIMES.items():
        for *shape, axis in shapes:
            shape = tuple(shape)
            x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
            kept, split = network(target, shape, axis, False), network(target, shape, axis, True)
            for rel in releases:
                runner = os.path.join(HARNESS, f"{rel}-deb12", "armnn-run")
                a, b = per_inference(runner, kept, x), per_inference(runner, split, x)
                layout = "NCHW" if axis == 1 else "NHWC"
                print(f"{target:6s} {rel:7s} {str(shape):18s} {layout:6s} {int(np.prod(shape)):8d} "
                      f"{a:10.0f} {b:11.0f} {b / a:6.3f}", flush=True)


if __name__ == "__main__":
    main()
