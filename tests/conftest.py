import os

import pytest

# verify() after every IR pass, not only before and after them (armnn_import.passes)
os.environ.setdefault("ARMNN_IMPORT_CHECK_PASSES", "1")


# --- Arm NN 20.08 runtime harness (tests/armnn_runtime/) -----------------------------------
@pytest.fixture(scope="session")
def armnn_runner():
    """A callable ``run(armnn_bytes_or_path, inputs) -> list[np.ndarray]`` on real Arm NN 20.08.

    Builds the harness once per session (tests/armnn_runtime/build.sh, cached in .harness/ or
    $ARMNN_HARNESS_DIR; $ARMNN_RUNNER overrides the runner). Skips when it cannot be built,
    except under CI=true where that is a failure. ``run.path`` is the runner's path; ``run``
    also takes ``timeout=`` and ``extra_args=`` (e.g. ``["--graph-order"]``).
    """
    from armnn_import.testing import armnn_runtime

    runner = os.environ.get("ARMNN_RUNNER")
    if not runner:
        try:
            runner = armnn_runtime.build_harness()
        except RuntimeError as e:
            if os.environ.get("CI", "").lower() == "true":
                pytest.fail(f"Arm NN harness could not be built: {e}", pytrace=False)
            pytest.skip(f"Arm NN harness could not be built: {e}")

    def run(armnn_bytes_or_path, inputs, **kwargs):
        return armnn_runtime.run_armnn(armnn_bytes_or_path, list(inputs), runner=runner, **kwargs)

    run.path = runner
    return run
