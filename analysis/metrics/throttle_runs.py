"""Throttling per run: :func:`analysis.metrics.throttle.throttle_table` of each iteration,
summarised over the run's iterations (the independent unit), not over pooled events.

An iteration with no event of a (reason, context, timeout) group counts as 0 events for
it; its shares are undefined (nothing slept) and it is left out of their mean.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from analysis.metrics.throttle import GROUP_KEYS

__all__ = ["run_throttle_table"]


def run_throttle_table(per_iteration: Sequence[tuple[str, int, pl.DataFrame]]) -> pl.DataFrame:
    """``(run, iteration, throttle_table)`` triples → one row per run and group.

    Columns: ``run``, the group keys, ``iterations`` (of the run), ``events_mean`` and
    ``events_sd`` (events per iteration, sample sd n-1), ``timeout_share_mean``/``_sd`` and
    ``zero_share_mean`` over iterations with events, ``mean_usec_mean`` (mean of the
    iterations' recorded-delay means: a lower bound of the wait when any delay hit the
    timeout), ``with_events`` (iterations with at least one event)."""
    iterations = pl.DataFrame(
        [(run, it) for run, it, _ in per_iteration],
        schema={"run": pl.String(), "iteration": pl.Int64()},
        orient="row",
    )
    frames = [
        table.select(*GROUP_KEYS, "count", "timeout_share", "zero_share", "mean_usec").with_columns(
            run=pl.lit(run), iteration=pl.lit(it, dtype=pl.Int64)
        )
        for run, it, table in per_iteration
        if not table.is_empty()
    ]
    if not frames:
        return pl.DataFrame()
    rows = pl.concat(frames, how="vertical_relaxed")
    # Every group a run has, in every iteration of that run (0 events where absent).
    grid = rows.select("run", *GROUP_KEYS).unique().join(iterations, on="run")
    full = grid.join(rows, on=["run", *GROUP_KEYS, "iteration"], how="left").with_columns(
        pl.col("count").fill_null(0)
    )
    return (
        full.group_by("run", *GROUP_KEYS)
        .agg(
            iterations=pl.len(),
            with_events=(pl.col("count") > 0).sum(),
            events_mean=pl.col("count").mean(),
            events_sd=pl.col("count").std(ddof=1),
            timeout_share_mean=pl.col("timeout_share").mean(),
            timeout_share_sd=pl.col("timeout_share").std(ddof=1),
            zero_share_mean=pl.col("zero_share").mean(),
            mean_usec_mean=pl.col("mean_usec").mean(),
        )
        .join(
            iterations.select("run").unique(maintain_order=True).with_row_index("_order"), on="run"
        )
        .sort("_order", "event", "reason", "context", "usec_timeout")
        .drop("_order")
    )
