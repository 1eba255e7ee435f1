"""armnn-pair (benchmarks/armnn_pair.cpp) from Python: build it, time one pair, and the A/A control.

    python benchmarks/pair.py --release 23.08 aa [--runs 5] MODEL.tflite ...
    python benchmarks/pair.py --release 23.08 ab A.armnn[:graph] B.armnn[:graph] [--a-in X.npy ...] [--b-in Y.npy ...]

`aa` converts each TFLite model with the release's own TfLite parser (the anchor), times that file
against a byte copy of itself `--runs` times, and prints every run's median of `--rounds` round
ratios: what the machine's noise alone gives a pair of equal files, so what a verdict of 1.000 +- x
means. `ab` times two files (a `:graph` suffix binds that file's inputs in --graph-order, as the
anchor's files need) and prints the tool's JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


#: the judged figure of a pair run. "median_cpu_pair_median": the median over rounds of each round's
#: median ratio of adjacent A/B blocks, which a block slowed by the other processes (a preemption,
#: a flushed cache) moves far less than it moves a round's sums; "median_cpu": the rounds' sum
#: ratios. A/A controls on 23.08 at load 7-12 (5 models, 5 runs each): 23/25 runs within 0.5 % of
#: 1.000 for the first, 16/25 for the second (benchmarks/README.md).
STATISTIC = "median_cpu_pair_median"


class PairError(RuntimeError):
    """armnn-pair could not be built or could not time the pair (one line: why)."""


def _last_error(stderr: str) -> str:
    lines = [ln.strip() for ln in (stderr or "").splitlines() if ln.strip()]
    err = [ln for ln in lines if "error" in ln]
    return (err or lines or ["(no message)"])[-1]


def tool(release: str) -> tuple[str | None, str]:
    """(path of armnn-pair for `release`, "") once built (cached), or (None, why not)."""
    p = subprocess.run(["bash", os.path.join(HERE, "build_pair.sh"), release], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, cwd=REPO)
    out = p.stdout.strip().splitlines()
    if p.returncode != 0 or not out or not os.access(out[-1], os.X_OK):
        return None, _last_error(p.stderr)
    return out[-1], ""


def _merge(parts: list[dict]) -> dict:
    """One result of several single-round processes: their rounds side by side, medians anew."""
    out = {k: parts[0][k] for k in ("release", "block", "pairs", "copies", "inferences_per_round")}
    for k in ("a_cpu_ms", "b_cpu_ms", "a_wall_ms", "b_wall_ms", "ratio_cpu", "ratio_wall", "ratio_cpu_pair_median",
              "round_thread_cpu_ms", "round_process_cpu_ms"):
        out[k] = [x for p in parts for x in p[k]]
    out["warm_cpu_ms"] = parts[0]["warm_cpu_ms"]
    out["median_cpu"], out["median_wall"] = statistics.median(out["ratio_cpu"]), statistics.median(out["ratio_wall"])
    out["median_cpu_pair_median"] = statistics.median(out["ratio_cpu_pair_median"])
    return out


def run(exe: str, a: str, b: str, a_inputs=(), b_inputs=(), a_graph=False, b_graph=False,
        rounds: int = 5, seconds: float = 1.0, outdir: str | None = None, fresh: bool = True) -> dict:
    """Time A against B (see armnn_pair.cpp); the tool's JSON as a dict. fresh: every round is a
    process of its own (the default), so where the networks' buffers land, which moves a pair's
    ratio by up to ~2 % for a whole process here, changes from round to round as the machine's
    drift does not: it drifts within a round, and the round's ABBA blocks cancel that."""
    args = [exe, "--seconds", str(seconds), "--a", a, "--b", b]
    args += [x for p in a_inputs for x in ("--a-in", p)] + [x for p in b_inputs for x in ("--b-in", p)]
    args += (["--a-graph-order"] if a_graph else []) + (["--b-graph-order"] if b_graph else [])
    parts = []
    for r in range(rounds if fresh else 1):
        last = r == (rounds - 1 if fresh else 0)
        cmd = args + ["--rounds", "1" if fresh else str(rounds)] + (["--out", outdir] if outdir and last else [])
        p = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if p.returncode != 0:
            raise PairError(_last_error(p.stderr).replace("armnn-pair: error: ", ""))
        parts.append(json.loads(p.stdout.strip().splitlines()[-1]))
    return _merge(parts) if fresh else parts[0]


def time_row(row: dict, exe: str, sides: dict, inputs: dict, rounds: int, seconds: float, outdir: str) -> None:
    """bench_lean's pair figures of one model: ours (A) against the anchor's file (B) in one process.
    Adds row["pair"] (per-round ratios, per-inference ms, the outputs' largest difference) and
    row["cpuref_pair_ratio"] (the median of the rounds' CPU ratios), or row["pair_error"]."""
    import numpy as np
    (a, ga), (b, gb) = sides["ours"], sides["anchor"]
    shutil.rmtree(outdir, ignore_errors=True)  # no output of the last model is read as this one's
    try:
        res = run(exe, a, b, inputs["ours"], inputs["anchor"], ga, gb, rounds, seconds, outdir)
    except PairError as e:
        row["pair_error"] = "pair failed: " + str(e)
        return
    diffs, i = [], 0
    while all(os.path.exists(os.path.join(outdir, f"{s}_output_{i}.npy")) for s in "ab"):
        fa, fb = (os.path.join(outdir, f"{s}_output_{i}.npy") for s in "ab")
        i += 1
        try:
            xa, xb = np.load(fa), np.load(fb)
        except ValueError:  # a type numpy has no descr for (the anchor's Signed64 ArgMax output)
            continue
        if xa.dtype == xb.dtype and xa.shape == xb.shape:  # uint8 against int8: zero points differ
            diffs.append(float(np.max(np.abs(xa.astype(np.float64) - xb.astype(np.float64)), initial=0.0)))
    row["pair"] = {"ratio_cpu_rounds": res["ratio_cpu"], "ratio_wall_rounds": res["ratio_wall"],
                   "median_cpu": res["median_cpu"], "median_wall": res["median_wall"],
                   "ratio_cpu_pair_median_rounds": res["ratio_cpu_pair_median"],
                   "median_cpu_pair_median": res["median_cpu_pair_median"],
                   "ours_cpu_ms": statistics.median(res["a_cpu_ms"]),
                   "anchor_cpu_ms": statistics.median(res["b_cpu_ms"]),
                   "ours_wall_ms": statistics.median(res["a_wall_ms"]),
                   "anchor_wall_ms": statistics.median(res["b_wall_ms"]),
                   "inferences_per_round": res["inferences_per_round"], "block": res["block"],
                   "outputs_max_abs_diff": diffs}
    # judged: the median over rounds of each round's median AB/BA pair ratio (STATISTIC); the
    # brief's sum(ours) / sum(anchor) per round is kept beside it (median_cpu)
    row["cpuref_pair_ratio"] = res[STATISTIC]


def anchor_inputs(runner: str, path: str, npz: str) -> list[str]:
    """The model's reference inputs as .npy files in the dtypes the anchor's network takes."""
    import run as bench  # benchmarks/run.py: the lean benchmark's own input handling
    os.makedirs(bench.RUN_DIR, exist_ok=True)
    _, ins, err = bench.runner_layers(runner, path, True)
    paths, err2 = bench.save_inputs(npz, ins, "aa") if not err else ([], err)
    if not paths:
        raise PairError(err2 or err)
    return paths


def aa(release: str, model: str, runs: int, rounds: int, seconds: float,
       fresh: bool = True) -> tuple[list, list, list, float]:
    """Medians of `runs` A/A runs: the anchor's file of `model` against a byte copy of itself."""
    sys.path.insert(0, REPO)
    from armnn_import.testing import armnn_runtime as rt
    exe, why = tool(release)
    if exe is None:
        raise PairError(why)
    with tempfile.TemporaryDirectory(prefix="aa-") as tmp:
        a, b = os.path.join(tmp, "a.armnn"), os.path.join(tmp, "b.armnn")
        p = subprocess.run([rt.find_anchor(release), model, a], capture_output=True, text=True)
        if p.returncode != 0:
            raise PairError("anchor failed: " + _last_error(p.stderr))
        shutil.copyfile(a, b)
        ins = anchor_inputs(rt.find_runner(release), a, os.path.splitext(model)[0] + ".npz")
        res = [run(exe, a, b, ins, ins, True, True, rounds, seconds, fresh=fresh) for _ in range(runs)]
    return ([r["median_cpu"] for r in res], [r.get("median_cpu_pair_median") for r in res],
            [r["median_wall"] for r in res], res[0]["warm_cpu_ms"][0])


def _spread(xs: list[float]) -> str:
    return (f"{' '.join(f'{x:.4f}' for x in xs)} (max |1 - x| {max(abs(x - 1) for x in xs):.4f}, "
            f"within 0.5 %: {sum(abs(x - 1) <= 0.005 for x in xs)}/{len(xs)})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--release", default="23.08")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=1.0, help="CPU seconds of work per side per round")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p_aa = sub.add_parser("aa", help="A/A control: the anchor's file against a copy of itself")
    p_aa.add_argument("--runs", type=int, default=5)
    p_aa.add_argument("--one-process", action="store_true", help="all rounds in one process (not fresh)")
    p_aa.add_argument("models", nargs="+")
    p_ab = sub.add_parser("ab", help="time two files")
    p_ab.add_argument("a")
    p_ab.add_argument("b")
    p_ab.add_argument("--a-in", action="append", default=[])
    p_ab.add_argument("--b-in", action="append", default=[])
    args = ap.parse_args(argv)
    if args.cmd == "ab":
        exe, why = tool(args.release)
        if exe is None:
            raise SystemExit(f"pair: {why}")
        (a, _, ga), (b, _, gb) = args.a.partition(":"), args.b.partition(":")
        print(json.dumps(run(exe, a, b, args.a_in, args.b_in, bool(ga), bool(gb), args.rounds, args.seconds)))
        return 0
    print(f"A/A, Arm NN {args.release} CpuRef, {args.runs} runs of {args.rounds} rounds x {args.seconds:g} s per "
          f"side, {'one process' if args.one_process else 'a process per round'}; load {os.getloadavg()[0]:.2f}", flush=True)
    for m in args.models:
        try:
            cpu, pm, wall, ms = aa(args.release, m, args.runs, args.rounds, args.seconds, not args.one_process)
        except PairError as e:
            print(f"{os.path.basename(m)}: n/a ({e})", flush=True)
            continue
        print(f"{os.path.basename(m)} ({ms:.3f} ms): CPU {_spread(cpu)}; per-pair medians {_spread(pm)}; "
              f"wall {_spread(wall)}; load {os.getloadavg()[0]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
