"""Long fuzz run: many mutated reference models per frontend, each converted in
a worker process with a hard per-input timeout and a memory cap.

    python benchmarks/fuzz_long.py --count 20000            # per frontend
    python benchmarks/fuzz_long.py --count 500 --formats tflite --armnn-sample 20
    python benchmarks/fuzz_long.py --replay tflite test_models/tflite/ops/add.float32.tflite u32 123

Counts: mutations, converted, refused by error type, refusals that wrap an
internal error, crashes (an exception outside ArmnnImportError, a worker that
died, a written file that fails verify() or does not read back), timeouts.
Then a sample of the converted files (distinct ones) is loaded and run on the
real Arm NN 20.08 runtime with random inputs; a load failure is exit code 3 of
armnn-run. Exits 1 if anything failed. Mutations are the ones of
tests/fuzz/fuzz_mutators.py; every failure is printed with its replay command.
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import json
import multiprocessing as mp
import os
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from multiprocessing.connection import wait

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests", "fuzz"))
import fuzz_mutators as fm  # noqa: E402

RECYCLE = 1500  # tasks per worker before it is replaced (bounds slow leaks)


# -- worker ---------------------------------------------------------------------------------------
def _worker(conn, memory_bytes: int, out_dir: str) -> None:
    os.setpgrp()  # killed as a group: children it forks (onnx shape inference) die with it
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    import warnings
    warnings.simplefilter("ignore")  # numpy overflow warnings on mutated weights are expected
    out_path = os.path.join(out_dir, f"worker-{os.getpid()}.armnn")
    while True:
        task = conn.recv()
        if task is None:
            return
        fmt, rel, kind, seed, keep = task
        res = {"task": task[:4]}
        try:
            data = fm.mutant(fmt, rel, kind, seed)
            r = fm.check(data, out_path)
            res.update({k: r[k] for k in ("outcome", "error", "seconds", "internal", "message")})
            if r["bytes"] is not None:
                res["digest"] = hashlib.sha256(r["bytes"]).hexdigest()
                if keep:
                    kept = os.path.join(out_dir, f"{fmt}-{res['digest'][:16]}.armnn")
                    with open(kept, "wb") as f:
                        f.write(r["bytes"])
                    res["kept"] = kept
        except fm.Crash as e:
            cause = e.__cause__
            where = ""
            if cause is not None and cause.__traceback__ is not None:
                fr = traceback.extract_tb(cause.__traceback__)[-1]
                where = f"{os.path.relpath(fr.filename, REPO)}:{fr.lineno}"
            res.update(outcome="crash", error=type(cause).__name__ if cause else "Crash",
                       message=str(e)[:300], where=where)
        except Exception as e:  # noqa: BLE001 - a bug in the mutator, reported as such
            res.update(outcome="harness", error=type(e).__name__, message=str(e)[:300])
        conn.send(res)


class Pool:
    """Workers with one task each at a time; a worker past its deadline is killed."""

    def __init__(self, n: int, timeout: float, memory_bytes: int, out_dir: str):
        self.ctx = mp.get_context("fork")
        self.timeout, self.memory_bytes, self.out_dir = timeout, memory_bytes, out_dir
        self.slots = [self._spawn() for _ in range(n)]
        self.retried = set()  # tasks that timed out once

    def _spawn(self):
        parent, child = self.ctx.Pipe()
        p = self.ctx.Process(target=_worker, args=(child, self.memory_bytes, self.out_dir), daemon=True)
        p.start()
        child.close()
        return {"proc": p, "conn": parent, "task": None, "start": 0.0, "done": 0}

    def _replace(self, slot):
        try:
            os.killpg(slot["proc"].pid, signal.SIGKILL)
        except OSError:
            slot["proc"].kill()
        slot["proc"].join()
        slot["conn"].close()
        slot.update(self._spawn())

    def run(self, tasks, on_result):
        tasks = iter(tasks)
        pending = True
        while True:
            for slot in self.slots:
                if slot["task"] is None and pending:
                    task = next(tasks, None)
                    if task is None:
                        pending = False
                        break
                    slot["task"], slot["start"] = task, time.monotonic()
                    slot["conn"].send(task)
            busy = [s for s in self.slots if s["task"] is not None]
            if not busy:
                return
            deadline = min(s["start"] for s in busy) + self.timeout
            ready = wait([s["conn"] for s in busy], timeout=max(0.0, deadline - time.monotonic()))
            now = time.monotonic()
            for slot in busy:
                if slot["conn"] in ready:
                    elapsed = now - slot["start"]
                    try:
                        res = slot["conn"].recv()
                    except (EOFError, OSError):
                        slot["proc"].join(1)
                        res = {"task": slot["task"][:4], "outcome": "crash", "error": "worker died",
                               "message": f"exit code {slot['proc'].exitcode}", "where": ""}
                        self._replace(slot)
                    else:
                        slot["done"] += 1
                        if slot["done"] >= RECYCLE:
                            slot["conn"].send(None)
                            slot["proc"].join(10)
                            self._replace(slot)
                    res["elapsed"] = elapsed
                    slot["task"] = None
                    on_result(res)
                elif now - slot["start"] >= self.timeout:
                    task, elapsed = slot["task"], now - slot["start"]
                    self._replace(slot)
                    if task not in self.retried:
                        # once more in a fresh worker: a stall of the whole machine is not a hang
                        self.retried.add(task)
                        slot["task"], slot["start"] = task, time.monotonic()
                        slot["conn"].send(task)
                        continue
                    slot["task"] = None
                    on_result({"task": task[:4], "outcome": "timeout", "error": "timeout",
                               "elapsed": elapsed, "message": f"killed after {self.timeout} s, twice"})

    def close(self):
        for slot in self.slots:
            try:
                slot["conn"].send(None)
            except OSError:
                pass
            slot["proc"].join(5)
            if slot["proc"].is_alive():
                slot["proc"].kill()


# -- the run ---------------------------------------------------------------------------------------
def _tasks(fmt: str, count: int, seed: int, keep_p: float, stats):
    rng = random.Random(f"{seed}:{fmt}")
    models, kinds = fm.seed_models(fmt), fm.KINDS[fmt]
    for k in range(count):
        keep = stats["kept"] < stats["keep_target"] and rng.random() < keep_p
        yield (fmt, rng.choice(models), kinds[k % len(kinds)], seed * 10_000_000 + k, keep)


def fuzz(fmt: str, args, pool, seen_digests) -> dict:
    stats = {"format": fmt, "mutations": 0, "converted": 0, "refused": collections.Counter(),
             "internal": collections.Counter(), "crashes": [], "timeouts": [], "harness": [],
             "max_seconds": 0.0, "kept": 0, "keep_target": args.armnn_sample, "kept_files": [],
             "distinct_outputs": 0}
    t0, last = time.monotonic(), time.monotonic()

    def on_result(res):
        nonlocal last
        stats["mutations"] += 1
        stats["max_seconds"] = max(stats["max_seconds"], res.get("elapsed", 0.0))
        out = res["outcome"]
        if out == "converted":
            stats["converted"] += 1
            new = res["digest"] not in seen_digests
            seen_digests.add(res["digest"])
            stats["distinct_outputs"] += new
            if "kept" in res:
                if new:
                    stats["kept"] += 1
                    stats["kept_files"].append((res["kept"], res["task"]))
                elif os.path.exists(res["kept"]) and all(res["kept"] != k for k, _ in stats["kept_files"]):
                    os.unlink(res["kept"])
        elif out == "refused":
            stats["refused"][res["error"]] += 1
            samples = stats.setdefault("samples", {}).setdefault(res["error"], [])
            if len(samples) < 3:
                samples.append((res["message"], res["task"]))
            if res.get("internal"):
                stats["internal"][res["message"]] += 1
                stats.setdefault("internal_examples", {}).setdefault(res["message"], res["task"])
        elif out == "timeout":
            stats["timeouts"].append(res)
        elif out == "crash":
            stats["crashes"].append(res)
        else:
            stats["harness"].append(res)
        if time.monotonic() - last > 30:
            last = time.monotonic()
            print(f"  {fmt}: {stats['mutations']}/{args.count} in {last - t0:.0f} s; converted {stats['converted']}, "
                  f"crashes {len(stats['crashes'])}, timeouts {len(stats['timeouts'])}", flush=True)

    # keep probability: enough converted files for the runtime sample, spread over the run
    keep_p = min(1.0, 4.0 * args.armnn_sample / max(args.count, 1) / 0.3)
    pool.run(_tasks(fmt, args.count, args.seed, keep_p, stats), on_result)
    stats["seconds"] = time.monotonic() - t0
    return stats


def run_on_armnn(files, jobs: int) -> dict:
    """Load and run each kept file on Arm NN 20.08; counts by result."""
    import numpy as np
    from concurrent.futures import ThreadPoolExecutor

    from armnn_import.testing import armnn_runtime as rt

    runner = rt.find_runner() or rt.build_harness()
    counts, failures = collections.Counter(), []

    def one(item):
        path, task = item
        with open(path, "rb") as f:
            data = f.read()
        rng = np.random.default_rng(int(hashlib.sha256(data).hexdigest()[:8], 16))
        try:
            rt.run_armnn(path, fm.runtime_inputs(data, rng), runner=runner, timeout=120)
            return "loaded", None
        except rt.ArmnnRuntimeError as e:
            kind = {rt.EXIT_LOAD: "load error (exit 3)", rt.EXIT_RUNTIME: "inference error (exit 1)",
                    rt.EXIT_USAGE: "bad inputs (exit 2)"}.get(e.returncode, f"exit {e.returncode}")
            return kind, (task, str(e)[:300])

    with ThreadPoolExecutor(jobs) as ex:
        for kind, failure in ex.map(one, files):
            counts[kind] += 1
            if failure:
                failures.append((kind, *failure))
    return {"counts": counts, "failures": failures}


def _replay_cmd(task) -> str:
    return "python benchmarks/fuzz_long.py --replay " + " ".join(str(x) for x in task)


def report(all_stats, armnn, pool_retried=()) -> bool:
    ok = True
    for s in all_stats:
        print(f"\n== {s['format']}: {s['mutations']} mutations in {s['seconds']:.0f} s "
              f"(slowest input {s['max_seconds']:.2f} s)")
        print(f"  converted          {s['converted']} ({s['distinct_outputs']} distinct files, all verified "
              "and read back)")
        refused = sum(s["refused"].values())
        print(f"  refused            {refused}: " + ", ".join(f"{k} {v}" for k, v in s["refused"].most_common()))
        for err, samples in sorted(s.get("samples", {}).items()):
            for msg, task in samples:
                print(f"      e.g. {err}: {msg[:150]}")
        print(f"  internal errors    {sum(s['internal'].values())} refusals wrap an internal error")
        for msg, n in s["internal"].most_common(15):
            print(f"      {n:5d}  {msg}\n             replay: {_replay_cmd(s['internal_examples'][msg])}")
        print(f"  crashes            {len(s['crashes'])}")
        by_kind = collections.defaultdict(list)
        for c in s["crashes"]:
            by_kind[(c["error"], c.get("where", ""))].append(c)
        for (err, where), cs in sorted(by_kind.items(), key=lambda kv: -len(kv[1])):
            print(f"      {len(cs):5d}  {err} at {where or '?'}: {cs[0]['message'][:160]}\n"
                  f"             replay: {_replay_cmd(cs[0]['task'])}")
        retried = sum(1 for t in pool_retried if t[0] == s["format"]) - len(s["timeouts"])
        print(f"  timeouts           {len(s['timeouts'])} (over the bound twice; {retried} more finished "
              "when retried in a fresh worker)")
        for t in s["timeouts"][:10]:
            print(f"             replay: {_replay_cmd(t['task'])}")
        if s["harness"]:
            print(f"  fuzzer errors      {len(s['harness'])}: {s['harness'][0]}")
        ok = ok and not s["crashes"] and not s["timeouts"] and not s["harness"]
    if armnn is not None:
        total = sum(armnn["counts"].values())
        print(f"\n== Arm NN 20.08 runtime: {total} distinct converted files run: " +
              ", ".join(f"{k} {v}" for k, v in armnn["counts"].most_common()))
        for kind, task, msg in armnn["failures"][:20]:
            print(f"      {kind}: {msg}\n             replay: {_replay_cmd(task)}")
        ok = ok and armnn["counts"].get("loaded", 0) == total
    print("\nRESULT:", "OK" if ok else "FAILURES")
    return ok


def replay(fmt, rel, kind, seed) -> int:
    import armnn_import
    data = fm.mutant(fmt, rel, kind, int(seed))
    path = os.path.join(tempfile.gettempdir(), f"fuzz-{fmt}-{os.path.basename(rel)}-{kind}-{seed}.{fmt}")
    with open(path, "wb") as f:
        f.write(data)
    print(f"mutant written to {path}")
    t0 = time.perf_counter()
    try:
        armnn_import.convert(data).to_bytes()
        print(f"converted in {time.perf_counter() - t0:.2f} s")
    except armnn_import.ArmnnImportError as e:
        print(f"refused in {time.perf_counter() - t0:.2f} s: {type(e).__name__}: {e}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--count", type=int, default=20000, help="mutated inputs per frontend")
    p.add_argument("--formats", default="onnx,tflite")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    p.add_argument("--timeout", type=float, default=10.0, help="hard bound per input, seconds")
    p.add_argument("--memory", type=float, default=4.0, help="address-space cap per worker, GiB")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--armnn-sample", type=int, default=125,
                   help="distinct converted files per frontend to run on Arm NN (0: none)")
    p.add_argument("--json", help="write the counts to this file")
    p.add_argument("--replay", nargs=4, metavar=("FMT", "MODEL", "KIND", "SEED"))
    args = p.parse_args(argv)
    if args.replay:
        return replay(*args.replay)

    # Import the converter once in the parent so forked workers start warm.
    import armnn_import.api  # noqa: F401
    import armnn_import_frontends.onnx.convert  # noqa: F401
    import armnn_import_frontends.tflite.convert  # noqa: F401

    out_dir = tempfile.mkdtemp(prefix="fuzz-long-")
    pool = Pool(args.workers, args.timeout, int(args.memory * (1 << 30)), out_dir)
    all_stats, seen = [], set()
    try:
        for fmt in args.formats.split(","):
            print(f"fuzzing {fmt}: {args.count} mutants of {len(fm.seed_models(fmt))} models, "
                  f"{args.workers} workers, {args.timeout} s per input", flush=True)
            all_stats.append(fuzz(fmt, args, pool, seen))
    finally:
        pool.close()
    armnn = None
    if args.armnn_sample:
        files = [kf for s in all_stats for kf in s["kept_files"]]
        print(f"running {len(files)} converted files on Arm NN 20.08 ...", flush=True)
        armnn = run_on_armnn(files, args.workers)
    ok = report(all_stats, armnn, pool.retried)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"formats": [{k: (dict(v) if isinstance(v, collections.Counter) else v)
                                    for k, v in s.items() if k not in ("kept_files",)} for s in all_stats],
                       "armnn": None if armnn is None else {"counts": dict(armnn["counts"]),
                                                            "failures": armnn["failures"]}},
                      f, indent=1, default=str)
    shutil.rmtree(out_dir, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
