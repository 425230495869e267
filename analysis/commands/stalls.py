"""``mmlab stalls``: reclaim stall, throttle, kswapd, compaction, shrinker and LRU statistics.

PATH may be a trace file (any layout ``analysis.ingest.ftrace`` reads, compressed or not),
histogram text pasted from a mail (detected by content), or a capture / mmtests directory
(every ``ftrace-*`` file below it, each with its iteration's ``kconfig-*`` and vmstat).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from analysis.errors import InputError
from analysis.ingest import histogram, mmtests
from analysis.ingest.compressed import iter_blocks
from analysis.metrics.trace_stalls import StallAnalysis, analyse
from analysis.report.stalls import as_json, format_analysis, format_uniq_c

__all__ = ["register"]

SNIFF_BYTES = 1 << 20


def _label(text: str) -> tuple[int, str]:
    group, sep, name = text.partition("=")
    if not sep or not group.strip().isdigit() or not name.strip():
        raise argparse.ArgumentTypeError(f"expected GROUP=NAME (e.g. 2=kswapd), got {text!r}")
    return int(group), name.strip()


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "stalls",
        help="reclaim stalls, throttling, kswapd/kcompactd awake time, shrinkers, LRU",
        description=__doc__,
    )
    p.add_argument("paths", type=Path, nargs="+", metavar="PATH")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    p.add_argument(
        "--label",
        type=_label,
        action="append",
        default=[],
        metavar="GROUP=NAME",
        help="histogram text: name the context of a block (repeatable), e.g. 2=kswapd",
    )
    p.add_argument("--hz", type=int, help="CONFIG_HZ to check the inferred HZ against")
    p.add_argument("--uniq", action="store_true", help="also print the uniq -c delay view")
    p.set_defaults(func=run)


def _head(path: Path) -> str:
    block = next(iter_blocks(path, SNIFF_BYTES), None)
    return block.data.decode("utf-8", errors="replace") if block else ""


def _iteration(path: Path) -> tuple[mmtests.Iteration, str] | None:
    """The mmtests iteration holding the trace ``path`` and its test name, if it is in one."""
    try:
        (run,) = mmtests.find_runs(path.parent)
        (iteration,) = run.iterations
    except (InputError, ValueError):
        return None
    return iteration, path.name.removeprefix("ftrace-").split(".")[0]


def _analyse_file(path: Path, args: argparse.Namespace) -> StallAnalysis:
    labels = dict(args.label)
    if histogram.looks_like_histogram(_head(path)):
        return analyse(histogram.read(path, labels=labels), config_hz=args.hz)
    if labels:
        raise InputError(path, "--label applies to histogram text, and this is a trace")
    # Imported here: the trace reader pulls in numba, which `mmlab --help` should not pay for.
    from analysis.ingest import ftrace

    hz, deltas = args.hz, None
    if found := _iteration(path):
        iteration, test = found
        hz = hz if hz is not None else iteration.config_hz
        try:
            deltas = iteration.counter_deltas(test)
        except InputError:
            deltas = None  # a trace without vmstat snapshots still has its stall statistics
    return analyse(ftrace.read(path), config_hz=hz, vmstat_deltas=deltas)


def _sources(path: Path) -> list[Path]:
    if not path.is_dir():
        return [path]
    found = sorted(
        p for p in path.rglob("ftrace-*") if p.is_file() and not p.name.endswith(".start")
    )
    if not found:
        raise InputError(path, "no ftrace-* file below this directory")
    return found


def run(args: argparse.Namespace) -> int:
    results = [_analyse_file(source, args) for path in args.paths for source in _sources(path)]
    if args.json:
        # allow_nan=False: every missing number must be null, never NaN.
        print(json.dumps([as_json(r) for r in results], indent=2, allow_nan=False))
        return 0
    for result in results:
        print(format_analysis(result))
        if args.uniq:
            print(format_uniq_c(result.delay_histogram))
    return 0
