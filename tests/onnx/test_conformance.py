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


# -- richer targets: the same suite written in the Arm NN 20.08 format --------------------------
@pytest.fixture(scope="module")
def results_20_08(armnn_runner):
    return conformance.run_all(armnn_runner, target="20.08")


def test_20_08_target_never_crashes_and_loads(results_20_08):
    bad = {k: v for k, v in results_20_08.items() if v[1] in ("crash", "load_error")}
    assert not bad, "\n".join(f"{k}: {v[1]} {v[2]}" for k, v in sorted(bad.items()))


def test_20_08_target_never_loses_a_case(results, results_20_08):
    lost = {k: results_20_08[k] for k, v in results.items() if v[1] == "pass" and results_20_08[k][1] != "pass"}
    assert not lost, "\n".join(f"{k}: {v[1]} {v[2]}" for k, v in sorted(lost.items()))


def test_20_08_target_converts_the_operators_it_adds(results_20_08):
    # ArgMax/ArgMin (ArgMinMax) and LogSoftmax are refused by the 19.02 format
    for op in ("ArgMax", "ArgMin", "LogSoftmax"):
        cases = {k: v for k, v in results_20_08.items() if v[0] == op}
        assert cases and all(v[1] == "pass" for v in cases.values()), cases
