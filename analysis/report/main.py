"""The text report ``make`` writes to ``build/report.txt`` from every capture in ``data/``.

Each section is a function of the runs found under the data directory, so later
analyses add a section rather than a script.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from analysis.errors import InputError
from analysis.ingest.mmtests import Run, find_runs
from analysis.metrics.compare import compare_runs
from analysis.metrics.trace_stalls import analyse
from analysis.report.stalls import format_analysis
from analysis.report.vmstat import format_comparison

__all__ = ["SECTIONS", "build_report"]


def vmstat_section(runs: tuple[Run, ...]) -> str:
    """vmstat Ops rows of every run side by side (mean ± sd over iterations)."""
    return format_comparison(compare_runs(runs))


def stalls_section(runs: tuple[Run, ...]) -> str:
    """Reclaim stalls, throttling, daemons, shrinkers and LRU of every traced iteration."""
    from analysis.ingest import ftrace  # numba start-up only when a report is built

    parts = []
    for run in runs:
        for it in run.iterations:
            for test in it.tests:
                for trace in sorted(it.path.glob(f"ftrace-{test}.*")):
                    if trace.suffix == ".start":
                        continue
                    analysis = analyse(
                        ftrace.read(trace),
                        config_hz=it.config_hz,
                        vmstat_deltas=it.counter_deltas(test),
                    )
                    parts.append(f"-- {run.name} iter-{it.index} --\n{format_analysis(analysis)}")
    return "\n".join(parts) if parts else "No ftrace captures.\n"


SECTIONS: tuple[tuple[str, Callable[[tuple[Run, ...]], str]], ...] = (
    ("Reclaim Ops from /proc/vmstat", vmstat_section),
    ("Reclaim stalls from ftrace", stalls_section),
)


def build_report(data: Path) -> str:
    """Every section over every run under ``data``, runs in path order."""
    runs = find_runs(data)
    listing = "\n".join(
        f"  {run.name:<20} {run.path}  ({len(run.iterations)} iterations)" for run in runs
    )
    parts = [f"mmlab report on {data}/\n\nRuns:\n{listing}\n"]
    for title, section in SECTIONS:
        parts.append(f"== {title} ==\n\n{section(runs)}")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=Path("data"))
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        args.out.write_text(build_report(args.data))
    except InputError as exc:
        print(f"report: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
