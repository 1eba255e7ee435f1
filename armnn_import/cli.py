"""The armnn-import command line.

    armnn-import MODEL [MODEL...] [-o OUT]        convert (the default command)
    armnn-import inspect FILE.armnn [--json]     describe a converted network
    armnn-import verify SOURCE FILE.armnn        compare with the source model's runtime
    armnn-import ops [--format F] [--markdown|--json]  list the supported operators

Only argparse and the standard library are imported at startup; the
converter, numpy and the frontends are imported when a command needs them.
"""
from __future__ import annotations

import argparse
import os
import sys

from .errors import printable
from .gcpolicy import fewer_collections

PROG = "armnn-import"
COMMANDS = ("convert", "inspect", "verify", "ops")

EXIT_OK, EXIT_INPUT, EXIT_USAGE, EXIT_OUTPUT, EXIT_INTERNAL = 0, 1, 2, 3, 4
EXIT_CODES = """exit codes:
  0  success
  1  the model could not be converted or the input could not be read, or
     verification failed
  2  usage error (bad arguments, output path equal to an input)
  3  the output could not be written
  4  internal error (a bug: please report it; --debug shows the traceback)"""


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        # One line instead of argparse's usage + error.
        raise UsageError(f"{message} (see {PROG} --help)")


def _global_options(parser, suppress: bool):
    # Also added to each subcommand so they can come after it; SUPPRESS there
    # keeps a flag given before the subcommand from being reset.
    default = argparse.SUPPRESS if suppress else False
    parser.add_argument("--debug", action="store_true", default=default,
                        help="show tracebacks of errors")
    parser.add_argument("-q", "--quiet", action="store_true", default=default,
                        help="print errors only")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    p = _Parser(prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter,
                description="Convert ONNX and TFLite models to Arm NN's serialized network format (.armnn).\n\n"
                            f"  {PROG} MODEL [MODEL...] [-o OUT]       convert (the default command)\n"
                            f"  {PROG} inspect FILE.armnn [--json]    list the layers of a converted network\n"
                            f"  {PROG} verify SOURCE FILE.armnn       run both and compare their outputs\n"
                            f"  {PROG} ops [--format F] [--markdown]  list the supported operators",
                epilog=EXIT_CODES)
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    _global_options(p, suppress=False)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    c = sub.add_parser("convert", help="convert models (the default command)",
                       description="Convert ONNX or TFLite models to .armnn. The format is told from "
                                   "the file's content, not its extension.", epilog=EXIT_CODES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("models", nargs="+", metavar="MODEL", help="ONNX or TFLite model files")
    c.add_argument("-o", "--output", metavar="OUT",
                   help="output file (one model) or directory (several models); default: "
                        "MODEL's name with the extension .armnn, next to it")
    c.add_argument("--input-shape", action="append", default=[], metavar="NAME=D,D,...",
                   help="fix the shape of an input with unknown dimensions (repeatable)")
    c.add_argument("--layout", choices=("keep", "nhwc", "nchw"), default="keep",
                   help="data layout of the converted network (default: keep the model's)")
    c.add_argument("--keep-io-layout", action="store_true",
                   help="keep the model's input and output layout when changing --layout")
    c.add_argument("--fp16", action="store_true",
                   help="store float weights and tensors as Float16 and run the network in Float16, after a "
                        "range check: the float network runs on --inputs (default: seeded random) and a "
                        "layer beyond 32768 refuses the conversion")
    c.add_argument("--fp16-force", action="store_true",
                   help="with --fp16: write the file even when the range check fails (a warning)")
    c.add_argument("--fp16-weights", action="store_true",
                   help="Float16 weights widened to Float32 at run time (refused in this format: it has no "
                        "layer to widen them)")
    c.add_argument("--inputs", nargs="+", metavar="FILE",
                   help="sample inputs for the --fp16 range check and --verify: one .npy per model input, in "
                        "order, or one .npz (keys: input names or input_0, input_1, ...)")
    c.add_argument("--dequantize", action="store_true", help="convert a quantized model to an all-float network")
    c.add_argument("--conv-bias", choices=("add", "batchnorm"), default="add",
                   help="how a float convolution's bias is written (this format's convolution has none): "
                        "'add' an Addition, fastest on Arm NN 20.08 (default); 'batchnorm' a "
                        "BatchNormalization, which Arm NN 20.11 and later fuse into the convolution")
    c.add_argument("--target", choices=("19.02", "20.08", "23.08"), default="19.02", metavar="RELEASE",
                   help="the Arm NN release whose format to write: 19.02 (default; read by every "
                        "release), 20.08 (Arm NN 20.08 and later: convolutions with their bias, NHWC "
                        "and dilation) or 23.08 (Arm NN 23.08 and later)")
    c.add_argument("--report", metavar="REPORT.json",
                   help="write the conversion report as JSON (a list with several models) and print "
                        "a short summary on stderr")
    c.add_argument("--verify", action="store_true",
                   help=f"after converting, compare with the source model's runtime (as '{PROG} verify')")
    _verify_options(c)
    _global_options(c, suppress=True)

    i = sub.add_parser("inspect", help="list the layers of an .armnn file",
                       description="List the layers, parameters, inputs and outputs of an .armnn file.",
                       epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    i.add_argument("file", metavar="FILE.armnn")
    i.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _global_options(i, suppress=True)

    v = sub.add_parser("verify", help="compare an .armnn file with its source model",
                       description="Run the source model in its own runtime (onnxruntime or LiteRT:\n"
                                   "pip install armnn-import[verify]) and the .armnn network in the numpy\n"
                                   "executor on the same inputs, and compare every output: max abs error,\n"
                                   "max relative error and, for quantized outputs, the error in\n"
                                   "quantization steps (LSB). Exit code 0 within the tolerances, 1 otherwise.",
                       epilog=EXIT_CODES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    v.add_argument("source", metavar="SOURCE_MODEL", help="the ONNX or TFLite model")
    v.add_argument("file", metavar="FILE.armnn", help="the converted network")
    v.add_argument("--inputs", nargs="+", metavar="FILE",
                   help="input arrays: one .npy per model input, in order, or one .npz (keys: input "
                        "names or input_0, input_1, ...); default: seeded random (float N(0,1), "
                        "8-bit integers over their whole range)")
    v.add_argument("--report", metavar="REPORT.json",
                   help="the report written by the conversion (--report): input/output layouts and, "
                        "for --per-layer, which layer computes each node")
    _verify_options(v)
    _global_options(v, suppress=True)

    o = sub.add_parser("ops", help="list the supported operators",
                       description="List every supported operator with its opset or version range and "
                                   "the Arm NN layers it becomes, from the installed frontends.",
                       epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    o.add_argument("--format", metavar="FORMAT", help="only this model format (onnx or tflite)")
    o.add_argument("--markdown", action="store_true", help="print Markdown tables (docs/operators.md)")
    o.add_argument("--json", action="store_true",
                   help="print JSON: every entry with its refusals, the refused operators, the reason codes")
    o.add_argument("--target", choices=("19.02", "20.08", "23.08"), metavar="RELEASE",
                   help="only what the Arm NN format of this release can take (default: every operator, "
                        "each saying which target it needs)")
    _global_options(o, suppress=True)
    return p


def _verify_options(p):
    p.add_argument("--per-layer", action="store_true",
                   help="also compare intermediate tensors and name the first layer that diverges")
    p.add_argument("--rtol", type=float, default=1e-3, help="relative tolerance of float outputs (default 1e-3)")
    p.add_argument("--atol", type=float, default=1e-4, help="absolute tolerance of float outputs (default 1e-4)")
    p.add_argument("--lsb", type=float, default=1.0,
                   help="tolerance of quantized outputs, in quantization steps (default 1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("--armnn-runtime", metavar="PATH",
                   help="run the .armnn file with this Arm NN runner (armnn-run MODEL.armnn OUTDIR IN0.npy "
                        "...) instead of the numpy executor")


def _with_default_command(argv: list[str]) -> list[str]:
    """Insert 'convert' unless the first argument that is not a global flag is a command or --help/--version."""
    for k, a in enumerate(argv):
        if a in ("--debug", "-q", "--quiet"):
            continue
        if a in COMMANDS or a in ("-h", "--help", "--version"):
            return argv
        return argv[:k] + ["convert"] + argv[k:]
    return argv


class _Out:
    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.errors: list[str] = []  # every error printed, for the report

    # Every line is escaped (errors.printable): model and layer names reach these messages.
    def info(self, msg: str):
        if not self.quiet:
            print("\n".join(printable(line) for line in str(msg).splitlines()), flush=True)

    def error(self, msg: str):
        for line in str(msg).splitlines() or [""]:
            line = printable(line)
            self.errors.append(line)
            print(f"{PROG}: error: {line}", file=sys.stderr, flush=True)

    def warning(self, msg: str):
        if not self.quiet:
            for line in str(msg).splitlines() or [""]:
                print(f"{PROG}: warning: {printable(line)}", file=sys.stderr, flush=True)


# -- convert -----------------------------------------------------------------

def _parse_shapes(items: list[str]) -> dict[str, tuple[int, ...]]:
    shapes = {}
    for item in items:
        name, sep, dims = item.rpartition("=")
        try:
            shape = tuple(int(d) for d in dims.split(",") if d.strip())
        except ValueError:
            shape = ()
        if not sep or not name or not shape or min(shape) < 1:
            raise UsageError(f"--input-shape {item!r}: expected NAME=D,D,... with positive integers")
        shapes[name] = shape
    return shapes


def _same_file(a: str, b: str) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _output_paths(models: list[str], out: str | None) -> list[str]:
    _refuse_repeated_inputs(models)
    if out is None:
        paths = [os.path.join(os.path.dirname(m), os.path.basename(n) + ".armnn")
                 for m, n in zip(models, _batch_names(models))]
    elif len(models) == 1 and not os.path.isdir(out):
        paths = [out]
    else:
        if os.path.exists(out) and not os.path.isdir(out):
            raise UsageError(f"-o {out}: with several models the output must be a directory")
        paths = [os.path.join(out, n + ".armnn") for n in _batch_names(models)]
    seen = {}
    for m, p in zip(models, paths):
        for src in models:
            if _same_file(p, src):
                raise UsageError(f"{m}: the output {p} is an input file; refusing to overwrite it")
        key = os.path.realpath(p)
        if key in seen:  # only where the file system folds names (e.g. case) that differ here
            raise UsageError(f"{seen[key]} and {m} would both be written to {p}")
        seen[key] = m
    return paths


def _refuse_repeated_inputs(models: list[str]) -> None:
    """Two paths of one file would convert it twice into two names: a mistake."""
    seen = {}
    for m in models:
        try:
            st = os.stat(m)
            keys = [("inode", st.st_dev, st.st_ino), os.path.realpath(m)]
        except OSError:  # reported when it is converted
            keys = [os.path.realpath(m)]
        for key in keys:
            if key in seen:
                raise UsageError(f"{seen[key]} and {m} are the same file; give it once")
        seen.update((k, m) for k in keys)


def _batch_names(models: list[str]) -> list[str]:
    """Each model's output name (a relative path, no extension): its file name
    without the extension or, where several models share that name, the shortest
    suffix of its path that no other model has: a/model.onnx, b/model.onnx,
    c/x/model.onnx -> a/model, b/model, x/model. Files of one folder that differ
    only by extension keep it (model.onnx, model.tflite)."""
    from collections import Counter

    parts = [os.path.abspath(m).split(os.sep) for m in models]
    folder_stem = [(tuple(p[:-1]), _stem(p[-1])) for p in parts]
    twice = Counter(folder_stem)
    comps = [p[:-1] + [p[-1] if twice[fs] > 1 else fs[1]] for p, fs in zip(parts, folder_stem)]
    by_name: dict[str, list[int]] = {}
    for i, c in enumerate(comps):
        by_name.setdefault(c[-1], []).append(i)
    names = []
    for i, c in enumerate(comps):
        others = [comps[j] for j in by_name[c[-1]] if j != i]  # only these can end like c
        k = next(k for k in range(1, len(c) + 1) if all(c[-k:] != d[-k:] for d in others))
        names.append(os.path.join(*c[-k:]))
    return names


def _stem(path: str) -> str:
    from .discovery import model_name
    return model_name(path)


class _Outcome:
    """What the batch summary shows of one model."""
    def __init__(self, model: str):
        self.model, self.status, self.layers, self.size, self.seconds = model, "failed", None, None, 0.0
        self.report = None
        self.extra: dict = {}


@fewer_collections()  # (through the write: restored at convert()'s end, the collector would rescan the whole network)
def _convert_one(model: str, out_path: str, args, out: _Out, outcome: _Outcome) -> None:
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

    from .api import convert
    from .output import write_atomic
    from .progress import Progress, wanted
    from .report import Report

    report = outcome.report = Report()
    bar = Progress(os.path.basename(model)) if wanted(model, out.quiet) else None
    report.listener = bar
    check = None
    try:
        result = convert(model, input_shapes=_parse_shapes(args.input_shape), layout=args.layout,
                         keep_io_layout=args.keep_io_layout, fp16=args.fp16, dequantize=args.dequantize,
                         conv_bias=args.conv_bias, target=args.target, check_passes=args.debug or None,
                         report=report, **_fp16_kwargs(args))
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
        g = result.network
        outcome.status, outcome.layers, outcome.size = "ok", len(g.layers), size
        outcome.extra["output"] = {"path": out_path, "bytes": size, "layers": len(g.layers)}
        if args.verify:
            from .verify_cmd import verify
            outcome.status = "verify failed"  # until it passes
            with report.phase("verify"):
                check = verify(model, result.to_bytes(), report=report, inputs=args.inputs,
                               **_verify_kwargs(args))
    finally:
        if bar is not None:
            bar.close()
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
    if check is not None:
        outcome.extra["verify"] = check.to_dict()
        out.info(check.format())
        if not check.ok:
            from .verify_cmd import VerificationFailed
            raise VerificationFailed(f"{model}: {check.failure()}")
        outcome.status = "ok"


def _fp16_kwargs(args) -> dict:
    if args.fp16_weights:  # refused by convert() unless the target has a widening layer
        return {"fp16_weights": True}
    if not args.fp16:
        return {}
    return {"fp16_force": args.fp16_force, "fp16_inputs": args.inputs}


def _check_fp16_flags(args) -> None:
    if args.fp16 and args.fp16_weights:
        raise UsageError("--fp16 and --fp16-weights exclude each other (Float16 compute, or Float16 weights only)")
    if args.fp16_force and not args.fp16:
        raise UsageError("--fp16-force goes with --fp16")
    if args.inputs and not (args.fp16 or args.verify):
        raise UsageError("--inputs goes with --fp16 (its range check) or --verify")


def _verify_kwargs(args) -> dict:
    from .verify_cmd import Tolerance
    for flag in ("rtol", "atol", "lsb"):
        if getattr(args, flag) < 0:
            raise UsageError(f"--{flag} must not be negative")
    return {"tolerance": Tolerance(args.rtol, args.atol, args.lsb), "seed": args.seed,
            "per_layer": args.per_layer, "armnn_runtime": args.armnn_runtime}


def cmd_convert(args, out: _Out) -> int:
    import time

    _parse_shapes(args.input_shape)  # usage errors before any work
    _check_fp16_flags(args)
    if args.verify:
        _verify_kwargs(args)
    elif args.per_layer or args.armnn_runtime:
        raise UsageError("--per-layer and --armnn-runtime go with --verify")
    paths = _output_paths(args.models, args.output)
    code, outcomes = EXIT_OK, []
    for model, path in zip(args.models, paths):
        outcome = _Outcome(model)
        t, seen = time.perf_counter(), len(out.errors)
        rc = _run(lambda: _convert_one(model, path, args, out, outcome), args, out, prefix=f"{model}: ")
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
        code = max(code, _run(lambda: _write_report(args.report, outcomes), args, out))
    return code


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


# -- inspect -----------------------------------------------------------------

def cmd_inspect(args, out: _Out) -> int:
    def run():
        from .errors import LoadError
        from .inspect import describe, format_table
        from .serialize import read

        from .discovery import open_regular
        try:
            with open_regular(args.file, ".armnn") as f:  # a FIFO would block forever
                data = f.read()
        except OSError as e:
            raise LoadError(f"{args.file}: cannot read: {e.strerror or e}") from None
        try:
            graph = read(data)
        except LoadError as e:
            raise type(e)(f"{args.file}: {e}") from e
        desc = describe(graph, file_size=len(data))
        if args.json:
            import json
            print(json.dumps(desc, indent=2))
        else:
            print(format_table(desc))
    return _run(run, args, out)


# -- verify and ops --------------------------------------------------------------

def cmd_verify(args, out: _Out) -> int:
    def run():
        from .verify_cmd import VerificationFailed, verify
        result = verify(args.source, args.file, inputs=args.inputs, report=args.report, **_verify_kwargs(args))
        out.info(result.format())
        if not result.ok:
            raise VerificationFailed(result.failure())
    return _run(run, args, out)


def cmd_ops(args, out: _Out) -> int:
    def run():
        from .catalogue import format_markdown, format_text, registries
        from .discovery import available_frontends
        if args.format is not None and args.format not in available_frontends():
            raise UsageError(f"--format {args.format}: no such frontend (installed: "
                             f"{', '.join(sorted(available_frontends())) or 'none'})")
        regs = registries([args.format] if args.format else None)
        if args.markdown and args.target:
            raise UsageError("--markdown lists every target's operators (give no --target)")
        if args.markdown and args.json:
            raise UsageError("--markdown and --json exclude each other")
        from .target import get
        target = get(args.target) if args.target else None
        if args.json:
            import json
            from .catalogue import to_json
            text = json.dumps(to_json(regs, target), indent=1) + "\n"
        else:
            text = format_markdown(regs) if args.markdown else format_text(regs, target)
        sys.stdout.write(text)
        sys.stdout.flush()
    return _run(run, args, out)


# -- errors and main -----------------------------------------------------------

def _run(fn, args, out: _Out, prefix: str = "") -> int:
    """Run fn, turning exceptions into one-line messages and exit codes;
    `prefix` (the model) starts every message that does not name it already."""
    from .errors import ArmnnImportError, OutputError

    try:
        fn()
        return EXIT_OK
    except ArmnnImportError as e:
        if args.debug:
            import traceback
            traceback.print_exc()
        for line in (sub for entry in e.lines() for sub in (str(entry).splitlines() or [""])):
            out.error(line if line.startswith(prefix) else prefix + line)
        if e.internal:  # e.g. an exception inside a lowering: never a refusal of the model
            out.error(f"{prefix}internal error: the above is a bug in {PROG}; please report it with the command "
                      "line and the model")
            return EXIT_INTERNAL
        return EXIT_OUTPUT if isinstance(e, OutputError) else EXIT_INPUT
    except UsageError:
        raise
    except (KeyboardInterrupt, BrokenPipeError):
        raise
    except Exception as e:  # noqa: BLE001 - anything else is a bug
        if args.debug:
            import traceback
            traceback.print_exc()
        msg = str(e).splitlines()[0] if str(e) else ""
        out.error(f"{prefix}internal error: {type(e).__name__}: {msg} -- this is a bug in {PROG}; please report it "
                  "with the command line and the model" + ("" if args.debug else " (--debug shows the traceback)"))
        return EXIT_INTERNAL


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    out = _Out(quiet=False)
    try:
        if not argv:
            raise UsageError(f"no model given (usage: {PROG} MODEL [MODEL...] [-o OUT])")
        args = build_parser().parse_args(_with_default_command(argv))
        out.quiet = args.quiet
        if args.command == "inspect":
            return cmd_inspect(args, out)
        if args.command == "verify":
            return cmd_verify(args, out)
        if args.command == "ops":
            return cmd_ops(args, out)
        return cmd_convert(args, out)
    except UsageError as e:
        out.error(str(e))
        return EXIT_USAGE
    except KeyboardInterrupt:
        out.error("interrupted")
        return 130
    except BrokenPipeError:
        # The reader of our stdout went away (e.g. `| head`): not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
