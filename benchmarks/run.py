"""Benchmarks of armnn-import: large-model conversion, startup, and lean networks.

    python benchmarks/run.py [--sizes 10,100,500] [--json out.json] [--quick] [--profile]

Prints tables with pass/fail against the targets (see benchmarks/README.md) and writes
all numbers as JSON. Every measurement that cannot be made (converter or harness
missing, model unsupported) becomes a one-line reason in its row instead of an error.
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

import gen_large  # noqa: E402
import instructions  # noqa: E402
import pair  # noqa: E402

MB = gen_large.MB
OUT = os.path.join(gen_large.CACHE, "out")
RUN_DIR = os.path.join(OUT, f"run-{os.getpid()}")  # per process: two benchmark runs never share inputs

# Targets (from the issue); they are reported, not asserted.
FLOOR_RATIO_MAX = 3.0      # conversion time / raw I/O floor, models >= 100 MB
ANCHOR_RATIO_MAX = 1.0     # conversion time / Arm NN 20.08 TfLite parser + serializer, >= 100 MB
RSS_FACTOR, RSS_EXTRA_MB = 1.5, 150  # peak RSS <= 1.5 x model file + 150 MB
OUT_SLACK = 0.01           # output size <= weight bytes + 1 %
HELP_MAX_S = 0.3
TINY_MAX_S = 1.0
CPUREF_RATIO_MAX = 1.0      # our CpuRef time / the anchor's (median of 5, the same run)
# --instructions: ours <= the anchor's instructions per CpuRef inference, up to INSTRUCTIONS_SLACK of
# them or INSTRUCTIONS_SLACK_ABS (under 1 us): two files of the same layers differ by a few hundred
# instructions of names and bindings (measured: -360 to +468 of 1.5e7-1.9e9 on 20.08)
INSTRUCTIONS_SLACK, INSTRUCTIONS_SLACK_ABS = 1e-4, 2000
LEAN_CALL_MS = 1000        # wall time of one timed armnn-run call: enough inferences for a steady CPU figure
LEAN_PAIR_S = 1.0          # armnn-pair: CPU seconds of work per side in each of its rounds

# Runs a command, then prints its wall time and peak RSS: a fresh process per
# measurement, so RUSAGE_CHILDREN holds exactly that command.
WRAPPER = r"""
import json, resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
wall = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": p.returncode, "wall_s": wall, "peak_rss_mb": ru.ru_maxrss * 1024 / 1e6,
                  "cpu_s": ru.ru_utime + ru.ru_stime, "stderr": p.stderr.decode(errors="replace")[-4000:]}))
"""


def converter_cmd() -> list[str]:
    exe = shutil.which("armnn-import")
    return [exe] if exe else [sys.executable, "-m", "armnn_import"]


def env() -> dict:
    # The repo root on the path also makes its .egg-info (the frontend entry points) visible.
    e = dict(os.environ)
    e["PYTHONPATH"] = REPO + os.pathsep + e.get("PYTHONPATH", "") if e.get("PYTHONPATH") else REPO
    # Cached bytecode, as an installed package has: without it every run recompiles our modules
    # (~0.2 s). The cache lives under .cache so the source tree gets no __pycache__ folders.
    e.pop("PYTHONDONTWRITEBYTECODE", None)
    e["PYTHONPYCACHEPREFIX"] = os.path.join(gen_large.CACHE, "pycache")
    return e


def warm_up() -> None:
    """Fill the bytecode cache (and the page cache) before anything is timed."""
    meta = gen_large.tiny()
    os.makedirs(OUT, exist_ok=True)
    for fmt_ in ("onnx", "tflite"):
        subprocess.run(converter_cmd() + ["-q", meta["files"][fmt_], "-o", os.path.join(OUT, "warm.armnn")],
                       capture_output=True, env=env(), cwd=REPO, stdin=subprocess.DEVNULL)
    subprocess.run([sys.executable, "-c", "import armnn_import.testing.armnn_runtime, onnxruntime"],
                   capture_output=True, env=env(), cwd=REPO)


def one_line(text: str) -> str:
    """The first error line of a tool's stderr, without the prefixes that repeat on every row."""
    lines = [ln.strip() for ln in (text or "").strip().splitlines() if ln.strip()]
    err = [ln for ln in lines if "error" in ln.lower()]
    line = err[0] if err else (lines[-1] if lines else "(no message)")
    line = re.sub(r"^(armnn-import|armnn-run|armnn-tflite-anchor): error: (\S+\.(tflite|onnx): )?", "", line)
    line = re.sub(r"^TfLite parser failed: Failed to parse operator #\d+ within subgraph #\d+ error: ", "", line)
    line = re.sub(r"(\s+at)+( function .*)?$", "", line)
    return line if len(line) <= 140 else line[:137] + "..."


def measure(cmd: list[str]) -> dict:
    os.sync()  # so earlier writes are not flushed inside this measurement's fsync
    p = subprocess.run([sys.executable, "-c", WRAPPER, *cmd], capture_output=True, text=True,
                       env=env(), cwd=REPO)
    if p.returncode != 0:
        return {"rc": -1, "stderr": p.stderr}
    return json.loads(p.stdout.strip().splitlines()[-1])


def io_floor(src: str, dst: str) -> float:
    """Read the input file, write as many bytes next to the output, fsync, rename: what our writer does."""
    os.sync()
    t = time.perf_counter()
    with open(src, "rb") as f:
        data = f.read()
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(dst), suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, dst)
    dt = time.perf_counter() - t
    os.unlink(dst)
    return dt


def harness(release: str = "20.08"):
    """(runner, anchor, note) for an Arm NN release, building its harness when missing; None for
    what is unavailable (the note says why)."""
    try:
        from armnn_import.testing import armnn_runtime as rt
    except Exception:  # noqa: BLE001 - the harness module is optional for these benchmarks
        return None, None, "armnn_import.testing.armnn_runtime not importable"
    why = ""
    if rt.find_anchor(release) is None or rt.find_runner(release) is None:
        try:
            rt.build_harness(release)
        except RuntimeError as e:
            why = one_line(str(e))
    problem = rt.anchor_problem(release) if rt.find_anchor(release) is None else None
    if problem:
        why = (why + "; " if why else "") + f"anchor {problem[0]}: {problem[1]}"
    return rt.find_runner(release), rt.find_anchor(release), why


def verdict(ok) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "FAIL")


def table(headers: list[str], rows: list[list]) -> str:
    cells = [[str(c) for c in r] for r in [headers] + rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def fmt(x, spec=".2f", none="-"):
    return none if x is None else format(x, spec)


# -- large models -------------------------------------------------------------

def bench_large(sizes, runs, anchor) -> list[dict]:
    os.makedirs(OUT, exist_ok=True)
    rows = []
    for size in sizes:
        meta = gen_large.large(size)
        runs_here = runs if size < 200 else 1  # the 500 MB case once, to spare the shared machine
        for fmt_ in ("onnx", "tflite"):
            src = meta["files"][fmt_]
            dst = os.path.join(OUT, f"{meta['name']}.{fmt_}.armnn")
            row = {"model": meta["name"], "format": fmt_, "size_mb": size, "file_bytes": os.path.getsize(src),
                   "weight_bytes": meta["weight_bytes"], "runs": runs_here}
            ours, floor, anch = [], [], []
            for _ in range(runs_here):
                floor.append(io_floor(src, dst + ".floor"))
                if os.path.exists(dst):
                    os.unlink(dst)
                m = measure(converter_cmd() + [src, "-o", dst])
                if m["rc"] != 0 or not os.path.exists(dst):
                    row["error"] = "convert failed: " + one_line(m.get("stderr", ""))
                    break
                ours.append(m)
                if anchor and fmt_ == "tflite":
                    a = measure([anchor, src, dst + ".anchor"])
                    if a["rc"] == 0:
                        anch.append(a)
                    else:
                        row["anchor_error"] = "anchor failed: " + one_line(a.get("stderr", ""))
            row["floor_s"] = min(floor)
            if ours:
                best = min(ours, key=lambda m: m["wall_s"])
                row.update(time_s=best["wall_s"], cpu_s=best["cpu_s"],
                           peak_rss_mb=max(m["peak_rss_mb"] for m in ours),
                           out_bytes=os.path.getsize(dst))
                row["floor_ratio"] = row["time_s"] / row["floor_s"]
            if anch:
                best = min(anch, key=lambda m: m["wall_s"])
                row.update(anchor_time_s=best["wall_s"], anchor_rss_mb=max(m["peak_rss_mb"] for m in anch),
                           anchor_out_bytes=os.path.getsize(dst + ".anchor"))
                if "time_s" in row:
                    row["anchor_ratio"] = row["time_s"] / row["anchor_time_s"]
            for p in (dst, dst + ".anchor"):
                if os.path.exists(p):
                    os.unlink(p)  # keep the cache small: the inputs are what is worth keeping
            row["targets"] = large_targets(row)
            rows.append(row)
            print(f"  {meta['name']}.{fmt_}: " + (row.get("error") or
                  f"{row['time_s']:.2f} s, {row['peak_rss_mb']:.0f} MB"), file=sys.stderr, flush=True)
    return rows


def large_targets(row) -> dict:
    big = row["size_mb"] >= 100
    t = {}
    if "time_s" in row:
        t["time_vs_floor"] = row["floor_ratio"] <= FLOOR_RATIO_MAX if big else None
        t["time_vs_anchor"] = (row["anchor_ratio"] <= ANCHOR_RATIO_MAX
                               if big and "anchor_ratio" in row else None)
        t["peak_rss"] = row["peak_rss_mb"] <= RSS_FACTOR * row["file_bytes"] / MB + RSS_EXTRA_MB
        t["out_size"] = row["out_bytes"] <= row["weight_bytes"] * (1 + OUT_SLACK)
    return t


def print_large(rows):
    headers = ["model", "fmt", "in MB", "time s", "floor s", "x floor", "anchor s", "x anchor",
               "RSS MB", "anchor RSS", "RSS max", "out MB", "out max", "targets"]
    out = []
    for r in rows:
        if "error" in r:
            out.append([r["model"], r["format"], f"{r['file_bytes'] / MB:.1f}", r["error"]] + [""] * 10)
            continue
        t = r["targets"]
        marks = " ".join(f"{k}:{verdict(v)}" for k, v in t.items() if v is not None)
        out.append([r["model"], r["format"], f"{r['file_bytes'] / MB:.1f}", fmt(r["time_s"]), fmt(r["floor_s"]),
                    fmt(r["floor_ratio"], ".1f"), fmt(r.get("anchor_time_s")), fmt(r.get("anchor_ratio"), ".1f"),
                    f"{r['peak_rss_mb']:.0f}", fmt(r.get("anchor_rss_mb"), ".0f"), f"{RSS_FACTOR * r['file_bytes'] / MB + RSS_EXTRA_MB:.0f}",
                    f"{r['out_bytes'] / MB:.2f}", f"{r['weight_bytes'] * (1 + OUT_SLACK) / MB:.2f}", marks])
    print(table(headers, out))
    notes = [f"{r['model']}.{r['format']}: {r['anchor_error']}" for r in rows if "anchor_error" in r]
    if notes:
        print("\n".join(notes))


# -- startup ------------------------------------------------------------------

def wall(cmd) -> tuple[float, int, str]:
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env(), cwd=REPO, stdin=subprocess.DEVNULL)
    return time.perf_counter() - t, p.returncode, p.stderr


def bench_startup(n: int) -> dict:
    res = {"runs": n}
    times = []
    for _ in range(n):
        dt, rc, err = wall(converter_cmd() + ["--help"])
        if rc != 0:
            res["help_error"] = "--help failed: " + one_line(err)
            break
        times.append(dt)
    if times:
        res["help_s"] = statistics.median(times)
    meta = gen_large.tiny()
    os.makedirs(OUT, exist_ok=True)
    for fmt_ in ("onnx", "tflite"):
        times = []
        dst = os.path.join(OUT, f"tiny.{fmt_}.armnn")
        for _ in range(n):
            dt, rc, err = wall(converter_cmd() + [meta["files"][fmt_], "-o", dst])
            if rc != 0:
                res[f"tiny_{fmt_}_error"] = "convert failed: " + one_line(err)
                break
            times.append(dt)
        if times:
            res[f"tiny_{fmt_}_s"] = statistics.median(times)
    res["imports"] = import_check()
    t = {"help": res["help_s"] < HELP_MAX_S if "help_s" in res else False}
    for fmt_ in ("onnx", "tflite"):
        t[f"tiny_{fmt_}"] = res[f"tiny_{fmt_}_s"] < TINY_MAX_S if f"tiny_{fmt_}_s" in res else False
    t["lazy_imports"] = res["imports"].get("lazy", False)
    res["targets"] = t
    return res


def import_check() -> dict:
    """Which heavy packages `import armnn_import.cli` pulls in (python -X importtime)."""
    p = subprocess.run([sys.executable, "-X", "importtime", "-c", "import armnn_import.cli"],
                       capture_output=True, text=True, env=env(), cwd=REPO)
    if p.returncode != 0:
        return {"error": "import failed: " + one_line(p.stderr)}
    mods, cli_us = set(), None
    for line in p.stderr.splitlines():
        m = re.match(r"import time:\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\S+)", line.strip())
        if m:
            mods.add(m.group(3).split(".")[0])
            if m.group(3) == "armnn_import.cli":
                cli_us = int(m.group(2))
    heavy = sorted(mods & {"onnx", "tflite", "numpy", "flatbuffers", "onnxruntime", "google"})
    return {"heavy_imported": heavy, "cli_import_ms": cli_us / 1000 if cli_us else None,
            "modules": len(mods), "lazy": not ({"onnx", "tflite"} & mods)}


def print_startup(res):
    rows = [["armnn-import --help", fmt(res.get("help_s"), ".3f") if "help_s" in res else res.get("help_error"),
             f"< {HELP_MAX_S}", verdict(res["targets"]["help"])]]
    for fmt_ in ("onnx", "tflite"):
        v = res.get(f"tiny_{fmt_}_s")
        rows.append([f"tiny {fmt_} end to end", fmt(v, ".3f") if v is not None else res.get(f"tiny_{fmt_}_error"),
                     f"< {TINY_MAX_S}", verdict(res["targets"][f"tiny_{fmt_}"])])
    imp = res["imports"]
    desc = imp.get("error") or (f"heavy packages imported: {', '.join(imp['heavy_imported']) or 'none'}; "
                                f"armnn_import.cli {fmt(imp['cli_import_ms'], '.1f')} ms")
    rows.append(["import armnn_import.cli", desc, "no onnx/tflite", verdict(imp.get("lazy", False))])
    print(table([f"startup (median of {res['runs']})", "seconds / result", "target", ""], rows))


# -- lean networks --------------------------------------------------------------

def runner_layers(runner, path, graph_order) -> tuple[list[str], list[tuple], str]:
    """(layer types, inputs [(dtype descr, shape)], error) from `armnn-run --layers` without inputs."""
    # Line-buffered: the runner aborts on some load failures and would lose buffered lines.
    stdbuf = ["stdbuf", "-oL"] if shutil.which("stdbuf") else []
    args = stdbuf + [runner, "--layers"] + (["--graph-order"] if graph_order else []) + [path, RUN_DIR]
    p = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    types, ins = [], []
    for line in p.stdout.splitlines():
        m = re.match(r"layer \d+ index=\d+ type=(\w+)", line)
        if m:
            types.append(re.sub(r"Layer$", "", m.group(1)))
        m = re.match(r"input \d+ binding=-?\d+ \w+(?:\[([^\]]+)\])?\(([\d, ]*)\)", line)
        if m:
            ins.append((m.group(1), tuple(int(d) for d in m.group(2).replace(" ", "").split(",") if d)))
    err = "" if ins or p.returncode == 0 else one_line(p.stderr)
    return types, ins, err


def layer_types(runner, path, graph_order) -> tuple[list[str], list[tuple], str]:
    """Layer types (our reader; the runner for what our schema cannot read) and runtime inputs."""
    types, ins, err = runner_layers(runner, path, graph_order) if runner else ([], [], "no runner")
    try:
        from armnn_import.serialize import read
        with open(path, "rb") as f:
            types = [layer.type.name for layer in read(f.read()).layers]
    except Exception:  # noqa: BLE001 - anchor files use the 20.08 schema; the runner's list stands
        pass
    return types, ins, err


def adapt(x: np.ndarray, descr: str | None) -> np.ndarray:
    """The reference input in the dtype the network takes (int8 <-> uint8 shift the zero point)."""
    want = np.dtype(descr) if descr else x.dtype
    if x.dtype == want:
        return x
    if x.dtype == np.int8 and want == np.uint8:
        return (x.astype(np.int16) + 128).astype(np.uint8)
    if x.dtype == np.uint8 and want == np.int8:
        return (x.astype(np.int16) - 128).astype(np.int8)
    return x.astype(want)


def cpuref_run(runner, path, inputs, repeat, graph_order) -> tuple[float | None, float, str]:
    """(wall ms per inference as armnn-run times it, CPU seconds of the whole run, error)."""
    import resource
    outdir = RUN_DIR
    args = [runner, "--repeat", str(repeat)] + (["--graph-order"] if graph_order else []) + [path, outdir] + inputs
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    m = re.search(r"time_ms=([\d.]+)", p.stdout)
    return (float(m.group(1)), cpu, "") if p.returncode == 0 and m else (None, cpu, one_line(p.stderr))


def cpuref_ms(runner, path, inputs, repeat, graph_order) -> tuple[float | None, str]:
    ms, _, err = cpuref_run(runner, path, inputs, repeat, graph_order)
    return ms, err


def cpuref_cpu_ms(runner, path, inputs, repeat, graph_order) -> tuple[float | None, float | None, str]:
    """(wall ms, CPU ms) per inference: the CPU time is that of a `repeat` run less that of a
    1-inference run of the same file, over repeat - 1, so loading and optimizing drop out and
    the other processes on a loaded machine count far less than in the wall time."""
    ms, cpu_n, err = cpuref_run(runner, path, inputs, repeat, graph_order)
    if ms is None:
        return None, None, err
    _, cpu_1, err = cpuref_run(runner, path, inputs, 1, graph_order)
    return ms, (cpu_n - cpu_1) * 1000 / (repeat - 1), err


def save_inputs(npz_path, ins, tag) -> tuple[list[str], str]:
    data = np.load(npz_path)
    keys = sorted((k for k in data.files if k.startswith("input_")), key=lambda k: int(k.split("_")[1]))
    if len(keys) != len(ins):
        return [], f"{len(ins)} network inputs, {len(keys)} reference inputs"
    paths = []
    for i, (k, (descr, shape)) in enumerate(zip(keys, ins)):
        x = adapt(data[k], descr)
        if tuple(x.shape) != shape:
            return [], f"input {i} shape {shape} differs from the reference {tuple(x.shape)}"
        paths.append(os.path.join(RUN_DIR, f"{tag}_in{i}.npy"))
        np.save(paths[-1], x)
    return paths, ""


def bench_lean(runner, anchor, rounds: int, pattern: str, target: str = "19.02",
               count_instructions: bool = False, pair_exe: str | None = None,
               process_rounds: bool = True) -> list[dict]:
    models = sorted(glob.glob(os.path.join(REPO, "test_models", "tflite", "**", "*.tflite"), recursive=True))
    models = [m for m in models if pattern in os.path.relpath(m, REPO)]
    os.makedirs(RUN_DIR, exist_ok=True)
    rows = {m: {"model": os.path.relpath(m, os.path.join(REPO, "test_models", "tflite"))} for m in models}
    lean_dir = os.path.join(OUT, f"lean-{target}")
    ours_out = convert_batch(models, lean_dir, rows, target)
    for k, m in enumerate(models):
        row = rows[m]
        if anchor:
            a_out = os.path.join(lean_dir, "anchor", row["model"].replace(os.sep, "__") + ".armnn")
            os.makedirs(os.path.dirname(a_out), exist_ok=True)
            p = subprocess.run([anchor, m, a_out], capture_output=True, text=True, stdin=subprocess.DEVNULL)
            if p.returncode != 0:
                row["anchor_error"] = "anchor failed: " + one_line(p.stderr)
        else:
            row["anchor_error"] = "anchor not built"
        sides = {}
        if m in ours_out:
            sides["ours"] = (ours_out[m], False)
        if "anchor_error" not in row:
            sides["anchor"] = (a_out, True)
        inputs = {}
        for side, (path, graph_order) in sides.items():
            types, ins, err = layer_types(runner, path, graph_order)
            row[side] = ({"layers": len(types), "permute": types.count("Permute"),
                          "reshape": types.count("Reshape"), "constant": types.count("Constant"),
                          "types": {t: types.count(t) for t in sorted(set(types))}}
                         if types else {"layers": None})
            npz = os.path.splitext(m)[0] + ".npz"
            if err:
                row[side]["run_error"] = "run failed: " + err
            elif not os.path.exists(npz):
                row[side]["run_error"] = "no reference inputs (.npz)"
            else:
                inputs[side], err = save_inputs(npz, ins, side)
                if err:
                    row[side]["run_error"] = err
        timed = [s for s in sides if s in inputs]
        if pair_exe and len(timed) == 2:
            # both networks in one process, alternating in blocks: the judged figure (README)
            pair.time_row(row, pair_exe, sides, inputs, rounds, LEAN_PAIR_S, os.path.join(RUN_DIR, "pair"))
        if timed and (process_rounds or not pair_exe):
            # Enough inferences per call for ~LEAN_CALL_MS of work (at least 3), alternating sides; the
            # best and the median of `rounds` (the ratios are of the medians), in wall and CPU time.
            probe, err = cpuref_ms(runner, sides[timed[0]][0], inputs[timed[0]], 3, sides[timed[0]][1])
            repeat = max(3, min(20000, math.ceil(LEAN_CALL_MS / max(probe or LEAN_CALL_MS, 2e-3))))
            times, cpus = {}, {}
            for rnd in range(rounds):
                # ours first in rounds 1, 3, 5, the anchor first in rounds 2, 4: whichever side runs
                # first in a round never gains or loses by it (the load, the caches, the clock)
                for s in (timed if rnd % 2 == 0 else timed[::-1]):
                    ms, cpu, err = cpuref_cpu_ms(runner, sides[s][0], inputs[s], repeat, sides[s][1])
                    if ms is None:
                        row[s]["run_error"] = "run failed: " + err
                    else:
                        times.setdefault(s, []).append(ms)
                        cpus.setdefault(s, []).append(cpu)
            for s, ms in times.items():
                if "run_error" not in row[s]:
                    row[s]["cpuref_ms"], row[s]["cpuref_best_ms"] = float(np.median(ms)), min(ms)
                    row[s]["cpuref_cpu_ms"] = float(np.median(cpus[s]))
                    row[s]["cpuref_cpu_rounds_ms"] = cpus[s]
            if len(cpus.get("ours", ())) == len(cpus.get("anchor", ())) == rounds and min(cpus["anchor"]) > 0:
                # the two runs of a round are next to each other in time, under about the same load
                paired = np.divide(cpus["ours"], cpus["anchor"])
                row["cpuref_cpu_paired_ratio"] = float(np.median(paired))
                row["cpuref_cpu_paired_rounds"] = [float(x) for x in paired]
                row["first_in_round"] = [timed[0] if rnd % 2 == 0 else timed[-1] for rnd in range(rounds)]
            row["repeat"] = repeat
        if count_instructions and len(timed) == 2:
            for s in timed:
                costs = instructions.per_inference_costs(runner, sides[s][0], inputs[s], sides[s][1]) or {}
                row[s]["instructions"] = costs.pop("instructions", None)
                row[s]["cache_misses"] = costs  # cachegrind: D1 and L2 (the simulated last level)
        lean_targets(row)
        if (k + 1) % 25 == 0:
            print(f"  lean: {k + 1}/{len(models)}", file=sys.stderr, flush=True)
    shutil.rmtree(RUN_DIR, ignore_errors=True)
    return [rows[m] for m in models]


def convert_batch(models, outdir, rows, target: str = "19.02") -> dict:
    """Convert all models with one armnn-import process per folder; {model: output path}."""
    from armnn_import.discovery import model_name
    done = {}
    by_dir = {}
    for m in models:
        by_dir.setdefault(os.path.dirname(m), []).append(m)
    for folder, group in by_dir.items():
        dst = os.path.join(outdir, os.path.relpath(folder, os.path.join(REPO, "test_models", "tflite")))
        shutil.rmtree(dst, ignore_errors=True)  # our own scratch folder: existence then means success
        os.makedirs(dst)
        p = subprocess.run(converter_cmd() + ["-q", "--target", target, *group, "-o", dst],
                           capture_output=True, text=True,
                           env=env(), cwd=REPO, stdin=subprocess.DEVNULL)
        errs = p.stderr.splitlines()
        for m in group:
            out = os.path.join(dst, model_name(m) + ".armnn")
            mine = [e for e in errs if m in e]
            if os.path.exists(out) and not mine:
                done[m] = out
            else:
                rows[m]["error"] = "convert failed: " + one_line("\n".join(mine) or p.stderr)
    return done


def lean_targets(row):
    o, a = row.get("ours"), row.get("anchor")
    t = {"layers": None, "cpuref": None, "instructions": None}
    if "error" in row and row.get("anchor_error"):
        pass  # neither converter takes the model for this release: nothing to compare
    elif "error" in row:
        t = {"layers": False, "cpuref": False, "instructions": False}
    elif o and a and a["layers"] is not None:
        t["layers"] = o["layers"] <= a["layers"]
        process = None
        if "cpuref_ms" in o and "cpuref_ms" in a:
            row["cpuref_ratio"] = o["cpuref_ms"] / a["cpuref_ms"]
            row["cpuref_cpu_ratio"] = o["cpuref_cpu_ms"] / a["cpuref_cpu_ms"] if a["cpuref_cpu_ms"] > 0 else None
            # whole processes, CPU time, round by round (the fallback when armnn-pair is not built)
            process = row.get("cpuref_cpu_paired_ratio", row["cpuref_cpu_ratio"])
            process = process if process is not None else row["cpuref_ratio"]
        # judged on armnn-pair's median where it ran: both files in one process, so the machine's
        # drift falls on both alike (README "Lean networks")
        judged = row.get("cpuref_pair_ratio", process)
        if judged is not None:
            t["cpuref"] = judged <= CPUREF_RATIO_MAX
            row["cpuref_judged"] = {"ratio": judged, "on": "pair" if "cpuref_pair_ratio" in row else "process"}
        elif o.get("run_error") or row.get("pair_error") or ("cpuref_ms" not in o and "pair" not in row
                                                              and not a.get("run_error")):
            t["cpuref"] = False  # ours did not run (an anchor's file that does not run is n/a)
        if o.get("instructions") and a.get("instructions"):
            row["instructions_ratio"] = o["instructions"] / a["instructions"]
            t["instructions"] = o["instructions"] <= a["instructions"] + max(
                INSTRUCTIONS_SLACK * a["instructions"], INSTRUCTIONS_SLACK_ABS)
    row["targets"] = t


def print_lean(rows):
    headers = ["model", "layers ours/anch", "P/R/C ours", "P/R/C anch", "wall ms ours", "anch", "ratio",
               "CPU ms ours", "anch", "ratio", "paired", "pair ms ours", "anch", "pair sum", "pair med", "pair wall",
               "Minstr ours", "anch", "ratio",
               "kL2miss ours", "anch", "kD1miss ours", "anch", "layers", "instr", "CpuRef"]
    out = []

    def prc(s):
        return f"{s['permute']}/{s['reshape']}/{s['constant']}" if s and s["layers"] is not None else "-"

    def n(s):
        return "-" if not s or s["layers"] is None else s["layers"]

    def mi(s):
        return s["instructions"] / 1e6 if s and s.get("instructions") else None

    def misses(s, level):  # read + write misses of data per inference, thousands (cachegrind)
        m = (s or {}).get("cache_misses") or {}
        keys = (f"{level}_read_misses", f"{level}_write_misses")
        return sum(m[k] for k in keys) / 1e3 if all(k in m for k in keys) else None
    for r in rows:
        o, a = r.get("ours"), r.get("anchor")
        note = r.get("error") or (o or {}).get("run_error") or r.get("anchor_error") or (a or {}).get("run_error") \
            or r.get("pair_error")
        pr = r.get("pair") or {}
        out.append([r["model"], f"{n(o)}/{n(a)}", prc(o), prc(a),
                    fmt((o or {}).get("cpuref_ms"), ".3f"), fmt((a or {}).get("cpuref_ms"), ".3f"),
                    fmt(r.get("cpuref_ratio"), ".2f"),
                    fmt((o or {}).get("cpuref_cpu_ms"), ".3f"), fmt((a or {}).get("cpuref_cpu_ms"), ".3f"),
                    fmt(r.get("cpuref_cpu_ratio"), ".2f"), fmt(r.get("cpuref_cpu_paired_ratio"), ".3f"),
                    fmt(pr.get("ours_cpu_ms"), ".3f"), fmt(pr.get("anchor_cpu_ms"), ".3f"),
                    fmt(pr.get("median_cpu"), ".4f"), fmt(pr.get("median_cpu_pair_median"), ".4f"),
                    fmt(pr.get("median_wall"), ".4f"),
                    fmt(mi(o), ".2f"), fmt(mi(a), ".2f"), fmt(r.get("instructions_ratio"), ".4f"),
                    fmt(misses(o, "l2"), ".1f"), fmt(misses(a, "l2"), ".1f"),
                    fmt(misses(o, "d1"), ".1f"), fmt(misses(a, "d1"), ".1f"),
                    verdict(r["targets"]["layers"]), verdict(r["targets"].get("instructions")),
                    verdict(r["targets"]["cpuref"]) + (f"  ({note})" if note else "")])
    print(table(headers, out))
    for key in ("layers", "instructions", "cpuref"):
        vals = [r["targets"].get(key) for r in rows]
        print(f"{key}: {vals.count(True)} pass, {vals.count(False)} fail, {vals.count(None)} n/a "
              f"(of {len(rows)} models)")


# -- profile --------------------------------------------------------------------

# One conversion through the API, timed by stage (the report's phases are the converter's own).
PHASES = r"""
import json, sys, time
t0 = time.perf_counter()
from armnn_import.api import convert
from armnn_import.output import write_atomic
t1 = time.perf_counter()
r = convert(sys.argv[1])
t2 = time.perf_counter()
data = r.to_bytes()
t3 = time.perf_counter()
write_atomic(sys.argv[2], data, inputs=[sys.argv[1]])
t4 = time.perf_counter()
print(json.dumps({"import armnn_import.api": t1 - t0, "convert()": t2 - t1,
                  **{"  phase " + k: v for k, v in r.report.timings.items()},
                  **{"  pass " + k: v for k, v in r.report.passes.items() if isinstance(v, float)},
                  "to_bytes() (serialize)": t3 - t2, "write_atomic() (write + fsync)": t4 - t3}))
"""


def phases(src: str) -> dict | str:
    dst = os.path.join(OUT, "phases.armnn")
    p = subprocess.run([sys.executable, "-c", PHASES, src, dst], capture_output=True, text=True, env=env(), cwd=REPO)
    if os.path.exists(dst):
        os.unlink(dst)
    if p.returncode != 0:
        return "failed: " + one_line(p.stderr)
    return json.loads(p.stdout.strip().splitlines()[-1])


def profile(src: str, top: int = 15) -> list[str]:
    """Where one conversion spends its time, under cProfile: total, imports, our functions
    by cumulative time, and all functions by own time."""
    import pstats
    prof = os.path.join(OUT, "convert.prof")
    dst = os.path.join(OUT, "profiled.armnn")
    p = subprocess.run([sys.executable, "-m", "cProfile", "-o", prof, "-m", "armnn_import", src, "-o", dst],
                       capture_output=True, text=True, env=env(), cwd=REPO)
    if os.path.exists(dst):
        os.unlink(dst)
    if p.returncode != 0 or not os.path.exists(prof):
        return ["profile failed: " + one_line(p.stderr)]
    stats = pstats.Stats(prof).stats  # (file, line, func) -> (cc, nc, tottime, cumtime, callers)
    total = max(v[3] for v in stats.values())
    imports = max((v[3] for k, v in stats.items() if k[2] == "_find_and_load"), default=0.0)
    lines = [f"total {total:.3f} s, of which imports {imports:.3f} s"]

    def where(file, line):
        return f"{os.path.relpath(file, REPO) if file.startswith(REPO) else os.path.basename(file)}:{line}"
    ours = [(k, v) for k, v in stats.items() if k[0].startswith(REPO)
            and not os.path.basename(k[0]).startswith("cli") and not k[0].endswith("__main__.py")]
    for title, entries, idx in (("our functions by cumulative time", ours, 3),
                                ("all functions by own time", list(stats.items()), 2)):
        lines.append(f"-- {title} --")
        for (file, line, func), (cc, nc, tt, ct, _) in sorted(entries, key=lambda kv: kv[1][idx], reverse=True)[:top]:
            lines.append(f"{ct:8.3f} cum {tt:8.3f} self {nc:>7} calls  {func} ({where(file, line)})")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="armnn-import benchmarks (see benchmarks/README.md)")
    ap.add_argument("--sizes", default="10,100,500", help="large model sizes in MB (default 10,100,500)")
    ap.add_argument("--json", metavar="FILE", help="write all results as JSON")
    ap.add_argument("--quick", action="store_true", help="10 MB only, fewer repetitions")
    ap.add_argument("--only", default="large,startup,lean", help="sections to run (comma-separated)")
    ap.add_argument("--lean-filter", default="", help="only reference models whose path contains this")
    ap.add_argument("--profile", action="store_true", help="cProfile our conversion of the largest model")
    ap.add_argument("--target", default="19.02", help="the Arm NN release whose format our lean files use")
    ap.add_argument("--instructions", action="store_true",
                    help="lean: also count instructions per CpuRef inference with callgrind (valgrind)")
    ap.add_argument("--lean-method", choices=("both", "pair", "process"), default="both",
                    help="lean CpuRef timing: armnn-pair (one process, judged) and/or whole-process rounds "
                         "(default both; the verdict is armnn-pair's when it is built)")
    ap.add_argument("--release", help="the Arm NN release whose runtime and TfLite parser (the anchor) the "
                                      "lean files are judged with (default: the target's, 20.08 for 19.02)")
    args = ap.parse_args(argv)
    release = args.release or ("20.08" if args.target == "19.02" else args.target)
    sizes = [10.0] if args.quick else [float(s) for s in args.sizes.split(",") if s.strip()]
    runs, startup_n, rounds = (1, 3, 1) if args.quick else (3, 7, 5)
    sections = set(args.only.split(","))
    # large models: against 20.08's anchor (the packaged one); lean networks: the chosen release's
    runner, anchor, why = harness(release if "lean" in sections and "large" not in sections else "20.08")
    results = {"release": release,"command": " ".join(["python", "benchmarks/run.py", *(argv or sys.argv[1:])]),
               "converter": converter_cmd(), "runner": runner, "anchor": anchor, "harness_note": why,
               "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                           "loadavg_start": os.getloadavg()},
               "bytecode_cache": env()["PYTHONPYCACHEPREFIX"]}
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start; "
          f"converter: {' '.join(converter_cmd())}")
    warm_up()
    if why:
        print(f"note: Arm NN harness: {why}")
    if "large" in sections:
        print(f"== large models ({', '.join(f'{s:g}' for s in sizes)} MB; best of {runs}, 500 MB once) ==",
              flush=True)
        results["large"] = bench_large(sizes, runs, anchor)
        print_large(results["large"])
        if args.profile:
            # The largest model up to 100 MB: profiling the 500 MB one would convert it a second time.
            biggest = max(results["large"], key=lambda r: (r["size_mb"] <= 100, r["file_bytes"]))
            src = gen_large.large(biggest["size_mb"])["files"]
            results["phases"] = {fmt_: phases(src[fmt_]) for fmt_ in ("onnx", "tflite")}
            results["profile"] = {fmt_: profile(src[fmt_]) for fmt_ in ("onnx", "tflite")}
            for fmt_ in ("onnx", "tflite"):
                ph = results["phases"][fmt_]
                print(f"\n== stages: {biggest['model']}.{fmt_} (seconds, one run through the API) ==")
                print(ph if isinstance(ph, str) else "\n".join(f"{v:7.3f}  {k}" for k, v in ph.items()))
                print(f"\n== cProfile: {biggest['model']}.{fmt_} ==")
                print("\n".join(results["profile"][fmt_]))
    if "startup" in sections:
        print("\n== startup ==", flush=True)
        results["startup"] = bench_startup(startup_n)
        print_startup(results["startup"])
    if "lean" in sections:
        if "large" in sections and release != "20.08":
            runner, anchor, why = harness(release)
            if why:
                print(f"note: Arm NN {release} harness: {why}")
        print(f"\n== lean networks: test_models/tflite (--target {args.target}) vs Arm NN {release}'s TfLite parser "
              f"on Arm NN {release} CpuRef "
              f"(P/R/C = Permute/Reshape/Constant layers; CpuRef median of {rounds} rounds, wall and CPU time per inference; "
              f"paired = whole processes, ours / anchor in a round; pair = armnn-pair, both files in one process "
              f"per round: sum = ratio of the sums, med = median of adjacent blocks' ratios, judged where it ran) ==",
              flush=True)
        pair_exe, pair_why = pair.tool(release) if runner and args.lean_method != "process" else (None, "")
        if pair_why:
            print(f"note: armnn-pair not available ({pair_why}): judged on whole-process rounds")
        results["pair_tool"], results["pair_note"] = pair_exe, pair_why
        results["lean"] = bench_lean(runner, anchor, rounds, args.lean_filter, args.target,
                                     args.instructions and instructions.available(), pair_exe,
                                     args.lean_method != "pair") if runner else []
        if runner:
            print_lean(results["lean"])
        else:
            print("skipped: armnn-run not available")
    results["machine"]["loadavg_end"] = os.getloadavg()
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
