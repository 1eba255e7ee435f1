"""Run serialized Arm NN networks on the real Arm NN 20.08 runtime (CpuRef backend).

The runtime is a small C++ program, ``armnn-run``, built by ``tests/armnn_runtime/build.sh``
against Debian bookworm's packaged Arm NN 20.08 plus the 20.08 deserializer compiled from the
Debian source package. See ``tests/armnn_runtime/README.md``.

    from armnn_import.testing.armnn_runtime import build_harness, run_armnn
    runner = build_harness()
    outputs = run_armnn("model.armnn", [x], runner=runner)

Input ``i`` feeds the Input layer with the i-th smallest LayerBindingId (binding id ``i`` for files
whose ids are 0..n-1); output ``i`` comes from the Output layer with the i-th smallest binding id.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence, Union

import numpy as np

__all__ = [
    "ArmnnRuntimeError",
    "EXIT_RUNTIME",
    "EXIT_USAGE",
    "EXIT_LOAD",
    "SUPPORTED_DTYPES",
    "build_harness",
    "build_script",
    "find_anchor",
    "find_runner",
    "harness_dir",
    "run_armnn",
]

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


def build_script() -> Path:
    return _REPO_ROOT / "tests" / "armnn_runtime" / "build.sh"


def harness_dir() -> Path:
    return Path(os.environ.get("ARMNN_HARNESS_DIR") or (_REPO_ROOT / ".harness"))


def find_runner() -> str | None:
    """Path of armnn-run: $ARMNN_RUNNER if set, else <harness dir>/armnn-run if it exists."""
    env = os.environ.get("ARMNN_RUNNER")
    if env:
        return env
    p = harness_dir() / "armnn-run"
    return str(p) if p.is_file() and os.access(p, os.X_OK) else None


def find_anchor() -> str | None:
    """Path of armnn-tflite-anchor (Arm NN 20.08's own TfLite parser + serializer), if built."""
    p = harness_dir() / "armnn-tflite-anchor"
    return str(p) if p.is_file() and os.access(p, os.X_OK) else None


def build_harness(timeout: float = 1800) -> str:
    """Run build.sh (installs packages, fetches the source, compiles; cached) and return the runner.

    Raises RuntimeError with the reason when the build fails.
    """
    script = build_script()
    if not script.is_file():
        raise RuntimeError(f"harness build script not found: {script}")
    try:
        proc = subprocess.run(
            ["bash", str(script)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as e:
        raise RuntimeError(f"Arm NN harness build timed out after {timeout} s") from e
    except OSError as e:
        raise RuntimeError(f"cannot run {script}: {e}") from e
    if proc.returncode != 0:
        err = proc.stderr.strip().splitlines()
        reason = next((line for line in reversed(err) if "error" in line.lower()), err[-1] if err else "")
        tail = "\n".join(err[-15:])
        raise RuntimeError(
            f"Arm NN harness build failed (exit {proc.returncode}): {reason}\n{tail}".rstrip()
        )
    lines = [line for line in proc.stdout.strip().splitlines() if line.strip()]
    runner = lines[-1].strip() if lines else ""
    if not runner or not os.access(runner, os.X_OK):
        raise RuntimeError(f"Arm NN harness build did not produce a runner (stdout: {proc.stdout!r})")
    return runner


def run_armnn(
    armnn_path_or_bytes: Union[str, os.PathLike, bytes, bytearray, memoryview],
    inputs: Sequence[np.ndarray],
    runner: str | None = None,
    timeout: float = 120,
    extra_args: Sequence[str] = (),
) -> list[np.ndarray]:
    """Run a serialized Arm NN network on Arm NN 20.08 (CpuRef) and return its outputs.

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
