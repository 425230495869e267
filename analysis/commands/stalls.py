"""``mmlab stalls``: reclaim stall, throttle, kswapd, compaction, shrinker and LRU statistics.

PATH may be a trace file (any layout ``analysis.ingest.ftrace`` reads, compressed or not),
histogram text pasted from a mail (detected by content), or a capture / mmtests directory
(every ``ftrace-*`` file below it, each with its iteration's ``kconfig-*`` and vmstat).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.errors import InputError

if TYPE_CHECKING:
    from analysis.metrics.trace_analysis import TraceAnalysis

__all__ = ["add_label_argument", "analyse_path", "group_label", "register", "trace_sources"]

SNIFF_BYTES = 1 << 20


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


def _head(path: Path) -> str:
    from analysis.ingest.compressed import iter_blocks

    block = next(iter_blocks(path, SNIFF_BYTES), None)
    return block.data.decode("utf-8", errors="replace") if block else ""


def analyse_path(path: Path, args: argparse.Namespace) -> TraceAnalysis:
    # Here, not at the top: `mmlab --help` must not import polars or numpy.
    from analysis.ingest import histogram
    from analysis.metrics.trace_analysis import analyse_trace
    from analysis.metrics.trace_files import analyse_file

    labels = dict(args.label)
    head = _head(path)
    if histogram.is_hist_trigger(head):
        return analyse_trace(histogram.read_hist_trigger_events(path), config_hz=args.hz)
    if histogram.looks_like_histogram(head):
        return analyse_trace(histogram.read(path, labels=labels), config_hz=args.hz)
    if labels:
        raise InputError(path, "--label applies to histogram text, and this is a trace")
    return analyse_file(path, config_hz=args.hz)


def trace_sources(path: Path) -> list[Path]:
    from analysis.ingest.captures import traces_below

    return traces_below(path) if path.is_dir() else [path]


def run(args: argparse.Namespace) -> int:
    from analysis.ingest import histogram
    from analysis.metrics.trace_files import warm
    from analysis.report.json_output import dumps
    from analysis.report.trace_analysis import analysis_json, format_analysis, format_uniq_c

    sources = [source for path in args.paths for source in trace_sources(path)]
    # Every trace not analysed yet, in parallel (mail histograms are read in no time).
    warm([s for s in sources if s.is_file() and not histogram.looks_like_histogram(_head(s))])
    results = [analyse_path(source, args) for source in sources]
    if args.json:
        print(dumps([analysis_json(r) for r in results]))
        return 0
    for result in results:
        print(format_analysis(result))
        if args.uniq:
            print(format_uniq_c(result.delay_histogram))
    return 0
