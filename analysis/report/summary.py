"""The report's opening summary, about 25 lines (:data:`MAX_SETTINGS` settings and
:data:`MAX_VERDICTS` verdicts at most; long values wrap): what the runs had in
common, every capture setting and provenance field that differed between them, the
latency verdicts (the ``compare_table`` results the latency section prints), and lost
trace events.

A setting that differed is a possible cause of any change below; the reader sees it
before any number. Only :data:`MAX_SETTINGS` settings fit; ``--detail`` lists all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from analysis.report.compare import DECIDING_ROW, mde_text, mde_words, signed_change
from analysis.report.table import Column, Table, wrapped
from analysis.report.units import change, interval, sig
from analysis.stats.significance import NOT_COMPARED
from analysis.study.provenance import Provenance

if TYPE_CHECKING:
    from analysis.stats.bootstrap import Interval
    from analysis.stats.significance import RowComparison

__all__ = [
    "MAX_SETTINGS",
    "MAX_VERDICTS",
    "format_settings",
    "format_summary",
    "verdict_lines",
]

MAX_SETTINGS = 8
MAX_VERDICTS = 6


def _common(rows: Sequence[Provenance]) -> str:
    """Kernel, CONFIG_HZ, machine, memory and memcg where every iteration of every run agrees."""
    fields = (
        ("kernel", {r.kernel or "unknown" for r in rows}),
        ("CONFIG_HZ", {str(r.config_hz or "unknown") for r in rows}),
        ("", {r.machine or "machine not recorded" for r in rows}),
        (
            "",
            {
                f"{r.memory_kib / 1048576:.1f} GiB" if r.memory_kib else "memory unknown"
                for r in rows
            },
        ),
        ("memcg", {r.cgroup or "not recorded" for r in rows}),
    )
    same = [f"{label} {v}".strip() for label, (v, *more) in fields if not more]
    return "All runs: " + "; ".join(same) + "." if same else ""


def format_settings(
    runs: Sequence[str], differ: Sequence[tuple[str, tuple[str, ...]]], limit: int | None = None
) -> list[str]:
    """The table of settings that differ (one column per run), the first ``limit`` only."""
    shown = differ if limit is None else differ[:limit]
    columns = [Column("setting", left=True), *(Column(run, left=True) for run in runs)]
    lines = Table(columns, [[name, *values] for name, values in shown]).text(indent=2)
    if len(shown) < len(differ):
        lines.append(f"  ... and {len(differ) - len(shown)} more (--detail lists them)")
    return lines


def _estimate(iv: Interval | None, zero_share: bool) -> str:
    """The estimate alone, rounded where its CI is (the paper's rule); a zero share in %."""
    if iv is None:
        return "-"
    if zero_share:
        ends = [100 * x for x in (iv.estimate, iv.low, iv.high)]
        return interval(*ends, ends=False) + "% zeros"
    return interval(iv.estimate, iv.low, iv.high, ends=False)


def _change(r: RowComparison) -> str:
    """The change with its 95 % CI in the report's one sign (positive = better, as the
    mmtests-shaped tables below), rounded where the CI is (the paper's rule); a zero-heavy
    row's in points of its zero share, never its HD-50's."""
    value, ci = signed_change(r, better_positive=True)
    unit = {"zero share": " pp", "absolute": f" {r.unit}"}.get(r.change_kind, "%")
    return change(value, *(ci or (None, None)), unit=unit)


def verdict_lines(results: Sequence[RowComparison]) -> list[str]:
    """One line per compared latency row and new run (the first :data:`MAX_VERDICTS`): the
    deciding statistic of base and new, the change with its CI, q and the verdict
    (``compare_table``'s, not recomputed), then the size of each "no change shown": the
    minimum detectable effect at its runs; rows not compared are counted, not listed."""
    compared = [r for r in results if r.verdict != NOT_COMPARED]
    if not compared:
        return [f"No latency row could be compared ({len(results)} rows; see Workload latency)."]
    left = len(results) - len(compared[:MAX_VERDICTS])
    results, r0 = compared[:MAX_VERDICTS], compared[0]
    news = list(dict.fromkeys(r.kernel for r in results))
    columns = [
        Column("row", left=True),
        Column("unit", left=True),
        Column(r0.base),
        Column(news[0] if len(news) == 1 else "new"),
        Column("change [95% CI]"),
        Column("q"),
        Column("verdict", left=True),
    ]
    rows = [
        [
            r.row if len(news) == 1 else f"{r.row} {r.kernel}",
            r.unit,
            _estimate(r.base_estimate, r.change_kind == "zero share"),
            _estimate(r.estimate, r.change_kind == "zero share"),
            _change(r),
            sig(r.q),
            r.verdict,
        ]
        for r in results
    ]
    head = (
        f"Verdicts: {DECIDING_ROW[r0.metric]} of each run, Welch's t over runs (permutation "
        "p beside it), Benjamini-Hochberg q; change: positive = better, as every % below:"
    )
    more = [f"  {left} more rows, not compared or not shown: see Workload latency."] if left else []
    nulls = [f"{r.row if len(news) == 1 else f'{r.row} {r.kernel}'} {mde_text(r)}"
             for r in results if mde_words(r)]  # fmt: skip
    if nulls:
        more += wrapped(
            "No change shown is not no change: these runs detect, with 80% power at the "
            f"verdicts' level, changes of at least {', '.join(nulls)}.",
            "    ",
        )
    return [head, *Table(columns, rows).text(indent=2), *more]


def format_summary(
    provenance: Sequence[Provenance],
    differences: Sequence[str],
    settings: Sequence[tuple[str, tuple[str, ...]]],
    latency: Sequence[RowComparison] | str,
    lost_events: int,
) -> str:
    """The summary: common provenance, what differed (``differences``: the study's
    ``run_differences`` lines; ``settings``: its setting differences), verdicts, lost
    events."""
    runs = list(dict.fromkeys(r.run for r in provenance))
    iterations = ", ".join(
        f"{run} {sum(r.run == run for r in provenance)} iterations" for run in runs
    )
    lines = [f"Runs: {iterations}; base {runs[0]}." if runs else "No runs."]
    if common := _common(provenance):
        lines.append(common)
    differ = list(differences)
    kernels = {run: sorted({r.kernel for r in provenance if r.run == run}) for run in runs}
    if len({tuple(k) for k in kernels.values()}) > 1:
        differ.insert(0, "kernel: " + "; ".join(f"{r} {', '.join(k)}" for r, k in kernels.items()))
    if differ or settings:
        lines.append("Differed between the runs (capture records):")
        lines += [f"  {line}" for line in differ]
        if settings:
            lines += format_settings(runs, settings, MAX_SETTINGS)
    else:
        lines.append("No setting differed between the runs but the kernel.")
    lines += [latency.rstrip("\n")] if isinstance(latency, str) else verdict_lines(latency)
    lines.append(
        f"WARNING: {lost_events} lost trace events (see Warnings)."
        if lost_events
        else "No lost trace events."
    )
    return "\n".join(lines) + "\n"
