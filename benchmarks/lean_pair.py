"""Paired CpuRef timing of two .armnn files, for when the lean benchmark's 5 rounds cannot tell them apart.

    python benchmarks/lean_pair.py --release 23.08 --repeat 14 --rounds 15 A.armnn B.armnn:graph IN0.npy ...

Each round times A and B as bench_lean does (CPU time of a REPEAT-inference run less a 1-inference
run, over REPEAT - 1), A first in even rounds and B first in odd ones (`--fixed-order`: A always
first), and prints the median of the per-round ratios A / B with a bootstrap 95 % interval, and how
often the median of 5 random rounds of them is over 1.0: the chance that bench_lean's 5-round
verdict fails for this pair. Timing a file against a copy of itself (an A/A pair) shows what the
machine's noise alone gives. A `:graph` suffix runs that file with --graph-order (the anchor's)."""
from __future__ import annotations

import argparse
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile


def _run(runner: str, spec: str, inputs: list[str], n: int, outdir: str) -> float:
    path, _, graph = spec.partition(":")
    args = [runner, "--repeat", str(n)] + (["--graph-order"] if graph else []) + [path, outdir] + inputs
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0 or not re.search(r"time_ms=", p.stdout):
        raise SystemExit(f"lean_pair: {path}: {p.stderr.strip()}")
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def cpu_ms(runner, spec, inputs, repeat, outdir) -> float:
    return (_run(runner, spec, inputs, repeat, outdir) - _run(runner, spec, inputs, 1, outdir)) * 1000 / (repeat - 1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--release", default="23.08")
    ap.add_argument("--repeat", type=int, default=10, help="inferences per timed call (>= 2)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--fixed-order", action="store_true", help="A first in every round")
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("inputs", nargs="*")
    args = ap.parse_args(argv)
    from armnn_import.testing.armnn_runtime import harness_dir
    runner = str(harness_dir(args.release) / "armnn-run")
    ratios = []
    with tempfile.TemporaryDirectory() as out:
        for k in range(args.rounds):
            order = [args.a, args.b] if args.fixed_order or k % 2 == 0 else [args.b, args.a]
            t = {s: cpu_ms(runner, s, args.inputs, max(2, args.repeat), out) for s in order}
            ratios.append(t[args.a] / t[args.b])
            print(f"round {k + 1}: {'A' if order[0] == args.a else 'B'} first, A {t[args.a]:.3f} ms, "
                  f"B {t[args.b]:.3f} ms, A/B {ratios[-1]:.3f}", flush=True)
    rng = random.Random(0)
    boots = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(2000))
    five = [statistics.median(rng.sample(ratios, min(5, len(ratios)))) for _ in range(2000)]
    print(f"A/B median {statistics.median(ratios):.3f} (95 % interval {boots[50]:.3f}-{boots[1949]:.3f}) over "
          f"{len(ratios)} rounds; median of 5 rounds over 1.0 in {sum(m > 1.0 for m in five) / len(five):.0%} of draws")
    return 0


if __name__ == "__main__":
    sys.exit(main())
