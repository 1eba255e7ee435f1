"""The armnn-import command line.

    armnn-import MODEL [MODEL...] [-o OUT]     convert (the default command)
    armnn-import inspect FILE.armnn [--json]  describe a converted network

Only argparse and the standard library are imported at startup; the
converter, numpy and the frontends are imported when a command needs them.
"""
from __future__ import annotations

import argparse
import os
import sys

PROG = "armnn-import"
COMMANDS = ("convert", "inspect")

EXIT_OK, EXIT_INPUT, EXIT_USAGE, EXIT_OUTPUT, EXIT_INTERNAL = 0, 1, 2, 3, 4
EXIT_CODES = """exit codes:
  0  success
  1  the model could not be converted or the input could not be read
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
                            f"  {PROG} MODEL [MODEL...] [-o OUT]   convert (the default command)\n"
                            f"  {PROG} inspect FILE.armnn [--json]  list the layers of a converted network",
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
    c.add_argument("--fp16", action="store_true", help="store float weights and tensors as Float16")
    c.add_argument("--dequantize", action="store_true", help="convert a quantized model to an all-float network")
    _global_options(c, suppress=True)

    i = sub.add_parser("inspect", help="list the layers of an .armnn file",
                       description="List the layers, parameters, inputs and outputs of an .armnn file.",
                       epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    i.add_argument("file", metavar="FILE.armnn")
    i.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _global_options(i, suppress=True)
    return p


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

    def info(self, msg: str):
        if not self.quiet:
            print(msg, flush=True)

    @staticmethod
    def error(msg: str):
        for line in str(msg).splitlines() or [""]:
            print(f"{PROG}: error: {line}", file=sys.stderr, flush=True)

    def warning(self, msg: str):
        if not self.quiet:
            print(f"{PROG}: warning: {msg}", file=sys.stderr, flush=True)


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
    if out is None:
        paths = [os.path.join(os.path.dirname(m), _stem(m) + ".armnn") for m in models]
    elif len(models) == 1 and not os.path.isdir(out):
        paths = [out]
    else:
        if os.path.exists(out) and not os.path.isdir(out):
            raise UsageError(f"-o {out}: with several models the output must be a directory")
        paths = [os.path.join(out, _stem(m) + ".armnn") for m in models]
    seen = {}
    for m, p in zip(models, paths):
        for src in models:
            if _same_file(p, src):
                raise UsageError(f"{m}: the output {p} is an input file; refusing to overwrite it")
        key = os.path.realpath(p)
        if key in seen:
            raise UsageError(f"{seen[key]} and {m} would both be written to {p}")
        seen[key] = m
    return paths


def _stem(path: str) -> str:
    from .frontends import model_name
    return model_name(path)


def _convert_one(model: str, out_path: str, args, out: _Out) -> None:
    from .frontends import available_frontends, frontend_for
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

    result = convert(model, input_shapes=_parse_shapes(args.input_shape), layout=args.layout,
                     keep_io_layout=args.keep_io_layout, fp16=args.fp16, dequantize=args.dequantize)
    for w in result.report.warnings:
        out.warning(f"{model}: {w}")
    data = result.to_bytes()
    folder = os.path.dirname(out_path)
    if folder and not os.path.isdir(folder):
        from .errors import OutputError
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as e:
            raise OutputError(f"{out_path}: cannot create {folder}: {e.strerror or e}") from None
    write_atomic(out_path, data, inputs=[model])
    g = result.network
    out.info(f"{model} -> {out_path} ({len(g.layers)} layers, "
             f"{sum(l.param_count() for l in g.layers):,} parameters, {len(data):,} bytes)")


def cmd_convert(args, out: _Out) -> int:
    _parse_shapes(args.input_shape)  # usage errors before any work
    paths = _output_paths(args.models, args.output)
    code = EXIT_OK
    for model, path in zip(args.models, paths):
        code = max(code, _run(lambda: _convert_one(model, path, args, out), args, out, prefix=f"{model}: "))
    return code


# -- inspect -----------------------------------------------------------------

def cmd_inspect(args, out: _Out) -> int:
    def run():
        from .errors import LoadError
        from .inspect import describe, format_table
        from .serialize import read

        try:
            with open(args.file, "rb") as f:
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
