"""``mmlab vmstat`` and ``mmlab compare-vmstat``: reclaim Ops rows from /proc/vmstat."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import replace
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


def _out(args: argparse.Namespace, text: Callable[[], str], obj: Callable[[], dict]) -> int:
    from analysis.report.json_output import dumps

    """Print the JSON form with ``--json``, the text form otherwise."""
    print(dumps(obj()) if args.json else text(), end="\n" if args.json else "")
    return 0


def _from_directory(args: argparse.Namespace) -> int:
    from analysis.ingest import mmtests
    from analysis.metrics.compare import compare_runs, iteration_report
    from analysis.report.ops import format_comparison, format_ops, ops_json, run_json

    runs = mmtests.find_runs(args.path)
    if len(runs) > 1:
        names = ", ".join(r.name for r in runs)
        raise InputError(args.path, f"several runs ({names}): use mmlab compare-vmstat")
    run = runs[0]
    if len(run.iterations) == 1:
        report = iteration_report(run.iterations[0], args.test, args.elapsed)
        return _out(args, lambda: format_ops(report), lambda: ops_json(report))
    cmp = compare_runs(runs, args.test, args.elapsed)
    return _out(args, lambda: format_comparison(cmp), lambda: run_json(str(args.path), cmp))


def run_vmstat(args: argparse.Namespace) -> int:
    from analysis.ingest import mmtests, vmstat
    from analysis.metrics.ops import Elapsed, interval_series, ops_report
    from analysis.report.ops import format_intervals, format_ops, ops_json

    _check_elapsed(args)
    if args.path2 is not None and (args.path.is_dir() or args.path2.is_dir()):
        raise InputError(
            args.path2,
            "PATH2 is the snapshot file taken after a snapshot file PATH; "
            "to compare runs or directories use mmlab compare-vmstat",
        )
    if args.path.is_dir():
        return _from_directory(args)
    samples = vmstat.read(args.path)
    if args.path2 is not None:
        samples = vmstat.pair(samples, vmstat.read(args.path2))
        vmstat.check_order(samples, args.path, args.path2)
    elif len(samples) < 2:
        raise InputError(args.path, "one snapshot has no delta: give the snapshot after as PATH2")
    elapsed = Elapsed(args.elapsed, "command line") if args.elapsed else None
    # The page size from a kconfig-* saved beside the file (as in an mmtests iteration).
    beside = mmtests.Iteration(args.path.parent.name, 0, args.path.parent)
    report = replace(ops_report(samples, elapsed), page_bytes=beside.page_size)
    if not (args.intervals and len(samples) > 2):
        return _out(args, lambda: format_ops(report), lambda: ops_json(report))
    series = interval_series(samples)[0]
    return _out(
        args,
        lambda: f"{format_ops(report)}\n{format_intervals(series)}\n",
        lambda: ops_json(report, series),
    )


def run_compare(args: argparse.Namespace) -> int:
    from analysis.ingest import mmtests
    from analysis.metrics.compare import compare_runs
    from analysis.report.ops import comparison_json, format_comparison

    _check_elapsed(args)
    runs = mmtests.unique_runs(
        tuple(run for path in args.run_dirs for run in mmtests.find_runs(path))
    )
    cmp = compare_runs(runs, args.test, args.elapsed)
    return _out(args, lambda: format_comparison(cmp), lambda: comparison_json(cmp))
