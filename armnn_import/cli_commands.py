"""The commands besides convert: `armnn-import inspect FILE.armnn`, `armnn-import verify SOURCE
FILE.armnn` (with the verify options, which convert --verify shares) and `armnn-import ops`."""
from __future__ import annotations

import sys

from .cli_common import Out, UsageError, run


def verify_kwargs(args) -> dict:
    from .verify_cmd import Tolerance
    for flag in ("rtol", "atol", "lsb"):
        if getattr(args, flag) is not None and getattr(args, flag) < 0:
            raise UsageError(f"--{flag} must not be negative")
    return {"tolerance": Tolerance(args.rtol, args.atol, args.lsb), "seed": args.seed,
            "per_layer": args.per_layer, "armnn_runtime": args.armnn_runtime}


def cmd_inspect(args, out: Out) -> int:
    def command():
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
    return run(command, args, out)


def cmd_verify(args, out: Out) -> int:
    def command():
        from .verify_cmd import VerificationFailed, verify
        result = verify(args.source, args.file, inputs=args.inputs, report=args.report, **verify_kwargs(args))
        out.info(result.format())
        if not result.ok:
            raise VerificationFailed(result.failure())
    return run(command, args, out)


def cmd_ops(args, out: Out) -> int:
    def command():
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
    return run(command, args, out)
