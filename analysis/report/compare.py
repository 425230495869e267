"""``mmlab compare`` output: mmtests-shaped text, a Markdown table, or JSON rows.

Text follows mmtests' comparison layout (rows Amean, Stddev, CoeffVar, Min, percentiles,
BAmean, Max; change in % with positive = better, ``analysis.metrics.compare.change_pct``)
with two differences: the percentile rows are Harrell–Davis estimates averaged over runs
(``HD-50`` ...), and the significance marker ``*  12.34%*`` is placed by mmlab's verdict —
on the row of the deciding metric only, when that row is ``improved`` or ``regressed`` —
never by mmtests' rules. Below each row block, one paragraph per kernel says what can and
cannot be concluded. Two kernels fit in 80 columns; more are printed as pairwise blocks.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Sequence

import polars as pl

from analysis.ingest.long_table import runs_of
from analysis.metrics.compare import change_pct
from analysis.metrics.ops import HIGHER, LOWER
from analysis.stats.bootstrap import Interval
from analysis.stats.significance import (
    IMPROVED,
    NOT_COMPARED,
    REGRESSED,
    RowComparison,
    mmtests_summary,
)

__all__ = ["DECIDING_ROW", "format_markdown", "format_mmtests", "to_json"]

DECIDING_ROW = {"mean": "Amean", "p50": "HD-50", "p90": "HD-90", "p99": "HD-99"}
# mmtests' Stddev and CoeffVar are lower-is-better whatever the row.
_ALWAYS_LOWER = frozenset({"Stddev", "CoeffVar"})
WIDTH = 80


# Decimals of one value: mmtests' 4 (compare-mmtests.pl's own figures, which tests check
# to 0.006), or a rule such as the paper's estimate_digits for the mail report.
Digits = Callable[[float], int]


def _mmtests_digits(value: float) -> int:
    return 0 if abs(value) >= 1e7 else 4


def _num(value: float | None, digits: Digits = _mmtests_digits) -> str:
    if value is None or not math.isfinite(value):
        return f"{'-':>12}"
    return f"{value:12.{digits(value)}f}"


def _ci(iv: Interval | None, unit: str = "") -> str:
    if iv is None:
        return "n/a"
    if not math.isfinite(iv.low):
        return f"{iv.estimate:.4g} (no CI){' ' + unit if unit else ''}"
    return f"{iv.estimate:.4g} [{iv.low:.4g}, {iv.high:.4g}]{' ' + unit if unit else ''}"


def _pct_ci(r: RowComparison) -> str:
    if r.change is None:
        return "change n/a"
    if r.change_ci is None:
        return f"{r.change:+.2f}%"
    return f"{r.change:+.2f}% [{r.change_ci[0]:+.2f}, {r.change_ci[1]:+.2f}]"


def _paragraph(r: RowComparison) -> str:
    """What one comparison shows, in words (wrapped to 80 columns)."""
    if r.verdict == NOT_COMPARED:
        text = f"{r.kernel}: not compared: {r.reason}."
    else:
        stat = DECIDING_ROW[r.metric]
        p = f"p {r.p:.3g}" if r.p is not None else "no p"
        q = f"q {r.q:.3g}" if r.q is not None else "no q"
        text = (
            f"{r.kernel}: {r.verdict} ({r.reason}). {stat} new/base−1 {_pct_ci(r)} (95% CI), "
            f"{r.runs} vs {r.base_runs} runs; {p} by {r.method}; {q}. "
            f"Hodges–Lehmann shift of run medians {_ci(r.hl_shift, r.unit)}; "
            f"P(new > base) {_ci(r.superiority)} over pooled samples."
        )
        if r.needed_runs is not None:
            text += f" About {r.needed_runs} runs per kernel would resolve the observed effect."
    if r.notes:
        text += " Note: " + "; ".join(r.notes) + "."
    return textwrap.fill(text, WIDTH, initial_indent="  ", subsequent_indent="    ")


def _block(table: pl.DataFrame, r: RowComparison, digits: Digits) -> list[str]:
    """One row (e.g. mmap-4) of the base and one new kernel: summary lines + verdict."""
    better = HIGHER if r.higher_is_better else LOWER
    lines = [f"{r.row} ({r.unit}; {better} is better)"]
    if r.verdict == NOT_COMPARED:
        return [*lines, _paragraph(r)]
    lines.append(" " * 12 + "".join(f"{n[-23:]:>24}" for n in (r.base, r.kernel)))
    base = mmtests_summary(runs_of(table, r.row, r.base), r.higher_is_better)
    new = mmtests_summary(runs_of(table, r.row, r.kernel), r.higher_is_better)
    deciding = DECIDING_ROW[r.metric]
    for label, value in base.items():
        if label not in new:  # the new kernel's runs have one sample each: no quantiles
            lines.append(f"{label:<12}{_num(value, digits)} (   0.00%){_num(None)} ({'-':>8})")
            continue
        pct = change_pct(value, new[label], LOWER if label in _ALWAYS_LOWER else better)
        cell = f"{pct:7.2f}%" if pct is not None and math.isfinite(pct) else f"{'-':>8}"
        marked = label == deciding and r.verdict in (IMPROVED, REGRESSED)
        line = f"{label:<12}{_num(value, digits)} (   0.00%){_num(new[label], digits)} "
        line += f"*{cell}*" if marked else f"({cell})"
        if label == deciding and r.q is not None:
            line += f"  q {r.q:.3g}"
        lines.append(line)
    return [*lines, _paragraph(r)]


def format_mmtests(
    table: pl.DataFrame, results: Sequence[RowComparison], digits: Digits = _mmtests_digits
) -> str:
    """mmtests-shaped text: per row, the base against each new kernel in turn (80
    columns: two kernels side by side, never more); ``digits(value)`` decimals per value
    (mmtests' 4 unless given)."""
    if not results:
        return "No rows to compare.\n"
    r0 = results[0]
    out = [
        f"Comparison of {DECIDING_ROW[r0.metric]} (run-level estimate), base {r0.base}.",
        "Marker *x%*: mmlab verdict improved/regressed (BH q < level and 95% CI of the",
        "change excludes 0); % sign as mmtests: positive = better.",
        "",
    ]
    for row in dict.fromkeys(r.row for r in results):
        for r in results:
            if r.row == row:
                out += [*_block(table, r, digits), ""]
    return "\n".join(out)


def format_markdown(results: Sequence[RowComparison]) -> str:
    """One Markdown table of every comparison, then the notes."""
    lines = [
        "| row | unit | kernel | runs | estimate [95% CI] | change [95% CI] | p | q | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        p = f"{r.p:.3g}" if r.p is not None else "–"
        q = f"{r.q:.3g}" if r.q is not None else "–"
        verdict = f"{r.verdict}: {r.reason}" if r.reason else r.verdict
        if r.needed_runs is not None:
            verdict += f" (≈{r.needed_runs} runs needed)"
        lines.append(
            f"| {r.row} | {r.unit} | {r.kernel} | {r.runs} vs {r.base_runs} | "
            f"{_ci(r.estimate)} | {_pct_ci(r)} | {p} | {q} | {verdict} |"
        )
    methods = sorted({r.method for r in results if r.method})
    lines += ["", f"Base: {results[0].base if results else '-'}. p by: " + "; ".join(methods)]
    lines += [f"- {r.row} {r.kernel}: {'; '.join(r.notes)}" for r in results if r.notes]
    return "\n".join(lines) + "\n"


def _interval(iv: Interval | None) -> dict | None:
    if iv is None:
        return None
    return {"estimate": iv.estimate, "low": _finite(iv.low), "high": _finite(iv.high)}


def _finite(x: float | None) -> float | None:
    return x if x is None or math.isfinite(x) else None


def to_json(results: Sequence[RowComparison]) -> list[dict]:
    """The rows as the issue lists them (row, unit, kernel, runs, samples, estimate,
    change, change_ci, p, q, verdict, method, needed_runs) and the supporting figures;
    ``change`` is new/base − 1 in % (not mmtests' sign-flipped %)."""
    return [
        {
            "row": r.row,
            "unit": r.unit,
            "kernel": r.kernel,
            "base": r.base,
            "metric": r.metric,
            "higher_is_better": r.higher_is_better,
            "runs": r.runs,
            "base_runs": r.base_runs,
            "samples": r.samples,
            "base_samples": r.base_samples,
            "estimate": _interval(r.estimate),
            "base_estimate": _interval(r.base_estimate),
            "change": _finite(r.change),
            "change_ci": list(r.change_ci) if r.change_ci else None,
            "hodges_lehmann_shift": _interval(r.hl_shift),
            "probability_of_superiority": _interval(r.superiority),
            "p": r.p,
            "q": r.q,
            "verdict": r.verdict,
            "reason": r.reason,
            "method": r.method,
            "needed_runs": r.needed_runs,
            "notes": list(r.notes),
        }
        for r in results
    ]
