"""Accuracy of the per-tensor quantized ONNX reference models on the real Arm NN runtime,
in levels of the output's quantization, with onnxruntime's own spread beside it.

For each model of test_models/onnx_quant/ (or those named), on its stored input and
`--samples` seeded N(0, 1) inputs: onnxruntime optimized (its fused integer kernels) vs
onnxruntime unoptimized (the graph as written, the reference), and the .armnn network
on Arm NN 20.08 (CpuRef, $ARMNN_HARNESS_DIR) vs the same reference.

    python scripts/quant_accuracy.py [NAME ...] [--samples N]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import armnn_import  # noqa: E402
from armnn_import.testing.armnn_runtime import build_harness, run_armnn  # noqa: E402

DIR = ROOT / "test_models" / "onnx_quant"


def session(path, optimized):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimized
                                     else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def levels(values, q):
    return np.clip(np.round(np.asarray(values, np.float64) / q["scale"]) + q["offset"], 0, 255)


def measure(name, entry, runner, samples):
    path = DIR / entry["file"]
    result = armnn_import.convert(path)
    iq, oq = result.report.inputs[0]["quantization"], result.report.outputs[0]["quantization"]
    data = np.load(DIR / entry["data"])
    shape = data["input_0"].shape
    rng = np.random.default_rng(123)
    xs = [data["input_0"]] + [rng.standard_normal(shape).astype(np.float32) for _ in range(samples)]
    plain, fast = session(path, False), session(path, True)
    iname = onnx.load(path).graph.input[0].name
    opt, arm = [], []
    for x in xs:
        ref = levels(plain.run(None, {iname: x})[0], oq)
        opt.append(np.abs(levels(fast.run(None, {iname: x})[0], oq) - ref).reshape(-1))
        got = run_armnn(result.to_bytes(), [levels(x, iq).astype(np.uint8)], runner=runner)[0]
        arm.append(np.abs(got.astype(np.float64).reshape(-1) - ref.reshape(-1)))
    opt, arm = np.concatenate(opt), np.concatenate(arm)
    return opt.max(), opt.mean(), arm.max(), arm.mean()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--samples", type=int, default=3, help="seeded inputs besides the stored one")
    args = ap.parse_args()
    entries = {e["name"]: e for e in json.loads((DIR / "manifest.json").read_text())["models"]
               if not e["per_channel"]}
    runner = build_harness()
    print("| model | ORT optimized vs unoptimized (max / mean levels) | armnn-import on Arm NN 20.08 vs "
          "unoptimized (max / mean levels) |\n|---|---|---|")
    for name in args.names or entries:
        om, oa, am, aa = measure(name, entries[name], runner, args.samples)
        print(f"| {name} | {om:.0f} / {oa:.3f} | {am:.0f} / {aa:.3f} |", flush=True)


if __name__ == "__main__":
    main()
