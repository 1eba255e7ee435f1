"""What every subcommand of the command line shares: the exit codes, the usage error,
the printer of messages (Out) and run(), which turns an exception into one-line messages
and an exit code. Only the standard library is imported here (the CLI's startup)."""
from __future__ import annotations

import sys

from .errors import printable

PROG = "armnn-import"

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


class Out:
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


def run(fn, args, out: Out, prefix: str = "") -> int:
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
