#!/usr/bin/env python3
"""Every ONNX reference model made float16 the way users do it (onnxconverter-common's
convert_float_to_float16 with keep_io_types=True), converted with --target 23.08, run on Arm NN
23.08 (CpuRef) against onnxruntime on the float16 model; one line per model.

    python scripts/sweep_float16_keep_io.py [--fp16]

A line: the model, ok/FAIL (max abs error over 1e-2 of the largest output), that relative error,
the layer count and the Cast layers; or why onnxruntime or the converter refused it.
"""
import glob
import os
import sys

import numpy as np
import onnx

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "test_models", "onnx")


def one(path, run, fp16: bool) -> str:
    import onnxruntime as ort
    from onnxconverter_common import float16
    import armnn_import
    m16 = float16.convert_float_to_float16(onnx.load(path), keep_io_types=True)
    ref = np.load(path[:-5] + ".npz")
    try:
        s = ort.InferenceSession(m16.SerializeToString(), providers=["CPUExecutionProvider"])
        feeds = {i.name: ref[f"input_{k}"] for k, i in enumerate(s.get_inputs())}
        want = s.run(None, feeds)
    except Exception as e:  # noqa: BLE001 - the float16 model itself
        return f"onnxruntime cannot run it: {str(e).splitlines()[0][:100]}"
    try:
        r = armnn_import.convert(m16, target="23.08", fp16=fp16)
    except armnn_import.ArmnnImportError as e:
        return "refused: " + "; ".join(e.lines())[:200]
    got = run(r.to_bytes(), [feeds[l.name].astype(l.outputs[0].dtype.np_dtype) for l in r.network.input_layers])
    err = max(float(np.abs(g.reshape(np.shape(w)).astype(np.float32) - w).max() / max(1e-6, np.abs(w).max()))
              for g, w in zip(got, want))
    kinds = [l.type.name for l in r.network.layers]
    return f"{'ok' if err < 1e-2 else 'FAIL'} {err:.2g} layers {len(kinds)} casts {kinds.count('Cast')}"


def main() -> int:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from armnn_import.testing.armnn_runtime import build_harness, run_armnn
    runner = build_harness("23.08")
    lines = [f"{os.path.basename(p)}: {one(p, lambda d, xs: run_armnn(d, xs, runner=runner), '--fp16' in sys.argv)}"
             for p in sorted(glob.glob(os.path.join(ROOT, "*.onnx")))]
    print("\n".join(lines))
    print(f"{sum(': ok ' in ln for ln in lines)} ok of {len(lines)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
