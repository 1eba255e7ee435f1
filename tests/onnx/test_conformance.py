"""The ONNX backend node conformance suite on the real Arm NN 20.08 runtime
(see conformance.py for how cases are run)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance  # noqa: E402
from expected_failures import EXPECTED_FAILURES  # noqa: E402


@pytest.fixture(scope="module")
def results(armnn_runner):
    return conformance.run_all(armnn_runner)


def test_converter_never_crashes(results):
    crashes = {k: v for k, v in results.items() if v[1] == "crash"}
    assert not crashes, "\n".join(f"{k}: {v[2]}" for k, v in sorted(crashes.items()))


def test_every_written_file_loads_in_armnn(results):
    bad = {k: v for k, v in results.items() if v[1] == "load_error"}
    assert not bad, "\n".join(f"{k}: {v[2]}" for k, v in sorted(bad.items()))


def test_listed_operators_pass_or_are_expected_failures(results):
    listed = {k: v for k, v in results.items() if v[0] in conformance.LISTED_OPS}
    unexpected = {k: v for k, v in listed.items() if v[1] != "pass" and k not in EXPECTED_FAILURES}
    assert not unexpected, "\n".join(f"{k} [{v[0]}] {v[1]}: {v[2]}" for k, v in sorted(unexpected.items()))


def test_expected_failure_list_is_current(results):
    stale = [k for k in EXPECTED_FAILURES if k in results and results[k][1] == "pass"]
    missing = [k for k in EXPECTED_FAILURES if k not in results]
    assert not stale, f"these cases pass now; drop them from expected_failures.py: {stale}"
    assert not missing, f"no such node cases: {missing}"
