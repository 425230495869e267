"""The index of a notebook sweep (:func:`analysis.notebooks.sweep.index_table`) as text."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from analysis.report.table import Column, Table

__all__ = ["format_index"]


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
