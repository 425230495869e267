"""``mmlab stalls``: reclaim stall, throttle, kswapd, compaction, shrinker and LRU statistics.

PATH may be a trace file (any layout ``analysis.ingest.ftrace`` reads, compressed or not),
histogram text pasted from a mail (detected by content), or a capture / mmtests directory
(every ``ftrace-*`` file below it, each with its iteration's ``kconfig-*`` and vmstat).
"""

from __future__ import annotations

import argparse
import gc
import os
from pathlib import Path

__all__ = ["add_label_argument", "group_label", "register"]


def group_label(text: str) -> tuple[int, str]:
    group, sep, name = text.partition("=")
    if not sep or not group.strip().isdigit() or not name.strip():
        raise argparse.ArgumentTypeError(f"expected GROUP=NAME (e.g. 2=kswapd), got {text!r}")
    return int(group), name.strip()


def add_label_argument(p: argparse.ArgumentParser) -> None:
    """``--label GROUP=NAME`` (repeatable): the context of each block of histogram text."""
    p.add_argument(
        "--label",
        type=group_label,
        action="append",
        default=[],
        metavar="GROUP=NAME",
        help="histogram text: name the context of a block (repeatable), e.g. 2=kswapd",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "stalls",
        help="reclaim stalls, throttling, kswapd/kcompactd awake time, shrinkers, LRU",
        description=__doc__,
    )
    p.add_argument("paths", type=Path, nargs="+", metavar="PATH")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    add_label_argument(p)
    p.add_argument("--hz", type=int, help="CONFIG_HZ to check the inferred HZ against")
    p.add_argument("--uniq", action="store_true", help="also print the uniq -c delay view")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Before NumPy loads: OpenBLAS starts a thread per core that spins ~0.1 s of CPU after
    # it starts, and the analysis does no linear algebra (as `mmlab ingest`).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # Before Polars loads: its jemalloc hands freed pages back to the system as it goes,
    # and the next block's frames fault them in again (zeroed). Kept for a second, a block
    # reuses the one before's pages; kept for ever (decay -1), freed pages piled up in
    # every thread's arena: on the 630 MB capture the 4x concatenation's peak RSS was
    # 774 MB against 546 MB with a second, for the same page faults at 1x
    # (benchmarks/stalls.md).
    os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:1000,muzzy_decay_ms:0")
    # Here, not at the top: `mmlab --help` must not import polars or numpy.
    from analysis.report.json_output import dumps
    from analysis.report.trace_analysis import analysis_json, format_analysis, format_uniq_c
    from analysis.study.sources import analyse_sources

    # The libraries' long-lived objects out of the collector's sight: every full collection
    # the analysis's allocations trigger would walk them all again.
    gc.freeze()
    results = analyse_sources(args.paths, dict(args.label), args.hz)
    if args.json:
        print(dumps([analysis_json(r) for r in results]))
        return 0
    for result in results:
        print(format_analysis(result))
        if args.uniq:
            print(format_uniq_c(result.delay_histogram))
    return 0
