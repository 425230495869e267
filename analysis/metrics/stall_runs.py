"""Reclaim stalls per run: each iteration's closed stall intervals summarised, then the
summaries averaged over the run's iterations (the independent unit).

Per-iteration quantiles are nearest-rank (``interpolation="nearest"``, as mmtests), so a
quantile is always a stall that happened.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from analysis.metrics.pairing import StallIntervals

__all__ = ["TAIL_QUANTILE", "iteration_stalls", "run_stall_table"]

# The tail quantile reported as ``p99_ms``.
TAIL_QUANTILE = 0.99


def iteration_stalls(reclaim: Mapping[str, StallIntervals]) -> pl.DataFrame:
    """One row per reclaim context (``memcg``, ``direct`` ... as ``mm_vmscan_*_reclaim_begin``
    / ``_end`` pair them): ``stalls``, ``stalled_s`` (sum of durations), ``median_ms``,
    ``p99_ms``, ``max_ms`` of the closed intervals."""
    frames = [
        paired.intervals.filter(pl.col("status") == "closed").select(
            pl.lit(context).alias("context"), (pl.col("duration_ns") / 1e6).alias("ms")
        )
        for context, paired in reclaim.items()
    ]
    closed = (
        pl.concat(frames)
        if frames
        else pl.DataFrame(schema={"context": pl.String, "ms": pl.Float64})
    )
    return (
        closed.group_by("context")
        .agg(
            stalls=pl.len(),
            stalled_s=pl.col("ms").sum() / 1000,
            median_ms=pl.col("ms").quantile(0.5, "nearest"),
            p99_ms=pl.col("ms").quantile(TAIL_QUANTILE, "nearest"),
            max_ms=pl.col("ms").max(),
        )
        .filter(pl.col("stalls") > 0)
        .sort("context")
    )


def run_stall_table(per_iteration: Sequence[tuple[str, int, pl.DataFrame]]) -> pl.DataFrame:
    """``(run, iteration, iteration_stalls)`` triples → per run and context: ``iterations``,
    mean and sample sd (n-1) over iterations of ``stalls``, ``stalled_s``, ``median_ms``,
    ``p99_ms`` (columns ``<name>_mean``, ``<name>_sd``), and ``max_ms`` over all of them.
    An iteration without stalls of a context counts 0 stalls and 0 s for it."""
    order = list(dict.fromkeys(run for run, _, _ in per_iteration))
    frames = [
        table.with_columns(run=pl.lit(run), iteration=pl.lit(it, dtype=pl.Int64))
        for run, it, table in per_iteration
        if not table.is_empty()
    ]
    if not frames:
        return pl.DataFrame()
    rows = pl.concat(frames, how="vertical_relaxed")
    iterations = pl.DataFrame(
        [(run, it) for run, it, _ in per_iteration], schema=["run", "iteration"], orient="row"
    ).with_columns(pl.col("iteration").cast(pl.Int64))
    full = (
        rows.select("run", "context")
        .unique()
        .join(iterations, on="run")
        .join(rows, on=["run", "context", "iteration"], how="left")
        .with_columns(pl.col("stalls").fill_null(0), pl.col("stalled_s").fill_null(0.0))
    )
    stats = ("stalls", "stalled_s", "median_ms", "p99_ms")
    return (
        full.group_by("run", "context")
        .agg(
            iterations=pl.len(),
            **{f"{s}_mean": pl.col(s).mean() for s in stats},
            **{f"{s}_sd": pl.col(s).std(ddof=1) for s in stats},
            max_ms=pl.col("max_ms").max(),
        )
        .with_columns(_order=pl.col("run").replace_strict(order, list(range(len(order)))))
        .sort("_order", "context")
        .drop("_order")
    )
