"""Shrinker work and deferral: who scans, who frees, who inherits deferred work.

Sources: ``mm_shrink_slab_start`` / ``mm_shrink_slab_end`` (include/trace/events/vmscan.h,
``do_shrink_slab()``), with the field names of ``docs/trace-formats.md`` "shrink_slab". From
Linux 5.13 (commit 18bb473e5031, "mm: vmscan: shrink deferred objects proportional to
priority"; G3 in ``docs/shrinker-deferral.md``; G1 before prints the same fields):

- start: ``nr_objects_to_shrink`` = the deferred count this invocation took (``nr``),
  ``cache_items`` = freeable objects, ``delta`` = this invocation's own share,
  ``total_scan`` = its scan target, ``priority`` (4.16+; null before);
- end: ``unused_scan`` = ``nr`` again, ``new_scan`` = the shared ``nr_deferred[nid]`` counter
  after this invocation added its leftover (it was emptied by the take, so this is what the
  invocation deferred, plus whatever concurrent invocations deferred meanwhile),
  ``total_scan`` = what was left unscanned, ``retval`` = objects freed.

Per invocation (start paired with the next end of the same pid, see
:func:`analysis.metrics.pairing.pair_intervals`; ``begin_line``/``end_line`` order the take
and the hand-back of the shared counter among concurrent calls), with the shrinker's
identity ``shrinker_ptr`` and the caller's ``gfp_flags``; all counts are objects:
``deferred_in_objects`` (taken), ``delta_objects``, ``to_scan_objects``, ``scanned_objects``
(start ``total_scan`` − end ``total_scan``, floored at 0), ``freed_objects``,
``deferred_out_objects`` (end ``new_scan``). The context is ``kswapd``, the enclosing reclaim
interval (``direct``, ``memcg``, ``node``) or ``other`` (:func:`label_context`), so the tables
show which context was landed with the deferred work of others (seed 001's complaint: any
context that takes the counter inherits all of it).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import polars as pl

from analysis.metrics.pairing import (
    KEY_COLUMNS,
    Pairing,
    StallIntervals,
    event_columns,
    label_context,
    pair_intervals,
)
from analysis.stats.describe import nearest_rank

__all__ = [
    "END",
    "END_FIELDS",
    "START",
    "START_FIELDS",
    "deferred_backlog",
    "invocation_rows",
    "shrinker_invocations",
    "shrinker_pairing",
    "shrinker_shares",
    "shrinker_sums",
    "shrinker_table",
    "start_events",
    "work_distribution",
    "work_sums",
]

START_FIELDS = (
    "shrinker",
    "shrinker_ptr",
    "nid",
    "gfp_flags",
    "nr_objects_to_shrink",
    "cache_items",
    "delta",
    "total_scan",
    "priority",
)
END_FIELDS = ("shrinker", "new_scan", "total_scan", "retval")
START, END = "mm_shrink_slab_start", "mm_shrink_slab_end"


def shrinker_pairing(lost_lines: Sequence[int] = ()) -> Pairing:
    """The start → end pairing of ``do_shrink_slab()`` calls, fed block by block."""
    return Pairing(
        "shrink_slab", begin_fields=START_FIELDS, end_fields=END_FIELDS, lost_lines=lost_lines
    )


def start_events(start: pl.DataFrame) -> pl.DataFrame:
    """``mm_shrink_slab_start`` rows with the identity and gfp columns hand-built frames
    may lack (null, as for a field the capturing kernel does not print)."""
    missing = {"shrinker_ptr": pl.String(), "gfp_flags": pl.List(pl.String())}
    return start.with_columns(
        pl.lit(None, dtype=dtype).alias(name)
        for name, dtype in missing.items()
        if name not in start.columns
    )


def invocation_rows(
    paired: pl.DataFrame, label: Callable[[pl.DataFrame], pl.DataFrame]
) -> pl.DataFrame:
    """The invocation frame (see :func:`shrinker_invocations`) of the closed start/end
    pairs in ``paired``, with the reclaim context ``label`` adds
    (:func:`analysis.metrics.pairing.label_context` or a ``Labeller``)."""
    closed = paired.filter(pl.col("status") == "closed")
    if closed.is_empty():
        return _empty_invocations()
    labelled = label(closed.rename({"begin_ts_ns": "ts_ns"}).sort("begin_line"))
    return labelled.select(
        "shrinker",
        "shrinker_ptr",
        "nid",
        "context",
        "pid",
        "comm",
        "ts_ns",
        "duration_ns",
        "begin_line",
        "end_line",
        "priority",
        "gfp_flags",
        pl.col("nr_objects_to_shrink").alias("deferred_in_objects"),
        pl.col("delta").alias("delta_objects"),
        pl.col("cache_items").alias("freeable_objects"),
        pl.col("total_scan").alias("to_scan_objects"),
        (pl.col("total_scan") - pl.col("end_total_scan"))
        .clip(lower_bound=0)
        .alias("scanned_objects"),
        pl.col("end_retval").alias("freed_objects"),
        pl.col("end_new_scan").alias("deferred_out_objects"),
        (pl.col("shrinker") != pl.col("end_shrinker")).alias("shrinker_mismatch"),
        "lost_events_inside",
    )


def shrinker_invocations(
    trace, intervals: pl.DataFrame, *, lost_lines: Sequence[int] = ()
) -> tuple[pl.DataFrame, StallIntervals]:
    """One row per ``do_shrink_slab()`` call with its context and object counts.

    Returns the invocation frame and the raw pairing (its report counts unpaired starts and
    ends). ``shrinker_mismatch`` marks pairs whose start and end name different shrinkers.
    """
    paired = pair_intervals(
        start_events(event_columns(trace, START, (*KEY_COLUMNS, *START_FIELDS))),
        event_columns(trace, END, (*KEY_COLUMNS, *END_FIELDS)),
        kind="shrink_slab",
        begin_fields=START_FIELDS,
        end_fields=END_FIELDS,
        lost_lines=lost_lines,
    )
    label = functools.partial(label_context, intervals=intervals)
    return invocation_rows(paired.intervals, label), paired


def _empty_invocations() -> pl.DataFrame:
    ints = (
        "nid",
        "ts_ns",
        "duration_ns",
        "begin_line",
        "end_line",
        "priority",
        "deferred_in_objects",
        "delta_objects",
        "freeable_objects",
        "to_scan_objects",
        "scanned_objects",
        "freed_objects",
        "deferred_out_objects",
    )
    schema: dict[str, pl.DataType] = {
        "shrinker": pl.String(),
        "shrinker_ptr": pl.String(),
        "gfp_flags": pl.List(pl.String()),
        "context": pl.String(),
        "pid": pl.Int32(),
        "comm": pl.String(),
        "shrinker_mismatch": pl.Boolean(),
        "lost_events_inside": pl.Boolean(),
    }
    schema.update({name: pl.Int64() for name in ints})
    return pl.DataFrame(schema=schema)


_SUMS = (
    "deferred_in_objects",
    "delta_objects",
    "to_scan_objects",
    "scanned_objects",
    "freed_objects",
    "deferred_out_objects",
)


def shrinker_sums(invocations: pl.DataFrame) -> pl.DataFrame:
    """Per shrinker symbol and context: ``invocations``, the sums of the object counts
    and ``lost_affected``; sums of blocks' sums are the sums of the whole trace."""
    return invocations.group_by("shrinker", "context").agg(
        pl.len().alias("invocations"),
        *[pl.col(c).sum() for c in _SUMS],
        lost_affected=pl.col("lost_events_inside").sum(),
    )


def shrinker_shares(sums: pl.DataFrame) -> pl.DataFrame:
    """:func:`shrinker_sums` with ``inherited_share``, sorted (see :func:`shrinker_table`)."""
    return sums.with_columns(
        inherited_share=pl.when((pl.col("deferred_in_objects") + pl.col("delta_objects")) > 0).then(
            pl.col("deferred_in_objects")
            / (pl.col("deferred_in_objects") + pl.col("delta_objects"))
        )
    ).sort("shrinker", "context")


def shrinker_table(invocations: pl.DataFrame) -> pl.DataFrame:
    """Per shrinker symbol and context: sums of the invocation counts (objects).

    ``inherited_share`` = deferred_in / (deferred_in + delta): how much of what this context
    was asked to scan was other contexts' deferred work.
    """
    return shrinker_shares(shrinker_sums(invocations))


def deferred_backlog(end: pl.DataFrame, *, changes_only: bool = False) -> pl.DataFrame:
    """The deferred counter over time: ``new_scan`` of every ``mm_shrink_slab_end`` as
    ``deferred_objects`` per ``shrinker`` and ``nid`` (``ts_ns`` ordered). ``changes_only``
    keeps the points a step plot needs (first, changed and last values of each counter)."""
    if "new_scan" not in end.columns:
        return pl.DataFrame(
            schema={
                "ts_ns": pl.Int64(),
                "shrinker": pl.String(),
                "nid": pl.Int64(),
                "deferred_objects": pl.Int64(),
            }
        )
    backlog = end.select(
        "ts_ns", "shrinker", "nid", pl.col("new_scan").alias("deferred_objects")
    ).sort("ts_ns")
    if not changes_only:
        return backlog
    # Step-plot points: the first value of each counter, every change, and the last value.
    previous = pl.col("deferred_objects").shift(1).over("shrinker", "nid")
    is_last = pl.int_range(pl.len()).over("shrinker", "nid") == pl.len().over("shrinker", "nid") - 1
    return backlog.filter(previous.is_null() | (previous != pl.col("deferred_objects")) | is_last)


def work_sums(invocations: pl.DataFrame) -> pl.DataFrame:
    """Invocation counts per context and ``scanned_objects`` value (null as 0):
    ``invocations``, ``took_deferred`` (deferred_in > 0), the sum and the largest of
    ``deferred_in_objects``. A trace's blocks give one each (:func:`work_distribution`
    merges them): a few rows per distinct count, not one per invocation."""
    deferred_in = pl.col("deferred_in_objects")
    return invocations.group_by("context", pl.col("scanned_objects").fill_null(0)).agg(
        invocations=pl.len().cast(pl.Int64),
        took_deferred=(deferred_in > 0).sum().cast(pl.Int64),
        deferred_in_objects=deferred_in.sum(),
        max_deferred_in_objects=deferred_in.max(),
    )


def work_distribution(sums: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """Per context: how invocations' work is spread, and who took the deferred work, from
    the :func:`work_sums` of a trace's blocks.

    Columns: ``invocations``, ``took_deferred`` (invocations with deferred_in > 0),
    ``deferred_taken_share`` (this context's share of all deferred objects taken),
    ``max_deferred_in_objects``, ``pct50_scanned_objects``, ``pct99_scanned_objects``
    (mmtests nearest rank over the invocations), ``max_scanned_objects``.
    """
    merged = (
        pl.concat(sums, how="vertical")
        .group_by("context", "scanned_objects")
        .agg(
            pl.col("^(invocations|took_deferred|deferred_in_objects)$").sum(),
            pl.col("^max_.*$").max(),
        )
    )
    total_taken = int(merged["deferred_in_objects"].sum() or 0)
    rows = []
    for (context,), group in merged.group_by("context"):
        group = group.sort("scanned_objects")
        scanned = group["scanned_objects"].to_numpy()
        counts = group["invocations"].to_numpy()
        taken = int(group["deferred_in_objects"].sum() or 0)
        rows.append(
            {
                "context": context,
                "invocations": int(counts.sum()),
                "took_deferred": int(group["took_deferred"].sum()),
                "deferred_taken_share": taken / total_taken if total_taken else None,
                "max_deferred_in_objects": group["max_deferred_in_objects"].max(),
                "pct50_scanned_objects": nearest_rank(scanned, counts, 50),
                "pct99_scanned_objects": nearest_rank(scanned, counts, 99),
                "max_scanned_objects": int(scanned[-1]),
            }
        )
    schema = {
        "context": pl.String(),
        "invocations": pl.Int64(),
        "took_deferred": pl.Int64(),
        "deferred_taken_share": pl.Float64(),
        "max_deferred_in_objects": pl.Int64(),
        "pct50_scanned_objects": pl.Float64(),
        "pct99_scanned_objects": pl.Float64(),
        "max_scanned_objects": pl.Int64(),
    }
    return pl.DataFrame(rows, schema=schema).sort("context")
