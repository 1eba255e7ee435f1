"""Short fuzz run of armnn_import.convert() on mutated reference models.

Every mutant must either be refused with an ArmnnImportError or convert to a
file that passes verify() and reads back to the same bytes, within the time
bound and without exhausting memory. The long run is benchmarks/fuzz_long.py.
A failing example prints (rel, kind, seed); replay it with
`python benchmarks/fuzz_long.py --replay FMT REL KIND SEED`.
"""
import os
import sys
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_mutators as fm  # noqa: E402

BOUND = 10.0  # seconds per input, as in the long run
ONNX_SEEDS = fm.seed_models("onnx")
_tfl = fm.seed_models("tflite")
# every network model, and a spread of the single-operator models
TFLITE_SEEDS = [p for p in _tfl if "/models/" in p] + [p for p in _tfl if "/ops/" in p][::12]

FUZZ = settings(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow],
                print_blob=False)


@pytest.fixture(scope="module")
def out_file(tmp_path_factory):
    return str(tmp_path_factory.mktemp("fuzz") / "out.armnn")


def _run(fmt, rel, kind, seed, out_file):
    data = fm.mutant(fmt, rel, kind, seed)
    t0 = time.perf_counter()
    with fm.bounded(BOUND):
        result = fm.check(data, out_file)
    assert time.perf_counter() - t0 < BOUND
    assert result["outcome"] in ("converted", "refused")
    return result


def test_seed_models_are_present():
    assert len(ONNX_SEEDS) >= 8 and len(TFLITE_SEEDS) >= 30


@settings(FUZZ, max_examples=300)
@given(rel=st.sampled_from(TFLITE_SEEDS), kind=st.sampled_from(fm.TFLITE_KINDS), seed=st.integers(0, 2 ** 32 - 1))
def test_fuzz_tflite(rel, kind, seed, out_file):
    _run("tflite", rel, kind, seed, out_file)


@settings(FUZZ, max_examples=150)
@given(rel=st.sampled_from(ONNX_SEEDS), kind=st.sampled_from(fm.ONNX_KINDS), seed=st.integers(0, 2 ** 32 - 1))
def test_fuzz_onnx(rel, kind, seed, out_file):
    _run("onnx", rel, kind, seed, out_file)


@pytest.mark.parametrize("fmt", ["onnx", "tflite"])
def test_every_mutation_kind_changes_the_model(fmt):
    """Guards the fuzzer itself: a mutator that silently returns its input tests nothing."""
    seeds = ONNX_SEEDS if fmt == "onnx" else TFLITE_SEEDS[:4]
    for kind in fm.KINDS[fmt]:
        changed = sum(fm.mutant(fmt, rel, kind, k) != fm.model_bytes(rel) for rel in seeds for k in range(3))
        assert changed >= len(seeds), f"{kind}: only {changed} of {3 * len(seeds)} mutants differ"


@pytest.mark.parametrize("fmt", ["onnx", "tflite"])
def test_converted_mutants_run_on_armnn(fmt, armnn_runner, out_file):
    """Mutants that convert to something other than their seed's network load
    and run on the real Arm NN 20.08 runtime."""
    seeds = ONNX_SEEDS if fmt == "onnx" else TFLITE_SEEDS
    originals = {}
    rng = np.random.default_rng(0)
    ran = 0
    for k in range(400):
        rel = seeds[k % len(seeds)]
        if rel not in originals:
            try:
                originals[rel] = fm.check(fm.model_bytes(rel))["bytes"]
            except fm.Crash:
                originals[rel] = None
        result = _run(fmt, rel, fm.KINDS[fmt][k % len(fm.KINDS[fmt])], k, out_file)
        if result["outcome"] != "converted" or result["bytes"] == originals[rel]:
            continue
        outputs = armnn_runner(result["bytes"], fm.runtime_inputs(result["bytes"], rng), timeout=60)
        assert outputs, f"{rel} mutant {k}: no outputs"
        ran += 1
        if ran == 4:
            break
    assert ran == 4, f"only {ran} distinct converted mutants in 400"
