"""Compaction time by context, end status counts and ``try_to_compact_pages`` by order.

Sources (include/trace/events/compaction.h): ``mm_compaction_begin`` / ``mm_compaction_end``
(``compact_zone()``; the end adds ``status``, a free string such as ``success``, ``complete``,
``contended``, ``partial_skipped``), and ``mm_compaction_try_to_compact_pages`` (``order
gfp_mask priority``, the direct-compaction entry point). kcompactd's awake time is in
:mod:`analysis.metrics.daemons` (same wake/sleep shape).

Context of a compaction interval, from the task that ran it (as mmtests splits them):
``khugepaged``, ``kswapd`` (kswapd compacts for high-order wakes), ``kcompactd``, else
``direct`` (an allocating task).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from analysis.metrics.pairing import (
    KEY_COLUMNS,
    Pairing,
    StallIntervals,
    event_columns,
    pair_intervals,
)

__all__ = [
    "compaction_context",
    "compaction_intervals",
    "compaction_pairing",
    "compaction_status",
    "compaction_time",
    "try_to_compact_by_order",
    "with_context",
]


def compaction_context() -> pl.Expr:
    """``khugepaged`` / ``kswapd`` / ``kcompactd`` / ``direct`` from the ``comm`` column."""
    comm = pl.col("comm")
    return (
        pl.when(comm.str.starts_with("khugepaged"))
        .then(pl.lit("khugepaged"))
        .when(comm.str.starts_with("kswapd"))
        .then(pl.lit("kswapd"))
        .when(comm.str.starts_with("kcompactd"))
        .then(pl.lit("kcompactd"))
        .otherwise(pl.lit("direct"))
    )


def compaction_pairing(lost_lines: Sequence[int] = ()) -> Pairing:
    """The ``mm_compaction_begin`` → ``_end`` pairing, fed block by block; its rows get
    their context from :func:`with_context`."""
    return Pairing(
        "compaction", begin_fields=("mode",), end_fields=("status",), lost_lines=lost_lines
    )


def with_context(intervals: pl.DataFrame) -> pl.DataFrame:
    """Compaction interval rows with ``context`` (see :func:`compaction_context`)."""
    return intervals.with_columns(context=compaction_context())


def compaction_intervals(trace, *, lost_lines: Sequence[int] = ()) -> StallIntervals:
    """``mm_compaction_begin`` → ``_end`` per pid (policy of :func:`pair_intervals`).

    Adds ``context`` (see :func:`compaction_context`); the end's ``status`` is ``end_status``.
    """
    paired = pair_intervals(
        event_columns(trace, "mm_compaction_begin", (*KEY_COLUMNS, "mode")),
        event_columns(trace, "mm_compaction_end", (*KEY_COLUMNS, "status")),
        kind="compaction",
        begin_fields=("mode",),
        end_fields=("status",),
        lost_lines=lost_lines,
    )
    return StallIntervals(intervals=with_context(paired.intervals), report=paired.report)


def compaction_time(intervals: pl.DataFrame) -> pl.DataFrame:
    """Closed compaction intervals per context: ``count``, ``total_s``, ``mean_ms``,
    ``max_ms``, ``lost_affected`` (intervals spanning lost events)."""
    return (
        intervals.filter(pl.col("status") == "closed")
        .group_by("context")
        .agg(
            count=pl.len(),
            total_s=pl.col("duration_ns").sum() / 1e9,
            mean_ms=pl.col("duration_ns").mean() / 1e6,
            max_ms=pl.col("duration_ns").max() / 1e6,
            lost_affected=pl.col("lost_events_inside").sum(),
        )
        .sort("context")
    )


def compaction_status(intervals: pl.DataFrame) -> pl.DataFrame:
    """Count of ``mm_compaction_end`` ``status`` values per context (closed intervals)."""
    if "end_status" not in intervals.columns:
        return pl.DataFrame(
            schema={"context": pl.String(), "status": pl.String(), "count": pl.UInt32()}
        )
    return (
        intervals.filter(pl.col("status") == "closed")
        .group_by("context", pl.col("end_status").alias("status"))
        .agg(count=pl.len())
        .sort("context", "status")
    )


def try_to_compact_by_order(events: pl.DataFrame) -> pl.DataFrame:
    """``mm_compaction_try_to_compact_pages`` calls per allocation ``order`` (and ``priority``
    where the kernel prints it, ~5.2+), weighted by ``count`` if present."""
    weight = pl.col("count").sum() if "count" in events.columns else pl.len().cast(pl.Int64)
    keys = [k for k in ("order", "priority") if k in events.columns]
    if not keys:
        return pl.DataFrame(schema={"order": pl.Int64(), "count": pl.Int64()})
    return events.group_by(keys).agg(count=weight).sort(keys)
