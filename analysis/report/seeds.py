"""The seed checks (:mod:`analysis.seeds.checks`) as 80-column text."""

from __future__ import annotations

import textwrap

import polars as pl

__all__ = ["format_checks"]


def format_checks(checks: pl.DataFrame, only: str | None = None) -> str:
    """80-column listing: row, column, mail, mmlab, verdict; each ``why`` below its row."""
    rows = checks if only is None else checks.filter(pl.col("verdict") == only)
    out = [f"{'seed row':<34}{'column':<12}{'mail':>11}{'mmlab':>11} verdict"]
    for r in rows.iter_rows(named=True):
        v = r["mmlab"]
        value = "-" if v is None else f"{v:,.0f}" if abs(v) >= 1e5 else f"{v:.6g}"
        out.append(
            f"{r['seed']} {r['row'][:29]:<30}{r['column'][:11]:<12}{r['mail'][:10]:>11}"
            f"{value[:10]:>11} {r['verdict']}"
        )
        if r["why"] and r["verdict"] != "agrees":
            out += textwrap.wrap(r["why"], 80, initial_indent="    ", subsequent_indent="    ")
    return "\n".join(out) + "\n"
