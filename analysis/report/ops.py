"""Text tables for vmstat Ops rows, in the shape kernel developers paste from mmtests.

Both tables fit 80 columns (two runs for the comparison, more in pairwise blocks). Page
counts are in pages unless the label says otherwise. A missing value prints ``-`` with a
footnote saying why, instead of a misleading number.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import polars as pl

from analysis.metrics.compare import Comparison, RowSummary
from analysis.metrics.ops import ABSENT, CONTEXTS, OpsReport, OpsRow
from analysis.report.json_output import jsonable
from analysis.report.table import Column, Footnotes, Table, wrapped
from analysis.report.units import PLAIN, Scale, common_scale, fixed, percent
from analysis.study.vmstat import VmstatOps

__all__ = [
    "comparison_json",
    "display_label",
    "format_comparison",
    "format_intervals",
    "format_ops",
    "format_vmstat",
    "ops_json",
    "row_scale",
    "run_json",
    "vmstat_json",
]

# Units that the label does not already make plain.
_SHOWN_UNITS = {"pages/s", "KiB", "MiB", "GiB", "objects", "huge pages", "model units"}
_LABEL = Column(width=30, left=True)
# A run's mean (with ± sd below) and its % change column: 24 columns with separators.
_MEAN, _CHANGE = Column(width=12), Column(width=10)
_NO_CHANGE = "no % change: the first run's mean is 0"


def display_label(label: str, unit: str) -> str:
    """``Kswapd velocity`` → ``Kswapd velocity pages/s``; pages and % stay implicit."""
    return f"{label} {unit}" if unit in _SHOWN_UNITS else label


def row_scale(cells: Sequence[RowSummary]) -> Scale:
    """The one scale of an Ops row across runs (k, M for counts; each mean is then rounded
    at its own sd), as the report and the paper print it; a count without an sd (one
    iteration) is exact and keeps its own unit, printed whole."""
    if any(c.sd is not None for c in cells):
        return common_scale([c.mean for c in cells], cells[0].unit)
    return Scale(cells[0].unit)


def _absent(rows: list[OpsRow]) -> list[str]:
    return [r.label for r in rows if r.note.startswith(ABSENT)]


def _page_line(sizes: set[int | None]) -> str:
    """What one page is: it differs between kernels (64 KiB on ppc64le, 4 KiB on x86)."""
    if None in sizes:
        return "Page size unknown: no kernel config saved with the capture."
    kib = ", ".join(f"{b // 1024} KiB" for b in sorted(sizes))
    return f"Pages are {kib} (kernel config)." if len(sizes) == 1 else f"Page sizes differ: {kib}."


def format_ops(report: OpsReport) -> str:
    """One capture's Ops table: value and footnoted reason where there is none."""
    elapsed = report.elapsed
    when = f"{elapsed.seconds:.2f} s" if elapsed.seconds is not None else "unknown"
    lines = [f"vmstat Ops: {report.source}", f"elapsed {when} ({elapsed.source})"]
    lines += [_page_line({report.page_bytes}), ""]
    notes = Footnotes()
    absent = _absent(list(report.rows))
    rows = [
        (
            f"Ops {display_label(row.label, row.unit)}",
            PLAIN.text(row.value),
            notes.mark(row.note) if row.value is None else "",
        )
        for row in report.rows
        if row.label not in absent
    ]
    columns = [Column(width=34, left=True), Column(width=15), Column(left=True)]
    lines += Table(columns, rows).text()
    lines += ["", *notes.lines()]
    lines += wrapped(f"Not in this kernel's vmstat: {', '.join(absent)}." if absent else "")
    for reset in report.resets:
        lines += wrapped(f"Counter went down: {reset}")
    return "\n".join(lines).rstrip() + "\n"


def format_comparison(cmp: Comparison) -> str:
    """Runs side by side: mean over iterations, the % change vs the first run (positive
    = better as in mmtests) and which way is better; ± sample standard deviation on the
    line below. Rows without a value in any iteration, or zero in all, are named once
    below the table with the reason.

    Two runs fit 80 columns; with more, each further run gets its own block beside the
    first run, as one would paste them pairwise into a reply."""
    reports = [rep for reps in cmp.reports for rep in reps]
    # A row is left out only when no iteration of any run has its counters.
    absent = set.intersection(*(set(_absent(list(rep.rows))) for rep in reports))
    labels = list(dict.fromkeys(r.label for r in cmp.rows))
    zero = [
        label for k, label in enumerate(labels) if all(rep.rows[k].value == 0 for rep in reports)
    ]
    # No value in any iteration of any run: the first iteration's note says why.
    undefined = {
        label: reports[0].rows[k].note
        for k, label in enumerate(labels)
        if label not in absent and all(rep.rows[k].value is None for rep in reports)
    }
    hidden = absent | set(zero) | set(undefined)
    shown = [(k, label) for k, label in enumerate(labels) if label not in hidden]
    notes = Footnotes()
    blocks = [cmp.runs] if len(cmp.runs) <= 2 else [(cmp.runs[0], r) for r in cmp.runs[1:]]
    lines: list[str] = []
    for runs in blocks:
        lines += [*_block(cmp, runs, shown, notes), ""]
    lines += [
        *wrapped(
            "Mean over iterations, ± sample sd (n-1) below; % change vs the first run, "
            "positive = better in the direction shown (as in mmtests). Pages unless "
            "stated. No significance test here: a change within the ± spread of either "
            "run is not evidence of a difference.",
            indent="",
        ),
        *notes.lines(),
    ]
    lines.append(_page_line({rep.page_bytes for rep in reports}))
    by_reason: dict[str, list[str]] = {}
    for label, why in undefined.items():
        by_reason.setdefault(why, []).append(label)
    for why, names in by_reason.items():
        lines += wrapped(f"Omitted, no value in any iteration ({why}): {', '.join(names)}.")
    lines += wrapped(f"Omitted, zero in every iteration: {', '.join(zero)}." if zero else "")
    lines += wrapped(f"Not in this kernel's vmstat: {', '.join(sorted(absent))}." if absent else "")
    return "\n".join(lines) + "\n"


def _block(
    cmp: Comparison, runs: tuple[str, ...], shown: list[tuple[int, str]], notes: Footnotes
) -> list[str]:
    """The table lines of ``runs`` (a subset of ``cmp.runs``, first run first)."""
    reports = [cmp.reports[cmp.runs.index(run)] for run in runs]
    # One run (``mmlab vmstat RUN``) has no change column.
    pair = len(runs) > 1
    rows = [["Iterations", *(str(len(r)) for r in reports), *([""] if pair else []), ""]]
    for k, label in shown:
        cells = [cmp.row(label, run) for run in runs]
        why = next(
            (rep.rows[k].note for reps in reports for rep in reps if rep.rows[k].value is None), ""
        )
        scale = row_scale(cells)
        spread = any(c.sd is not None for c in cells)
        row = [display_label(label, scale.unit)]
        for i, cell in enumerate(cells):
            mean = scale.text(cell.mean, cell.sd)
            sd = "" if cell.sd is None else "\n" + scale.uncertainty(cell.sd)
            row.append(mean + (sd if spread else ""))
            if i == 0:
                continue
            # A cell without a mean carries the footnote in its % slot.
            if cell.mean is None:
                row.append(notes.mark(why))
            elif cell.change_pct is None:
                row.append(notes.mark(_NO_CHANGE))
            else:
                # Three digits, at most two decimals: a % of two means with an sd each.
                row.append(f"({percent(cell.change_pct):>7}%)")
        if cells[0].mean is None:
            row[1] += " " + notes.mark(why)
        row.append(cells[0].better)
        rows.append(row)
    columns = [
        _LABEL,
        *(_MEAN for _ in runs),
        *([_CHANGE] if pair else []),
        Column(width=6, left=True),
    ]
    # Run names as span titles over label + base mean and new mean + change (23 columns),
    # cut from the start when longer (they differ at the end).
    spans = [(runs[0], 2), *([(runs[1], 2)] if pair else []), ("better", 1)]
    return Table(columns, rows, spans=spans).text()


def format_intervals(series: pl.DataFrame) -> str:
    """Per-interval rows of a vmstat monitor log, contexts that never scanned left out."""
    contexts = [ctx for ctx in CONTEXTS if series[f"{ctx} pages scanned"].fill_null(0).sum() > 0]
    columns = [Column("t_s", 8), Column("dt_s", 5)]
    for ctx in contexts:
        columns += [Column(f"{ctx[:6]} scan", 11), Column("reclaim", 8), Column("eff%", 5)]
    rows = []
    for row in series.iter_rows(named=True):
        cells = [f"{row['t_s'] or 0:.1f}", f"{row['dt_s'] or 0:.1f}"]
        for ctx in contexts:
            cells += [
                f"{row[f'{ctx} pages scanned'] or 0:.0f}",
                f"{row[f'{ctx} pages reclaimed'] or 0:.0f}",
                fixed(row[f"{ctx} efficiency %"], 1),
            ]
        rows.append(cells)
    return "\n".join(
        ["Per interval (pages; eff% = reclaimed/scanned):", *Table(columns, rows).text()]
    )


def ops_json(report: OpsReport, series: pl.DataFrame | None = None) -> dict:
    """One capture's Ops rows by label (values, units, which way is better, why missing),
    with the per-interval rows when ``series`` is given."""
    obj = {
        "source": report.source,
        "elapsed_s": report.elapsed.seconds,
        "elapsed_source": report.elapsed.source,
        "page_bytes": report.page_bytes,
        "metrics": {r.label: r.value for r in report.rows},
        "units": {r.label: r.unit for r in report.rows},
        "better": {r.label: r.better for r in report.rows},
        "notes": {r.label: r.note for r in report.rows if r.note},
        "counter_resets": [str(r) for r in report.resets],
    }
    if series is not None:
        obj["intervals"] = series
    return jsonable(obj)


def run_json(source: str, cmp: Comparison) -> dict:
    """One run's Ops rows over its iterations (the first run of ``cmp``): mean, sd and n
    by label, and every iteration's own rows."""
    rows = [r for r in cmp.rows if r.run == cmp.runs[0]]
    reports = cmp.reports[0]
    elapsed = [rep.elapsed.seconds for rep in reports]
    return jsonable(
        {
            "source": source,
            "run": cmp.runs[0],
            "metrics": {r.label: r.mean for r in rows},
            "stddev": {r.label: r.sd for r in rows},
            "n": {r.label: r.n for r in rows},
            "units": {r.label: r.unit for r in rows},
            "iterations": [ops_json(rep) for rep in reports],
            # Each iteration has its own elapsed time (in "iterations"); this is their mean.
            "elapsed_s": statistics.fmean(elapsed) if None not in elapsed else None,
            "elapsed_source": ", ".join(sorted({rep.elapsed.source for rep in reports})),
        }
    )


def comparison_json(cmp: Comparison) -> dict:
    """Every row of every run: iteration values, mean, sd, n and % change vs the first."""
    return jsonable(
        {
            "runs": cmp.runs,
            "rows": [
                {
                    "label": r.label,
                    "unit": r.unit,
                    "better": r.better,
                    "run": r.run,
                    "values": r.values,
                    "mean": r.mean,
                    "sd": r.sd,
                    "n": r.n,
                    "change_pct": r.change_pct,
                }
                for r in cmp.rows
            ],
            "elapsed": {
                run: [{"s": rep.elapsed.seconds, "source": rep.elapsed.source} for rep in reps]
                for run, reps in zip(cmp.runs, cmp.reports, strict=True)
            },
            "page_bytes": {
                run: [rep.page_bytes for rep in reps]
                for run, reps in zip(cmp.runs, cmp.reports, strict=True)
            },
        }
    )


def format_vmstat(ops: VmstatOps) -> str:
    """``mmlab vmstat``'s text: a run's iterations summarised, or one Ops table with its
    per-interval rows when there are."""
    if ops.comparison is not None:
        return format_comparison(ops.comparison)
    assert ops.report is not None
    if ops.intervals is not None:
        return f"{format_ops(ops.report)}\n{format_intervals(ops.intervals)}\n"
    return format_ops(ops.report)


def vmstat_json(ops: VmstatOps) -> dict:
    """``mmlab vmstat --json``: :func:`run_json` of a run, else :func:`ops_json`."""
    if ops.comparison is not None:
        return run_json(ops.source, ops.comparison)
    assert ops.report is not None
    return ops_json(ops.report, ops.intervals)
