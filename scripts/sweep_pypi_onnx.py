"""Sweep the ONNX models shipped inside public PyPI wheels (tests/onnx/pypi_models.py) through the
CLI at every target and on every Arm NN runtime that reads each file, against onnxruntime.

    python scripts/sweep_pypi_onnx.py [--only REGEX] [--out DIR] [--write-doc] [--no-run]

For each model and target: `armnn-import MODEL -o F --target T --input-shape ...` (the refusal
lines, without the model's path, when it refuses), the layer count, and for each runtime
(19.02 and 20.08 files on 20.08 and 23.08, 23.08 files on 23.08) the max abs error of every output
against onnxruntime (unoptimized, one thread) on the seeded inputs, and whether it is within
rtol 1e-3 and atol 1e-4 x max(1, max |reference|). CpuRef ms: `armnn-run --repeat 3` mean per
inference of the 23.08 file on 23.08. Results go to DIR/results.json (default
/tmp/pypi-onnx-sweep); --write-doc puts the table into docs/wheel-models-onnx.md between its
<!-- table --> markers.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "onnx"))
sys.path.insert(0, str(ROOT / "scripts"))
import pypi_cache  # noqa: E402
import pypi_models  # noqa: E402
from reference_io import run_ort  # noqa: E402

PAIRS = {"19.02": ("20.08", "23.08"), "20.08": ("20.08", "23.08"), "23.08": ("23.08",)}
RTOL, ATOL = 1e-3, 1e-4


def runner(release: str) -> str:
    from armnn_import.testing import armnn_runtime
    return armnn_runtime.find_runner(release) or armnn_runtime.build_harness(release)


def convert(src: Path, out: Path, model, target: str):
    """(layers, None) or (None, refusal lines)."""
    cmd = [sys.executable, "-m", "armnn_import", str(src), "-o", str(out), "--target", target,
           *model.shape_args()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        lines = [ln.replace(f"{src}: ", "") for ln in proc.stderr.splitlines() if ln.startswith("armnn-import: error")]
        return None, [re.sub(r"^armnn-import: error: ", "", ln) for ln in lines] or [proc.stderr.strip()[-300:]]
    from armnn_import.serialize import read
    return len(read(out.read_bytes()).layers), None


def ordered_io(out: Path):
    from armnn_import.serialize import read
    g = read(out.read_bytes())
    ins = sorted(g.input_layers, key=lambda l: l.binding_id)
    outs = sorted(g.output_layers, key=lambda l: l.binding_id)
    return [l.name for l in ins], [l.name for l in outs]


def compare(got: list, want: dict, names: list) -> tuple[float, bool]:
    worst, ok = 0.0, True
    for g, name in zip(got, names):
        w = want[name]
        g = g.reshape(w.shape).astype(np.float64)
        err = float(np.abs(g - w).max()) if w.size else 0.0
        worst = max(worst, err)
        ok = ok and bool(np.allclose(g, w, rtol=RTOL, atol=ATOL * max(1.0, float(np.abs(w).max(initial=0)))))
    return worst, ok and len(got) == len(names)


def time_ms(path: Path, release: str, inputs: list) -> float | None:
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for i, x in enumerate(inputs):
            files.append(f"{tmp}/in{i}.npy")
            np.save(files[-1], x)
        proc = subprocess.run([runner(release), "--repeat", "3", str(path), tmp, *files],
                              capture_output=True, text=True, timeout=3600)
    m = re.search(r"time_ms=([0-9.]+)", proc.stdout)
    return float(m.group(1)) if m else None


def sweep_one(model, work: Path) -> dict:
    from armnn_import.testing.armnn_runtime import ArmnnRuntimeError, run_armnn
    src = pypi_cache.member(model.wheel, model.member)
    feeds = model.feeds()
    want_list = run_ort(src.read_bytes(), feeds)
    import onnx
    out_names = [o.name for o in onnx.load(str(src), load_external_data=False).graph.output]
    want = dict(zip(out_names, want_list))
    row = {"model": model.name, "wheel": f"{model.wheel.name}=={model.wheel.version}", "member": model.member}
    for target, releases in PAIRS.items():
        out = work / f"{model.name}-{target}.armnn"
        layers, refusal = convert(src, out, model, target)
        cell = {"layers": layers, "refusal": refusal, "runs": {}}
        if layers is not None:
            in_names, names = ordered_io(out)
            inputs = [feeds[n] for n in in_names]
            for release in releases:
                try:
                    got = run_armnn(out, inputs, runner=runner(release), timeout=3600)
                    err, ok = compare(got, want, names)
                    cell["runs"][release] = {"max_abs": err, "ok": ok}
                except ArmnnRuntimeError as e:
                    cell["runs"][release] = {"error": str(e).strip().splitlines()[-1][:200]}
            if target == "23.08":
                row["ms"] = time_ms(out, "23.08", inputs)
        row[target] = cell
        print(model.name, target, json.dumps(cell), flush=True)
    return row


def _cell(cell: dict) -> str:
    if cell["layers"] is None:
        return "refused: " + "; ".join(cell["refusal"])
    runs = []
    for rel, r in cell["runs"].items():
        runs.append(f"{rel}: " + (f"**error** {r['error']}" if "error" in r else
                                  f"{'ok' if r['ok'] else '**FAIL**'} {r['max_abs']:.3g}"))
    return f"{cell['layers']}, " + " / ".join(runs)


def table(rows: list) -> str:
    lines = ["| model (wheel) | 19.02: layers, on 20.08 / 23.08 | 20.08: layers, on 20.08 / 23.08 | "
             "23.08: layers, on 23.08 | CpuRef ms (23.08) |", "|---|---|---|---|---|"]
    for r in rows:
        ms = f"{r['ms']:.1f}" if r.get("ms") else ""
        lines.append(f"| {r['model']} ({r['wheel']}) | {_cell(r['19.02'])} | {_cell(r['20.08'])} | "
                     f"{_cell(r['23.08'])} | {ms} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="a regular expression: the models whose names it matches")
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "pypi-onnx-sweep"))
    ap.add_argument("--write-doc", action="store_true")
    ap.add_argument("--no-run", action="store_true", help="only print (and write) the table of DIR/results.json")
    args = ap.parse_args()
    work = Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    store = work / "results.json"
    done = {r["model"]: r for r in json.loads(store.read_text())} if store.exists() else {}
    for model in pypi_models.MODELS:
        if args.no_run or (args.only and not re.search(args.only, model.name)):
            continue
        done[model.name] = sweep_one(model, work)
        store.write_text(json.dumps(list(done.values()), indent=1))
    rows = [done[m.name] for m in pypi_models.MODELS if m.name in done]
    text = table(rows)
    print(text)
    if args.write_doc:
        doc = ROOT / "docs" / "wheel-models-onnx.md"
        before, _, rest = doc.read_text().partition("<!-- table -->\n")
        _, _, after = rest.partition("<!-- /table -->\n")
        doc.write_text(f"{before}<!-- table -->\n{text}<!-- /table -->\n{after}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
