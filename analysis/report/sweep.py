"""What ``mmlab sweep`` and ``mmlab sweep-notebook`` print: a model sweep's summary (and
rows), and the index of a notebook sweep (:func:`analysis.notebooks.sweep.index_table`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import polars as pl

from analysis.report.table import Column, Table

__all__ = ["SweepSummary", "format_index", "format_sweep", "sweep_json"]


class SweepSummary(Protocol):
    """What a model sweep says of itself (``analysis.models.sweep.SweepResult``): the
    renderer needs no more, and imports no model."""

    model: str
    table: Path
    points: int
    computed: int
    resumed: int


def format_sweep(result: SweepSummary) -> str:
    """How many points were evaluated now or found done, and where the table is."""
    return (
        f"sweep {result.model}: {result.points} points "
        f"({result.computed} computed, {result.resumed} already done)\n"
        f"table: {result.table}"
    )


def sweep_json(result: SweepSummary, rows: Sequence[dict[str, object]]) -> dict[str, object]:
    """The summary with the table's ``rows`` (a field a row does not have is null)."""
    return {
        "model": result.model,
        "table": str(result.table),
        "points": result.points,
        "computed": result.computed,
        "resumed": result.resumed,
        "rows": list(rows),
    }


def format_index(index: pl.DataFrame) -> str:
    """The index as a Markdown table (what ``index.md`` holds, the table model's Markdown
    form; a parameter of 0 is printed, a missing one is ``-``); errors on lines below."""
    shown = [c for c in index.columns if c not in {"name", "ipynb", "error"}]

    def cell(column: str, value: object) -> str | None:
        if column == "html" and value:
            return f"[html]({Path(str(value)).name})"
        return None if value is None or value == "" else str(value)

    rows = [[cell(c, row[c]) for c in shown] for row in index.iter_rows(named=True)]
    failures = [f"- {r['name']}: {r['error']}" for r in index.iter_rows(named=True) if r["error"]]
    ok = index.filter(pl.col("status") == "ok").height
    notes = [f"{ok} of {index.height} points executed.", *failures]
    return Table([Column(c, left=True) for c in shown], rows, notes=notes).markdown()
