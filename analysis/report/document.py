"""The mailing-list report (``mmlab report``; ``make`` writes ``build/report.txt``).

Plain text, at most 80 columns, no ANSI codes, in the order a reclaim patch's cover letter
uses: workload latency comparison, vmstat Ops rows, throttling per reason, stalls. It opens
with the capture provenance and any lost-event warnings.

A section is one function of :class:`ReportData` returning text, listed in ``SECTIONS``;
later analyses replace their hook function or add an entry, nothing else.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from analysis.ingest.mmtests import Run, find_runs, unique_runs
from analysis.metrics.compare import compare_runs
from analysis.metrics.throttle_runs import run_throttle_table
from analysis.metrics.trace_analysis import TraceAnalysis, analyse_iteration
from analysis.report.ops import comparison_json, format_comparison
from analysis.report.provenance import format_provenance, iteration_provenance, run_differences
from analysis.report.text import fit
from analysis.report.throttle import format_run_throttle
from analysis.report.trace_analysis import analysis_json, format_analysis

__all__ = [
    "GUEST_SWEEPS",
    "SECTIONS",
    "TEST_TREES",
    "ReportData",
    "build_report",
    "capture_runs",
    "latency_section",
    "report_json",
    "report_runs",
    "report_sections",
    "stalls_section",
    "throttle_section",
    "vmstat_section",
]


@dataclass(frozen=True)
class ReportData:
    """The runs of one report, first run the base; trace analyses computed once, on first use."""

    runs: tuple[Run, ...]

    @cached_property
    def analyses(self) -> tuple[tuple[Run, int, TraceAnalysis], ...]:
        """``(run, iteration index, analysis)`` of every trace of every iteration."""
        return tuple(
            (run, it.index, analysis)
            for run in self.runs
            for it in run.iterations
            for analysis in analyse_iteration(it)
        )


def latency_section(data: ReportData) -> str:
    """The workload's latency logs per run against the first run, with run-level
    significance (as ``mmlab compare``: Harrell–Davis median decides, permutation test
    over iterations, Benjamini–Hochberg q-values)."""
    from statsmodels.tools.sm_exceptions import ConvergenceWarning

    from analysis.ingest import benchmarks
    from analysis.report.compare import format_mmtests
    from analysis.stats.significance import compare_table

    if len(data.runs) < 2:
        return "One run: no latency comparison (give BASE and NEW).\n"
    table = benchmarks.load_runs([run.path for run in data.runs]).table
    kernels = list(dict.fromkeys(table["kernel"]))
    if len(kernels) < 2:
        return "No workload latency logs in at least two runs.\n"
    with warnings.catch_warnings():
        # statsmodels warns before returning NaN for huge effects; needed_runs handles it.
        warnings.simplefilter("ignore", ConvergenceWarning)
        results = compare_table(table, kernels[0], kernels[1:])
    return format_mmtests(table, results)


def vmstat_section(data: ReportData) -> str:
    """vmstat Ops rows of every run side by side (mean ± sd over iterations)."""
    return format_comparison(compare_runs(data.runs))


def throttle_section(data: ReportData) -> str:
    """``mm_vmscan_throttled`` per run, reason and timeout over iterations."""
    table = run_throttle_table([(run.name, index, a.throttle) for run, index, a in data.analyses])
    return format_run_throttle(table)


def throttle_fits_section(data: ReportData) -> str:
    """Fitted latent-wait observables per run and throttle group: P(timeout), the mean
    wait to the timeout and the median with 95 % CIs, the best family by AIC, and their
    spread over iterations fitted alone (:mod:`analysis.report.throttle_fits`)."""
    from analysis.report.throttle_fits import format_run_fits, run_fits

    return format_run_fits(run_fits(data))


def stalls_section(data: ReportData) -> str:
    """Reclaim stalls, throttling, daemons, shrinkers and LRU of every traced iteration."""
    parts = [
        f"-- {run.name} iter-{index} --\n{format_analysis(analysis)}"
        for run, index, analysis in data.analyses
    ]
    return "\n".join(parts) if parts else "No ftrace captures.\n"


SECTIONS: tuple[tuple[str, Callable[[ReportData], str]], ...] = (
    ("Workload latency", latency_section),
    ("Reclaim Ops from /proc/vmstat", vmstat_section),
    ("Reclaim throttling per reason", throttle_section),
    ("Throttle delay fits", throttle_fits_section),
    ("Reclaim stalls from ftrace", stalls_section),
)


# Third-party trees bundled for the tests, not captures of this project's workload.
TEST_TREES = ("mmtests-ci", "mmtests-ci-more", "mmtests-formats")
# Sweeps captured in an emulated (TCG) guest of the patched kernel (docs/patched-kernels.md
# "Running a capture in a guest"): another platform, whose times must not be compared with
# the host's captures; they are reported when named (``mmlab report data/vm-6.12``).
GUEST_SWEEPS = ("vm-6.12",)


def capture_runs(data: Path) -> tuple[Run, ...]:
    """Every run under ``data`` except the bundled third-party test trees and the guest
    sweeps below it, in path order."""
    # An iteration directory given as ``data`` has its run directory above ``data``.
    skip = set(TEST_TREES) | set(GUEST_SWEEPS)
    return tuple(
        run
        for run in find_runs(data)
        if not run.path.is_relative_to(data) or not set(run.path.relative_to(data).parts) & skip
    )


def _warnings(data: ReportData) -> str:
    lost = [
        f"WARNING: {run.name} iter-{index}: {a.lost_events} lost trace events; its stall\n"
        "and throttle counts may be short."
        for run, index, a in data.analyses
        if a.lost_events
    ]
    return "\n".join(lost) + "\n" if lost else "No lost trace events.\n"


def _differ_text(differ: Sequence[str]) -> str:
    lines = "\n".join(f"  {line}" for line in differ)
    return (
        "WARNING: these runs were not captured alike; a change below may come from\n"
        f"these differences, not from the kernel:\n{lines}\n"
    )


def report_sections(data: ReportData) -> list[tuple[str, str]]:
    """``(title, text)`` of the provenance, the warnings and every entry of ``SECTIONS``."""
    provenance = [iteration_provenance(run, it) for run in data.runs for it in run.iterations]
    differ = run_differences(provenance)
    first = [("Runs differ in more than the kernel", _differ_text(differ))] if differ else []
    return [
        *first,
        ("Captures", format_provenance(provenance)),
        ("Warnings", _warnings(data)),
        *((title, section(data)) for title, section in SECTIONS),
    ]


def build_report(paths: Sequence[Path]) -> str:
    """The report of the capture runs under ``paths`` (each as :func:`capture_runs`; the
    first run found is the base of every comparison), 80 columns."""
    runs = report_runs(paths)
    names = " vs ".join(run.name for run in runs)
    parts = [f"mmlab report: {names}\n"]
    for title, text in report_sections(ReportData(runs)):
        parts.append(f"== {title} ==\n\n{text}")
    return fit("\n".join(parts))


def report_runs(paths: Sequence[Path]) -> tuple[Run, ...]:
    """Every run of :func:`capture_runs` under each of ``paths``, in order, named apart."""
    # Runs of several paths may share a name (mmtests CI trees all call theirs alike).
    return unique_runs(tuple(run for path in paths for run in capture_runs(path)))


def report_json(paths: Sequence[Path]) -> dict:
    """The report's content for scripts (frames and dataclasses, for
    :func:`analysis.report.json_output.dumps`): the runs with their provenance, the Ops comparison
    (as ``mmlab compare-vmstat --json``), throttling per run (``run_throttle_table``), its
    fits per run and group (:func:`~analysis.report.throttle_fits.run_fit_json`) and
    every traced iteration's analysis (as ``mmlab stalls --json``, with ``run`` and
    ``iteration``)."""
    from analysis.report.throttle_fits import run_fit_json, run_fits

    data = ReportData(report_runs(paths))
    provenance = [iteration_provenance(run, it) for run in data.runs for it in run.iterations]
    throttle = run_throttle_table(
        [(run.name, index, a.throttle) for run, index, a in data.analyses]
    )
    return {
        "data": [str(p) for p in paths],
        "runs": [
            {"name": run.name, "path": str(run.path), "iterations": len(run.iterations)}
            for run in data.runs
        ],
        "provenance": provenance,
        "runs_differ": run_differences(provenance),
        "vmstat": comparison_json(compare_runs(data.runs)),
        "throttle": throttle,
        "throttle_fits": [run_fit_json(f) for f in run_fits(data)],
        "stalls": [
            {"run": run.name, "iteration": index, **analysis_json(analysis)}
            for run, index, analysis in data.analyses
        ],
    }
