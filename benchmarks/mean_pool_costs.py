"""What a MEAN over H and W costs on CpuRef as a Mean, a Reduce or an Average Pooling2d.

    python benchmarks/mean_pool_costs.py

Each case is a one-layer network x -> MEAN over axes 1, 2 (NHWC, keep_dims) -> y, written for the
20.08 format (Mean, Pooling2d) and the 23.08 format (Mean, Reduce, Pooling2d) and run on that
release's CpuRef. The figure is callgrind's instruction count per inference ((3 runs - 1 run) / 2,
bn_split_costs.per_inference), and every form's output is compared bit for bit with the Mean's.
These figures chose frontends/tflite/ops/reduce.py's Pooling2d from the 23.08 target on.

    python benchmarks/mean_pool_costs.py --views

The same for means over the trailing (spatial) axes of 3-D [N,C,L] and 5-D [N,C,D,H,W] tensors in
the 23.08 format: the Mean we wrote before (5-D: Reshape to 3-D, Mean, Reshape), one Pooling3d
(5-D), and Reshape to a 4-D view, Average Pooling2d, Reshape back (lowering/pooling.py view4),
which these figures chose.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from armnn_import.ir.graph import Graph  # noqa: E402
from armnn_import.ir.types import DataLayout, PoolingAlgorithm, ReduceOperation, TensorInfo  # noqa: E402
from armnn_import.lowering.builder import NetBuilder  # noqa: E402
from armnn_import.report import Report  # noqa: E402
from armnn_import.serialize import write  # noqa: E402
from bn_split_costs import HARNESS, per_inference  # noqa: E402

SHAPES = [(1, 6, 5, 192), (1, 24, 20, 16), (1, 3, 3, 1280), (1, 7, 7, 64)]
VIEW_SHAPES = [(1, 64, 50), (1, 16, 200), (1, 256, 7), (1, 16, 4, 7, 7), (1, 8, 8, 14, 14), (1, 64, 2, 3, 3)]
FORMS = {"20.08": ("mean", "pool"), "23.08": ("mean", "reduce", "pool")}


def network(target: str, shape, form: str) -> bytes:
    nb = NetBuilder(Graph(target), Report())
    x = nb.g.add_input("x", TensorInfo(shape))
    if form == "mean":
        y = nb.mean(x, (1, 2), True, "m")
    elif form == "reduce":
        y = nb.reduce(x, (1, 2), True, ReduceOperation.Mean, "m")
    else:
        y = nb.pool2d(x, PoolingAlgorithm.Average, (shape[1], shape[2]), "m", layout=DataLayout.NHWC)
    nb.g.add_output("y", y)
    return write(nb.g)


def view_network(shape, form: str) -> bytes:
    """A mean over axes 2.. of a 3-D or 5-D NCHW-like tensor (kept) in the 23.08 format."""
    nb = NetBuilder(Graph("23.08"), Report())
    y = nb.g.add_input("x", TensorInfo(shape))
    kept = shape[:2] + (1,) * (len(shape) - 2)
    if form == "pool3d":
        y = nb.pool3d(y, PoolingAlgorithm.Average, shape[2:], "m")
    elif form == "view":
        view = (shape[0], shape[1], int(np.prod(shape[2:-1])), shape[-1])
        y = nb.pool2d(nb.reshape(y, view, "v"), PoolingAlgorithm.Average, view[2:], "m")
    else:  # the Mean, over one merged axis when 5-D (onnx ops/common.py mean)
        y = nb.mean(nb.reshape(y, shape[:2] + (int(np.prod(shape[2:])),), "v"), (2,), True, "m")
    nb.g.add_output("y", nb.reshape(y, kept, "back"))
    return write(nb.g)


def views() -> None:
    runner = os.path.join(HARNESS, "23.08-deb12", "armnn-run")
    print(f"{'shape':18s} {'Mean instr':>10s} {'Pooling3d':>10s} {'view pool':>10s} {'view/Mean':>9s}  outputs")
    for shape in VIEW_SHAPES:
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        forms = ("mean", "view") + (("pool3d",) if len(shape) == 5 else ())
        nets = {f: view_network(shape, f) for f in forms}
        cost = {f: per_inference(runner, nets[f], x) for f in forms}
        same = all(output(runner, n, x).tobytes() == output(runner, nets["mean"], x).tobytes() for n in nets.values())
        p3 = f"{cost['pool3d']:10.0f}" if "pool3d" in cost else f"{'-':>10s}"
        print(f"{str(shape):18s} {cost['mean']:10.0f} {p3} {cost['view']:10.0f} {cost['view'] / cost['mean']:9.3f}  "
              f"{'bit-identical' if same else 'DIFFER'}", flush=True)


def output(runner: str, data: bytes, x: np.ndarray) -> np.ndarray:
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "m.armnn"), "wb") as f:
            f.write(data)
        np.save(os.path.join(d, "x.npy"), x)
        subprocess.run([runner, os.path.join(d, "m.armnn"), os.path.join(d, "o"), os.path.join(d, "x.npy")],
                       check=True, capture_output=True)
        return np.load(os.path.join(d, "o", "output_0.npy"))


def main() -> None:
    print(f"{'format':6s} {'shape':16s} {'Mean instr':>10s} {'Reduce':>10s} {'Pooling2d':>10s} {'pool/Mean':>9s}  outputs")
    for target, forms in FORMS.items():
        runner = os.path.join(HARNESS, f"{target}-deb12", "armnn-run")
        for shape in SHAPES:
            x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
            nets = {f: network(target, shape, f) for f in forms}
            cost = {f: per_inference(runner, nets[f], x) for f in forms}
            outs = {f: output(runner, nets[f], x) for f in forms}
            same = all(np.array_equal(outs["mean"], o) for o in outs.values())
            red = f"{cost['reduce']:10.0f}" if "reduce" in cost else f"{'-':>10s}"
            print(f"{target:6s} {str(shape):16s} {cost['mean']:10.0f} {red} {cost['pool']:10.0f} "
                  f"{cost['pool'] / cost['mean']:9.3f}  {'bit-identical' if same else 'DIFFER'}", flush=True)


if __name__ == "__main__":
    views() if "--views" in sys.argv else main()
