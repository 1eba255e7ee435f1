"""Run serialized Arm NN networks on the real Arm NN runtime (CpuRef backend), 20.08 or 23.08.

The runtime is a small C++ program, ``armnn-run``, built per release by
``tests/armnn_runtime/build.sh [RELEASE]``: 20.08 from Debian 12's packages plus its deserializer
compiled from the Debian source package; 23.08 from Debian 13's source tarball on Debian 12, or
Debian 13's packages. ``tests/armnn_runtime/plan.py`` decides which; see
``tests/armnn_runtime/README.md``. Both runners take the same arguments and write the same files.

    from armnn_import.testing.armnn_runtime import build_harness, run_armnn
    runner = build_harness("23.08")
    outputs = run_armnn("model.armnn", [x], runner=runner)

Input ``i`` feeds the Input layer with the i-th smallest LayerBindingId (binding id ``i`` for files
whose ids are 0..n-1); output ``i`` comes from the Output layer with the i-th smallest binding id.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence, Union

import numpy as np

__all__ = [
    "ArmnnRuntimeError",
    "DEFAULT_RELEASE",
    "HarnessUnavailable",
    "RELEASES",
    "EXIT_RUNTIME",
    "EXIT_USAGE",
    "EXIT_LOAD",
    "EXIT_UNAVAILABLE",
    "SUPPORTED_DTYPES",
    "anchor_problem",
    "build_harness",
    "build_script",
    "cache_root",
    "find_anchor",
    "find_runner",
    "harness_dir",
    "harness_plan",
    "run_armnn",
    "runner_release",
]

#: the Arm NN releases the harness builds; 20.08 is the one ``armnn_runner`` and the CLI's users had
RELEASES = ("20.08", "23.08")
DEFAULT_RELEASE = "20.08"
#: build.sh's exit code when the release cannot be had on this machine (plan.py's method "none")
EXIT_UNAVAILABLE = 4

#: armnn-run exit codes
EXIT_RUNTIME = 1  # inference failed
EXIT_USAGE = 2  # bad arguments or inputs (count, dtype, shape)
EXIT_LOAD = 3  # deserialize / optimize / load failed

#: numpy dtypes the runner reads and writes (Arm NN Float32, Float16, QAsymmU8, Signed32, Boolean,
#: plus QAsymmS8/QSymmS8 and QSymmS16)
SUPPORTED_DTYPES = (np.float32, np.float16, np.uint8, np.int32, np.bool_, np.int8, np.int16)

_REPO_ROOT = Path(__file__).resolve().parents[2]


class ArmnnRuntimeError(RuntimeError):
    """armnn-run failed. ``returncode`` is its exit code (see EXIT_*), ``stderr`` its message."""

    def __init__(self, returncode: int, stderr: str):
        self.returncode = returncode
        self.stderr = stderr
        first = stderr.strip().splitlines()[-1] if stderr.strip() else "(no message)"
        super().__init__(f"armnn-run exited with {returncode}: {first}")


class HarnessUnavailable(RuntimeError):
    """The release cannot be had on this machine at all (plan.py's reason); tests skip with it."""


def build_script() -> Path:
    return _REPO_ROOT / "tests" / "armnn_runtime" / "build.sh"


def _plan_module():
    name = "_armnn_harness_plan"
    if name not in sys.modules:
        path = _REPO_ROOT / "tests" / "armnn_runtime" / "plan.py"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None or not path.is_file():
            raise RuntimeError(f"harness plan not found: {path}")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod    # dataclasses look their module up here
        spec.loader.exec_module(mod)
    return sys.modules[name]


def harness_plan(release: str = DEFAULT_RELEASE, debian_version: str | None = None):
    """plan.py's Plan for `release` on this machine (or on `debian_version`, e.g. "13.1")."""
    mod = _plan_module()
    if debian_version is None:
        debian_version = mod.read_debian_version()
    return mod.plan(release, debian_version)


def cache_root() -> Path:
    """Where built harnesses live, outside any clone: $ARMNN_HARNESS_CACHE or /var/cache/armnn-import-harness."""
    return Path(os.environ.get("ARMNN_HARNESS_CACHE") or "/var/cache/armnn-import-harness")


def harness_dir(release: str = DEFAULT_RELEASE) -> Path:
    """<cache>/<release>-deb<N>; for 20.08, $ARMNN_HARNESS_DIR overrides it."""
    if release == "20.08" and os.environ.get("ARMNN_HARNESS_DIR"):
        return Path(os.environ["ARMNN_HARNESS_DIR"])
    return cache_root() / harness_plan(release).key


def _runner_env(release: str) -> str:
    return "ARMNN_RUNNER" if release == "20.08" else "ARMNN_RUNNER_" + release.replace(".", "_")


def find_runner(release: str = DEFAULT_RELEASE) -> str | None:
    """Path of armnn-run for `release`: $ARMNN_RUNNER (20.08) / $ARMNN_RUNNER_23_08 if set, else
    <harness dir>/armnn-run if it exists."""
    env = os.environ.get(_runner_env(release))
    if env:
        return env
    p = harness_dir(release) / "armnn-run"
    return str(p) if p.is_file() and os.access(p, os.X_OK) else None


def find_anchor(release: str = DEFAULT_RELEASE) -> str | None:
    """Path of armnn-tflite-anchor (Arm NN `release`'s own TfLite parser + serializer), if built."""
    p = harness_dir(release) / "armnn-tflite-anchor"
    return str(p) if p.is_file() and os.access(p, os.X_OK) else None


def anchor_problem(release: str = DEFAULT_RELEASE) -> tuple[str, str] | None:
    """Why `release`'s anchor is missing after a build: ("unavailable", reason) when it cannot be
    had here (its tests skip), ("failed", reason) when its build failed (they fail); else None."""
    for kind in ("failed", "unavailable"):
        p = harness_dir(release) / f"armnn-tflite-anchor.{kind}"
        if p.is_file():
            return kind, p.read_text().strip()
    return None


def runner_release(runner: str) -> str:
    """The Arm NN release an armnn-run binary was built against ("20.08", "23.08"), from --version."""
    proc = subprocess.run([str(runner), "--version"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=30, stdin=subprocess.DEVNULL)
    words = proc.stdout.split()
    if proc.returncode != 0 or len(words) < 2 or words[0] != "armnn-run":
        raise RuntimeError(f"{runner} --version: {(proc.stdout + proc.stderr).strip() or 'no answer'}")
    return words[1]


def build_harness(release: str = DEFAULT_RELEASE, timeout: float = 3600, apt_sources: bool = False) -> str:
    """Run build.sh for `release` (installs packages, fetches the source, compiles; cached) and
    return the runner. A cold 23.08 build from source takes 15-25 min; cached, ~0.2 s.

    ``apt_sources``: let build.sh add the deb-src entry it needs (scripts/test.sh does; tests never).
    Raises HarnessUnavailable when the release cannot be had here, RuntimeError when the build fails.
    """
    script = build_script()
    if not script.is_file():
        raise RuntimeError(f"harness build script not found: {script}")
    args = ["bash", str(script)] + (["--apt-sources"] if apt_sources else []) + [release]
    try:
        # The 23.08 anchor takes the TfLite schema from the tflite package this Python imports.
        proc = subprocess.run(
            args,
            env={**os.environ, "ARMNN_HARNESS_PYTHON": os.environ.get("ARMNN_HARNESS_PYTHON", sys.executable)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as e:
        raise RuntimeError(f"Arm NN {release} harness build timed out after {timeout} s") from e
    except OSError as e:
        raise RuntimeError(f"cannot run {script}: {e}") from e
    if proc.returncode == EXIT_UNAVAILABLE:
        lines = [line for line in proc.stderr.splitlines() if "unavailable:" in line]
        reason = lines[-1].split("unavailable:", 1)[1].strip() if lines else proc.stderr.strip()
        raise HarnessUnavailable(reason)
    if proc.returncode != 0:
        err = proc.stderr.strip().splitlines()
        reason = next((line for line in reversed(err) if "error" in line.lower()), err[-1] if err else "")
        tail = "\n".join(err[-15:])
        raise RuntimeError(
            f"Arm NN {release} harness build failed (exit {proc.returncode}): {reason}\n{tail}".rstrip()
        )
    lines = [line for line in proc.stdout.strip().splitlines() if line.strip()]
    runner = lines[-1].strip() if lines else ""
    if not runner or not os.access(runner, os.X_OK):
        raise RuntimeError(f"Arm NN {release} harness build did not produce a runner (stdout: {proc.stdout!r})")
    return runner


def run_armnn(
    armnn_path_or_bytes: Union[str, os.PathLike, bytes, bytearray, memoryview],
    inputs: Sequence[np.ndarray],
    runner: str | None = None,
    timeout: float = 120,
    extra_args: Sequence[str] = (),
) -> list[np.ndarray]:
    """Run a serialized Arm NN network with `runner` (default: the 20.08 one) on CpuRef and
    return its outputs.

    ``inputs[i]`` feeds the Input layer with the i-th smallest binding id. Arrays are written
    as C-ordered .npy; dtype and shape must match the network input exactly (no casting).
    Raises ArmnnRuntimeError(returncode, stderr) when armnn-run fails.
    """
    runner = runner or find_runner()
    if runner is None:
        raise RuntimeError("armnn-run not found: call build_harness() or set ARMNN_RUNNER")
    with tempfile.TemporaryDirectory(prefix="armnn-run-") as tmp:
        tmpdir = Path(tmp)
        if isinstance(armnn_path_or_bytes, (bytes, bytearray, memoryview)):
            model = tmpdir / "model.armnn"
            model.write_bytes(bytes(armnn_path_or_bytes))
        else:
            model = Path(armnn_path_or_bytes)
        outdir = tmpdir / "out"
        outdir.mkdir()
        args = [str(runner), *extra_args, str(model), str(outdir)]
        for i, arr in enumerate(inputs):
            p = tmpdir / f"input_{i}.npy"
            np.save(p, np.ascontiguousarray(np.asarray(arr)), allow_pickle=False)
            args.append(str(p))
        try:
            proc = subprocess.run(
                args,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as e:
            raise ArmnnRuntimeError(-1, f"armnn-run: error: timed out after {timeout} s") from e
        if proc.returncode != 0:
            raise ArmnnRuntimeError(proc.returncode, proc.stderr)
        files = sorted(outdir.glob("output_*.npy"), key=lambda p: int(p.stem.split("_")[1]))
        return [np.load(f, allow_pickle=False) for f in files]
