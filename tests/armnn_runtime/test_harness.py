"""Checks of the Arm NN runtime harness itself (tests/armnn_runtime/), on 20.08 and 23.08.

These use hand-built .armnn files embedded below, not the project's writer, so they test only the
harness: the build, the runner's CLI contract (the same for both releases), the SetupOutputLayers
patch, the plan of how each release is had on each Debian version, and the deb-src check.
"""

import base64
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from armnn_import.testing.armnn_runtime import (EXIT_LOAD, EXIT_USAGE, ArmnnRuntimeError, harness_plan,
                                                runner_release)

HERE = Path(__file__).resolve().parent

# Input "in" (binding 0, Float32 [1,4]) -> Activation ReLu -> Output "out" (binding 0).
# Built by hand with the flatbuffers package from schema/ArmnnSchema.fbs (file identifier ARMN).
RELU_ARMNN = base64.b64decode(
    "FAAAAEFSTU4AAAoAEAAMAAgABAAKAAAADAAAABAAAAAUAAAAAQAAAAIAAAABAAAAAAAAAAMAAAAUAQAAZAAAAAQA"
    "AAAA////CAAAAAAAAAvu/v//DAAAAAAABgAIAAQABgAAAAQAAACa////FAAAABQAAAADAAAAIAAAAAIAAAAAAAAA"
    "AQAAAAQAAACI////AQAAAAAAAAADAAAAb3V0AFz///8QAAAAAAAAAQgADgAIAAQACAAAABAAAAAgAAAAAAAGAAYA"
    "BQAGAAAAAAMOABgAFAAQAAwACAAEAA4AAAAUAAAAGAAAAAkAAABMAAAAAQAAAAEAAAAgAAAAAQAAAAwAAAAIAAwA"
    "AAAEAAgAAAAAAAAAAAAAAHj///8EAAAAcP///wAAAAEEAAAAAgAAAAEAAAAEAAAABAAAAHJlbHUAAAAACAAMAAsA"
    "BAAIAAAACAAAAAAAAAn2////DAAAAAAABgAKAAQABgAAABQAAAAAAA4AFAAAABAADAAIAAQADgAAABAAAAAUAAAA"
    "AQAAAEAAAAABAAAAEAAAAAAAAAAIAAgAAAAEAAgAAAAMAAAACAAMAAgABwAIAAAAAAAAAQQAAAACAAAAAQAAAAQA"
    "AAACAAAAaW4AAA=="
)

# Input (Float32 [1,4]) -> Reshape [2,2] -> Output binding 0
#                       -> Activation ReLu -> Output binding 1
# Two Output layers: unpatched Arm NN 20.08 aborts on this file (SetupOutputLayers bug).
TWO_OUTPUTS_ARMNN = base64.b64decode(
    "FAAAAEFSTU4AAAoAEAAMAAgABAAKAAAADAAAABQAAAAYAAAAAgAAAAMAAAAEAAAAAQAAAAAAAAAFAAAADAIAAFwB"
    "AADIAAAAbAAAAAQAAAAQ/v//CAAAAAAAAAs2////DAAAAAgADAAIAAQACAAAAAEAAAAEAAAArv7//xQAAAAUAAAA"
    "AwAAACAAAAAEAAAAAAAAAAEAAAAEAAAAnP7//wEAAAAAAAAABAAAAG91dDEAAAAAdP7//wgAAAAAAAALmv///wQA"
    "AACi////BAAAAAb///8UAAAAFAAAAAMAAAAgAAAAAwAAAAAAAAABAAAABAAAAPT+//8CAAAAAAAAAAQAAABvdXQw"
    "AAAAAMz+//8IAAAAAAAADnD///8QAAAAIAAAAAAABgAIAAQABgAAAAQAAAACAAAAAgAAAAIAAAB2////FAAAABgA"
    "AAAFAAAARAAAAAIAAAABAAAAGAAAAAEAAAAEAAAAaP///wAAAAAAAAAA2P7//wQAAADQ/v//AAAAAQQAAAACAAAA"
    "AgAAAAIAAAACAAAAcnMAAFz///8QAAAAAAAAAQgADgAIAAQACAAAABAAAAAgAAAAAAAGAAYABQAGAAAAAAMOABgA"
    "FAAQAAwACAAEAA4AAAAUAAAAGAAAAAkAAABMAAAAAQAAAAEAAAAgAAAAAQAAAAwAAAAIAAwAAAAEAAgAAAAAAAAA"
    "AAAAAHj///8EAAAAcP///wAAAAEEAAAAAgAAAAEAAAAEAAAABAAAAHJlbHUAAAAACAAMAAsABAAIAAAACAAAAAAA"
    "AAn2////DAAAAAAABgAKAAQABgAAABQAAAAAAA4AFAAAABAADAAIAAQADgAAABAAAAAUAAAAAQAAAEAAAAABAAAA"
    "EAAAAAAAAAAIAAgAAAAEAAgAAAAMAAAACAAMAAgABwAIAAAAAAAAAQQAAAACAAAAAQAAAAQAAAACAAAAaW4AAA=="
)

X = np.array([[-1.5, 0.0, 2.25, -3.0]], dtype=np.float32)


def test_relu_matches_numpy(armnn_release_runner):
    (out,) = armnn_release_runner(RELU_ARMNN, [X])
    assert out.dtype == np.float32 and out.shape == (1, 4)
    np.testing.assert_array_equal(out, np.maximum(X, 0))


def test_two_outputs(armnn_release_runner):
    out0, out1 = armnn_release_runner(TWO_OUTPUTS_ARMNN, [X])
    np.testing.assert_array_equal(out0, X.reshape(2, 2))
    np.testing.assert_array_equal(out1, np.maximum(X, 0))


def test_garbage_file_is_rejected_with_one_line(armnn_release_runner):
    with pytest.raises(ArmnnRuntimeError) as info:
        armnn_release_runner(b"this is not an Arm NN network" * 4, [])
    err = info.value
    assert err.returncode == EXIT_LOAD
    lines = err.stderr.strip().splitlines()
    assert len(lines) == 1, err.stderr
    assert lines[0].startswith("armnn-run: error: ")


@pytest.mark.parametrize(
    "bad",
    [
        np.zeros((1, 5), np.float32),  # wrong shape
        np.zeros((1, 4), np.float64),  # wrong dtype
    ],
)
def test_input_mismatch_is_a_usage_error(armnn_release_runner, bad):
    with pytest.raises(ArmnnRuntimeError) as info:
        armnn_release_runner(RELU_ARMNN, [bad])
    assert info.value.returncode == EXIT_USAGE
    assert len(info.value.stderr.strip().splitlines()) == 1


def test_wrong_input_count_is_a_usage_error(armnn_release_runner):
    with pytest.raises(ArmnnRuntimeError) as info:
        armnn_release_runner(RELU_ARMNN, [X, X])
    assert info.value.returncode == EXIT_USAGE


def test_runner_says_its_release(armnn_release_runner):
    assert runner_release(armnn_release_runner.path) == armnn_release_runner.release


# -- which way each release is had on each Debian version (plan.py; no Debian 13 machine needed) --

@pytest.mark.parametrize("version, release, method, key, suite", [
    ("12.11", "20.08", "packages", "20.08-deb12", "bookworm"),
    ("12.0", "23.08", "source", "23.08-deb12", "trixie"),
    ("13.1", "23.08", "packages", "23.08-deb13", "trixie"),
    ("trixie/sid", "23.08", "packages", "23.08-deb13", "trixie"),
    ("13.0", "20.08", "source", "20.08-deb13", "bookworm"),
])
def test_plan_for_known_debian(version, release, method, key, suite):
    plan = harness_plan(release, version)
    assert (plan.method, plan.key, plan.source_suite) == (method, key, suite)
    assert plan.reason and "\n" not in plan.reason
    if method == "packages":
        assert "libarmnn-dev" in plan.packages
        assert ("libarmnn-cpuref-backend22" if release == "20.08" else "libarmnn-cpuref-backend33") in plan.packages
    if method == "source":
        assert "cmake" in plan.packages and "libarmnn-dev" not in plan.packages


@pytest.mark.parametrize("version", ["11.9", "14.0", "forky/sid", "", "not a version"])
@pytest.mark.parametrize("release", ["20.08", "23.08"])
def test_plan_for_unknown_system_is_none_with_a_reason(version, release):
    plan = harness_plan(release, version)
    assert plan.method == "none" and not plan.packages
    assert f"Arm NN {release}" in plan.reason and "Debian 12 and 13" in plan.reason


def test_plan_script_prints_shell_assignments():
    out = subprocess.run(["python3", str(HERE / "plan.py"), "23.08", "13.2"], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    got = subprocess.run(["bash", "-c", 'eval "$1"; echo "$PLAN_METHOD|$PLAN_KEY|$PLAN_PACKAGES"', "-", out],
                         check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
    assert got.startswith("packages|23.08-deb13|libarmnn-dev libarmnn-cpuref-backend33")


def test_build_sh_says_unavailable_with_exit_4(tmp_path):
    """A release the plan has no way for: exit 4 and a one-line reason, nothing built."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text('#!/bin/sh\nexec "%s" "$1" "$2" 11.9\n' % os.path.realpath(
        subprocess.run(["bash", "-c", "command -v python3"], stdout=subprocess.PIPE, text=True).stdout.strip()))
    (fake / "python3").chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}", ARMNN_HARNESS_CACHE=str(tmp_path / "cache"))
    proc = subprocess.run(["bash", str(HERE / "build.sh"), "20.08"], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    assert proc.returncode == 4, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "armnn-harness: unavailable: " + harness_plan("20.08", "11.9").reason]
    assert proc.stdout == "" and not (tmp_path / "cache").exists()


# -- the deb-src check of lib.sh, on a copy of /etc/apt -----------------------------------------

DEBIAN_SOURCES = """Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
"""


def _lib(apt_etc, script):
    env = dict(os.environ, ARMNN_HARNESS_APT_ETC=str(apt_etc))
    return subprocess.run(["bash", "-c", f'set -euo pipefail; source "{HERE}/lib.sh"; {script}'], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _apt_etc(tmp_path, sources=DEBIAN_SOURCES, sources_list=None):
    d = tmp_path / "apt"
    (d / "sources.list.d").mkdir(parents=True)
    if sources is not None:
        (d / "sources.list.d" / "debian.sources").write_text(sources)
    if sources_list is not None:
        (d / "sources.list").write_text(sources_list)
    return d


@pytest.mark.skipif(not Path("/etc/os-release").is_file(), reason="needs /etc/os-release for the codename")
def test_deb_src_entry_is_added_once_without_sources_list(tmp_path):
    """No /etc/apt/sources.list (as on Debian 12 and 13 images): the entry is added once, never again."""
    codename = _lib(tmp_path, "host_codename").stdout.strip()
    # the machine's own stanza is the one an entry is derived from (bookworm or trixie)
    apt = _apt_etc(tmp_path, sources=DEBIAN_SOURCES.replace("bookworm", codename))
    for _ in range(3):
        for suite in ("bookworm", "trixie"):
            r = _lib(apt, f"ensure_deb_src_entry {suite}")
            assert r.returncode == 0, r.stderr
    files = sorted(p.name for p in (apt / "sources.list.d").iterdir())
    assert files == ["armnn-harness-src.sources", "armnn-harness-trixie-src.sources", "debian.sources"]
    for name, suite in (("armnn-harness-trixie-src.sources", "trixie"), ("armnn-harness-src.sources", "bookworm")):
        assert (apt / "sources.list.d" / name).read_text().splitlines() == [
            "Types: deb-src", "URIs: http://deb.debian.org/debian", f"Suites: {suite}", "Components: main",
            "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"]
    assert _lib(apt, "has_deb_src trixie && has_deb_src bookworm").returncode == 0


def test_existing_deb_src_entries_are_found(tmp_path):
    both = DEBIAN_SOURCES.replace("Types: deb\nURIs: http://deb.debian.org/debian\n",
                                  "Types: deb deb-src\nURIs: http://deb.debian.org/debian\n", 1)
    apt = _apt_etc(tmp_path, sources=both)
    assert _lib(apt, "has_deb_src bookworm").returncode == 0
    assert _lib(apt, "has_deb_src bookworm-updates").returncode == 0
    assert _lib(apt, "has_deb_src trixie").returncode == 1
    r = _lib(apt, "ensure_deb_src_entry bookworm")
    assert r.returncode == 0 and r.stderr == ""
    assert sorted(p.name for p in (apt / "sources.list.d").iterdir()) == ["debian.sources"]

    disabled = both.replace("Types: deb deb-src", "Enabled: no\nTypes: deb deb-src", 1)
    assert _lib(_apt_etc(tmp_path / "off", sources=disabled), "has_deb_src bookworm").returncode == 1

    one_line = _apt_etc(tmp_path / "list", sources=None, sources_list=(
        "deb http://deb.debian.org/debian bookworm main\n"
        "# deb-src http://deb.debian.org/debian trixie main\n"
        "deb-src [arch=amd64] http://deb.debian.org/debian bookworm main\n"))
    assert _lib(one_line, "has_deb_src bookworm").returncode == 0
    assert _lib(one_line, "has_deb_src trixie").returncode == 1


def test_source_download_without_apt_sources_edits_nothing(tmp_path):
    """What the fixtures run (build.sh without --apt-sources): a source package that needs a
    missing deb-src entry is an error naming scripts/test.sh, and no apt file is written."""
    apt = _apt_etc(tmp_path)
    before = sorted(p.name for p in (apt / "sources.list.d").iterdir())
    r = _lib(apt, f'fetch_source 23.08-999 "{tmp_path}/src" "{tmp_path}/log" 0 trixie')
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1].startswith(
        "armnn-harness: error: the armnn 23.08-999 source needs a deb-src entry for trixie: run 'bash scripts/test.sh'")
    assert sorted(p.name for p in (apt / "sources.list.d").iterdir()) == before
    assert not (tmp_path / "src").exists()
