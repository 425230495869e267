"""``mmlab vmstat`` and ``mmlab compare-vmstat``: reclaim Ops rows from /proc/vmstat."""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import replace
from pathlib import Path

import polars as pl

from analysis.errors import InputError
from analysis.ingest import mmtests, vmstat
from analysis.metrics.compare import Comparison, compare_runs, iteration_report
from analysis.metrics.ops import CONTEXTS, Elapsed, OpsReport, interval_series, ops_report
from analysis.report.ops import format_comparison, format_ops


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


def _print_json(obj) -> None:
    # allow_nan=False: a NaN would be invalid JSON; every missing number must be null.
    print(json.dumps(obj, indent=2, allow_nan=False))


def _series_text(series: pl.DataFrame) -> str:
    """Per-interval rows, contexts that never scanned left out, 80 columns."""
    contexts = [ctx for ctx in CONTEXTS if series[f"{ctx} pages scanned"].fill_null(0).sum() > 0]
    head = f"{'t_s':>8}{'dt_s':>6}" + "".join(
        f"{ctx[:6] + ' scan':>12}{'reclaim':>9}{'eff%':>6}" for ctx in contexts
    )
    lines = ["Per interval (pages; eff% = reclaimed/scanned):", head]
    for row in series.iter_rows(named=True):
        line = f"{row['t_s'] or 0:8.1f}{row['dt_s'] or 0:6.1f}"
        for ctx in contexts:
            eff = row[f"{ctx} efficiency %"]
            line += (
                f"{row[f'{ctx} pages scanned'] or 0:12.0f}{row[f'{ctx} pages reclaimed'] or 0:9.0f}"
            )
            line += f"{eff:6.1f}" if eff is not None else f"{'-':>6}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _from_directory(args: argparse.Namespace) -> int:
    runs = mmtests.find_runs(args.path)
    if len(runs) > 1:
        names = ", ".join(r.name for r in runs)
        raise InputError(args.path, f"several runs ({names}): use mmlab compare-vmstat")
    run = runs[0]
    if len(run.iterations) == 1:
        return _emit(iteration_report(run.iterations[0], args.test, args.elapsed), args)
    cmp = compare_runs(runs, args.test, args.elapsed)
    if args.json:
        rows = cmp.rows
        elapsed = [rep.elapsed.seconds for rep in cmp.reports[0]]
        _print_json(
            {
                "source": str(args.path),
                "run": run.name,
                "metrics": {r.label: r.mean for r in rows},
                "stddev": {r.label: r.sd for r in rows},
                "n": {r.label: r.n for r in rows},
                "units": {r.label: r.unit for r in rows},
                "iterations": [rep.to_json() for rep in cmp.reports[0]],
                # Each iteration has its own elapsed time (in "iterations"); this is their mean.
                "elapsed_s": statistics.fmean(elapsed) if None not in elapsed else None,
                "elapsed_source": ", ".join(sorted({r.elapsed.source for r in cmp.reports[0]})),
            }
        )
    else:
        print(format_comparison(cmp), end="")
    return 0


def _emit(report: OpsReport, args: argparse.Namespace, series: pl.DataFrame | None = None) -> int:
    if args.json:
        obj = report.to_json()
        if series is not None:
            obj["intervals"] = series.to_dicts()
        _print_json(obj)
    else:
        print(format_ops(report), end="")
        if series is not None:
            print()
            print(_series_text(series), end="")
    return 0


def run_vmstat(args: argparse.Namespace) -> int:
    if args.path.is_dir():
        return _from_directory(args)
    samples = vmstat.read(args.path)
    if args.path2 is not None:
        samples = vmstat.pair(samples, vmstat.read(args.path2))
    elif len(samples) < 2:
        raise InputError(args.path, "one snapshot has no delta: give the snapshot after as PATH2")
    elapsed = Elapsed(args.elapsed, "command line") if args.elapsed else None
    series = interval_series(samples)[0] if args.intervals and len(samples) > 2 else None
    # The page size from a kconfig-* saved beside the file (as in an mmtests iteration).
    beside = mmtests.Iteration(args.path.parent.name, 0, args.path.parent)
    report = replace(ops_report(samples, elapsed), page_bytes=beside.page_size)
    return _emit(report, args, series)


def comparison_json(cmp: Comparison) -> dict:
    """Every row of every run: iteration values, mean, sd, n and % change vs the first."""
    return {
        "runs": list(cmp.runs),
        "rows": [
            {
                "label": r.label,
                "unit": r.unit,
                "better": r.better,
                "run": r.run,
                "values": list(r.values),
                "mean": r.mean,
                "sd": r.sd,
                "n": r.n,
                "change_pct": r.change_pct,
            }
            for r in cmp.rows
        ],
        "elapsed": {
            run: [{"s": rep.elapsed.seconds, "source": rep.elapsed.source} for rep in reps]
            for run, reps in zip(cmp.runs, cmp.reports, strict=True)
        },
        "page_bytes": {
            run: [rep.page_bytes for rep in reps]
            for run, reps in zip(cmp.runs, cmp.reports, strict=True)
        },
    }


def run_compare(args: argparse.Namespace) -> int:
    runs = mmtests.unique_runs(
        tuple(run for path in args.run_dirs for run in mmtests.find_runs(path))
    )
    cmp = compare_runs(runs, args.test, args.elapsed)
    if args.json:
        _print_json(comparison_json(cmp))
    else:
        print(format_comparison(cmp), end="")
    return 0
