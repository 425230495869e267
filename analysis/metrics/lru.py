"""LRU reclaim work from ``mm_vmscan_lru_shrink_inactive``, per context and LRU type, checked
against /proc/vmstat.

Source: ``mm_vmscan_lru_shrink_inactive`` (include/trace/events/vmscan.h, emitted by
``shrink_inactive_list()`` and, with MGLRU on 6.1+, by ``evict_folios()``): ``nr_scanned``,
``nr_reclaimed``, and on 4.11+ ``nr_dirty``, ``nr_writeback``, ``nr_congested``,
``nr_immediate``, ``nr_activate`` (split into ``nr_activate_anon``/``nr_activate_file`` on 5.2+),
``nr_ref_keep``, ``nr_unmap_fail``; ``flags`` has ``RECLAIM_WB_FILE`` or ``RECLAIM_WB_ANON``.
All counts are pages (base pages: the kernel adds ``folio_nr_pages``).

The same ``nr_scanned`` / ``nr_reclaimed`` feed the vmstat counters ``pgscan_*`` / ``pgsteal_*``
(``shrink_inactive_list()``: ``PGSCAN_KSWAPD + reclaimer_offset()`` and ``PGSCAN_ANON +
file``), so over the same window the trace and the vmstat deltas must agree; cgroup-limit
reclaim is left out of ``pgscan_kswapd``/``pgscan_direct`` on recent kernels but is in
``pgscan_anon``/``pgscan_file``.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from analysis.metrics.rows import sum_parts

__all__ = ["LRU_COUNTERS", "LRU_FIELDS", "lru_table", "lru_totals", "lru_vs_vmstat"]

# tracepoint field -> column (pages)
LRU_COUNTERS: dict[str, str] = {
    "nr_scanned": "scanned_pages",
    "nr_reclaimed": "reclaimed_pages",
    "nr_dirty": "dirty_pages",
    "nr_writeback": "writeback_pages",
    "nr_congested": "congested_pages",
    "nr_immediate": "immediate_pages",
    "nr_ref_keep": "ref_keep_pages",
    "nr_unmap_fail": "unmap_fail_pages",
}

# Every field :func:`lru_table` reads (activations under their 5.2+ and older names).
LRU_FIELDS = (*LRU_COUNTERS, "nr_activate_anon", "nr_activate_file", "nr_activate", "flags")


def _lru_type(frame: pl.DataFrame) -> pl.Expr:
    if "flags" not in frame.columns:
        return pl.lit("unknown")
    flags = pl.col("flags")
    return (
        pl.when(flags.list.contains("RECLAIM_WB_FILE"))
        .then(pl.lit("file"))
        .when(flags.list.contains("RECLAIM_WB_ANON"))
        .then(pl.lit("anon"))
        .otherwise(pl.lit("unknown"))
    )


def lru_table(shrink_inactive: pl.DataFrame) -> pl.DataFrame:
    """Sum of ``mm_vmscan_lru_shrink_inactive`` counters per ``context`` and ``lru``
    (``anon``/``file``). Needs a ``context`` column (:func:`label_context`). Fields a kernel
    does not print are null; ``activated_pages`` sums the 5.2+ split or the older
    ``nr_activate``."""
    frame = shrink_inactive

    def field(name: str) -> pl.Expr:
        return pl.col(name) if name in frame.columns else pl.lit(None, dtype=pl.Int64)

    # Each line by what it printed: 5.2+ split the activation count by LRU type, 4.11-5.1
    # printed one nr_activate. Ingest gives every event the columns of all versions, so
    # the split columns exist (null) on a 4.18 trace: their presence says nothing.
    anon, file = field("nr_activate_anon"), field("nr_activate_file")
    activated = (
        pl.when(anon.is_not_null() | file.is_not_null())
        .then(anon.fill_null(0) + file.fill_null(0))
        .otherwise(field("nr_activate"))
    )
    columns = [field(name).alias(label) for name, label in LRU_COUNTERS.items()]
    return (
        frame.select(
            "context", _lru_type(frame).alias("lru"), *columns, activated.alias("activated_pages")
        )
        .group_by("context", "lru")
        .agg(pl.len().alias("events"), pl.all().sum())
        .sort("context", "lru")
    )


def lru_totals(tables: list[pl.DataFrame]) -> pl.DataFrame:
    """One :func:`lru_table` of several (e.g. one per block of a trace): counts summed per
    ``context`` and ``lru``."""
    return sum_parts(tables, ("context", "lru")).sort("context", "lru")


def lru_vs_vmstat(table: pl.DataFrame, vmstat_deltas: Mapping[str, int]) -> pl.DataFrame:
    """Compare trace sums with /proc/vmstat counter deltas (name → delta) of the same capture.

    Rows for every counter present in ``vmstat_deltas``: ``pgscan_kswapd``/``pgsteal_kswapd``
    against context ``kswapd``; ``pgscan_direct``/``pgsteal_direct`` (plus ``_khugepaged`` on
    6.2+ and ``_proactive`` on ~6.17+, which split off from direct) against ``direct`` and
    ``node``; ``pgscan_anon``/``pgscan_file``/``pgsteal_anon``/``pgsteal_file`` (5.8+) against
    every context. Columns: ``counter``, ``vmstat_pages``, ``trace_pages``, ``diff_pages``
    (trace − vmstat), ``diff_share`` (diff / vmstat; null when vmstat is 0).
    """

    def trace_sum(column: str, contexts: list[str] | None = None, lru: str | None = None) -> int:
        rows = table
        if contexts is not None:
            rows = rows.filter(pl.col("context").is_in(contexts))
        if lru is not None:
            rows = rows.filter(pl.col("lru") == lru)
        return int(rows[column].sum() or 0)

    checks: list[tuple[list[str], int]] = []
    for verb, column in (("pgscan", "scanned_pages"), ("pgsteal", "reclaimed_pages")):
        checks.append(([f"{verb}_kswapd"], trace_sum(column, ["kswapd"])))
        direct = [f"{verb}_direct", f"{verb}_khugepaged", f"{verb}_proactive"]
        checks.append((direct, trace_sum(column, ["direct", "node"])))
        for lru in ("anon", "file"):
            checks.append(([f"{verb}_{lru}"], trace_sum(column, None, lru)))
    rows = []
    for counters, traced in checks:
        present = [c for c in counters if c in vmstat_deltas]
        if not present:
            continue
        vm = sum(int(vmstat_deltas[c]) for c in present)
        rows.append(
            {
                "counter": "+".join(present),
                "vmstat_pages": vm,
                "trace_pages": traced,
                "diff_pages": traced - vm,
                "diff_share": (traced - vm) / vm if vm else None,
            }
        )
    schema = {
        "counter": pl.String(),
        "vmstat_pages": pl.Int64(),
        "trace_pages": pl.Int64(),
        "diff_pages": pl.Int64(),
        "diff_share": pl.Float64(),
    }
    return pl.DataFrame(rows, schema=schema)
