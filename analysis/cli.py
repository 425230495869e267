"""The ``mmlab`` command line: every analysis, as text for people or JSON for scripts.

Each subcommand lives in ``analysis/commands/<name>.py`` and exposes
``register(subparsers)``; this module only wires them together and turns
user errors into one clear line on stderr (exit status 2) instead of a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from analysis import __version__
from analysis.errors import InputError

__all__ = ["COMMAND_MODULES", "build_parser", "main"]

# Imported lazily so that `mmlab --help` stays fast and one command's heavy
# imports do not slow down another.
COMMAND_MODULES = (
    "analysis.commands.vmstat",
    "analysis.commands.capture",
    "analysis.commands.experiment",
    "analysis.commands.stalls",
    "analysis.commands.ingest",
    "analysis.commands.report",
    "analysis.commands.compare",
    "analysis.commands.notebook",
    "analysis.commands.sweep_notebook",
    "analysis.commands.model",
    "analysis.commands.sweep",
    "analysis.commands.fit",
    "analysis.commands.paper",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mmlab",
        description="Linux memory-reclaim experiments: capture, ingest, statistics.",
    )
    parser.add_argument("--version", action="version", version=f"mmlab {__version__}")
    parser.add_argument(
        "--include-incomplete",
        action="store_true",
        help="use iterations a capture did not finish (left out otherwise, with a note)",
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed; for a subcommand that runs a command of the user's (``mmlab capture
    OUT --run NAME -- CMD ARGS``: it sets ``trailing_command``), everything after the first
    ``--`` is that command, in ``args.trailing_command`` (argparse alone cannot tell an
    optional positional before options from a command after them)."""
    if "--" in argv:
        cut = argv.index("--")
        args, rest = parser.parse_known_args(argv[:cut])
        if getattr(args, "trailing_command", None) is not None and not rest:
            args.trailing_command = argv[cut + 1 :]
            return args
    return parser.parse_args(argv)


def _bytes_of_names(stream) -> None:
    """A file name that is not UTF-8 (legal on Linux) is printed as the bytes it has, as
    ``ls`` prints it, not a UnicodeEncodeError: Python holds its bytes as surrogates."""
    if hasattr(stream, "reconfigure"):
        stream.reconfigure(errors="surrogateescape")


def _cache_entries(action: str) -> None:
    """``begin_command`` or ``discard_new_entries`` of the trace cache, if a trace was read
    in this process (checked, not imported: ``mmlab --help`` stays light)."""
    cache = sys.modules.get("analysis.ingest.ftrace.cache")
    if cache is not None:
        getattr(cache, action)()


def main(argv: list[str] | None = None) -> int:
    _bytes_of_names(sys.stdout)
    _bytes_of_names(sys.stderr)
    parser = build_parser()
    args = _parse(parser, sys.argv[1:] if argv is None else argv)
    if args.include_incomplete:
        # An environment variable, so notebooks and worker processes see it too.
        from analysis.ingest.mmtests import INCLUDE_INCOMPLETE

        os.environ[INCLUDE_INCOMPLETE] = "1"
    _cache_entries("begin_command")
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # here, so that a closed pipe is seen by the handler below
        return status
    except InputError as exc:
        _cache_entries("discard_new_entries")
        print(f"mmlab {args.command}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `mmlab ... | head` stopped reading: nothing went wrong
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"mmlab {args.command}: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # a path that is missing, a directory, unwritable, on a full disk
        _cache_entries("discard_new_entries")
        where = f"{exc.filename}: " if exc.filename is not None else ""
        print(f"mmlab {args.command}: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
