"""benchmarks/armnn_pair.cpp, the lean benchmark's timer: it builds against a built harness, runs two
files in one process on the release's CpuRef, and what they compute there is what armnn-run
computes (so the time it judges is the time of the same inference)."""
from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from armnn_import import cli
from armnn_import.testing.armnn_runtime import find_runner, run_armnn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import pair  # noqa: E402

MODEL = ROOT / "test_models" / "tflite" / "ops" / "mean.float32.tflite"


@pytest.mark.parametrize("release", ["20.08", "23.08"])
def test_pair_runs_both_files_as_armnn_run_does(release, tmp_path):
    runner = find_runner(release)
    if runner is None:
        pytest.skip(f"no Arm NN {release} harness")
    exe, why = pair.tool(release)
    assert exe, why
    a, b = tmp_path / "a.armnn", tmp_path / "b.armnn"
    assert cli.main([str(MODEL), "-o", str(a), "-q", "--target", release]) == 0
    assert cli.main([str(MODEL), "-o", str(b), "-q"]) == 0   # the 19.02 file: another network, same values
    x = np.load(MODEL.with_suffix(".npz"))["input_0"]
    np.save(tmp_path / "x.npy", x)
    res = pair.run(exe, str(a), str(b), [str(tmp_path / "x.npy")], [str(tmp_path / "x.npy")],
                   rounds=2, seconds=0.05, outdir=str(tmp_path / "out"))
    assert len(res["ratio_cpu"]) == len(res["ratio_cpu_pair_median"]) == 2
    assert all(math.isfinite(r) and r > 0 for r in res["ratio_cpu"] + res["ratio_cpu_pair_median"])
    assert res["inferences_per_round"] >= 4 and res["copies"] == 2
    # CpuRef works on the calling thread: the thread's CPU clock holds the whole process's work
    for t, p in zip(res["round_thread_cpu_ms"], res["round_process_cpu_ms"]):
        assert t <= p <= t * 1.05 + 1.0
    for side, path in (("a", a), ("b", b)):
        want = run_armnn(path, [x], runner=runner)[0]
        got = np.load(tmp_path / "out" / f"{side}_output_0.npy")
        assert got.dtype == want.dtype and np.array_equal(got, want)


def test_pair_reports_a_bad_input_in_one_line(tmp_path):
    if find_runner("23.08") is None:
        pytest.skip("no Arm NN 23.08 harness")
    exe, why = pair.tool("23.08")
    assert exe, why
    a = tmp_path / "a.armnn"
    assert cli.main([str(MODEL), "-o", str(a), "-q", "--target", "23.08"]) == 0
    np.save(tmp_path / "bad.npy", np.zeros((1, 2), np.float32))
    with pytest.raises(pair.PairError, match="does not match the network input"):
        pair.run(exe, str(a), str(a), [str(tmp_path / "bad.npy")], [str(tmp_path / "bad.npy")], rounds=1)
    assert os.path.exists(exe)
