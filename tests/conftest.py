import os

import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiers  # noqa: E402

# verify() after every IR pass, not only before and after them (armnn_import.passes)
os.environ.setdefault("ARMNN_IMPORT_CHECK_PASSES", "1")

#: the Arm NN releases the runtime tests run on (tests/armnn_runtime/plan.py says how each is had)
ARMNN_RELEASES = ("20.08", "23.08")


# --- Arm NN runtime harness (tests/armnn_runtime/) ------------------------------------------
@pytest.fixture(scope="session")
def armnn_runner_for():
    """A factory: ``armnn_runner_for("23.08")`` is a callable
    ``run(armnn_bytes_or_path, inputs) -> list[np.ndarray]`` on real Arm NN 23.08 (CpuRef).

    The harness is built once per session and release (tests/armnn_runtime/build.sh RELEASE,
    cached under /var/cache/armnn-import-harness or $ARMNN_HARNESS_CACHE; $ARMNN_RUNNER (20.08)
    and $ARMNN_RUNNER_23_08 override the runner). The fixtures never edit /etc/apt: a missing
    deb-src entry is scripts/test.sh's to add. A release that cannot be had on this Debian at all
    skips, with plan.py's one-line reason; a build that fails skips too, except under CI=true
    where it is a failure. ``run.path`` is the runner's path and ``run.release`` its release;
    ``run`` also takes ``timeout=`` and ``extra_args=`` (e.g. ``["--graph-order"]``).
    """
    from armnn_import.testing import armnn_runtime

    made: dict[str, object] = {}

    def get(release: str):
        if release not in made:
            made[release] = _make_runner(armnn_runtime, release)
        kind, value = made[release]
        if kind == "skip":
            # no harness: the numbers are checked on the numpy executor instead, and the test's
            # outcome says so (tiers.py turns its pass into a skip with this reason)
            return tiers.executor_runner(release, value)
        if kind == "fail":
            pytest.fail(value, pytrace=False)
        return value

    return get


def _make_runner(armnn_runtime, release):
    if os.environ.get("ARMNN_IMPORT_HARNESS") == "executor":
        return "skip", f"Arm NN {release}: harness not used ($ARMNN_IMPORT_HARNESS=executor)"
    runner = os.environ.get("ARMNN_RUNNER" if release == "20.08" else "ARMNN_RUNNER_" + release.replace(".", "_"))
    if not runner:
        try:
            runner = armnn_runtime.build_harness(release)
        except armnn_runtime.HarnessUnavailable as e:
            return "skip", f"Arm NN {release}: {e}"
        except RuntimeError as e:
            why = f"Arm NN {release} harness could not be built: {e}"
            return ("fail" if os.environ.get("CI", "").lower() == "true" else "skip"), why

    def run(armnn_bytes_or_path, inputs, **kwargs):
        return armnn_runtime.run_armnn(armnn_bytes_or_path, list(inputs), runner=runner, **kwargs)

    run.path = runner
    run.release = release
    return "ok", run


@pytest.fixture(scope="session")
def armnn_runner(armnn_runner_for):
    """``run(armnn_bytes_or_path, inputs)`` on real Arm NN 20.08 (see ``armnn_runner_for``)."""
    return armnn_runner_for("20.08")


@pytest.fixture(scope="session", params=ARMNN_RELEASES)
def armnn_release_runner(request, armnn_runner_for):
    """``armnn_runner`` once per Arm NN release: a test that takes it runs on 20.08 and on 23.08
    (ids ``[20.08-...]`` / ``[23.08-...]``); ``armnn_release_runner.release`` says which."""
    return armnn_runner_for(request.param)


# --- test tiers (tests/tiers.py): unit, runtime, corpus, fuzz, slow ----------------------------
@pytest.fixture(autouse=True)
def _harness_tests_need_the_harness(request):
    tiers.skip_harness_test_on_executor(request)


def pytest_collection_modifyitems(config, items):
    tiers.mark(items)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    tiers.report_fallback(item, call, outcome.get_result())
