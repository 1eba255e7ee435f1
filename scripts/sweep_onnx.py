#!/usr/bin/env python3
"""Run a folder of ONNX models through the CLI at every target and check each file on every real
Arm NN runtime that reads it (the sweep of docs/dynamo-sweep.md).

    python scripts/sweep_onnx.py /tmp/zoo/dynamo [--only REGEX] [--executor-only REGEX]
        [--json /tmp/zoo/dynamo/sweep.json] [--markdown]

Per model and target: `armnn-import MODEL -o F --target T`, then
`armnn-import verify MODEL F --inputs SEEDED.npz --armnn-runtime R` for every release R that reads
the file (19.02 and 20.08 files on 20.08 and 23.08, 23.08 files on 23.08). Inputs are seeded:
float N(0, 1); int64 token ids in [0, 50) (the sweep's embeddings have 50 rows). Models whose
name matches --executor-only are verified on the numpy executor instead of the runtimes (the
opset variants of a graph already run on the runtimes), except the 23.08 file on 23.08.
Results accumulate in --json (a model already there is not run again).
"""
import argparse
import json
import re
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import onnx

HARNESS = Path("/var/cache/armnn-import-harness")
RUNNERS = {r: HARNESS / f"{r}-deb12" / "armnn-run" for r in ("20.08", "23.08")}
READS = {"19.02": ("20.08", "23.08"), "20.08": ("20.08", "23.08"), "23.08": ("23.08",)}


def inputs_for(model_path: Path, out: Path) -> Path:
    """A seeded .npz of the model's inputs (dynamic dimensions as 1)."""
    m = onnx.load(str(model_path), load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    rng = np.random.default_rng(zlib.crc32(model_path.name.split(".")[0].encode()))
    arrays = {}
    for v in m.graph.input:
        if v.name in inits:
            continue
        tt = v.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else 1 for d in tt.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        arrays[v.name] = (rng.integers(0, 50, size=shape).astype(dtype) if np.issubdtype(dtype, np.integer)
                          else rng.standard_normal(shape).astype(dtype))
    np.savez(out, **arrays)
    return out


def last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip() and "Warning" not in ln]
    return lines[-1] if lines else ""


def verify(model: Path, armnn: Path, npz: Path, runner: Path | None) -> str:
    """'ok 1.2e-07', '**FAIL** ...' or the error line."""
    cmd = ["armnn-import", "verify", str(model), str(armnn), "--inputs", str(npz)]
    if runner is not None:
        cmd += ["--armnn-runtime", str(runner)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    rows = [ln.split() for ln in r.stdout.splitlines() if ln.split()[-1:] in (["ok"], ["FAIL"])]
    errs = [row[2] for row in rows if len(row) >= 6]
    worst = max(errs, key=lambda e: float(e) if e not in ("-", "nan") else -1.0) if errs else "?"
    if r.returncode == 0:
        return f"ok {worst}"
    if rows:
        return f"**FAIL** {worst}"
    return f"**ERROR** {last_line(r.stderr or r.stdout)[:160]}"


def layers_of(armnn: Path) -> int:
    from armnn_import.serialize import read
    return len(read(armnn.read_bytes()).layers)


def sweep_one(model: Path, work: Path, executor_only: bool) -> dict:
    npz = inputs_for(model, work / (model.stem + ".inputs.npz"))
    row = {}
    for target, releases in READS.items():
        armnn = work / f"{model.stem}.{target}.armnn"
        r = subprocess.run(["armnn-import", str(model), "-o", str(armnn), "--target", target, "-q"],
                           capture_output=True, text=True, timeout=3600)
        if r.returncode:
            errors = [ln.strip() for ln in (r.stderr + r.stdout).splitlines() if ln.strip()]
            row[target] = {"refused": errors[-8:]}
            continue
        cell = {"layers": layers_of(armnn)}
        for release in releases:
            on_runtime = not executor_only or (target, release) == ("23.08", "23.08")
            cell[release if on_runtime else f"{release} (executor)"] = verify(
                model, armnn, npz, RUNNERS[release] if on_runtime else None)
        row[target] = cell
        armnn.unlink()
    return row


def markdown(results: dict) -> str:
    head = ["| model | opset | 19.02: layers, on 20.08 / 23.08 | 20.08: layers, on 20.08 / 23.08 | "
            "23.08: layers, on 23.08 |", "|---|---|---|---|---|"]
    rows = []
    for name, r in sorted(results.items()):
        cells = []
        for target in READS:
            c = r["targets"].get(target, {})
            if "refused" in c:
                reason = re.sub(r"^.*?\): ", "", c["refused"][-1])
                cells.append(f"refused: {reason[:110]}")
            else:
                verdicts = " / ".join(v + (" (exec.)" if "executor" in k else "") for k, v in c.items() if k != "layers")
                cells.append(f"{c.get('layers')}, {verdicts}")
        rows.append(f"| {name} | {r.get('opset', '')} | " + " | ".join(cells) + " |")
    return "\n".join(head + rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--only")
    ap.add_argument("--executor-only", help="regex of model names verified on the numpy executor")
    ap.add_argument("--json", action="append", help="results file (default FOLDER/sweep.json); "
                                                     "with --markdown, several are merged")
    ap.add_argument("--markdown", action="store_true", help="print the table of --json and stop")
    args = ap.parse_args()
    folder = Path(args.folder)
    paths = [Path(p) for p in args.json] if args.json else [folder / "sweep.json"]
    if args.markdown:
        merged = {}
        for p in paths:
            merged.update(json.loads(p.read_text()))
        print(markdown(merged))
        return
    jpath = paths[0]
    results = json.loads(jpath.read_text()) if jpath.exists() else {}
    work = folder / "work"
    work.mkdir(exist_ok=True)
    for model in sorted(folder.glob("*.onnx")):
        name = model.name[:-5]
        if name in results or (args.only and not re.search(args.only, name)):
            continue
        opset = next((o.version for o in onnx.load(str(model), load_external_data=False).opset_import
                      if o.domain in ("", "ai.onnx")), None)
        executor_only = bool(args.executor_only and re.search(args.executor_only, name))
        results[name] = {"opset": opset, "targets": sweep_one(model, work, executor_only)}
        print(name, json.dumps(results[name]), flush=True)
        jpath.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
