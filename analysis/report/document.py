"""The text report ``make`` writes to ``build/report.txt`` (``mmlab report``) from every
capture in ``data/``.

Each section is a function of the runs found under the data directory, so later
analyses add a section rather than a script.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from analysis.ingest.mmtests import Run, find_runs
from analysis.metrics.compare import compare_runs
from analysis.metrics.trace_analysis import analyse_iteration
from analysis.report.ops import comparison_json, format_comparison
from analysis.report.trace_analysis import analysis_json, format_analysis

__all__ = ["SECTIONS", "TEST_TREES", "build_report", "capture_runs", "report_json"]


def vmstat_section(runs: tuple[Run, ...]) -> str:
    """vmstat Ops rows of every run side by side (mean ± sd over iterations)."""
    return format_comparison(compare_runs(runs))


def stalls_section(runs: tuple[Run, ...]) -> str:
    """Reclaim stalls, throttling, daemons, shrinkers and LRU of every traced iteration."""
    parts = [
        f"-- {run.name} iter-{it.index} --\n{format_analysis(analysis)}"
        for run in runs
        for it in run.iterations
        for analysis in analyse_iteration(it)
    ]
    return "\n".join(parts) if parts else "No ftrace captures.\n"


SECTIONS: tuple[tuple[str, Callable[[tuple[Run, ...]], str]], ...] = (
    ("Reclaim Ops from /proc/vmstat", vmstat_section),
    ("Reclaim stalls from ftrace", stalls_section),
)


# Third-party trees bundled for the tests, not captures of this project's workload.
TEST_TREES = ("mmtests-ci",)


def capture_runs(data: Path) -> tuple[Run, ...]:
    """Every run under ``data`` except the bundled third-party test trees, in path order."""
    # An iteration directory given as ``data`` has its run directory above ``data``.
    return tuple(
        run
        for run in find_runs(data)
        if not run.path.is_relative_to(data)
        or not set(run.path.relative_to(data).parts) & set(TEST_TREES)
    )


def build_report(data: Path) -> str:
    """Every section over the capture runs under ``data`` (see ``capture_runs``)."""
    runs = capture_runs(data)
    listing = "\n".join(
        f"  {run.name} ({len(run.iterations)} iterations)\n    {run.path}" for run in runs
    )
    parts = [f"mmlab report on {data}/\n\nRuns:\n{listing}\n"]
    for title, section in SECTIONS:
        parts.append(f"== {title} ==\n\n{section(runs)}")
    return "\n".join(parts)


def report_json(data: Path) -> dict:
    """The report's content for scripts: the runs, the Ops comparison (as
    ``mmlab compare-vmstat --json``) and every traced iteration's analysis (as
    ``mmlab stalls --json``, with ``run`` and ``iteration``)."""
    runs = capture_runs(data)
    return {
        "data": str(data),
        "runs": [
            {"name": run.name, "path": str(run.path), "iterations": len(run.iterations)}
            for run in runs
        ],
        "vmstat": comparison_json(compare_runs(runs)),
        "stalls": [
            {"run": run.name, "iteration": it.index, **analysis_json(analysis)}
            for run in runs
            for it in run.iterations
            for analysis in analyse_iteration(it)
        ],
    }
