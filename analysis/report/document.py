"""The mailing-list report (``mmlab report``; ``make`` writes ``build/report.txt``).

Plain text, at most 80 columns, no ANSI codes. It opens with a summary (what differed
between the runs, the latency verdicts; :mod:`analysis.report.summary`), then in the order a
reclaim patch's cover letter uses: workload latency comparison, vmstat Ops rows, throttling
per reason, stalls, each aggregated over iterations. ``--detail`` adds each run's provenance
and every traced iteration's analysis; the JSON always holds them.

A section is one function of :class:`Study` returning text, listed in ``SECTIONS``;
later analyses replace their hook function or add an entry, nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.outputs import Stages
from analysis.report.ops import comparison_json, format_comparison
from analysis.report.provenance import format_provenance
from analysis.report.summary import format_settings, format_summary
from analysis.report.text import fit
from analysis.report.throttle import format_run_stalls, format_run_throttle
from analysis.report.throttle_fits import format_run_fits, run_fit_json
from analysis.report.trace_analysis import analysis_json, format_analysis
from analysis.study.runs import study_runs
from analysis.study.study import Study

if TYPE_CHECKING:
    from analysis.stats.significance import RowComparison
    from analysis.study.latency import LatencyComparison

__all__ = [
    "DETAIL_FIRST",
    "DETAIL_LAST",
    "SECTIONS",
    "build_report",
    "captures_section",
    "decided",
    "iteration_section",
    "latency_section",
    "render_report",
    "report_json",
    "report_sections",
    "stalls_section",
    "study_json",
    "summary_section",
    "throttle_section",
    "vmstat_section",
]

# The statistic that decides a workload row here: ``mmlab compare``'s default, the
# Harrell–Davis median.
_DECIDING = "p50"


def decided(latency: LatencyComparison) -> tuple[RowComparison, ...]:
    """The latency comparison's rows as the report decides them (by the median)."""
    return latency.by_metric[_DECIDING]


def latency_section(data: Study) -> str:
    """The workload's latency logs per run against the first run, with run-level
    significance (as ``mmlab compare``: Harrell–Davis median decides, Welch's t over
    iterations with the permutation p beside it, Benjamini–Hochberg q-values)."""
    from analysis.report.compare import format_mmtests
    from analysis.report.levels import level_notes

    if isinstance(data.latency, str):
        return data.latency
    # One unit per row block and three significant digits, not mmtests' 4 decimals
    # beside a ±5299 sd.
    notes = level_notes(data.latency.replication_notes, list(data.latency.warmups))
    return notes + format_mmtests(data.latency.table, decided(data.latency), scaled=True)


def vmstat_section(data: Study) -> str:
    """vmstat Ops rows of every run side by side (mean ± sd over iterations)."""
    return format_comparison(data.ops)


def throttle_section(data: Study) -> str:
    """``mm_vmscan_throttled`` per run, reason and timeout over iterations."""
    return format_run_throttle(data.throttle)


def throttle_fits_section(data: Study) -> str:
    """Fitted latent-wait observables per run and throttle group: P(timeout), the mean
    wait to the timeout and the median with 95 % CIs, the best family by AIC, and their
    spread over iterations fitted alone (:mod:`analysis.study.fits`)."""
    return format_run_fits(data.fits)


def stalls_section(data: Study) -> str:
    """Reclaim stalls per run and context, aggregated over its traced iterations."""
    return format_run_stalls(data.stalls)


def iteration_section(data: Study) -> str:
    """Reclaim stalls, throttling, daemons, shrinkers and LRU of every traced iteration."""
    parts = [
        f"-- {run.name} iter-{index} --\n{format_analysis(analysis)}"
        for run, index, analysis in data.analyses
    ]
    return "\n".join(parts) if parts else "No ftrace captures.\n"


def summary_section(data: Study) -> str:
    """What differed between the runs and the latency verdicts (:mod:`analysis.report.summary`)."""
    latency = data.latency if isinstance(data.latency, str) else decided(data.latency)
    return format_summary(
        data.provenance, data.differences, data.settings, latency, data.lost_events
    )


def captures_section(data: Study) -> str:
    """Each run's provenance and every setting that differed (``--detail``)."""
    text = format_provenance(data.provenance)
    if data.settings:
        runs = [run.name for run in data.runs]
        text += "\nSettings that differ:\n" + "\n".join(format_settings(runs, data.settings))
        text += "\n"
    return text


SECTIONS: tuple[tuple[str, Callable[[Study], str]], ...] = (
    ("Workload latency", latency_section),
    ("Reclaim Ops from /proc/vmstat", vmstat_section),
    ("Reclaim throttling per reason", throttle_section),
    ("Throttle delay fits", throttle_fits_section),
    ("Reclaim stalls from ftrace", stalls_section),
)
# With ``--detail``: the full provenance first, every traced iteration last.
DETAIL_FIRST: tuple[tuple[str, Callable[[Study], str]], ...] = (("Captures", captures_section),)
DETAIL_LAST: tuple[tuple[str, Callable[[Study], str]], ...] = (
    ("Every traced iteration", iteration_section),
)


def _warnings(data: Study) -> str:
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


def report_sections(data: Study, detail: bool = False) -> list[tuple[str, str]]:
    """``(title, text)`` of the summary, any provenance warning, the lost-event warnings
    and every entry of ``SECTIONS``; with ``detail`` also ``DETAIL_FIRST`` and
    ``DETAIL_LAST``."""
    differ = data.differences
    first = [("Runs differ in more than the kernel", _differ_text(differ))] if differ else []
    lost = data.lost_events > 0
    return [
        ("Summary", summary_section(data)),
        *first,
        *(((title, section(data)) for title, section in DETAIL_FIRST) if detail else ()),
        *([("Warnings", _warnings(data))] if lost else []),
        *((title, section(data)) for title, section in SECTIONS),
        *(((title, section(data)) for title, section in DETAIL_LAST) if detail else ()),
    ]


def build_report(
    paths: Sequence[Path], detail: bool = False, progress: Stages | None = None
) -> str:
    """The report of the capture runs under ``paths`` (each as
    :func:`~analysis.study.runs.study_runs`; the first run found is the base of every
    comparison), 80 columns; ``detail`` adds the full provenance and every traced
    iteration's analysis; ``progress`` is told each slow stage (:class:`Study`)."""
    return render_report(Study(study_runs(paths), progress=progress), detail)


def render_report(data: Study, detail: bool = False) -> str:
    """The report of ``data`` (see :func:`build_report`)."""
    names = " vs ".join(run.name for run in data.runs)
    parts = [f"mmlab report: {names}\n"]
    for title, text in report_sections(data, detail):
        parts.append(f"== {title} ==\n\n{text}")
    return fit("\n".join(parts))


def report_json(paths: Sequence[Path], progress: Stages | None = None) -> dict:
    """:func:`study_json` of the capture runs under ``paths`` (as :func:`build_report`)."""
    data = Study(study_runs(paths), progress=progress)
    return {"data": [str(p) for p in paths], **study_json(data)}


def _latency_json(data: Study) -> dict[str, object]:
    """The latency rows the report prints (``to_json``), or why there are none."""
    from analysis.report.compare import to_json

    if isinstance(data.latency, str):
        return {"metric": _DECIDING, "rows": [], "note": data.latency.strip()}
    return {"metric": _DECIDING, "rows": to_json(decided(data.latency))}


def study_json(data: Study) -> dict:
    """The report's content for scripts (frames and dataclasses, for
    :func:`analysis.report.json_output.dumps`): the runs with their provenance, the latency
    rows as the report decides them (as ``mmlab compare --json``), the Ops comparison
    (as ``mmlab compare-vmstat --json``), throttling per run (``run_throttle_table``), its
    fits per run and group (:func:`~analysis.report.throttle_fits.run_fit_json`) and
    every traced iteration's analysis (as ``mmlab stalls --json``, with ``run`` and
    ``iteration``)."""
    return {
        "runs": [
            {"name": run.name, "path": str(run.path), "iterations": len(run.iterations)}
            for run in data.runs
        ],
        "provenance": data.provenance,
        "runs_differ": data.differences,
        "settings_differ": [{"setting": k, "values": list(v)} for k, v in data.settings],
        "latency": _latency_json(data),
        "vmstat": comparison_json(data.ops),
        "throttle": data.throttle,
        "throttle_fits": [run_fit_json(f) for f in data.fits],
        "stalls": [
            {"run": run.name, "iteration": index, **analysis_json(analysis)}
            for run, index, analysis in data.analyses
        ],
    }
