"""The ``onyx`` command: one subcommand per job, each a thin layer over the Python API.

Each subcommand is a module of this package with ``HELP`` (one line), ``EXAMPLE`` (a command line),
``add_arguments(parser)`` and ``main(args) -> int``; adding a job is adding a module and its name to
``COMMANDS``. Errors are one line on stderr and exit status 2; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from onyx.cli._common import shipped_model
from onyx.errors import OnyxError

__all__ = ["main", "shipped_model", "COMMANDS"]

# the subcommands, in the order `onyx --help` lists them (module onyx.cli.<name>, command name with '-')
COMMANDS = [
    "run",
    "info",
    "check",
    "ops",
    "serve",
    "batch",
    "view",
    "profile",
    "optimize",
    "bench",
    "compare",
    "quantize",
    "convert",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="onyx", description="Read, check and run ONNX models on numpy.")
    parser.add_argument("--debug", action="store_true", help="show the full traceback on errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"onyx.cli.{name}")
        p = sub.add_parser(
            name.replace("_", "-"),
            help=module.HELP,
            description=(module.__doc__ or module.HELP).strip().splitlines()[0],
            epilog=f"example:\n  {module.EXAMPLE}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        module.add_arguments(p)
        p.set_defaults(_command=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args._command.main(args) or 0)
    except OnyxError as e:
        if args.debug:
            raise
        print(f"onyx: error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("onyx: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a bug in onyx, not the user's input: still one line unless --debug
        if args.debug:
            raise
        print(
            f"onyx: internal error: {type(e).__name__}: {e} (run with --debug for the traceback)",
            file=sys.stderr,
        )
        return 3


if __name__ == "__main__":
    sys.exit(main())
