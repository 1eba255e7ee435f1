"""Accuracy of the per-tensor quantized ONNX reference models on the real Arm NN runtime,
in levels of the output's quantization, with onnxruntime's own spread beside it.

For each model of test_models/onnx_quant/ (or those named), on its stored input and
`--samples` seeded N(0, 1) inputs: onnxruntime optimized (its fused integer kernels) vs
onnxruntime unoptimized (the graph as written, the reference), and the .armnn network
on Arm NN 20.08 (CpuRef, $ARMNN_HARNESS_DIR) vs the same reference.

    python scripts/quant_accuracy.py [NAME ...] [--samples N]

With --target 20.08 or 23.08 (the richer formats: int8 kept as QAsymmS8, per-channel weights
exact, float inputs and outputs with Quantize/Dequantize layers), the per-channel models instead,
run on Arm NN --release (default: the target's) with float inputs, the outputs compared in levels
of the quantization the model's last DequantizeLinear reads:

    python scripts/quant_accuracy.py --target 23.08 [--release 23.08] [NAME ...]
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


def out_levels(graph):
    """(scale, offset) of the tensor the network's Dequantize of its output reads."""
    from armnn_import.ir.types import LayerType
    src = graph.output_layers[0].inputs[0].layer
    assert src.type == LayerType.Dequantize, "float output made by a Dequantize layer"
    info = src.inputs[0].info
    return {"scale": info.scale, "offset": info.offset}


def measure_float_io(name, entry, target, runner, samples, tmp):
    """measure() for a float-I/O file of a richer target (levels not clipped: int8 or uint8)."""
    path = DIR / entry["file"]
    out = Path(tmp) / f"{name}.armnn"
    armnn_import.convert(path, target=target).save(out)
    graph = armnn_import.load(out)
    oq = out_levels(graph)
    data = np.load(DIR / entry["data"])
    shape = data["input_0"].shape
    rng = np.random.default_rng(123)
    xs = [data["input_0"]] + [rng.standard_normal(shape).astype(np.float32) for _ in range(samples)]
    plain, fast = session(path, False), session(path, True)
    iname = onnx.load(path).graph.input[0].name
    lv = lambda v: np.round(np.asarray(v, np.float64) / oq["scale"]) + oq["offset"]  # noqa: E731
    opt, arm = [], []
    for x in xs:
        ref = lv(plain.run(None, {iname: x})[0])
        opt.append(np.abs(lv(fast.run(None, {iname: x})[0]) - ref).reshape(-1))
        got = run_armnn(out, [x], runner=runner)[0]
        arm.append(np.abs(lv(got).reshape(-1) - ref.reshape(-1)))
    opt, arm = np.concatenate(opt), np.concatenate(arm)
    return opt.max(), opt.mean(), arm.max(), arm.mean()


def main_float_io(args):
    import tempfile
    from armnn_import.testing.armnn_runtime import find_runner
    release = args.release or args.target
    entries = {e["name"]: e for e in json.loads((DIR / "manifest.json").read_text())["models"] if e["per_channel"]}
    runner = find_runner(release) or build_harness(release)
    print(f"| model | ORT optimized vs unoptimized (max / mean levels) | armnn-import --target {args.target} "
          f"on Arm NN {release} vs unoptimized (max / mean levels) |\n|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.names or entries:
            om, oa, am, aa = measure_float_io(name, entries[name], args.target, runner, args.samples, tmp)
            print(f"| {name} | {om:.0f} / {oa:.3f} | {am:.0f} / {aa:.3f} |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--samples", type=int, default=3, help="seeded inputs besides the stored one")
    ap.add_argument("--target", help="20.08 or 23.08: the per-channel models, float I/O (see above)")
    ap.add_argument("--release", help="the Arm NN runtime to run on (default: the target's)")
    args = ap.parse_args()
    if args.target:
        return main_float_io(args)
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
