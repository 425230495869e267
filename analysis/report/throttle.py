"""80-column tables of throttling and reclaim stalls per run, aggregated over iterations
(``run_throttle_table`` of metrics.throttle_runs, ``run_stall_table`` of
metrics.stall_runs). A mean ± sd is rounded at its sd (``units.plus_minus``, as the
paper's ``pm``); a value without an sd has the decimals of :data:`THROTTLE_DIGITS` and
:data:`STALL_DIGITS`, shared with the paper, so both print the same numbers."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from analysis.metrics.throttle import short_reason
from analysis.report.table import Column, Table
from analysis.report.units import plus_minus

__all__ = ["STALL_DIGITS", "THROTTLE_DIGITS", "format_run_stalls", "format_run_throttle"]

# Decimals of a quantity printed without an sd (iterations without a spread, the max),
# shared with the paper's tables (report/paper/build.py).
THROTTLE_DIGITS = {"events": 0, "timeout share": 1, "zero share": 1, "mean delay ms": 1}
STALL_DIGITS = {"count": 0, "summed s": 1, "median ms": 2, "tail ms": 1, "max ms": 0}


def _per_run(table: pl.DataFrame, rows_of: Callable[[pl.DataFrame], list[str]]) -> list[str]:
    """``run (n iterations)`` and the lines ``rows_of`` makes of that run's rows, per run."""
    out: list[str] = []
    for (run,), rows in table.group_by("run", maintain_order=True):
        out += [f"{run} ({rows['iterations'][0]} iterations)", *rows_of(rows), ""]
    return out


def format_run_throttle(table: pl.DataFrame) -> str:
    """One table per run: events per iteration and timeout share (mean ± sd over
    iterations), zero share and mean recorded delay; a note on what the shares mean."""
    if table.is_empty():
        return "No throttle events in any trace.\n"
    d = THROTTLE_DIGITS
    columns = (
        Column("reason", left=True),
        Column("timeout", unit="ms"),
        Column("context", left=True),
        Column("events/iter"),
        Column("timeout", unit="%"),
        Column("zero", unit="%"),
        Column("mean", unit="ms"),
    )

    def rows_of(rows: pl.DataFrame) -> list[str]:
        cells = []
        for r in rows.iter_rows(named=True):
            share = r["timeout_share_mean"]
            sd = r["timeout_share_sd"]
            mean_ms = r["mean_usec_mean"]
            mean = plus_minus(None if mean_ms is None else mean_ms / 1000, None, d["mean delay ms"])
            cells.append(
                [
                    short_reason(r["reason"]),
                    f"{r['usec_timeout'] / 1000:g}",
                    r["context"],
                    plus_minus(r["events_mean"], r["events_sd"], d["events"]),
                    plus_minus(
                        None if share is None else 100 * share,
                        None if sd is None else 100 * sd,
                        d["timeout share"],
                    ),
                    plus_minus(100 * (r["zero_share_mean"] or 0), None, d["zero share"]),
                    (">=" if (share or 0) > 0 else "") + mean,
                ]
            )
        return Table(columns, tuple(cells)).text()

    return (
        "\n".join(
            [
                "mm_vmscan_throttled, mean ± sd over iterations.",
                "",
                *_per_run(table, rows_of),
                "timeout % = share of sleeps that ran to the timeout (right-censored: the wait",
                "was at least the timeout); zero % = woken within the first jiffy; mean ms is",
                "of recorded delays, a lower bound (>=) when any sleep hit the timeout. Shares",
                "are averaged over iterations with events; sd needs 2 or more of them.",
            ]
        )
        + "\n"
    )


def format_run_stalls(table: pl.DataFrame) -> str:
    """One table per run: per reclaim context, stalls and summed stall time per iteration
    and the iterations' median and p99 stall (mean ± sd over iterations), max of all."""
    if table.is_empty():
        return "No closed reclaim stalls in any trace.\n"
    d = STALL_DIGITS
    columns = (
        Column("context", left=True),
        Column("stalls/iter"),
        Column("stalled s/iter"),
        Column("median", unit="ms"),
        Column("p99", unit="ms"),
        Column("max", unit="ms"),
    )

    def rows_of(rows: pl.DataFrame) -> list[str]:
        return Table(
            columns,
            tuple(
                (
                    r["context"],
                    plus_minus(r["stalls_mean"], r["stalls_sd"], d["count"]),
                    plus_minus(r["stalled_s_mean"], r["stalled_s_sd"], d["summed s"]),
                    plus_minus(r["median_ms_mean"], r["median_ms_sd"], d["median ms"]),
                    plus_minus(r["p99_ms_mean"], r["p99_ms_sd"], d["tail ms"]),
                    plus_minus(r["max_ms"], None, d["max ms"]),
                )
                for r in rows.iter_rows(named=True)
            ),
        ).text()

    return (
        "\n".join(
            [
                "Reclaim stalls (mm_vmscan_*_reclaim_begin to _end of one task), mean ± sd over",
                "iterations of each iteration's count, summed time and nearest-rank quantiles;",
                "max over all iterations. Contexts without a closed stall are left out.",
                "",
                *_per_run(table, rows_of),
            ]
        ).rstrip("\n")
        + "\n"
    )
