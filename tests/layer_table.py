"""Print the layer x data type x layout table of what Arm NN CpuRef runs (20.08 or 23.08).

    python tests/layer_table.py                  # runs every case on the real Arm NN 20.08 runtime
    python tests/layer_table.py --release 23.08  # ... on 23.08
    python tests/layer_table.py --no-run         # only the declared table (tests/layer_cases.py)

A cell is "pass" (the runtime's outputs equal the numpy executor's), or a
number pointing to the reason listed under the table. When running, a case
whose outcome differs from the declared one is marked MISMATCH.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))

from armnn_import.errors import ExecutionError, GraphError  # noqa: E402
from armnn_import.executor import run  # noqa: E402
from armnn_import.ir.verify import verify  # noqa: E402
from armnn_import.serialize import write  # noqa: E402
from armnn_import.testing.armnn_runtime import ArmnnRuntimeError, build_harness, run_armnn  # noqa: E402
from layer_cases import DTYPES, all_cases, compare, status  # noqa: E402


def observe(case, runner, declared) -> str:
    """What actually happens: "pass", "unsupported", "not expressible", "divergent" or a failure."""
    graph, inputs = case.build()
    try:
        verify(graph)
    except GraphError as e:
        if declared == "not expressible":
            return declared
        if declared == "pass":
            return f"FAIL: verify(): {e}"
    try:
        got = run_armnn(write(graph), inputs, runner=runner)
    except ArmnnRuntimeError:
        return "unsupported"
    try:
        want = run(graph, inputs)
    except ExecutionError:
        return "divergent"
    problems = compare(case, got, want)
    return "pass" if not problems else "FAIL: " + "; ".join(problems)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-run", action="store_true", help="print the declared table without running")
    ap.add_argument("--release", default="20.08", help="the Arm NN release (20.08 or 23.08)")
    args = ap.parse_args(argv)
    runner = None if args.no_run else build_harness(args.release)

    reasons: list[str] = []
    rows: dict[tuple, dict] = {}
    bad = 0
    for case in all_cases():
        kind, why = status(case, args.release)
        cell = "pass"
        if kind != "pass":
            text = f"{kind}: {why[0] if isinstance(why, tuple) else why}"
            if text not in reasons:
                reasons.append(text)
            cell = f"({reasons.index(text) + 1})"
        if runner is not None and case.target in ("19.02", "20.08"):  # (23.08 files: the 23.08 runtime)
            seen = observe(case, runner, kind)
            if seen != kind:
                cell += f" MISMATCH: {seen}"
                bad += 1
        layout = case.layout.name if case.layout is not None else "-"
        name = case.name + (f" @{case.target}" if case.target != "19.02" else "")
        rows.setdefault((name, layout), {})[case.dtype] = cell

    header = ["layer", "layout"] + [d.name for d in DTYPES]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for (name, layout), cells in rows.items():
        print("| " + " | ".join([name, layout] + [cells.get(d, "-") for d in DTYPES]) + " |")
    print()
    for i, text in enumerate(reasons, 1):
        print(f"({i}) {text}")
    if runner is not None:
        print(f"\nchecked on Arm NN {args.release} CpuRef: {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
