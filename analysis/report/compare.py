"""``mmlab compare`` output: mmtests-shaped text, a Markdown table, or JSON rows.

Text follows mmtests' comparison layout (rows Amean, Stddev, CoeffVar, Min, percentiles,
BAmean, Max; change in % with positive = better, ``analysis.metrics.compare.change_pct``)
with two differences: the percentile rows are Harrell–Davis estimates averaged over runs
(``HD-50`` ...), and the significance marker ``*  12.34%*`` is placed by mmlab's verdict —
on the row of the deciding metric only, when that row is ``improved`` or ``regressed`` —
never by mmtests' rules. Below each row block, one paragraph per kernel says what can and
cannot be concluded. Two kernels fit in 80 columns; more are printed as pairwise blocks.
Values are mmtests' 4 decimals (compare-mmtests.pl's own figures), or with ``scaled`` one
unit per row block and three significant digits (``units.common_scale``), as the mail
report prints them. Estimates and changes with a CI are rounded where the CI is.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

import polars as pl

from analysis.metrics.compare import change_pct
from analysis.metrics.ops import HIGHER, LOWER
from analysis.report.json_output import undefined_as_null
from analysis.report.levels import level_notes
from analysis.report.table import Column, Table
from analysis.report.text import WIDTH, fit
from analysis.report.units import (
    Scale,
    change,
    common_scale,
    interval,
    percent,
    sig,
    up_down,
)
from analysis.stats.bootstrap import Interval
from analysis.stats.significance import (
    DISAGREE,
    IMPROVED,
    NO_CHANGE,
    NOT_COMPARED,
    REGRESSED,
    RowComparison,
    mmtests_summary,
    runs_of,
)
from analysis.study.compare import KernelComparison

__all__ = [
    "DECIDING_ROW",
    "compare_json",
    "compare_stderr",
    "format_compare",
    "format_markdown",
    "format_mmtests",
    "mde_text",
    "mde_words",
    "signed_change",
    "to_json",
]

# mmtests' CoeffVar: sd / mean in %, never scaled with the row's unit.
_PERCENT = Scale("%")
DECIDING_ROW = {"mean": "Amean", "p50": "HD-50", "p90": "HD-90", "p99": "HD-99"}
# mmtests' Stddev and CoeffVar are lower-is-better whatever the row.
_ALWAYS_LOWER = frozenset({"Stddev", "CoeffVar"})


def _mmtests(value: float) -> str:
    """compare-mmtests.pl's own figure (tests check it to 0.006): 4 decimals below 1e7."""
    return f"{value:.{0 if abs(value) >= 1e7 else 4}f}"


def _ci(iv: Interval | None, scale: Scale | None = None) -> str:
    """``estimate [low, high] unit`` (95 % CI) rounded where the CI is, or ``estimate
    unit (no CI)``."""
    if iv is None:
        return "n/a"
    scale = scale or Scale("")
    u = f" {scale.unit}" if scale.unit else ""
    if not math.isfinite(iv.low):
        return f"{scale.text(iv.estimate)}{u} (no CI)"
    return f"{interval(iv.estimate, iv.low, iv.high, scale)}{u} (95% CI)"


def signed_change(r: RowComparison, better_positive: bool) -> tuple[float | None, tuple | None]:
    """The change and its CI in one output's sign: new/base − 1 as computed, or flipped so
    that positive = better (mmtests' sign)."""
    flip = better_positive and not r.higher_is_better
    if r.change_kind == "zero share":
        # More zero samples is the better direction where lower values are.
        flip = better_positive and r.higher_is_better
    if r.change is None:
        return None, None
    if not flip:
        return r.change, r.change_ci
    ci = (-r.change_ci[1], -r.change_ci[0]) if r.change_ci else None
    return -r.change, ci


_KIND = {"relative": "%", "absolute": "", "zero share": " pp"}


def _pct_ci(r: RowComparison, better_positive: bool = False) -> str:
    value, ci = signed_change(r, better_positive)
    if value is None:
        return "change n/a"
    unit = _KIND[r.change_kind] or f" {r.unit}"
    if ci is None:
        return f"{change(value, unit=unit)} (no CI)"
    return f"{change(value, *ci, unit=unit)} (95% CI)"


def _beside(r: RowComparison) -> str:
    """The p that did not decide, as a check beside the deciding one."""
    if r.p_welch is None or r.p_permutation is None:
        return ""
    kind = "exact" if r.splits == math.comb(sum(r.tested_runs), r.tested_runs[1]) else "random"
    perm = f"permutation p {sig(r.p_permutation)}, {kind} over {r.splits} splits"
    if r.disagree:
        return f" (Welch's t p {sig(r.p_welch)}, {perm})"
    return f" ({perm}, within {DISAGREE:g}×)"


# A zero-heavy row's estimate: its share of zero samples, in %.
_ZEROS = Scale("% zeros")


def _percent_of(iv: Interval | None) -> Interval | None:
    """A share's interval in % (0.25 → 25)."""
    if iv is None:
        return None
    return Interval(100 * iv.estimate, 100 * iv.low, 100 * iv.high, 100 * iv.se, iv.df)


def _what(r: RowComparison) -> str:
    stat = DECIDING_ROW[r.metric]
    if r.change_kind == "zero share":
        return "share of zero samples per run, change"
    if r.change_kind == "absolute":
        return f"{stat} new − base"
    return f"{stat} change"


def mde_text(r: RowComparison) -> str:
    """The minimum detectable effect up and down (:func:`~analysis.report.units.up_down`);
    ``-`` where the change is not relative."""
    return "-" if r.mde is None else up_down(r.mde)


def mde_words(r: RowComparison) -> str:
    """What "no change shown" means in size: the smallest change the runs detect."""
    if r.mde is None or r.verdict != NO_CHANGE:
        return ""
    return f"these runs detect {mde_text(r)} or more with 80% power"


def _paragraph(r: RowComparison, scale: Scale) -> str:
    """What one comparison shows, in words (wrapped to 80 columns); changes in mmtests'
    sign (positive = better), as the table above it; the shift in ``scale``."""
    if r.verdict == NOT_COMPARED:
        text = f"{r.kernel}: not compared: {r.reason}."
    else:
        why = "; ".join(x for x in (r.reason, mde_words(r)) if x)
        text = f"{r.kernel}: {r.verdict}" + (f" ({why})" if why else "") + ". "
        text += f"{_what(r)} {_pct_ci(r, True)}, {r.runs} vs {r.base_runs} runs"
        if r.p is not None:
            text += f"; p {sig(r.p)} by {r.method}{_beside(r)}; q {sig(r.q)} (BH over "
            text += f"{r.family_rows} {r.family} row{'s' if r.family_rows > 1 else ''})"
        text += "."
        if r.hl_shift is not None and r.change_kind != "zero share":
            hl = r.hl_shift
            if not r.higher_is_better:
                hl = Interval(-hl.estimate, -hl.high, -hl.low, hl.se, hl.df)
            text += f" Hodges–Lehmann shift of run medians {_ci(hl, scale)}."
        if r.needed_runs is not None:
            among = f" among {r.family_rows} rows" if r.family_rows > 1 else ""
            text += (
                f" Design: about {r.needed_runs} runs per kernel would detect a ±{r.effect:g}%"
                f" change (--effect){among} with 80% power by Welch's t, given the run-to-run"
                f" sd of log {r.metric} seen here ({sig(r.run_sd)})."
            )
    if r.notes:
        text += " Note: " + "; ".join(r.notes) + "."
    return textwrap.fill(text, WIDTH, initial_indent="  ", subsequent_indent="    ")


def _block(table: pl.DataFrame, r: RowComparison, scaled: bool) -> list[str]:
    """One row (e.g. mmap-4) of the base and one new kernel: summary lines + verdict;
    with ``scaled``, one unit for the block's values (CoeffVar stays a %)."""
    better = HIGHER if r.higher_is_better else LOWER
    if r.verdict == NOT_COMPARED:
        return [f"{r.row} ({r.unit}; {better} is better)", _paragraph(r, Scale(r.unit))]
    base = mmtests_summary(runs_of(table, r.row, r.base), r.higher_is_better)
    new = mmtests_summary(runs_of(table, r.row, r.kernel), r.higher_is_better)
    values = [v for s in (base, new) for label, v in s.items() if label != "CoeffVar"]
    scale = common_scale(values, r.unit) if scaled else Scale(r.unit)
    lines = [f"{r.row} ({scale.unit}; {better} is better)"]
    lines.append(" " * 12 + "".join(f"{n[-23:]:>24}" for n in (r.base, r.kernel)))

    def cell(label: str, value: float | None) -> str:
        return cells(label, value, None)[0]

    def cells(label: str, value: float | None, other: float | None) -> tuple[str, str]:
        """``value`` and the new kernel's ``other``, 12 columns each; scaled, with enough
        digits that a difference between them shows (34.307 vs 34.267, not 34.3 twice)."""
        pair = [v if v is not None and math.isfinite(v) else None for v in (value, other)]
        if not scaled:
            texts = tuple("-" if v is None else _mmtests(v) for v in pair)
        else:
            texts = (_PERCENT if label == "CoeffVar" else scale).pair(*pair)
        return f"{texts[0]:>12}", f"{texts[1]:>12}"

    # A zero-heavy row is decided on its zero share, which no summary row shows.
    deciding = DECIDING_ROW[r.metric] if r.change_kind != "zero share" else None
    for label, value in base.items():
        if label not in new:  # the new kernel's runs have one sample each: no quantiles
            lines.append(
                f"{label:<12}{cell(label, value)} (   0.00%){cell(label, None)} ({'-':>8})"
            )
            continue
        pct = change_pct(value, new[label], LOWER if label in _ALWAYS_LOWER else better)
        if pct is None or not math.isfinite(pct):
            shown = f"{'-':>8}"
        else:
            shown = f"{percent(pct) if scaled else f'{pct:.2f}':>7}%"
        marked = label == deciding and r.verdict in (IMPROVED, REGRESSED)
        base_text, new_text = cells(label, value, new[label])
        line = f"{label:<12}{base_text} (   0.00%){new_text} "
        line += f"*{shown}*" if marked else f"({shown})"
        if label == deciding and r.q is not None:
            line += f"  q {sig(r.q)}"
        lines.append(line)
    return [*lines, _paragraph(r, scale)]


def format_mmtests(
    table: pl.DataFrame, results: Sequence[RowComparison], scaled: bool = False
) -> str:
    """mmtests-shaped text: per row, the base against each new kernel in turn (80
    columns: two kernels side by side, never more); mmtests' 4 decimals, or with
    ``scaled`` one unit per row block and three significant digits."""
    if not results:
        return "No rows to compare.\n"
    r0 = results[0]
    out = [
        f"Comparison of {DECIDING_ROW[r0.metric]} (run-level estimate), base {r0.base}.",
        "Marker *x%*: mmlab verdict improved/regressed (BH q < level and 95% CI of the",
        "change excludes 0). Every % and change here: positive = better (mmtests' sign).",
        "",
    ]
    for row in dict.fromkeys(r.row for r in results):
        for r in results:
            if r.row == row:
                out += [*_block(table, r, scaled), ""]
    return "\n".join(out)


def format_markdown(results: Sequence[RowComparison]) -> str:
    """One Markdown table of every comparison (the table model's Markdown form), then
    the notes."""
    columns = (
        Column("row", left=True),
        Column("unit", left=True),
        Column("kernel", left=True),
        Column("runs", left=True),
        Column("estimate [95% CI]"),
        Column("change [95% CI]"),
        Column("p"),
        Column("q"),
        Column("verdict", left=True),
    )
    rows = []
    for r in results:
        verdict = f"{r.verdict}: {r.reason}" if r.reason else r.verdict
        if r.needed_runs is not None:
            verdict += f" (design: ≈{r.needed_runs} runs for ±{r.effect:g}%)"
        rows.append(
            (
                r.row,
                r.unit,
                r.kernel,
                f"{r.runs} vs {r.base_runs}",
                _ci(_percent_of(r.estimate), _ZEROS)
                if r.change_kind == "zero share"
                else _ci(r.estimate),
                _pct_ci(r),
                "–" if r.p is None else sig(r.p),
                "–" if r.q is None else sig(r.q),
                verdict,
            )
        )
    methods = sorted({r.method for r in results if r.method})
    notes = (
        f"Base: {results[0].base if results else '-'}. p by: "
        + "; ".join(methods)
        + " (both tests' p, p_welch and p_permutation, in --json)",
        "Sign: change: new/base − 1 in %; new − base for 'pp' (zero share) and unit changes.",
        *(f"- {r.row} {r.kernel}: {'; '.join(r.notes)}" for r in results if r.notes),
    )
    return Table(columns, tuple(rows), notes=notes).markdown()


def _interval(iv: Interval | None) -> dict | None:
    if iv is None:
        return None
    return {
        "estimate": iv.estimate,
        "low": undefined_as_null(iv.low),
        "high": undefined_as_null(iv.high),
    }


def to_json(results: Sequence[RowComparison]) -> list[dict]:
    """The rows as the issue lists them (row, unit, kernel, runs, samples, estimate,
    change, change_ci, p, q, verdict, method, needed_runs) and the supporting figures;
    ``change`` is 100·(new/base − 1), in % (not mmtests' sign-flipped %), for
    ``change_kind`` "relative", new − base otherwise (row unit, or percentage points of
    the zero share); ``p`` is the deciding p, ``decided_by`` the test that gave it
    ("Welch t" or "permutation"), ``p_welch`` and ``p_permutation`` both tests' p;
    ``runs_set_aside`` the base and new run (1-based, in run order) the change and the
    tests left out, or null; ``needed_runs`` is the design calculation for
    ``design_effect_pct``; ``mde_pct`` the minimum detectable effect at the runs tested
    (% either way, 80 % power at the row's level; null where the change is not relative)."""
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
            "change": undefined_as_null(r.change),
            "change_ci": list(r.change_ci) if r.change_ci else None,
            "change_kind": r.change_kind,
            "hodges_lehmann_shift": _interval(r.hl_shift),
            "zero_share": list(r.zero_share) if r.zero_share else None,
            "family": r.family,
            "family_rows": r.family_rows,
            "p": r.p,
            "q": r.q,
            "p_welch": r.p_welch,
            "p_permutation": r.p_permutation,
            "permutation_splits": r.splits,
            "decided_by": r.decided_by or None,
            "tests_disagree": r.disagree,
            "runs_set_aside": [i + 1 for i in r.set_aside] if r.set_aside else None,
            "verdict": r.verdict,
            "reason": r.reason,
            "method": r.method,
            "needed_runs": r.needed_runs,
            "design_effect_pct": r.effect,
            "mde_pct": None if r.mde is None else 100 * r.mde,
            "run_sd_log": r.run_sd,
            "notes": list(r.notes),
        }
        for r in results
    ]


def compare_json(cmp: KernelComparison) -> list[dict]:
    """``mmlab compare --json``: :func:`to_json`'s rows, each with where its unit comes from,
    the emulated-platform notes of its two kernels, their units of replication and the
    warm-ups found in its row."""
    rows = to_json(cmp.results)
    for row in rows:  # a table states its units itself: no source to name
        pair = (row["base"], row["kernel"])
        row["unit_source"] = cmp.unit_source(row["row"])
        row["platform"] = [p for p in cmp.platforms if p.split(" ", 1)[0] in pair]
        row["unit_of_replication"] = {k: cmp.units.unit.get(k) for k in pair}
        row["warmup"] = [w for w in cmp.warmups if w.kernel in pair and row["row"] in w.rows]
    return rows


def compare_stderr(cmp: KernelComparison) -> str:
    """What ``mmlab compare`` says on stderr: each row family's unit source, each input it
    skipped."""
    units = cmp.loaded.units if cmp.loaded else ()
    lines = [f"mmlab compare: unit of {u}" for u in units]
    lines += [f"mmlab compare: skipped {line}" for line in cmp.skipped]
    return "".join(f"{line}\n" for line in lines)


def format_compare(cmp: KernelComparison, markdown: bool = False) -> str:
    """``mmlab compare``'s text: the emulated-platform and replication notes (above the
    table a reader pastes), then the mmtests-shaped text or one Markdown table."""
    notes = "".join(f"{fit(f'NOTE: {p}')}\n" for p in cmp.platforms)
    notes += level_notes(cmp.units.notes, list(cmp.warmups))
    if markdown:
        return notes + format_markdown(cmp.results)
    return notes + fit(format_mmtests(cmp.table, cmp.results))
