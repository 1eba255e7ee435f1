"""Instructions and cache misses per CpuRef inference, counted by valgrind's cachegrind: costs that do
not move with the machine's load, where the CPU time of the same pair of files moves by 10-30 % from
round to round on a shared 2-core machine. The count of a 3-inference run less that of a 1-inference
run, over 2, so loading and optimizing drop out.

The cache is simulated with the core's own L1 data cache and its L2 as the last level (from sysfs):
valgrind would otherwise take this virtual machine's 300 MB L3, which holds every network here, so it
would count no miss at all. The misses are reported beside the instructions, not judged: two files of
the same layers differ only in where their buffers land and in which order the weights are copied
(serialize/writer.py file_order), and on this machine that moves the time by well under 1 %."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

#: the simulated L2 when sysfs does not say (this machine's: 2 MiB, 16 ways, 64-byte lines)
DEFAULT_LL = (2 * 1024 * 1024, 16, 64)
#: cachegrind's events -> our names (D1/LL read and write misses of data)
EVENTS = {"Ir": "instructions", "D1mr": "d1_read_misses", "D1mw": "d1_write_misses",
          "DLmr": "l2_read_misses", "DLmw": "l2_write_misses"}


def available() -> bool:
    return shutil.which("valgrind") is not None


def _sysfs_cache(level: int) -> tuple[int, int, int] | None:
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for idx in sorted(os.listdir(base)):
            d = os.path.join(base, idx)

            def get(name):
                with open(os.path.join(d, name)) as f:
                    return f.read().strip()
            if int(get("level")) == level and get("type") in ("Data", "Unified"):
                size = get("size")
                size = int(size[:-1]) * 1024 if size.endswith("K") else int(size)
                return size, int(get("ways_of_associativity")), int(get("coherency_line_size"))
    except (OSError, ValueError):
        pass
    return None


def _ll() -> tuple[int, int, int]:
    ll = _sysfs_cache(2) or DEFAULT_LL
    size, ways, line = ll
    sets = size // (ways * line) if ways and line else 0
    # cachegrind needs a power-of-two number of sets
    return ll if sets > 0 and sets & (sets - 1) == 0 and sets * ways * line == size else DEFAULT_LL


def _collected(runner: str, path: str, inputs: list[str], repeat: int, graph_order: bool) -> dict | None:
    with tempfile.TemporaryDirectory() as out:
        cg = os.path.join(out, "cg.out")
        args = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--LL=%d,%d,%d" % _ll(),
                f"--cachegrind-out-file={cg}", runner, "--repeat", str(repeat)] + \
            (["--graph-order"] if graph_order else []) + [path, out] + inputs
        p = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if p.returncode != 0 or not os.path.exists(cg):
            return None
        with open(cg) as f:
            text = f.read()
    ev = re.search(r"^events: (.+)$", text, re.M)
    tot = re.search(r"^summary: (.+)$", text, re.M)
    if not ev or not tot:
        return None
    counts = dict(zip(ev.group(1).split(), (int(x) for x in tot.group(1).split())))
    return {ours: counts[cg_name] for cg_name, ours in EVENTS.items() if cg_name in counts}


def per_inference_costs(runner: str, path: str, inputs: list[str], graph_order: bool) -> dict | None:
    """{instructions, d1_/l2_ read/write misses} one inference of `path` costs on `runner`
    (armnn-run), or None."""
    one = _collected(runner, path, inputs, 1, graph_order)
    three = _collected(runner, path, inputs, 3, graph_order) if one is not None else None
    if three is None or "instructions" not in one:
        return None
    # (a miss count can come out at -1: the two runs' buffers land apart; that is none)
    return {k: max(0, (three[k] - one[k]) // 2) for k in one if k in three}


def per_inference(runner: str, path: str, inputs: list[str], graph_order: bool) -> int | None:
    """Instructions one inference of `path` executes on `runner` (armnn-run), or None."""
    costs = per_inference_costs(runner, path, inputs, graph_order)
    return None if costs is None else costs["instructions"]
