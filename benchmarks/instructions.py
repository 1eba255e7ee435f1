"""Instructions per CpuRef inference, counted by valgrind's callgrind: a cost that does not move
with the machine's load, where the CPU time of the same pair of files moves by 10-30 % from round to
round on a shared 2-core machine. The count of a 3-inference run less that of a 1-inference run,
over 2, so loading and optimizing drop out."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile


def available() -> bool:
    return shutil.which("valgrind") is not None


def _collected(runner: str, path: str, inputs: list[str], repeat: int, graph_order: bool) -> int | None:
    with tempfile.TemporaryDirectory() as out:
        args = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={os.path.join(out, 'cg.out')}",
                runner, "--repeat", str(repeat)] + (["--graph-order"] if graph_order else []) + [path, out] + inputs
        p = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        m = re.search(r"Collected : (\d+)", p.stderr)
        return int(m.group(1)) if p.returncode == 0 and m else None


def per_inference(runner: str, path: str, inputs: list[str], graph_order: bool) -> int | None:
    """Instructions one inference of `path` executes on `runner` (armnn-run), or None."""
    one = _collected(runner, path, inputs, 1, graph_order)
    three = _collected(runner, path, inputs, 3, graph_order) if one is not None else None
    return None if three is None else (three - one) // 2
