"""`armnn-import MODEL [MODEL...]`: the convert command (the default one), a batch of models
each converted, written atomically and, with --verify, compared with its source model; a
summary table for several, and the --report JSON."""
from __future__ import annotations

import os
import sys

from .cli_commands import verify_kwargs
from .cli_common import EXIT_OK, PROG, Out, UsageError, run
from .cli_paths import output_paths, parse_shapes, parse_values
from .gcpolicy import fewer_collections


class Outcome:
    """What the batch summary shows of one model."""
    def __init__(self, model: str):
        self.model, self.status, self.layers, self.size, self.seconds = model, "failed", None, None, 0.0
        self.report = None
        self.extra: dict = {}


def cmd_convert(args, out: Out) -> int:
    import time

    parse_shapes(args.input_shape)  # usage errors before any work
    parse_values(args.input_value)
    _check_fp16_flags(args)
    if args.verify:
        verify_kwargs(args)
    elif args.per_layer or args.armnn_runtime:
        raise UsageError("--per-layer and --armnn-runtime go with --verify")
    paths = output_paths(args.models, args.output)
    code, outcomes = EXIT_OK, []
    for model, path in zip(args.models, paths):
        outcome = Outcome(model)
        t, seen = time.perf_counter(), len(out.errors)
        rc = run(lambda: convert_one(model, path, args, out, outcome), args, out, prefix=f"{model}: ")
        outcome.seconds = time.perf_counter() - t
        if out.errors[seen:]:
            outcome.extra["errors"] = out.errors[seen:]
        if rc and args.report and not out.quiet and outcome.report is not None and outcome.report.problems:
            from .report import format_summary  # the refusals counted by reason code
            print(format_summary(outcome.report), file=sys.stderr, flush=True)
        outcomes.append(outcome)
        code = max(code, rc)
    if len(outcomes) > 1:
        out.info(_summary_table(outcomes))
    if args.report:
        code = max(code, run(lambda: _write_report(args.report, outcomes), args, out))
    return code


@fewer_collections()  # (through the write: restored at convert()'s end, the collector would rescan the whole network)
def convert_one(model: str, out_path: str, args, out: Out, outcome: Outcome) -> None:
    """Convert `model` into `out_path` (then --verify it), filling `outcome` for the summary."""
    _load_frontend(model)
    from .progress import Progress, wanted
    from .report import Report

    report = outcome.report = Report()
    bar = Progress(os.path.basename(model)) if wanted(model, out.quiet) else None
    report.listener = bar
    check = None
    try:
        result, size = _convert_and_write(model, out_path, args, report)
        g = result.network
        outcome.status, outcome.layers, outcome.size = "ok", len(g.layers), size
        outcome.extra["output"] = {"path": out_path, "bytes": size, "layers": len(g.layers)}
        if args.verify:
            from .verify_cmd import verify
            outcome.status = "verify failed"  # until it passes
            with report.phase("verify"):
                check = verify(model, result.to_bytes(), report=report, inputs=args.inputs,
                               **verify_kwargs(args))
    finally:
        if bar is not None:
            bar.close()
    _print_converted(model, out_path, args, out, report, g, size)
    if check is not None:
        outcome.extra["verify"] = check.to_dict()
        out.info(check.format())
        if not check.ok:
            from .verify_cmd import VerificationFailed
            raise VerificationFailed(f"{model}: {check.failure()}")
        outcome.status = "ok"


def _load_frontend(model: str) -> None:
    """Load the frontend plugin of `model`'s format (told by its content), or say why not."""
    from .discovery import available_frontends, frontend_for
    from .errors import LoadError

    fmt = frontend_for(model)
    if fmt == "armnn":
        raise LoadError(f"{model}: is already an Arm NN network (.armnn); nothing to convert "
                        f"(use '{PROG} inspect' to look at it)")
    eps = available_frontends()
    if fmt not in eps:
        raise LoadError(f"{model}: no frontend installed for format '{fmt}'")
    try:
        eps[fmt].load()
    except Exception as e:  # noqa: BLE001 - a plugin that cannot be imported is an installation problem
        raise LoadError(f"{model}: the '{fmt}' frontend cannot be loaded: {type(e).__name__}: {e}") from e


def _convert_and_write(model: str, out_path: str, args, report):
    """(the ConversionResult, the file's size): `model` converted and written atomically."""
    from .api import convert
    from .output import write_atomic

    result = convert(model, input_shapes=parse_shapes(args.input_shape), input_values=parse_values(args.input_value),
                     layout=args.layout,
                     keep_io_layout=args.keep_io_layout, fp16=args.fp16, dequantize=args.dequantize,
                     conv_bias=args.conv_bias, target=args.target, check_passes=args.debug or None,
                     layer_names=getattr(args, "layer_names", "auto"), report=report, **_fp16_kwargs(args))
    # --verify needs the bytes in memory; otherwise large weights go from the model to the file
    size, data = (len(result.buffer()), [result.buffer()]) if args.verify else result.chunks()
    folder = os.path.dirname(out_path)
    if folder and not os.path.isdir(folder):
        from .errors import OutputError
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as e:
            raise OutputError(f"{out_path}: cannot create {folder}: {e.strerror or e}") from None
    with report.phase("write"):
        write_atomic(out_path, data, inputs=[model], size=size, check=result.file_check())
    return result, size


def _print_converted(model: str, out_path: str, args, out: Out, report, g, size: int) -> None:
    """The warnings, the fp16 range, the one line of the written file and the --report summary."""
    for w in report.warnings:
        out.warning(f"{model}: {w}")
    if report.fp16_range:
        from .report import fp16_range_line
        out.info(f"{model}: {fp16_range_line(report.fp16_range)}")
    out.info(f"{model} -> {out_path} ({len(g.layers)} layers, "
             f"{sum(l.param_count() for l in g.layers):,} parameters, {size:,} bytes)")
    if args.report and not out.quiet:
        from .report import format_summary
        print(format_summary(report, layers=len(g.layers)), file=sys.stderr, flush=True)


def _fp16_kwargs(args) -> dict:
    if args.fp16_weights:  # refused by convert() unless the target has a widening layer
        return {"fp16_weights": True}
    if not args.fp16:
        return {}
    return {"fp16_force": args.fp16_force, "fp16_inputs": args.inputs, "fp16_io": getattr(args, "fp16_io", "float16")}


def _check_fp16_flags(args) -> None:
    if args.fp16 and args.fp16_weights:
        raise UsageError("--fp16 and --fp16-weights exclude each other (Float16 compute, or Float16 weights only)")
    if args.fp16_force and not args.fp16:
        raise UsageError("--fp16-force goes with --fp16")
    if getattr(args, "fp16_io", "float16") != "float16" and not args.fp16:
        raise UsageError("--fp16-io goes with --fp16")
    if args.inputs and not (args.fp16 or args.verify):
        raise UsageError("--inputs goes with --fp16 (its range check) or --verify")


def _summary_table(outcomes: list) -> str:
    head = ("model", "output", "status", "layers", "output size", "time")
    rows = [(o.model, o.extra.get("output", {}).get("path", ""), o.status, "" if o.layers is None else str(o.layers),
             "" if o.size is None else _size(o.size), f"{o.seconds:.2f} s") for o in outcomes]
    widths = [max(len(r[k]) for r in rows + [head]) for k in range(len(head))]
    right = {3, 4, 5}
    lines = ["  ".join(c.rjust(w) if k in right else c.ljust(w) for k, (c, w) in enumerate(zip(r, widths))).rstrip()
             for r in [head] + rows]
    failed = sum(o.status == "failed" for o in outcomes)
    unverified = sum(o.status == "verify failed" for o in outcomes)
    lines.append(f"{len(outcomes) - failed} of {len(outcomes)} converted" + (f", {failed} failed" if failed else "")
                 + (f", {unverified} failed verification" if unverified else ""))
    return "\n".join(lines)


def _size(n: int) -> str:
    for unit, k in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= k:
            return f"{n / k:.1f} {unit}"
    return f"{n} B"


def _write_report(path: str, outcomes: list) -> None:
    """One model: its report as a JSON object; several: a list of them."""
    import json

    from .output import write_atomic

    docs = []
    for o in outcomes:
        d = o.report.to_dict() if o.report is not None else {"source": o.model}
        d.update(status=o.status, seconds=round(o.seconds, 6), **o.extra)
        docs.append(d)
    text = json.dumps(docs[0] if len(docs) == 1 else docs, indent=1, default=_json_default) + "\n"
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        from .errors import OutputError
        raise OutputError(f"--report {path}: folder {folder} does not exist")
    write_atomic(path, text.encode(), inputs=[o.model for o in outcomes])


def _json_default(x):
    import numpy as np
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (set, tuple)):
        return list(x)
    return str(x)
