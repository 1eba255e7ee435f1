"""A clean install works: `pip install .` into a fresh venv (no system site
packages), then the installed `armnn-import` runs. Needs PyPI; takes about a
minute. Skipped when PyPI cannot be reached, except under CI=true."""
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from armnn_import.serialize import write

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # pytest runs with --import-mode=importlib
from test_serialize import rich_graph  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "armnn_import", "frontends")


def _pypi_reachable() -> bool:
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple/").rstrip("/") + "/pip/"
    try:
        with urllib.request.urlopen(index, timeout=15) as r:
            return r.status == 200
    except OSError:
        return False


def _skip_or_fail(msg: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(msg, pytrace=False)
    pytest.skip(msg)


def test_clean_venv_install(tmp_path):
    # Build from a copy so the working tree gets no build/ or *.egg-info.
    src = tmp_path / "src"
    src.mkdir()
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, src / name)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    bin_dir = venv / "bin"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_ROOT_USER_ACTION="ignore")
    try:
        p = subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(src)], env=env,
                           capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        _skip_or_fail("pip install . took over 5 minutes (slow network?)")
    if p.returncode != 0:
        if not _pypi_reachable():
            _skip_or_fail(f"PyPI is not reachable; pip install failed:\n{p.stderr[-2000:]}")
        pytest.fail(f"pip install . failed:\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}", pytrace=False)

    exe = bin_dir / "armnn-import"
    run = dict(env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    h = subprocess.run([str(exe), "--help"], **run)
    assert h.returncode == 0 and "usage: armnn-import" in h.stdout, h.stderr

    net = tmp_path / "rich.armnn"
    net.write_bytes(write(rich_graph()))
    i = subprocess.run([str(exe), "inspect", str(net)], **run)
    assert i.returncode == 0, i.stderr
    assert "parameters: 153" in i.stdout and "  [1] codes: 2x6 QuantisedAsymm8 quant (0.25, 3)" in i.stdout

    # The code and the frontend plugins come from the venv, not from the repository.
    code = ("import armnn_import, sys\nfrom armnn_import.discovery import available_frontends\n"
            "print(armnn_import.__file__)\nprint(sorted(available_frontends()))")
    w = subprocess.run([str(bin_dir / "python"), "-c", code], **run)
    assert w.returncode == 0, w.stderr
    where, fronts = w.stdout.splitlines()
    assert where.startswith(str(venv)), where
    assert fronts == "['onnx', 'tflite']"

    # The distribution owns its names: only armnn_import* at the top of site-packages.
    code = ("import importlib.metadata as m\nfiles = m.distribution('armnn-import').files\n"
            "print(sorted({f.parts[0] for f in files if not f.parts[0].endswith(('.dist-info', '.data'))"
            " and f.parts[0] != '..'}))")
    t = subprocess.run([str(bin_dir / "python"), "-c", code], **run)
    assert t.returncode == 0, t.stderr
    top = eval(t.stdout)  # noqa: S307 - a list of names printed by the venv's Python
    assert top and all(name.startswith("armnn_import") for name in top), top
    assert "armnn_import_frontends" in top and "frontends" not in top


def test_every_package_folder_is_listed_in_pyproject():
    """The packages are listed one by one (frontends/ installs as armnn_import_frontends)."""
    tomllib = pytest.importorskip("tomllib")
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {str(p.parent.relative_to(REPO)).replace("/", ".").replace("frontends", "armnn_import_frontends", 1)
             if str(p.parent.relative_to(REPO)).startswith("frontends") else str(p.parent.relative_to(REPO)).replace("/", ".")
             for root in ("armnn_import", "frontends") for p in (REPO / root).rglob("__init__.py")}
    assert listed == found
