#!/usr/bin/env python3
"""Sweep the TFLite models of the pinned mediapipe wheel (tests/tflite/mediapipe_models.py) through
the CLI at every target and every real Arm NN runtime that reads the file, against LiteRT.

    nice -n 10 python scripts/sweep_mediapipe.py [--only REGEX] [--repeat 3] [--out /tmp/mp-sweep]

Writes <out>/mediapipe.md (the table of docs/wheel-models.md) and <out>/mediapipe.json. The reference
is LiteRT's reference kernels; "LiteRT spread" is their largest gap to its default (XNNPACK) kernels
(mediapipe_models.litert). A cell is the layer count, then per runtime: ok/FAIL (rtol 1e-3, atol
1e-4 x max|LiteRT| or the spread where larger, as the tests), the max abs error over all outputs
(selfie segmentation: of its logits, mediapipe_models.LOGITS), and armnn-run --repeat N's mean ms
per inference; or the refusal, each distinct reason once with how many nodes gave it.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "tflite"))
import mediapipe_models as M  # noqa: E402

from armnn_import.serialize import read  # noqa: E402
from armnn_import.testing import armnn_runtime  # noqa: E402

#: target -> the runtime releases that read its files
READERS = {"19.02": ("20.08", "23.08"), "20.08": ("20.08", "23.08"), "23.08": ("23.08",)}


def convert(model, out, target):
    """None, or the refusal: each distinct reason (node names dropped) with its count."""
    proc = subprocess.run([sys.executable, "-m", "armnn_import.cli", str(model), "-o", str(out), "-q",
                           "--target", target], capture_output=True, text=True)
    if proc.returncode == 0:
        return None
    lines = [re.sub(r"^armnn-import: error: [^:]*: ", "", s) for s in proc.stderr.strip().splitlines()]
    counts = Counter(re.sub(r" \(node '[^']*'\)", "", s) for s in lines if s)
    return "; ".join(f"{r} (x{n})" if n > 1 else r for r, n in counts.items()) or f"exit {proc.returncode}"


def run(runner, armnn, x, repeat):
    with tempfile.TemporaryDirectory() as tmp:
        np.save(f"{tmp}/x.npy", x)
        proc = subprocess.run([runner, "--repeat", str(repeat), str(armnn), tmp, f"{tmp}/x.npy"],
                              capture_output=True, text=True, timeout=3600)
        if proc.returncode != 0:
            return None, proc.stderr.strip().splitlines()[-1][:200]
        ms = float(re.search(r"time_ms=([\d.]+)", proc.stdout + proc.stderr).group(1))
        outs = sorted(Path(tmp).glob("output_*.npy"), key=lambda p: int(p.stem.split("_")[1]))
        return [np.load(p) for p in outs], ms


def judge(got, want, spread):
    if len(got) != len(want):
        return False, f"{len(got)} outputs, LiteRT {len(want)}"
    got = [g.reshape(w.shape) if g.size == w.size else g for g, w in zip(got, want)]
    err = max(float(np.abs(g.astype(np.float64) - w).max()) if g.shape == w.shape else np.inf
              for g, w in zip(got, want))
    return all(M.close(g, w, s) for g, w, s in zip(got, want, spread)), f"{err:.3g}"


def sweep_model(name, path, targets, runners, out, repeat):
    x = M.seeded_input(name, path)
    if name in M.LOGITS:  # its output is a sigmoid at ~0 on a random image: compare the logits
        path = out / f"{name}.logits.tflite"
        path.write_bytes(M.with_output(M.model_paths()[name], M.LOGITS[name]))
    try:
        want, spread = M.litert(path, x)
    except RuntimeError as e:  # a custom op that LiteRT has no kernel for either
        want, spread, row = None, [], {"litert": str(e).splitlines()[0][:200]}
    else:
        row = {"spread": f"{max(spread, default=0):.3g}"}
    for target in targets:
        armnn = out / f"{name}-{target}.armnn"
        refusal = convert(path, armnn, target)
        if refusal:
            row[target] = {"refused": refusal}
            continue
        cell = {"layers": len(read(armnn.read_bytes()).layers), "runs": {}}
        for release in READERS[target]:
            if release not in runners:
                continue
            got, ms = run(runners[release], armnn, x, repeat)
            if got is None:
                cell["runs"][release] = {"error": ms}
                continue
            ok, err = judge(got, want, spread) if want is not None else (False, "no LiteRT reference")
            cell["runs"][release] = {"ok": ok, "err": err, "ms": round(ms, 1)}
        row[target] = cell
        armnn.unlink()
        print(name, target, cell, flush=True)
    return row


def fmt(cell):
    if "refused" in cell:
        return "refused: " + cell["refused"].replace("|", "\\|")
    runs = []
    for release, r in cell["runs"].items():
        if "error" in r:
            runs.append(f"{release} **ERROR** {r['error']}")
        else:
            runs.append(f"{release} {'ok' if r['ok'] else '**FAIL**'} {r['err']} ({r['ms']:g} ms)")
    return f"{cell['layers']}: " + " / ".join(runs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="regex of model names")
    ap.add_argument("--targets", default="19.02,20.08,23.08")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="/tmp/mp-sweep")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    targets = args.targets.split(",")
    runners = {r: armnn_runtime.find_runner(r) for r in ("20.08", "23.08")}
    runners = {r: p for r, p in runners.items() if p}
    paths = M.model_paths()
    results = json.loads((out / "mediapipe.json").read_text()) if (out / "mediapipe.json").exists() else {}
    for name in M.NAMES:
        if not args.only or re.search(args.only, name):
            results[name] = sweep_model(name, paths[name], targets, runners, out, args.repeat)
            (out / "mediapipe.json").write_text(json.dumps(results, indent=1) + "\n")
    lines = ["| model | " + " | ".join(targets) + " | LiteRT spread |", "|---" * (len(targets) + 2) + "|"]
    for name in M.NAMES:
        if name in results:
            lines.append(f"| {name} | " + " | ".join(fmt(results[name][t]) if t in results[name] else ""
                                                     for t in targets) + f" | {results[name].get('spread', '')} |")
    (out / "mediapipe.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
