"""The mailing-list report (``mmlab report``; ``make`` writes ``build/report.txt``).

Plain text, at most 80 columns, no ANSI codes. It opens with a summary (what differed
between the runs, the latency verdicts; :mod:`analysis.report.summary`), then in the order a
reclaim patch's cover letter uses: workload latency comparison, vmstat Ops rows, throttling
per reason, stalls, each aggregated over iterations. ``--detail`` adds each run's provenance
and every traced iteration's analysis; the JSON always holds them.

A section is one function of :class:`ReportData` returning text, listed in ``SECTIONS``;
later analyses replace their hook function or add an entry, nothing else.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.ingest.captures import traces_below
from analysis.ingest.mmtests import Run, find_runs, unique_runs
from analysis.metrics.compare import compare_runs
from analysis.metrics.throttle_runs import run_throttle_table
from analysis.metrics.trace_analysis import TraceAnalysis, analyse_iteration
from analysis.report.ops import comparison_json, format_comparison
from analysis.report.provenance import (
    Provenance,
    format_provenance,
    iteration_provenance,
    run_differences,
    setting_differences,
)
from analysis.report.summary import format_settings, format_summary
from analysis.report.text import fit
from analysis.report.throttle import format_run_stalls, format_run_throttle
from analysis.report.trace_analysis import analysis_json, format_analysis

if TYPE_CHECKING:
    import polars as pl

    from analysis.stats.significance import RowComparison

__all__ = [
    "DETAIL_FIRST",
    "DETAIL_LAST",
    "GUEST_SWEEPS",
    "SECTIONS",
    "TEST_TREES",
    "ReportData",
    "build_report",
    "capture_runs",
    "capture_traces",
    "captures_section",
    "iteration_section",
    "latency_section",
    "report_json",
    "report_runs",
    "report_sections",
    "stalls_section",
    "summary_section",
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

    @cached_property
    def provenance(self) -> tuple[Provenance, ...]:
        """Capture context of every iteration of every run."""
        return tuple(iteration_provenance(run, it) for run in self.runs for it in run.iterations)

    @cached_property
    def settings(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Every capture setting whose values differ between the runs (``setting_differences``)."""
        return setting_differences(self.runs)

    @cached_property
    def latency(self) -> tuple[pl.DataFrame, tuple[RowComparison, ...]] | str:
        """The workload's latency rows (``benchmarks.load_runs``) and every new run's
        comparison with the first (``compare_table``), computed once for the summary and
        the latency section; a sentence saying why when there is nothing to compare."""
        from statsmodels.tools.sm_exceptions import ConvergenceWarning

        from analysis.ingest import benchmarks
        from analysis.stats.significance import compare_table

        if len(self.runs) < 2:
            return "One run: no latency comparison (give BASE and NEW).\n"
        table = benchmarks.load_runs([run.path for run in self.runs]).table
        kernels = list(dict.fromkeys(table["kernel"]))
        if len(kernels) < 2:
            return "No workload latency logs in at least two runs.\n"
        with warnings.catch_warnings():
            # statsmodels warns before returning NaN for huge effects; needed_runs handles it.
            warnings.simplefilter("ignore", ConvergenceWarning)
            return table, tuple(compare_table(table, kernels[0], kernels[1:]))


def latency_section(data: ReportData) -> str:
    """The workload's latency logs per run against the first run, with run-level
    significance (as ``mmlab compare``: Harrell–Davis median decides, permutation test
    over iterations, Benjamini–Hochberg q-values)."""
    from analysis.report.compare import format_mmtests

    if isinstance(data.latency, str):
        return data.latency
    # One unit per row block and three significant digits, not mmtests' 4 decimals
    # beside a ±5299 sd.
    return format_mmtests(*data.latency, scaled=True)


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
    """Reclaim stalls per run and context, aggregated over its traced iterations."""
    from analysis.metrics.stall_runs import iteration_stalls, run_stall_table

    return format_run_stalls(
        run_stall_table([(run.name, i, iteration_stalls(a.reclaim)) for run, i, a in data.analyses])
    )


def iteration_section(data: ReportData) -> str:
    """Reclaim stalls, throttling, daemons, shrinkers and LRU of every traced iteration."""
    parts = [
        f"-- {run.name} iter-{index} --\n{format_analysis(analysis)}"
        for run, index, analysis in data.analyses
    ]
    return "\n".join(parts) if parts else "No ftrace captures.\n"


def summary_section(data: ReportData) -> str:
    """What differed between the runs and the latency verdicts (:mod:`analysis.report.summary`)."""
    latency = data.latency if isinstance(data.latency, str) else data.latency[1]
    lost = sum(a.lost_events for _, _, a in data.analyses)
    return format_summary(data.provenance, data.settings, latency, lost)


def captures_section(data: ReportData) -> str:
    """Each run's provenance and every setting that differed (``--detail``)."""
    text = format_provenance(data.provenance)
    if data.settings:
        runs = [run.name for run in data.runs]
        text += "\nSettings that differ:\n" + "\n".join(format_settings(runs, data.settings))
        text += "\n"
    return text


SECTIONS: tuple[tuple[str, Callable[[ReportData], str]], ...] = (
    ("Workload latency", latency_section),
    ("Reclaim Ops from /proc/vmstat", vmstat_section),
    ("Reclaim throttling per reason", throttle_section),
    ("Throttle delay fits", throttle_fits_section),
    ("Reclaim stalls from ftrace", stalls_section),
)
# With ``--detail``: the full provenance first, every traced iteration last.
DETAIL_FIRST: tuple[tuple[str, Callable[[ReportData], str]], ...] = (
    ("Captures", captures_section),
)
DETAIL_LAST: tuple[tuple[str, Callable[[ReportData], str]], ...] = (
    ("Every traced iteration", iteration_section),
)


# Third-party trees bundled for the tests, not captures of this project's workload.
TEST_TREES = ("mmtests-ci", "mmtests-ci-more", "mmtests-formats")
# Sweeps captured in an emulated (TCG) guest of the patched kernel (docs/patched-kernels.md
# "Running a capture in a guest"): another platform, whose times must not be compared with
# the host's captures; they are reported when named (``mmlab report data/vm-6.12``).
GUEST_SWEEPS = ("vm-6.12",)


def _below_skipped(path: Path, data: Path) -> bool:
    """``path`` lies in a third-party test tree or a guest sweep below ``data`` (one named
    as ``data`` itself, or above it, counts as asked for)."""
    skip = set(TEST_TREES) | set(GUEST_SWEEPS)
    return path.is_relative_to(data) and bool(set(path.relative_to(data).parts) & skip)


def capture_runs(data: Path) -> tuple[Run, ...]:
    """Every run under ``data`` except the bundled third-party test trees and the guest
    sweeps below it, in path order."""
    # An iteration directory given as ``data`` has its run directory above ``data``.
    return tuple(run for run in find_runs(data) if not _below_skipped(run.path, data))


def capture_traces(data: Path) -> list[Path]:
    """Every trace under ``data`` (a trace file: itself) of the runs :func:`capture_runs`
    keeps: the notebooks' traces, from the same runs as the report's."""
    return [t for t in traces_below(data) if not _below_skipped(t, data)]


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


def report_sections(data: ReportData, detail: bool = False) -> list[tuple[str, str]]:
    """``(title, text)`` of the summary, any provenance warning, the lost-event warnings
    and every entry of ``SECTIONS``; with ``detail`` also ``DETAIL_FIRST`` and
    ``DETAIL_LAST``."""
    differ = run_differences(data.provenance)
    first = [("Runs differ in more than the kernel", _differ_text(differ))] if differ else []
    lost = any(a.lost_events for _, _, a in data.analyses)
    return [
        ("Summary", summary_section(data)),
        *first,
        *(((title, section(data)) for title, section in DETAIL_FIRST) if detail else ()),
        *([("Warnings", _warnings(data))] if lost else []),
        *((title, section(data)) for title, section in SECTIONS),
        *(((title, section(data)) for title, section in DETAIL_LAST) if detail else ()),
    ]


def build_report(paths: Sequence[Path], detail: bool = False) -> str:
    """The report of the capture runs under ``paths`` (each as :func:`capture_runs`; the
    first run found is the base of every comparison), 80 columns; ``detail`` adds the
    full provenance and every traced iteration's analysis."""
    runs = report_runs(paths)
    names = " vs ".join(run.name for run in runs)
    parts = [f"mmlab report: {names}\n"]
    for title, text in report_sections(ReportData(runs), detail):
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
    provenance = data.provenance
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
        "settings_differ": [{"setting": k, "values": list(v)} for k, v in data.settings],
        "vmstat": comparison_json(compare_runs(data.runs)),
        "throttle": throttle,
        "throttle_fits": [run_fit_json(f) for f in run_fits(data)],
        "stalls": [
            {"run": run.name, "iteration": index, **analysis_json(analysis)}
            for run, index, analysis in data.analyses
        ],
    }
