#!/usr/bin/env python3
"""Measure the Float16 error of --fp16 on the float reference networks, on the
real Arm NN 20.08 runtime (CpuRef): each model is converted twice (float32 and
--fp16), both run on the model's reference inputs (its .npz, rounded to Float16
so both read the same numbers), and the outputs are compared.

    ARMNN_HARNESS_DIR=.harness python scripts/fp16_error.py

Prints one row per model and output: the max abs error, the largest |float32
value| (the scale), their ratio, and the max elementwise relative error over
the elements of magnitude at least 1% of the scale. The README quotes it.
"""
import glob
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def models():
    return sorted(glob.glob(str(ROOT / "test_models/onnx/*.onnx"))) + \
        sorted(glob.glob(str(ROOT / "test_models/tflite/models/*.float32.tflite")))


def main() -> int:
    import armnn_import
    from armnn_import.testing.armnn_runtime import find_runner, run_armnn

    runner = os.environ.get("ARMNN_RUNNER") or find_runner()
    if runner is None:
        print("no Arm NN runner (build it with tests/armnn_runtime/build.sh)", file=sys.stderr)
        return 1
    rows, worst = [], (0.0, 0.0)
    for path in models():
        data = np.load(os.path.splitext(path)[0] + ".npz")
        f32 = armnn_import.convert(path)
        xs = [data[f"input_{i}"].astype(np.float16) for i in range(len(f32.network.input_layers))]
        f16 = armnn_import.convert(path, fp16=True, fp16_inputs=xs)
        want = run_armnn(f32.to_bytes(), [x.astype(np.float32) for x in xs], runner=runner)
        got = run_armnn(f16.to_bytes(), xs, runner=runner)
        for k, (g, w) in enumerate(zip(got, want)):
            g, w = g.astype(np.float64), w.astype(np.float64)
            err = np.abs(g - w)
            scale = float(np.abs(w).max())
            big = np.abs(w) >= 0.01 * scale
            rel = float((err[big] / np.abs(w[big])).max()) if big.any() else 0.0
            rows.append((os.path.relpath(path, ROOT / "test_models"), k, float(err.max()), scale,
                         float(err.max()) / scale if scale else 0.0, rel))
            worst = (max(worst[0], float(err.max())), max(worst[1], rows[-1][4]))
    print(f"{'model':52} out  max abs err  max |f32|  abs/max  max rel (|x| >= 1% max)")
    for name, k, err, scale, ratio, rel in rows:
        print(f"{name:52} {k:3}  {err:11.3g}  {scale:9.3g}  {ratio:7.2%}  {rel:8.2%}")
    print(f"worst: max abs error {worst[0]:.3g}, {worst[1]:.2%} of the output's largest value")
    return 0


if __name__ == "__main__":
    sys.exit(main())
