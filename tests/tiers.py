"""Test tiers: every test gets one or more of the markers ``unit``, ``runtime``, ``corpus``,
``fuzz`` and ``slow`` (registered in pyproject.toml), so that ``pytest -m unit`` runs the fast
tier alone.

- ``runtime``: the test takes a runner fixture (armnn_runner, armnn_runner_for,
  armnn_release_runner), directly or through another fixture, or is marked so;
- ``corpus``: it runs over the ONNX node suite or the reference models (test_models/), by path
  or by a parameter that names a file in test_models/;
- ``fuzz``: it lives in tests/fuzz/;
- ``slow``: marked so explicitly (a test file's ``pytestmark``) or listed in SLOW below;
- ``unit``: none of these.

Where a release's harness cannot be had, the runner fixtures hand out a runner that computes
the outputs on the numpy executor (armnn_import.executor). The test still makes its assertions
against its independent reference, but the real runtime was not asked, so a pass is reported as
a skip whose reason says both things; a failure stays a failure (with a note); a network the
executor cannot run is a skip that says why. Tests marked ``harness`` (they examine the runner
program itself) skip with the harness's reason instead. Nothing is skipped silently.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
RUNTIME_FIXTURES = {"armnn_runner", "armnn_runner_for", "armnn_release_runner"}
#: files whose tests run over the ONNX node suite or the reference models
CORPUS_FILES = {"onnx/test_conformance.py", "test_cli_corpus.py", "test_executor_models.py",
                "onnx/test_models_manifest.py", "tflite/test_models_manifest.py",
                "test_catalogue_layers.py",
                "test_determinism.py::test_reference_models_convert_byte_identically_in_two_processes",
                "onnx/test_wire.py::test_conformance_models_convert_the_same_from_a_file"}
#: tests that need no runtime but take over half a second (most start the CLI in a subprocess,
#: or convert a reference model several times); measured with --durations=0 on the unit tier
SLOW = {
    "onnx/test_onnx_errors.py::test_cli_input_shape_flag",
    "onnx/test_onnx_errors.py::test_cli_prints_one_line_per_unsupported_node",
    "onnx/test_onnx_hostile.py::test_a_conv_with_an_empty_kernel_in_its_weights_is_refused",
    "onnx/test_onnx_hostile.py::test_a_declared_shape_the_operator_does_not_compute_is_a_bad_model",
    "onnx/test_onnx_hostile.py::test_a_negative_pad_larger_than_the_axis_is_a_bad_model",
    "onnx/test_onnx_hostile.py::test_control_characters_in_an_input_name_stay_escaped_in_the_hint",
    "onnx/test_onnx_recurrent.py::test_cli_refuses_a_dynamic_sequence_length",
    "test_api.py::test_errors_are_typed",
    "test_api.py::test_every_kind_of_source_gives_the_same_file",
    "test_api.py::test_readme_python_examples_run",
    "test_api.py::test_result_save_load_and_report",
    "test_batch.py::test_all_converted_exit_0_and_quiet_prints_nothing",
    "test_batch.py::test_one_failure_does_not_stop_the_others",
    "test_batch.py::test_progress_bar_on_a_terminal_for_large_models",
    "test_batch.py::test_same_named_models_go_to_distinct_subfolders",
    "test_batch.py::test_verify_failure_in_a_batch",
    "test_cli.py::test_debug_shows_traceback",
    "test_cli.py::test_help",
    "test_cli.py::test_help_is_fast_and_imports_nothing_heavy",
    "test_cli.py::test_inspect_bad_file",
    "test_cli.py::test_inspect_json",
    "test_cli.py::test_inspect_missing_file",
    "test_cli.py::test_inspect_table",
    "test_cli.py::test_output_equal_to_input_is_refused",
    "test_cli.py::test_usage_errors",
    "test_cli_inputs.py::test_fifo_is_refused_not_waited_on",
    "test_cli_inputs.py::test_fifo_through_the_api_is_a_load_error",
    "test_fp16_range.py::test_fp16_verify_uses_the_inputs",
    "test_fp16_range.py::test_inputs_in_every_form_and_layout",
    "test_fp16_range.py::test_quantized_network_has_nothing_to_check",
    "test_graph_uselists.py::test_use_lists_match_the_whole_graph_scans",
    "test_graph_uselists.py::test_worklist_sink_permutes_makes_the_rescanning_loops_graph",
    "test_install.py::test_clean_venv_install",
    "test_limits.py::test_onnx_huge_tensor_refused_fast",
    "test_limits.py::test_tflite_buffer_offset_and_size_checked_against_the_file",
    "test_limits.py::test_tflite_huge_tensor_refused_fast",
    "test_limits.py::test_tflite_vector_length_past_the_end_of_the_file",
    "test_netron.py::test_broken_file_shows_an_error",
    "test_netron.py::test_descriptors_as_netron_reads_them",
    "test_netron.py::test_graph_is_drawn",
    "test_output.py::test_cli_interrupted_mid_write",
    "test_output.py::test_sigkill_leftover_of_the_named_file_is_removed_by_the_next_run",
    "test_output.py::test_signal_mid_write_leaves_no_temporary_file",
    "test_report.py::test_quiet_and_no_report_print_no_summary",
    "test_report.py::test_report_of_a_quantized_model",
    "test_report.py::test_report_of_several_models_with_a_failure",
    "test_serialize.py::test_reader_survives_bit_flips",
    "test_serialize.py::test_write_chunks_are_the_written_bytes",
    "test_serialize.py::test_write_chunks_is_write_whatever_the_estimate",
    "test_targets.py::test_default_target_is_the_seed_format",
    "test_targets.py::test_rich_targets_carry_bias_dilation_and_nhwc",
    "test_targets.py::test_round_trip_per_target",
    "test_verify_cmd.py::test_errors_are_one_line",
    "test_verify_cmd.py::test_flipped_weight_fails_and_per_layer_names_the_layer",
    "test_verify_cmd.py::test_in_memory_sources_and_fixed_batch",
    "test_verify_cmd.py::test_inputs_from_npz_and_npy",
    "test_verify_cmd.py::test_layout_change_is_followed",
    "test_verify_cmd.py::test_per_layer_names_the_qdq_layer_with_a_wrong_weight",
    "test_verify_cmd.py::test_per_layer_on_correct_qdq_mobilenet_names_no_layer",
    "test_verify_cmd.py::test_result_of_the_api",
    "test_verify_cmd.py::test_untouched_files_pass_from_the_command_line",
    "test_verify_cmd.py::test_verify_on_convert_fails_with_exit_1",
    "test_verify_cmd.py::test_wider_tolerances_are_requantizations",
    "tflite/test_tflite_compare.py::test_quantized_comparison_of_different_grids_refused",
    "tflite/test_tflite_malformed.py::test_bit_flips_give_results_or_clear_errors",
    "tflite/test_tflite_malformed.py::test_cli_converts_the_valid_model",
    "tflite/test_tflite_malformed.py::test_cli_exits_1_with_one_line",
}
#: need the runner program itself (its exit codes, its --graph-order, the anchor converter)
HARNESS_FILES = {"armnn_runtime/test_harness.py", "tflite/test_anchor.py"}

#: release -> why its harness is missing (filled in when a runner fixture falls back)
FALLBACK: dict[str, str] = {}


class ExecutorCannotRun(Exception):
    """The harness is missing and the numpy executor cannot run the network either."""


def executor_runner(release: str, why: str):
    """A stand-in for ``run(armnn_bytes_or_path, inputs)`` that reads the file back into the IR
    and runs it on the numpy executor (the release's semantics are those of 20.08 CpuRef)."""
    FALLBACK[release] = why
    return _ExecutorRunner(release, why)


class _ExecutorRunner:
    def __init__(self, release: str, why: str):
        self.release, self.why = release, why

    @property
    def path(self):
        pytest.skip(f"{self.why}; this test needs the runner program itself")

    def __call__(self, armnn_bytes_or_path, inputs, **kwargs):
        from armnn_import.errors import ExecutionError, ReadError
        from armnn_import.executor import run
        from armnn_import.serialize import read

        data = armnn_bytes_or_path
        if not isinstance(data, (bytes, bytearray, memoryview)):
            data = Path(data).read_bytes()
        try:
            return run(read(bytes(data)), [x for x in inputs])
        except (ExecutionError, ReadError) as e:
            raise ExecutorCannotRun(f"{self.why}; the numpy executor cannot run it either: {e}") from e


def _rel(item) -> str:
    try:
        return Path(str(item.fspath)).resolve().relative_to(TESTS).as_posix()
    except ValueError:
        return ""


def _listed(item, rel: str, names: set[str]) -> bool:
    """``rel`` (the test file) or ``rel::test_name`` (any of its parameters) is in ``names``."""
    return rel in names or f"{rel}::{item.originalname}" in names


def _names_a_model(value) -> bool:
    return isinstance(value, (str, os.PathLike)) and "test_models" in str(value)


def kinds(item) -> set[str]:
    rel = _rel(item)
    found = {m for m in ("runtime", "corpus", "fuzz", "slow", "harness") if item.get_closest_marker(m)}
    if RUNTIME_FIXTURES & set(getattr(item, "fixturenames", ())):
        found.add("runtime")
    params = getattr(getattr(item, "callspec", None), "params", {})
    if _listed(item, rel, CORPUS_FILES) or any(_names_a_model(v) for v in params.values()):
        found.add("corpus")
    if rel.startswith("fuzz/"):
        found.add("fuzz")
    if rel in HARNESS_FILES:
        found |= {"harness", "runtime"}
    if _listed(item, rel, SLOW):
        found.add("slow")
    return found


def mark(items):
    for item in items:
        found = kinds(item)
        for name in sorted(found - {"harness"}):
            item.add_marker(name)
        if not found - {"harness"}:
            item.add_marker("unit")
        if "harness" in found:
            item.add_marker("harness")


def _release(item) -> str | None:
    params = getattr(getattr(item, "callspec", None), "params", {})
    return params.get("armnn_release_runner")


def report_fallback(item, call, rep):
    """Say in the report that a runtime test ran on the numpy executor (see the module doc)."""
    if not FALLBACK or not RUNTIME_FIXTURES & set(getattr(item, "fixturenames", ())):
        return
    release = _release(item)
    if release is not None and release not in FALLBACK:
        return
    why = FALLBACK.get(release) or "; ".join(sorted(set(FALLBACK.values())))
    if item.get_closest_marker("harness") and rep.when == "setup" and rep.passed:
        return  # the test itself asks for run.path and skips there
    exc = call.excinfo
    if exc is not None and exc.errisinstance(ExecutorCannotRun):
        rep.outcome, rep.longrepr = "skipped", (str(item.fspath), item.location[1], str(exc.value))
    elif rep.when == "call" and rep.passed:
        rep.outcome = "skipped"
        rep.longrepr = (str(item.fspath), item.location[1],
                        f"{why}: numbers checked on the numpy executor only (they agree), not on Arm NN")
    elif rep.failed:
        rep.sections.append(("armnn-import", f"run on the numpy executor: {why}"))


def skip_harness_test_on_executor(request):
    """A ``harness`` test asks about the runner program itself: with the executor standing in
    it has nothing to test, so it skips with the harness's reason."""
    if not FALLBACK or not request.node.get_closest_marker("harness"):
        return
    for name in sorted({"armnn_runner", "armnn_release_runner"} & set(request.fixturenames)):
        run = request.getfixturevalue(name)
        if isinstance(run, _ExecutorRunner):
            pytest.skip(f"{run.why}; this test examines the Arm NN runner program itself")
