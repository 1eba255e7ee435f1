#!/usr/bin/env python3
"""`verify`'s Float16 defaults against every float reference model, on the real runtimes: each
model is converted with --fp16 at a target (its .npz inputs for the range check), then `verify`
runs the source model (onnxruntime / LiteRT, float32) and the file on the Arm NN CpuRef of that
target's release (20.08 -> Arm NN 20.08, 23.08 -> Arm NN 23.08).

    python scripts/fp16_verify_sweep.py [--target 20.08 23.08]

One row per model: the largest output error as a fraction of that output's largest |value|
(from the .npz's stored outputs), and whether verify passes with the Float16 defaults and with
the Float32 ones. The last lines: counts, and the worst fraction (verify_compare.FLOAT16 cites it).
"""
import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def _float_models():
    from reference_models import all_models
    return [(i, p, d) for i, p, d in all_models()
            if i.startswith("onnx/") and p.suffix == ".onnx" or i.endswith(".float32.tflite")]


def _row(path, npz, target, runner):
    import armnn_import
    from armnn_import.errors import ConversionError, UnsupportedModelError
    from armnn_import.verify_cmd import verify
    from armnn_import.verify_compare import FLOAT32
    with np.load(npz) as z:
        xs = [z[k] for k in sorted(z.files) if k.startswith("input_")]
        outs = [z[k] for k in sorted(z.files) if k.startswith("output_")]
    try:
        data = armnn_import.convert(path, fp16=True, target=target, fp16_inputs=xs).to_bytes()
    except (UnsupportedModelError, ConversionError) as e:  # (a layer the target lacks)
        return None, str(e).splitlines()[-1].strip()[:100]
    check = verify(path, data, inputs=xs, armnn_runtime=runner)
    strict = verify(path, data, inputs=xs, armnn_runtime=runner, tolerance=FLOAT32)
    fracs = [c.max_abs / max(float(np.max(np.abs(o.astype(np.float64)))), 1e-12)
             for c, o in zip(check.outputs, outs) if o.dtype.kind == "f" and o.size]
    frac = max(fracs, default=0.0)
    return (frac, check.ok, strict.ok), None


def main() -> int:
    from armnn_import.testing.armnn_runtime import build_harness
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", nargs="+", default=["20.08", "23.08"])
    args = ap.parse_args()
    for target in args.target:
        runner = build_harness(target)
        rows, refused = [], []
        for mid, path, npz in _float_models():
            row, why = _row(path, npz, target, runner)
            if row is None:
                refused.append(mid)
                print(f"{target}  {mid:60s} refused: {why}")
                continue
            rows.append((mid, *row))
            print(f"{target}  {mid:60s} {row[0]:.5f}  defaults {'pass' if row[1] else 'FAIL'}  "
                  f"float32 defaults {'pass' if row[2] else 'fail'}")
        worst = max(rows, key=lambda r: r[1])
        print(f"{target}: {len(rows)} converted, {sum(r[2] for r in rows)} pass the Float16 defaults, "
              f"{sum(r[3] for r in rows)} would pass the Float32 ones, {len(refused)} refused; "
              f"worst {worst[1]:.4f} x max |output| ({worst[0]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
