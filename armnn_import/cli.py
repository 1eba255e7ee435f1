"""The armnn-import command line.

    armnn-import MODEL [MODEL...] [-o OUT]        convert (the default command)
    armnn-import inspect FILE.armnn [--json]     describe a converted network
    armnn-import verify SOURCE FILE.armnn        compare with the source model's runtime
    armnn-import ops [--format F] [--markdown|--json]  list the supported operators

Only argparse and the standard library are imported at startup; the
converter, numpy and the frontends are imported when a command needs them.
The commands are in cli_convert.py (with cli_paths.py: where each output goes) and
cli_commands.py (inspect, verify, ops); cli_common.py has what they share.
"""
from __future__ import annotations

import argparse
import os
import sys

from .cli_commands import cmd_inspect, cmd_ops, cmd_verify
from .cli_common import EXIT_CODES, EXIT_INPUT, EXIT_INTERNAL, EXIT_OK, EXIT_OUTPUT, EXIT_USAGE  # noqa: F401
from .cli_common import PROG, Out, UsageError
from .cli_convert import cmd_convert
from .cli_paths import batch_names as _batch_names, output_paths as _output_paths  # noqa: F401 (tests read them here)

COMMANDS = ("convert", "inspect", "verify", "ops")


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
    for add in (_add_convert, _add_inspect, _add_verify, _add_ops):
        _global_options(add(sub), suppress=True)
    return p


def _add_convert(sub) -> argparse.ArgumentParser:
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
    c.add_argument("--input-value", action="append", default=[], metavar="NAME=V[,V,...]",
                   help="fix an input to a value (one fills its shape; a list fills it in order): it becomes a "
                        "constant, so what depends on it alone folds, e.g. an If on it (repeatable)")
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
    c.add_argument("--fp16-io", choices=("float16", "float32"), default="float16",
                   help="with --fp16: the network's float inputs and outputs in Float16 (default), or in Float32 "
                        "with a Cast layer at each (--target 23.08)")
    c.add_argument("--fp16-weights", action="store_true",
                   help="Float16 weights widened to Float32 at run time (refused at every target: no format "
                        "written has a layer between a weight and its layer to widen it)")
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
    c.add_argument("--layer-names", choices=("auto", "source", "short"), default="auto",
                   help="'source': layers keep the model's names; 'short': numbered (--report maps them "
                        "to the nodes); 'auto' (default): short for 23.08, whose runtime rebuilds every "
                        "layer's name on each inference, else source. Inputs and outputs keep their names")
    c.add_argument("--report", metavar="REPORT.json",
                   help="write the conversion report as JSON (a list with several models) and print "
                        "a short summary on stderr")
    c.add_argument("--verify", action="store_true",
                   help=f"after converting, compare with the source model's runtime (as '{PROG} verify')")
    _verify_options(c)
    return c


def _add_inspect(sub) -> argparse.ArgumentParser:
    i = sub.add_parser("inspect", help="list the layers of an .armnn file",
                       description="List the layers, parameters, inputs and outputs of an .armnn file.",
                       epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    i.add_argument("file", metavar="FILE.armnn")
    i.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return i


def _add_verify(sub) -> argparse.ArgumentParser:
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
    return v


def _add_ops(sub) -> argparse.ArgumentParser:
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
    return o


def _verify_options(p):
    p.add_argument("--per-layer", action="store_true",
                   help="also compare intermediate tensors and name the first layer that diverges")
    p.add_argument("--rtol", type=float, help="relative tolerance of float outputs (default 1e-3; "
                                               "1e-2 for a Float16 network)")
    p.add_argument("--atol", type=float, help="absolute tolerance of float outputs (default 1e-4; for a Float16 "
                                               "network 2%% of each output's largest magnitude)")
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


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    out = Out(quiet=False)
    try:
        if not argv:
            raise UsageError(f"no model given (usage: {PROG} MODEL [MODEL...] [-o OUT])")
        args = build_parser().parse_args(_with_default_command(argv))
        out.quiet = args.quiet
        command = {"inspect": cmd_inspect, "verify": cmd_verify, "ops": cmd_ops}.get(args.command, cmd_convert)
        return command(args, out)
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
