#!/usr/bin/env python3
"""Sweep a folder of TFLite files (scripts/gen_keras_sweep.py's) through the CLI at every target
and every Arm NN runtime that reads the file, against LiteRT: the table of docs/keras-sweep.md.

    python scripts/keras_sweep.py /tmp/keras_sweep [--only REGEX] [--out /tmp/keras_sweep/results.json]

Each file: `armnn-import F -o OUT --target T` (in process, as cli.main), then `armnn-import verify F
OUT --armnn-runtime RUNNER --inputs SEEDED.npz` on Arm NN 20.08 and 23.08 (19.02 and 20.08 files) or
23.08 alone (23.08 files). Inputs: float N(0,1), int8 over the whole range, token ids (int32 inputs)
in [0, vocab) from the generator's manifest; seeded by the file's name. A cell records the layer
count and each runtime's verdict with the max abs error (float) or LSB error (quantized output),
or the refusal lines.
"""
import argparse
import contextlib
import io
import json
import re
import sys
import zlib
from pathlib import Path

import numpy as np

HARNESS = Path("/var/cache/armnn-import-harness")
RUNNERS = {"20.08": HARNESS / "20.08-deb12" / "armnn-run", "23.08": HARNESS / "23.08-deb12" / "armnn-run"}
READS = {"19.02": ("20.08", "23.08"), "20.08": ("20.08", "23.08"), "23.08": ("23.08",)}


def cli(argv):
    from armnn_import import cli as c
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = c.main(argv)
        except Exception as e:  # a traceback out of the CLI is a bug to record, not to hide
            rc, err = 99, io.StringIO(f"TRACEBACK {type(e).__name__}: {e}")
    return rc, out.getvalue(), err.getvalue()


def seeded_inputs(path: Path, vocab, folder: Path) -> Path:
    from ai_edge_litert.interpreter import Interpreter
    it = Interpreter(model_path=str(path))
    rng = np.random.default_rng(zlib.crc32(path.name.encode()))
    arrays = {}
    for i, d in enumerate(it.get_input_details()):
        shape = [max(1, int(s)) for s in d["shape"]]
        if d["dtype"] == np.float32:
            arrays[f"input_{i}"] = rng.standard_normal(shape).astype(np.float32)
        elif d["dtype"] == np.int32:
            arrays[f"input_{i}"] = rng.integers(0, vocab or 10, shape).astype(np.int32)
        else:
            info = np.iinfo(d["dtype"])
            arrays[f"input_{i}"] = rng.integers(info.min, info.max + 1, shape).astype(d["dtype"])
    npz = folder / f"{path.stem}.inputs.npz"
    np.savez(npz, **arrays)
    return npz


def problems(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if "error" in ln or "TRACEBACK" in ln or "warning" in ln]


def verdict(text: str) -> str:
    rows = [ln.split() for ln in text.splitlines()]
    header = next((i for i, r in enumerate(rows) if r[:2] == ["output", "shape"]), None)
    if header is None:
        return "?? " + " | ".join(text.strip().splitlines()[-2:])[:160]
    errs = []
    for r in rows[header + 1:]:
        if len(r) < 6 or r[0].startswith("verify"):
            break
        errs.append(f"{r[-2]} L" if r[-2] != "-" else r[-4])
    ok = "PASS" in text
    return ("ok " if ok else "**FAIL** ") + ",".join(errs)


def sweep_file(path: Path, vocab, work: Path) -> dict:
    npz = seeded_inputs(path, vocab, work)
    cells = {}
    for target, runtimes in READS.items():
        out = work / f"{path.stem}.{target}.armnn"
        rc, so, se = cli([str(path), "-o", str(out), "--target", target])
        m = re.search(r"\((\d+) layers", so)
        if rc != 0 or not m:
            cells[target] = {"refused": problems(se) or [se.strip()[-200:]], "rc": rc}
            continue
        cell = {"layers": int(m.group(1)), "warnings": problems(se)}
        for rt in runtimes:
            if not RUNNERS[rt].exists():
                cell[rt] = "no runtime"
                continue
            rc, so, se = cli(["verify", str(path), str(out), "--armnn-runtime", str(RUNNERS[rt]),
                              "--inputs", str(npz)])
            cell[rt] = verdict(so + se) if rc in (0, 1) else f"**ERROR** rc {rc}: {(so + se).strip()[-200:]}"
        cells[target] = cell
    return cells


def short_refusal(lines) -> str:
    """A cell's refusal lines without the file, node and tensor names: each distinct reason once,
    with the operators that gave it."""
    seen = {}
    for ln in lines:
        ln = re.sub(r"^armnn-import: error: [^:]+: ", "", ln)
        ln = re.sub(r"'[^']*'", "'...'", re.sub(r" \(node '[^']*'\)", "", ln))
        op, _, reason = ln.partition(": ")
        reason = re.sub(r"; hint: .*?( \[[a-z-]+\])$", r"\1", reason)  # (the hints: docs/keras-sweep.md)
        seen.setdefault(reason or op, []).append(op if reason else "")
    return "refused: " + "; ".join(f"{r} ({', '.join(dict.fromkeys(o for o in ops if o))})"
                                   for r, ops in seen.items())


def cell_text(cell, target) -> str:
    if "refused" in cell:
        return short_refusal(cell["refused"])
    return f"{cell['layers']}, " + " / ".join(cell.get(rt, "-") for rt in READS[target])


def markdown(results) -> str:
    rows = ["| model.mode | 19.02: layers, on 20.08 / 23.08 | 20.08: layers, on 20.08 / 23.08 | 23.08: layers, on 23.08 |",
            "|---|---|---|---|"]
    for key, res in results.items():
        if "converter" in res:
            rows.append(f"| {key} | converter: {res['converter'][:120]} | | |")
            continue
        cells = [cell_text(res[t], t) for t in READS]
        if cells[0].startswith("refused") and len(set(cells)) == 1:
            cells = [cells[0].replace("refused:", "refused at every target:"), "", ""]
        rows.append(f"| {key} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--only")
    ap.add_argument("--out")
    ap.add_argument("--new", action="store_true", help="only files not in the results yet")
    ap.add_argument("--markdown", action="store_true", help="print the table of the results and stop")
    args = ap.parse_args()
    if args.markdown:
        return print(markdown(json.loads(Path(args.out or Path(args.folder) / "results.json").read_text())), end="")
    folder = Path(args.folder)
    manifest = json.loads((folder / "keras_sweep_manifest.json").read_text())
    work = folder / "work"
    work.mkdir(exist_ok=True)
    res_path = Path(args.out or folder / "results.json")
    results = json.loads(res_path.read_text()) if res_path.exists() else {}
    for key, entry in manifest.items():
        if (args.only and not re.search(args.only, key)) or (args.new and key in results):
            continue
        if "skipped" in entry:
            results[key] = {"converter": entry["skipped"]}
            continue
        results[key] = sweep_file(folder / f"{key}.tflite", entry.get("vocab"), work)
        print(key, json.dumps(results[key]), flush=True)
        res_path.write_text(json.dumps(results, indent=1) + "\n")
    res_path.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
