"""The ONNX backend node conformance suite on the real Arm NN 20.08 and 23.08 runtimes
(see conformance.py for how cases are run)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance  # noqa: E402
from expected_failures import EXPECTED_FAILURES, RUNTIME_FAILURES  # noqa: E402


@pytest.fixture(scope="module")
def results(armnn_release_runner):
    return conformance.run_all(armnn_release_runner)


@pytest.fixture(scope="module")
def expected_failures(armnn_release_runner):
    """The converter's refusals (the same on every release) and the release's own failures."""
    return {**EXPECTED_FAILURES, **RUNTIME_FAILURES[armnn_release_runner.release]}


def test_converter_never_crashes(results):
    crashes = {k: v for k, v in results.items() if v[1] == "crash"}
    assert not crashes, "\n".join(f"{k}: {v[2]}" for k, v in sorted(crashes.items()))


def test_every_written_file_loads_in_armnn(results, expected_failures):
    bad = {k: v for k, v in results.items() if v[1] == "load_error" and k not in expected_failures}
    assert not bad, "\n".join(f"{k}: {v[2]}" for k, v in sorted(bad.items()))


def test_listed_operators_pass_or_are_expected_failures(results, expected_failures):
    listed = {k: v for k, v in results.items() if v[0] in conformance.LISTED_OPS}
    unexpected = {k: v for k, v in listed.items() if v[1] != "pass" and k not in expected_failures}
    assert not unexpected, "\n".join(f"{k} [{v[0]}] {v[1]}: {v[2]}" for k, v in sorted(unexpected.items()))


def test_expected_failure_list_is_current(results, expected_failures):
    stale = [k for k in expected_failures if k in results and results[k][1] == "pass"]
    missing = [k for k in expected_failures if k not in results]
    assert not stale, f"these cases pass now; drop them from expected_failures.py: {stale}"
    assert not missing, f"no such node cases: {missing}"


# -- richer targets: the same suite written in the release's own format ------------------------
@pytest.fixture(scope="module")
def results_rich(armnn_release_runner):
    """Every case converted for the target of the runner's release (--target 20.08 on 20.08,
    --target 23.08 on 23.08)."""
    return conformance.run_all(armnn_release_runner, target=armnn_release_runner.release)


def test_rich_target_never_crashes_and_loads(results_rich, expected_failures):
    bad = {k: v for k, v in results_rich.items()
           if v[1] == "crash" or (v[1] == "load_error" and k not in expected_failures)}
    assert not bad, "\n".join(f"{k}: {v[1]} {v[2]}" for k, v in sorted(bad.items()))


def test_rich_target_never_loses_a_case(results, results_rich):
    lost = {k: results_rich[k] for k, v in results.items() if v[1] == "pass" and results_rich[k][1] != "pass"}
    assert not lost, "\n".join(f"{k}: {v[1]} {v[2]}" for k, v in sorted(lost.items()))


def test_rich_target_converts_the_operators_it_adds(results_rich, armnn_release_runner):
    # refused by the 19.02 format: ArgMax/ArgMin (ArgMinMax), LogSoftmax; from 23.08 Log and Sin
    # and the Boolean And/Or/Xor/Not (LogicalBinary, LogicalNot), Constant and Size (Constant layers,
    # which 23.08 reads as they are in files of weightsLayoutScheme 1)
    # (session 10) Hardmax (ArgMinMax + Gather), IsNaN (Comparison NotEqual), and Not of a Boolean input,
    # which 20.08 writes as v == (v != v)
    ops = ("ArgMax", "ArgMin", "LogSoftmax", "Hardmax", "IsNaN", "Not") + (
        ("Log", "Sin", "And", "Or", "Xor", "Constant", "Size") if armnn_release_runner.release == "23.08" else ())
    for op in ops:
        cases = {k: v for k, v in results_rich.items() if v[0] == op}
        # (session 12) select_last_index=1 too: ArgMinMax of x reversed along the axis
        assert cases and all(v[1] == "pass" for v in cases.values()), cases


def test_every_target_converts_isinf_and_integer_trilu(results, results_rich):
    """Session 10: IsInf (a Greater against FLT_MAX) and Trilu of integers (times a 0/1 mask) pass
    on every target; the two Trilu cases of an empty tensor stay refused."""
    for res in (results, results_rich):
        cases = {k: v[1] for k, v in res.items() if v[0] in ("IsInf", "Trilu")}
        want = {k: "refused" if k in ("test_tril_zero", "test_triu_zero") else "pass" for k in cases}
        assert len(cases) == 22 and cases == want, cases


def test_rich_target_files_all_load(results_rich):
    """No --target file fails to load on its own release (23.08: the Constant layers of
    Constant/Shape/Size cases load, serialize/layouts.py)."""
    bad = {k: v for k, v in results_rich.items() if v[1] == "load_error"}
    assert not bad, "\n".join(f"{k}: {v[2]}" for k, v in sorted(bad.items()))


# (session 12's runs: 19.02 target 847 on 20.08 and 845 on 23.08, 20.08 target 913, 23.08 target 959;
# session 15: 23.08 target 961, the float16 <-> float32 edge Casts; session 18: GatherND, Pow, and 18
# Attention cases whose masks compare int32 positions; float32 parts of float16 models: 986;
# session 21: exact float masks (Where, Greater/Less/Equal...), Scatter*/GatherElements with constant
# indices, CumSum: 902 and 900, 1003 on 20.08 and 1001 on 23.08, 1078; session 22: AffineGrid and
# Compress on every target, GridSample cubic/reflection and uint8 DequantizeLinear inputs from 20.08;
# session 23: bool inputs used as numbers and run-time GatherElements from 20.08, an exact max == -inf)
PASS_FLOORS = {"20.08": (930, 1037), "23.08": (928, 1112)}


def test_attention_with_int32_position_masks_from_23_08(results_rich, armnn_release_runner):
    """Session 18: the Attention cases whose causal or padding masks compare int32 positions convert
    from the 23.08 format (the mask made in int32, then a Cast). Session 23: their RowAllMasked test
    (ReduceMax == -inf) is exact too, though Arm NN's Reduce Max of a row all -inf is -FLT_MAX
    (Reduce.cpp starts at -FLT_MAX): lowering.compare.exact_max_rows. So every case passes."""
    cases = {k: v for k, v in results_rich.items() if v[0] in ("Attention", "Attention(expanded)")}
    passed = sum(v[1] == "pass" for v in cases.values())
    if armnn_release_runner.release == "23.08":
        assert passed >= 172, passed
        assert not {k for k, v in cases.items() if v[1] == "fail"}


def test_grid_sample_every_mode_from_23_08(results_rich, armnn_release_runner):
    """Session 22: linear, nearest and cubic, zeros, border and reflection padding: all 18 cases
    run on Arm NN 23.08 (tests/onnx/test_onnx_grid_sample.py: bit for bit with onnxruntime)."""
    cases = {k: v[1] for k, v in results_rich.items() if v[0] == "GridSample"}
    if armnn_release_runner.release == "23.08":
        assert len(cases) >= 18 and set(cases.values()) == {"pass"}, cases


def test_gather_nd(results, results_rich, armnn_release_runner):
    """Session 18: GatherND of constant index tuples (the cases' indices frozen) on every target;
    of run-time ones, batch_dims=1 too, a GatherNd layer from the 23.08 format. int32 data cannot be
    sliced on CpuRef: a Gather layer from the 20.08 format, refused at 19.02."""
    for res, rich in ((results, False), (results_rich, True)):
        cases = {k: v for k, v in res.items() if v[0] == "GatherND"}
        want = {k: "refused" if not rich and "int32" in k else "pass" for k in cases}
        assert len(cases) == 3 and {k: v[1] for k, v in cases.items()} == want, cases
        if rich and armnn_release_runner.release == "23.08":
            assert all(v[2] == "" for v in cases.values()), cases  # (not frozen: run-time indices)


def test_float16_edge_casts_from_23_08(results_rich, armnn_release_runner):
    """Session 15: a float16 model with a float32 input or output is a Float16 network with Cast
    layers at those edges from the 23.08 format on. Float32 -> float16 of an infinity gives +-65504
    there (23.08's Float16 encoder saturates: tests/test_fp16_rounding.py), where ONNX keeps it: the
    FLOAT_to_FLOAT16 cases differ on their three infinite inputs only, and the CLI warns of it."""
    cases = {k: results_rich[k] for k in ("test_cast_FLOAT16_to_FLOAT", "test_castlike_FLOAT16_to_FLOAT_expanded",
                                          "test_cast_FLOAT_to_FLOAT16", "test_castlike_FLOAT_to_FLOAT16_expanded")}
    if armnn_release_runner.release == "20.08":
        assert all(v[1] == "refused" and "--target 23.08" in v[2] for v in cases.values()), cases
        return
    assert [v[1] for v in cases.values()] == ["pass", "pass", "fail", "fail"], cases
    assert all(v[2] == "output 0: max abs error inf" for v in list(cases.values())[2:]), cases


def test_pass_counts_never_fall(results, results_rich, armnn_release_runner):
    floor, floor_rich = PASS_FLOORS[armnn_release_runner.release]
    assert sum(v[1] == "pass" for v in results.values()) >= floor
    assert sum(v[1] == "pass" for v in results_rich.values()) >= floor_rich


def test_session_12_gaps(results, results_rich, armnn_release_runner):
    """EyeLike (folded like Shape) and Pow with a per-element exponent or an integer base pass on
    every target; OneHot from the 20.08 target (a Gather), of float indices from 23.08 (Cast)."""
    for res in (results, results_rich):
        # (session 18: from the 23.08 format test_pow's per-element fractional exponent is a Power layer)
        power = res is results_rich and armnn_release_runner.release == "23.08"
        for op, refused in (("EyeLike", ()), ("Pow", ("test_pow",) * (not power) + ("test_pow_types_float32_uint32",
                                                                                  "test_pow_types_float32_uint64"))):
            cases = {k: v[1] for k, v in res.items() if v[0] == op}
            assert cases and cases == {k: "refused" if k in refused else "pass" for k in cases}, cases
    one_hot = {k: v[1] for k, v in results_rich.items() if v[0] == "OneHot"}
    float_indices = ("test_onehot_with_axis", "test_onehot_with_negative_axis")
    want = {k: "refused" if "bfloat16" in k or (k in float_indices and armnn_release_runner.release == "20.08")
            else "pass" for k in one_hot}
    assert len(one_hot) == 6 and one_hot == want, one_hot
    assert all(v[1] == "refused" for v in results.values() if v[0] == "OneHot")
