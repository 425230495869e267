"""Who paid the stalls: reclaim stalls, throttling and compaction attributed to the process
(``comm``, ``pid``), the allocation ``order`` and ``gfp_flags`` that entered reclaim, and
the memory cgroup where the trace names one (issue 30 item 2).

The per-process table is the one ``trace-vmscan-postprocess.pl`` prints ("Process
details"), kept apart by ``comm-pid`` as the script keys it: ``begins`` counts every
``mm_vmscan_*_reclaim_begin`` of the process (the script's "Direct Rclms" for direct
reclaim), ``wakeup_kswapd`` its ``mm_vmscan_wakeup_kswapd`` events ("Wokeup Kswapd"),
``scanned_pages``/``reclaimed_pages`` the ``nr_scanned``/``nr_reclaimed`` of its
``mm_vmscan_lru_shrink_inactive`` events whatever the context (the script sums
``mm_vmscan_lru_isolate`` of inactive lists for scanned: the same ``nr_scanned`` that
``shrink_inactive_list()`` then reports), ``stalled_s`` its closed intervals' time.

Every table is built from per-block sums (:func:`stall_sums`, :func:`begin_counts`,
:func:`lru_by_process`), so it costs no more memory than a block; tables are sorted with
the largest consumer first. ``mm_vmscan_memcg_reclaim_begin`` prints no cgroup (up to at
least 6.18), so a cgroup table needs a field the trace does not have; :data:`NO_MEMCG`
says so.
"""

from __future__ import annotations

import polars as pl

__all__ = [
    "BEGIN_SCHEMA",
    "NO_MEMCG",
    "PROCESS",
    "STALL_KEYS",
    "STALL_SCHEMA",
    "begin_counts",
    "by_gfp",
    "by_order",
    "by_process",
    "lru_by_process",
    "stall_sums",
]

PROCESS = ("comm", "pid")
NO_MEMCG = (
    "not in the trace: mm_vmscan_memcg_reclaim_begin/end print no cgroup; "
    "capture one cgroup per workload to attribute by cgroup"
)
STALL_KEYS = ("context", *PROCESS, "order", "gfp_flags")
STALL_SCHEMA = {
    "context": pl.String(),
    "comm": pl.String(),
    "pid": pl.Int32(),
    "order": pl.Int64(),
    "gfp_flags": pl.String(),
    "stalls": pl.Int64(),
    "stalled_ns": pl.Int64(),
}
BEGIN_SCHEMA = {
    "comm": pl.String(),
    "pid": pl.Int32(),
    "begins": pl.Int64(),
    "context": pl.String(),
}


def _gfp(frame: pl.DataFrame) -> pl.Expr:
    """``gfp_flags`` as one string (``GFP_HIGHUSER_MOVABLE|__GFP_COMP``); null if absent."""
    if "gfp_flags" not in frame.columns:
        return pl.lit(None, dtype=pl.String)
    joined = pl.col("gfp_flags").list.join("|")
    # trace-cmd report -R prints the mask's number, whose bits differ between kernels: said
    # so, not passed off as a flag name.
    return (
        pl.when(joined.str.starts_with("0x"))
        .then(pl.concat_str(joined, pl.lit(" (raw mask: -R text names no flags)")))
        .otherwise(joined)
    )


def stall_sums(intervals: pl.DataFrame, context: str) -> pl.DataFrame:
    """Closed reclaim intervals of ``context`` summed per process, order and gfp flags:
    ``stalls``, ``stalled_ns``."""
    order = pl.col("order") if "order" in intervals.columns else pl.lit(None, dtype=pl.Int64)
    return (
        intervals.filter(pl.col("status") == "closed")
        .select(
            pl.lit(context).alias("context"),
            "comm",
            pl.col("pid").cast(pl.Int32),
            order.cast(pl.Int64).alias("order"),
            _gfp(intervals).alias("gfp_flags"),
            "duration_ns",
        )
        .group_by(STALL_KEYS)
        .agg(stalls=pl.len().cast(pl.Int64), stalled_ns=pl.col("duration_ns").sum())
        .cast(STALL_SCHEMA)
    )


def begin_counts(begin: pl.DataFrame, context: str) -> pl.DataFrame:
    """``mm_vmscan_*_reclaim_begin`` events per process (the script's "Rclms")."""
    return (
        begin.select("comm", pl.col("pid").cast(pl.Int32))
        .group_by(PROCESS)
        .agg(begins=pl.len().cast(pl.Int64))
        .with_columns(context=pl.lit(context))
        .cast(BEGIN_SCHEMA)
    )


def lru_by_process(shrink_inactive: pl.DataFrame) -> pl.DataFrame:
    """Pages scanned and reclaimed per process (``mm_vmscan_lru_shrink_inactive``)."""
    return (
        shrink_inactive.select(
            "comm",
            pl.col("pid").cast(pl.Int32),
            pl.col("nr_scanned").cast(pl.Int64)
            if "nr_scanned" in shrink_inactive.columns
            else pl.lit(0, dtype=pl.Int64).alias("nr_scanned"),
            pl.col("nr_reclaimed").cast(pl.Int64)
            if "nr_reclaimed" in shrink_inactive.columns
            else pl.lit(0, dtype=pl.Int64).alias("nr_reclaimed"),
        )
        .group_by(PROCESS)
        .agg(
            scanned_pages=pl.col("nr_scanned").sum(),
            reclaimed_pages=pl.col("nr_reclaimed").sum(),
        )
    )


def by_process(
    stalls: pl.DataFrame,
    begins: pl.DataFrame,
    lru: pl.DataFrame,
    wakeups: pl.DataFrame,
    throttle_events: pl.DataFrame,
    compaction: pl.DataFrame,
) -> pl.DataFrame:
    """One row per process that began reclaim, stalled, scanned, was throttled, woke kswapd
    or compacted: ``contexts`` (its reclaim contexts, e.g. ``memcg``), ``begins``,
    ``stalls``, ``stalled_s``, ``wakeup_kswapd``,
    ``scanned_pages``, ``reclaimed_pages``, ``throttled``, ``throttled_s`` (recorded
    delays, a lower bound when a delay hit its timeout), ``compactions``, ``compaction_s``;
    largest ``stalled_s`` first, then throttled, compaction time and pages scanned.

    ``stalls``: :func:`stall_sums` summed; ``begins``: :func:`begin_counts` summed;
    ``lru``: :func:`lru_by_process` summed; ``wakeups``: ``comm``, ``pid``, ``wakeup_kswapd``;
    ``throttle_events``: :func:`analysis.metrics.throttle.throttle_events`; ``compaction``:
    compaction interval rows (``status``, ``duration_ns``).
    """
    reclaim = stalls.group_by(PROCESS).agg(
        stalls=pl.col("stalls").sum(), stalled_ns=pl.col("stalled_ns").sum()
    )
    began = begins.group_by(PROCESS).agg(
        begins=pl.col("begins").sum(),
        contexts=pl.col("context").unique().sort().str.join("+"),
    )
    throttled = (
        throttle_events.with_columns(pl.col("pid").cast(pl.Int32))
        .group_by(PROCESS)
        .agg(
            throttled=pl.col("count").sum(),
            throttled_ns=(pl.col("delay_us").fill_null(0) * pl.col("count")).sum() * 1000,
        )
    )
    closed = compaction.filter(pl.col("status") == "closed")
    compacted = (
        closed.with_columns(pl.col("pid").cast(pl.Int32))
        .group_by(PROCESS)
        .agg(compactions=pl.len().cast(pl.Int64), compaction_ns=pl.col("duration_ns").sum())
    )
    wakes = wakeups.with_columns(pl.col("pid").cast(pl.Int32))
    parts = [began, reclaim, wakes, lru, throttled, compacted]
    keys = pl.concat([p.select(PROCESS) for p in parts], how="vertical").unique()
    table = keys
    for part in parts:
        table = table.join(part, on=list(PROCESS), how="left", nulls_equal=True)
    counts = ("begins", "stalls", "wakeup_kswapd", "scanned_pages", "reclaimed_pages")
    counts += ("throttled", "compactions")
    table = table.with_columns(
        *(pl.col(c).fill_null(0).cast(pl.Int64) for c in counts),
        contexts=pl.col("contexts").fill_null(""),
        stalled_s=pl.col("stalled_ns").fill_null(0) / 1e9,
        throttled_s=pl.col("throttled_ns").fill_null(0) / 1e9,
        compaction_s=pl.col("compaction_ns").fill_null(0) / 1e9,
    )
    columns = ["comm", "pid", "contexts", "begins", "stalls", "stalled_s", "wakeup_kswapd"]
    columns += ["scanned_pages", "reclaimed_pages", "throttled", "throttled_s"]
    columns += ["compactions", "compaction_s"]
    order = ["stalled_s", "throttled_s", "compaction_s", "scanned_pages", "pid", "comm"]
    descending = [True, True, True, True, False, False]
    return table.select(columns).sort(order, descending=descending, nulls_last=True)


def _by(stalls: pl.DataFrame, key: str) -> pl.DataFrame:
    total = stalls["stalled_ns"].sum() or 0
    return (
        stalls.group_by("context", key)
        .agg(
            stalls=pl.col("stalls").sum(),
            stalled_s=pl.col("stalled_ns").sum() / 1e9,
            processes=pl.struct(PROCESS).n_unique().cast(pl.Int64),
        )
        .with_columns(share=pl.col("stalled_s") * 1e9 / total if total else pl.lit(None))
        .sort(["stalled_s", "context", key], descending=[True, False, False], nulls_last=True)
    )


def by_order(stalls: pl.DataFrame) -> pl.DataFrame:
    """Reclaim stalls per context and allocation ``order``: ``stalls``, ``stalled_s``,
    ``processes``, ``share`` of all stalled time; largest first."""
    return _by(stalls, "order")


def by_gfp(stalls: pl.DataFrame) -> pl.DataFrame:
    """Reclaim stalls per context and ``gfp_flags`` (as printed, ``|``-joined): as
    :func:`by_order`."""
    return _by(stalls, "gfp_flags")
