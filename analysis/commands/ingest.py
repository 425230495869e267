"""``mmlab ingest``: trace text → cached per-event Parquet, and the account of every line."""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

from analysis.errors import InputError

__all__ = ["register"]

PROGRESS_MIN_BYTES = 64 << 20


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "ingest",
        help="parse ftrace/trace-cmd/perf text into typed per-event tables (cached)",
        description="PATH is a trace text file (plain, gz, zst, xz or bz2) or a directory of "
        "them (files named ftrace*, *.trace, *trace*.txt and compressed forms). Prints where "
        "every line went: events per name, headers, blanks, lost-event markers, unparsed.",
    )
    p.add_argument("paths", type=Path, nargs="+", metavar="PATH")
    p.add_argument("--out", type=Path, help="cache directory (default build/ingest)")
    p.add_argument("--scheduler", help="Dask scheduler address: spread files over that cluster")
    p.add_argument("--json", action="store_true", help="print the accounting as JSON")
    p.set_defaults(func=run)


def _progress(path: Path):
    """A rich progress bar (bytes, lines/s) on stderr for long inputs on a terminal."""
    if not sys.stderr.isatty() or path.stat().st_size < PROGRESS_MIN_BYTES:
        return None, None
    from rich.progress import BarColumn, Progress, TextColumn, TransferSpeedColumn

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TransferSpeedColumn(),
        TextColumn("{task.fields[lines_s]:,.0f} lines/s"),
        transient=True,
    )
    task = bar.add_task(path.name, total=None, lines_s=0.0)
    start = time.monotonic()

    def update(nbytes: int, lines: int) -> None:
        rate = lines / max(time.monotonic() - start, 1e-9)
        bar.update(task, advance=nbytes, lines_s=rate)

    return bar, update


def run(args: argparse.Namespace) -> int:
    # An ingest makes no reference cycles worth collecting; the collector would walk the
    # imported libraries' long-lived objects again and again.
    gc.disable()
    # Before NumPy loads: OpenBLAS starts a thread per core that spins ~0.1 s of CPU after
    # it starts (benchmarks/ftrace.md), and an ingest does no linear algebra.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # First, before Polars starts its threads: see the function.
    from analysis.ingest.ftrace.malloc import one_arena

    one_arena()
    from analysis.ingest import ftrace
    from analysis.ingest.captures import trace_files
    from analysis.report.accounting import format_accounting
    from analysis.report.json_output import dumps

    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise InputError(args.out, "--out names the ingest cache directory, and this is a file")
    files = trace_files(args.paths)
    if len(files) == 1 and args.scheduler is None:
        bar, update = _progress(files[0])
        if bar is not None:
            with bar:
                trace = ftrace.read(
                    files[0], cache_dir=args.out, progress=update, note_unparsed=False
                )
        else:
            trace = ftrace.read(files[0], cache_dir=args.out, note_unparsed=False)
        results = [trace.accounting.to_json()]
    else:
        results = ftrace.ingest(files, cache_dir=args.out, scheduler=args.scheduler)
    if args.json:
        print(dumps(results[0] if len(results) == 1 else results))
    else:
        print("\n\n".join(format_accounting(acc) for acc in results))
    return 0
