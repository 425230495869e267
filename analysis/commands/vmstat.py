"""``mmlab vmstat`` and ``mmlab compare-vmstat``: reclaim Ops rows from /proc/vmstat."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from analysis.errors import InputError

__all__ = ["register"]


def _check_elapsed(args: argparse.Namespace) -> None:
    """``--elapsed`` is a velocity's denominator: a positive, finite number of seconds
    (``inf`` would give 0 pages/s, ``-5`` a negative rate)."""
    if args.elapsed is not None and not 0 < args.elapsed < math.inf:
        raise InputError(
            "--elapsed", f"{args.elapsed:g} is not a positive, finite number of seconds"
        )


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "vmstat",
        help="reclaim Ops rows (efficiency, velocity, ...) of one capture",
        description="PATH is a snapshot (then PATH2 is the one after), a proc-vmstat "
        "monitor log, a tests-sysstate file, a memory.stat, or a capture / mmtests run "
        "directory. Formats are detected from content.",
    )
    p.add_argument("path", type=Path)
    p.add_argument("path2", type=Path, nargs="?", help="snapshot taken after PATH")
    p.add_argument("--elapsed", type=float, help="seconds for velocity (default: best known)")
    p.add_argument("--test", help="which test of an mmtests iteration (default: the only one)")
    p.add_argument("--intervals", action="store_true", help="also per-interval monitor rows")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    p.set_defaults(func=run_vmstat)

    c = subparsers.add_parser(
        "compare-vmstat",
        help="Ops rows of several runs side by side (mean ± sd over iterations)",
    )
    c.add_argument("run_dirs", type=Path, nargs="+", help="mmtests run directories (or parents)")
    c.add_argument("--test", help="which test of each iteration (default: the only one)")
    c.add_argument("--elapsed", type=float, help="seconds for velocity in every iteration")
    c.add_argument("--json", action="store_true", help="JSON instead of text")
    c.set_defaults(func=run_compare)


def _print(args: argparse.Namespace, text: str | dict) -> int:
    """The JSON form with ``--json``, the text form otherwise."""
    from analysis.report.json_output import dumps

    print(dumps(text) if args.json else text, end="\n" if args.json else "")
    return 0


def run_vmstat(args: argparse.Namespace) -> int:
    from analysis.report.ops import format_vmstat, vmstat_json
    from analysis.study.vmstat import vmstat_ops

    _check_elapsed(args)
    ops = vmstat_ops(
        args.path, args.path2, test=args.test, elapsed=args.elapsed, intervals=args.intervals
    )
    return _print(args, vmstat_json(ops) if args.json else format_vmstat(ops))


def run_compare(args: argparse.Namespace) -> int:
    from analysis.report.ops import comparison_json, format_comparison
    from analysis.study.vmstat import compare_vmstat

    _check_elapsed(args)
    cmp = compare_vmstat(args.run_dirs, test=args.test, elapsed=args.elapsed)
    return _print(args, comparison_json(cmp) if args.json else format_comparison(cmp))
