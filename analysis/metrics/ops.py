"""Reclaim metrics from /proc/vmstat counter deltas: mmtests' "Ops" rows, computed correctly.

Each row is a Polars expression over a *canonical* delta frame
(:func:`analysis.ingest.vmstat.canonical`), so the same definition gives the whole-run
table (one row: end minus start) and the per-interval series of a monitor log (one row
per interval). :data:`OPS` holds every row mmtests' ``MonitorMmtestsvmstat`` prints for
kernels 3.x–6.x, in its order and under its names, each by the formula in
``docs/mmtests-conventions.md``, except where mmtests is wrong:

- allocation stalls are summed over zones (mmtests renames each ``allocstall_<zone>`` to
  ``allocstall`` and keeps the last one read);
- efficiency and percentage rows (kswapd/direct efficiency, compaction efficiency,
  NUMA hint local percent) are null (printed ``-``) when their denominator is 0 (mmtests
  prints 100); compact scan efficiency is null when nothing was free-scanned (mmtests
  guards the numerator and divides by zero);
- velocity states the elapsed time it divides by and where that time came from;
- a counter this kernel lacks gives null ("counter not in this kernel's vmstat"), not
  0: ``fragment_stall`` and ``pgrescued`` exist only with proposed patches mmtests'
  author carried (2018, 2011), ``kswapd_skip_congestion_wait`` left vmstat in 2013,
  per-zone ``pgscan_*_<zone>`` (the zone velocities) in 4.8;
- compaction cost leaves out NUMA-balancing migrations: ``pgmigrate_success`` counts
  every migration, so mmtests charges compaction for AutoNUMA's
  ``numa_pages_migrated`` (on the real tree ``log.ltccip8.2020-06-03_1400`` all 731,766
  migrations were NUMA's and compaction never ran, yet mmtests' cost is 759.57).

Kept as mmtests prints them, so that a pasted table can be compared, with their flaws
stated: the compaction cost's free-scanner term reads ``compact_migrate_free``, a
counter no kernel has, so it is always 0 (seed 003's published costs need it to be);
AutoNUMA cost drops its page-copy term (a stray ``;`` ends the expression after
``Ci · numa_pages_migrated``); NUMA page range updates count a huge PMD as 512 base
pages, true for 4 KiB pages and 2 MiB PMDs only.

Reclaim driven by a memory cgroup's limit is not counted in the global
``pgscan_kswapd``/``pgscan_direct`` items on kernels ≥ 5.8 (``cgroup_reclaim()`` skips
them in ``shrink_inactive_list()``), but is in ``pgscan_anon``/``pgscan_file``: the
"Cgroup-limit" rows show it instead of reporting zero reclaim.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polars as pl

from analysis.ingest.capture_meta import MMLAB_JSON
from analysis.ingest.mmtests import Iteration
from analysis.ingest.vmstat import (
    PROC_VMSTAT,
    CounterReset,
    Misaligned,
    Samples,
    canonical,
    counter_deltas,
    misaligned_labels,
)

__all__ = [
    "ABSENT",
    "CONTEXTS",
    "HIGHER",
    "LOWER",
    "MEMCG_CHARGES",
    "MEMCG_CHARGES_NOTE",
    "OPS",
    "Elapsed",
    "OpsDef",
    "OpsReport",
    "OpsRow",
    "interval_series",
    "iteration_elapsed",
    "ops_report",
    "reclaim_rates",
]

LOWER, HIGHER = "lower", "higher"
ABSENT = "counter not in this kernel's vmstat"
NOTHING_SCANNED = "nothing scanned"

# Reclaim contexts that the global pgscan_<context> items count (kernel 6.2 added
# khugepaged, ~6.17 proactive); cgroup-limit reclaim is the remainder of pgscan_{anon,file}.
_GLOBAL_CONTEXTS = ("kswapd", "direct", "khugepaged", "proactive")


@dataclass(frozen=True)
class Elapsed:
    """The wall-clock time velocities divide by, and where it came from.

    ``source`` is one of ``command line``, ``tests-timestamp time ::`` (the benchmark's
    own /usr/bin/time, mmtests' choice), ``mmlab.json`` (capture metadata),
    ``vmstat sample span`` (first to last monitor sample; ``, no tests-timestamp`` added
    when an mmtests iteration lacks that file) or ``unknown``.
    """

    seconds: float | None
    source: str


def _available(needs: tuple[str, ...], need_all: bool, cols: set[str]) -> bool:
    """All of ``needs`` present (``need_all``), else any: old kernels lack some summands."""
    return set(needs) <= cols if need_all else bool(set(needs) & cols)


def iteration_elapsed(iteration: Iteration, test: str) -> Elapsed:
    """Velocity's time base, in mmtests' order of preference: the benchmark's own
    ``time ::`` line, then capture metadata, then the vmstat monitor's span."""
    times = iteration.times.get(test)
    if times and times.elapsed_s:
        return Elapsed(times.elapsed_s, "tests-timestamp time ::")
    meta = iteration.metadata
    if meta is not None and meta.start_epoch_s and meta.end_epoch_s:
        return Elapsed(meta.end_epoch_s - meta.start_epoch_s, MMLAB_JSON)
    if times and times.begin_epoch and times.end_epoch:
        return Elapsed(times.end_epoch - times.begin_epoch, "tests-timestamp begin/end")
    monitor = iteration.vmstat_monitor(test)
    if monitor is not None and len(monitor) > 1:
        t = monitor.frame["epoch_s"]
        # Say why the benchmark's own time was not used: mmtests would have failed here.
        missing = "" if iteration.times else ", no tests-timestamp"
        return Elapsed(t[-1] - t[0], f"vmstat sample span{missing}")
    return Elapsed(None, "unknown")


@dataclass(frozen=True)
class OpsDef:
    """One Ops row: its label, unit, which direction is better, and formula."""

    label: str
    unit: str
    better: str
    needs: tuple[str, ...]
    expr: Callable[[set[str], pl.Expr], pl.Expr]
    why_null: str = "not available"
    absent: str = ABSENT
    need_all: bool = False

    def available(self, cols: set[str]) -> bool:
        """Whether this kernel has the counters the row reads."""
        return _available(self.needs, self.need_all, cols)


@dataclass(frozen=True)
class OpsRow:
    """One computed Ops row. ``value`` is None with ``note`` saying why."""

    label: str
    value: float | None
    unit: str
    better: str
    note: str = ""


@dataclass(frozen=True)
class OpsReport:
    """The Ops table of one capture (or one mmtests iteration). ``page_bytes`` is the
    kernel's PAGE_SIZE (what a "pages" row counts), None when the capture does not say."""

    source: str
    elapsed: Elapsed
    rows: tuple[OpsRow, ...]
    resets: tuple[CounterReset, ...]
    page_bytes: int | None = None

    def value(self, label: str) -> float | None:
        return next(r.value for r in self.rows if r.label == label)


def _total(cols: set[str], *names: str) -> pl.Expr:
    """Σ of the counters present; null when none is (or when one present is null: a reset)."""
    present = [pl.col(n) for n in names if n in cols]
    if not present:
        return pl.lit(None, dtype=pl.Int64)
    return functools.reduce(operator.add, present)


@dataclass(frozen=True)
class _Qty:
    """A page count built from counters: ``needs`` (all must exist) and its expression."""

    needs: tuple[str, ...]
    build: Callable[[set[str]], pl.Expr]
    absent: str = ABSENT
    need_all: bool = False

    def __call__(self, cols: set[str]) -> pl.Expr:
        available = _available(self.needs, self.need_all, cols)
        return self.build(cols) if available else pl.lit(None, dtype=pl.Int64)


def _sum(*names: str) -> _Qty:
    return _Qty(names, lambda c: _total(c, *names))


def _cgroup(prefix: str) -> _Qty:
    """Pages scanned or reclaimed by cgroup-limit reclaim: ``<prefix>_{anon,file}`` count
    every context (5.8+), the global-context items exclude cgroup reclaim."""
    every = (f"{prefix}_anon", f"{prefix}_file")
    globals_ = tuple(f"{prefix}_{x}" for x in _GLOBAL_CONTEXTS)

    def build(c: set[str]) -> pl.Expr:
        return _total(c, *every) - _total(c, *globals_)

    return _Qty(every, build, f"{ABSENT} (pgscan_anon/pgscan_file, 5.8+)", need_all=True)


def _pct(num: pl.Expr, den: pl.Expr) -> pl.Expr:
    """100·num/den, null when den is 0: "no pages scanned" has no efficiency."""
    return pl.when(den > 0).then(100.0 * num / den)


def _row(label: str, unit: str, better: str, qty: _Qty, why_null: str = "not available") -> OpsDef:
    return OpsDef(
        label, unit, better, qty.needs, lambda c, _e: qty(c), why_null, qty.absent, qty.need_all
    )


def _efficiency(
    label: str, reclaimed: _Qty, scanned: _Qty, why_null: str = NOTHING_SCANNED
) -> OpsDef:
    """``100 · reclaimed / scanned`` (or any part over its whole), null when the whole is 0."""
    return OpsDef(
        label,
        "%",
        HIGHER,
        reclaimed.needs + scanned.needs,
        lambda c, _e: _pct(reclaimed(c), scanned(c)),
        why_null,
        scanned.absent,
        scanned.need_all,
    )


def _share(label: str, part: str, whole: str, why_null: str) -> OpsDef:
    """``100 · part / whole`` of two counters (see :func:`_efficiency`)."""
    return _efficiency(label, _sum(part), _sum(whole), why_null)


NO_FREE, NO_HINTS = "nothing free-scanned", "no hint faults"


def _velocity(label: str, scanned: _Qty) -> OpsDef:
    return OpsDef(
        label,
        "pages/s",
        LOWER,
        scanned.needs,
        lambda c, e: pl.when(e > 0).then(scanned(c) / e),
        absent=scanned.absent,
        need_all=scanned.need_all,
    )


def _minus(a: _Qty, b: _Qty) -> _Qty:
    return _Qty(a.needs, lambda c: a(c) - b(c))


def _split(a: _Qty, b: _Qty) -> _Qty:
    """``a − b`` where b counts a part of a; null when the parts do not add up."""
    return _Qty(a.needs, lambda c: pl.when(a(c) >= b(c)).then(a(c) - b(c)))


# Since THP swap-out (4.13), pswpout counts every base page of a THP while nr_vmscan_write
# counts the folio once, so pswpout can exceed nr_vmscan_write (seed 000: 2932752 anon
# writes, 2613590 writes by reclaim) and their difference is not the file writes.
THP_SWAPOUT = "pswpout > nr_vmscan_write (THP swap-out counts 512 pages in pswpout, 1 here)"


SCANNED = {ctx: _sum(f"pgscan_{ctx}") for ctx in ("kswapd", "direct")}
RECLAIMED = {ctx: _sum(f"pgsteal_{ctx}") for ctx in ("kswapd", "direct")}
SCANNED["cgroup"], RECLAIMED["cgroup"] = _cgroup("pgscan"), _cgroup("pgsteal")

_direct_share = _Qty(
    SCANNED["direct"].needs + SCANNED["kswapd"].needs,
    lambda c: _pct(SCANNED["direct"](c), SCANNED["direct"](c) + SCANNED["kswapd"](c)),
)


def _compaction_migrated(c: set[str]) -> pl.Expr:
    """Pages migrated by compaction: every migration less NUMA balancing's (when the
    kernel counts it); null if the difference is negative (THP counting differs)."""
    every = _total(c, "pgmigrate_success")
    if "numa_pages_migrated" not in c:
        return every
    return pl.when(every >= pl.col("numa_pages_migrated")).then(
        every - pl.col("numa_pages_migrated")
    )


# mmtests' cost model: Ca = 56/8 per page scanned, Ci = Ca + 12 per isolated page,
# Cmc = 2·(Ca + 512) per migrated page, failures 2·Ca; reported in units of 10^6.
_compaction_cost = _Qty(
    ("compact_migrate_scanned", "compact_isolated", "pgmigrate_success", "pgmigrate_fail"),
    lambda c: (
        (
            7 * _total(c, "compact_migrate_scanned")
            + 19 * _total(c, "compact_isolated")
            + 1038 * _compaction_migrated(c)
            + 14 * _total(c, "pgmigrate_fail")
        )
        / 1e6
    ),
)
# mmtests' AutoNUMA model as it computes it: Ca per PTE update, 5000 per hinting fault,
# Ci per migrated page (the intended page-copy term is lost to a stray ';').
_autonuma_cost = _Qty(
    ("numa_pte_updates", "numa_hint_faults", "numa_pages_migrated"),
    lambda c: (
        (
            7 * _total(c, "numa_pte_updates")
            + 5000 * _total(c, "numa_hint_faults")
            + 19 * _total(c, "numa_pages_migrated")
        )
        / 1e6
    ),
    need_all=True,
)
# Base pages whose PTEs NUMA balancing changed; a huge PMD is 512 base pages (x86-64).
_numa_range = _Qty(
    ("numa_pte_updates",),
    lambda c: (
        _total(c, "numa_pte_updates") + 512 * _total(c, "numa_huge_pte_updates")
        if "numa_huge_pte_updates" in c
        else _total(c, "numa_pte_updates")
    ),
)
_ZONES = ("dma", "dma32", "normal", "highmem", "movable")


def _zone_scanned(zone: str) -> _Qty:
    """Pages scanned in one zone by kswapd and direct reclaim (per-zone items, < 4.8;
    the kernel spells highmem ``high``)."""
    kernel = "high" if zone == "highmem" else zone
    return _sum(f"pgscan_kswapd_{kernel}", f"pgscan_direct_{kernel}")


OPS: tuple[OpsDef, ...] = (
    _row("Minor Faults", "faults", LOWER, _minus(_sum("pgfault"), _sum("pgmajfault"))),
    _row("Major Faults", "faults", LOWER, _sum("pgmajfault")),
    _row("Swap Ins", "pages", LOWER, _sum("pswpin")),
    _row("Swap Outs", "pages", LOWER, _sum("pswpout")),
    _row("Allocation stalls", "stalls", LOWER, _sum("allocstall")),
    _row("Fragmentation stalls", "stalls", LOWER, _sum("fragment_stall")),
    *(
        _row(f"{zone} allocs", "pages", LOWER, _sum(f"pgalloc_{zone.lower()}"))
        for zone in ("DMA", "DMA32", "Normal", "Movable")
    ),
    _row("Direct pages scanned", "pages", LOWER, SCANNED["direct"]),
    _row("Kswapd pages scanned", "pages", LOWER, SCANNED["kswapd"]),
    _row("Kswapd pages reclaimed", "pages", HIGHER, RECLAIMED["kswapd"]),
    _row("Direct pages reclaimed", "pages", HIGHER, RECLAIMED["direct"]),
    _efficiency("Kswapd efficiency %", RECLAIMED["kswapd"], SCANNED["kswapd"]),
    _velocity("Kswapd velocity", SCANNED["kswapd"]),
    _efficiency("Direct efficiency %", RECLAIMED["direct"], SCANNED["direct"]),
    _velocity("Direct velocity", SCANNED["direct"]),
    _row("Percentage direct scans", "%", LOWER, _direct_share, NOTHING_SCANNED),
    *(_velocity(f"Zone {zone} velocity", _zone_scanned(zone)) for zone in _ZONES),
    _row("Cgroup-limit pages scanned", "pages", LOWER, SCANNED["cgroup"]),
    _row("Cgroup-limit pages reclaimed", "pages", HIGHER, RECLAIMED["cgroup"]),
    _efficiency("Cgroup-limit efficiency %", RECLAIMED["cgroup"], SCANNED["cgroup"]),
    _velocity("Cgroup-limit velocity", SCANNED["cgroup"]),
    _row("Page writes by reclaim", "pages", LOWER, _sum("nr_vmscan_write")),
    _row(
        "Page writes file",
        "pages",
        LOWER,
        _split(_sum("nr_vmscan_write"), _sum("pswpout")),
        THP_SWAPOUT,
    ),
    _row("Page writes anon", "pages", LOWER, _sum("pswpout")),
    _row("Page reclaim immediate", "pages", LOWER, _sum("nr_vmscan_immediate_reclaim")),
    _row("Sector Reads", "KiB", LOWER, _sum("pgpgin")),
    _row("Sector Writes", "KiB", LOWER, _sum("pgpgout")),
    _row("Page rescued immediate", "pages", LOWER, _sum("pgrescued")),
    _row("Slabs scanned", "objects", LOWER, _sum("slabs_scanned")),
    _row("Direct inode steals", "pages", LOWER, _sum("pginodesteal")),
    _row("Kswapd inode steals", "pages", LOWER, _sum("kswapd_inodesteal")),
    _row("Kswapd skipped wait", "events", LOWER, _sum("kswapd_skip_congestion_wait")),
    _row("THP fault alloc", "huge pages", HIGHER, _sum("thp_fault_alloc")),
    _row("THP fault fallback", "huge pages", LOWER, _sum("thp_fault_fallback")),
    _row("THP collapse alloc", "huge pages", HIGHER, _sum("thp_collapse_alloc")),
    _row("THP collapse fail", "huge pages", LOWER, _sum("thp_collapse_alloc_failed")),
    _row("THP split", "huge pages", LOWER, _sum("thp_split_page")),
    _row("THP split failed", "huge pages", LOWER, _sum("thp_split_page_failed")),
    _row("Compaction stalls", "stalls", LOWER, _sum("compact_stall")),
    _row("Compaction success", "compactions", HIGHER, _sum("compact_success")),
    _row("Compaction failures", "compactions", LOWER, _sum("compact_fail")),
    _share("Compaction efficiency", "compact_success", "compact_stall", "no stalls"),
    _row("Page migrate success", "pages", HIGHER, _sum("pgmigrate_success")),
    _row("Page migrate failure", "pages", LOWER, _sum("pgmigrate_fail")),
    _row("Compaction pages isolated", "pages", LOWER, _sum("compact_isolated")),
    _row("Compaction migrate scanned", "pages", LOWER, _sum("compact_migrate_scanned")),
    _row("Compaction free scanned", "pages", LOWER, _sum("compact_free_scanned")),
    _share("Compact scan efficiency", "compact_migrate_scanned", "compact_free_scanned", NO_FREE),
    _row("Compaction cost", "model units", LOWER, _compaction_cost),
    _row("Kcompactd wake", "wakeups", LOWER, _sum("compact_daemon_wake")),
    _row("Kcompactd migrate scanned", "pages", LOWER, _sum("compact_daemon_migrate_scanned")),
    _row("Kcompactd free scanned", "pages", LOWER, _sum("compact_daemon_free_scanned")),
    # Allocation counts measure work done; "lower is better" as for every other count.
    _row("NUMA alloc hit", "allocations", LOWER, _sum("numa_hit")),
    _row("NUMA alloc miss", "allocations", LOWER, _sum("numa_miss")),
    _row("NUMA interleave hit", "allocations", LOWER, _sum("numa_interleave")),
    _row("NUMA alloc local", "allocations", LOWER, _sum("numa_local")),
    _row("NUMA base PTE updates", "PTEs", LOWER, _sum("numa_pte_updates")),
    _row("NUMA huge PMD updates", "PMDs", LOWER, _sum("numa_huge_pte_updates")),
    _row("NUMA page range updates", "pages", LOWER, _numa_range),
    _row("NUMA hint faults", "faults", LOWER, _sum("numa_hint_faults")),
    _row("NUMA hint local faults", "faults", LOWER, _sum("numa_hint_faults_local")),
    _share("NUMA hint local percent", "numa_hint_faults_local", "numa_hint_faults", NO_HINTS),
    _row("NUMA pages migrated", "pages", LOWER, _sum("numa_pages_migrated")),
    _row("AutoNUMA cost", "model units", LOWER, _autonuma_cost),
)

# memory.stat counters named like /proc/vmstat's I/O counters that count charge events.
MEMCG_CHARGES = ("pgpgin", "pgpgout")
MEMCG_CHARGES_NOTE = (
    "memory.stat pgpgin/pgpgout count pages charged to the cgroup, not KiB of disk I/O"
)

# The reclaim rows a monitor log is plotted with, interval by interval.
SERIES_OPS = tuple(
    op
    for op in OPS
    if op.label.split()[0] in {"Kswapd", "Direct", "Cgroup-limit"}
    and op.label.split()[1] in {"pages", "efficiency", "velocity"}
)


def _evaluate(deltas: pl.DataFrame, elapsed: pl.Expr, ops: Sequence[OpsDef]) -> pl.DataFrame:
    cols = set(deltas.columns)
    return deltas.select(op.expr(cols, elapsed).cast(pl.Float64).alias(op.label) for op in ops)


def _note(op: OpsDef, cols: set[str], resets: set[str], elapsed: Elapsed) -> str:
    """Why a row has no value."""
    if op.unit == "pages/s" and elapsed.seconds is None:
        return "elapsed time unknown: pass --elapsed"
    if hit := sorted(set(op.needs) & resets):
        return f"counter went down: {', '.join(hit)}"
    if not op.available(cols):
        return op.absent
    return op.why_null


def ops_report(
    samples: Samples, elapsed: Elapsed | None = None, distrust: Misaligned | None = None
) -> OpsReport:
    """The Ops table between the first and last sample of ``samples``.

    ``elapsed`` defaults to the span of the samples' times when they have them;
    ``distrust``: misaligned labels found in another capture of the same kernel build,
    which blank these rows too when the samples themselves hold no evidence.
    """
    ends = samples.frame[[0, -1]] if len(samples) > 1 else samples.frame
    if len(ends) < 2:
        raise ValueError(f"{samples.source}: one snapshot has no delta; give a before/after pair")
    deltas, resets = counter_deltas(Samples(samples.source, samples.kind, samples.layout, ends))
    span = deltas["dt_s"][0]
    if elapsed is None:
        elapsed = Elapsed(span, "vmstat sample span") if span else Elapsed(None, "unknown")
    canon = canonical(deltas)
    # memory.stat's pgpgin/pgpgout count pages charged to and uncharged from the cgroup,
    # not the KiB of block I/O that /proc/vmstat's count (mm/memcontrol.c "pgpgin").
    not_io = set(MEMCG_CHARGES) & set(canon.columns) if samples.kind != PROC_VMSTAT else set()
    canon = canon.drop(sorted(not_io))
    values = _evaluate(canon, pl.lit(elapsed.seconds, dtype=pl.Float64), OPS).row(0)
    cols = set(canon.columns)
    reset_names = {r.counter for r in resets}
    # Counters printed under another item's name (checked on every sample, not only the
    # ends): their rows are blank with the reason rather than another counter's number.
    misaligned = misaligned_labels(samples) or distrust
    untrusted = misaligned.names if misaligned else frozenset()
    rows = tuple(
        OpsRow(label=op.label, value=None, unit=op.unit, better=op.better, note=misaligned.reason)
        if misaligned and set(op.needs) & untrusted
        else OpsRow(op.label, None, op.unit, op.better, MEMCG_CHARGES_NOTE)
        if set(op.needs) & not_io
        else OpsRow(
            op.label,
            v,
            op.unit,
            op.better,
            "" if v is not None else _note(op, cols, reset_names, elapsed),
        )
        for op, v in zip(OPS, values, strict=True)
    )
    return OpsReport(samples.source, elapsed, rows, resets)


def interval_series(samples: Samples) -> tuple[pl.DataFrame, tuple[CounterReset, ...]]:
    """Per-interval reclaim of a monitor log: scanned, reclaimed, efficiency and velocity.

    One row per interval between consecutive samples, for kswapd, direct and cgroup-limit
    reclaim separately. Columns: ``interval``, ``t_s`` (end of interval, seconds since the
    first sample), ``dt_s`` and one column per Ops row label (pages, %, pages/s).
    """
    deltas, resets = samples.deltas
    t0 = samples.frame["epoch_s"][0]
    canon = canonical(deltas)
    values = _evaluate(canon, pl.col("dt_s"), SERIES_OPS)
    base = canon.select("interval", (pl.col("epoch_s") - t0).alias("t_s"), "dt_s")
    return pl.concat([base, values], how="horizontal"), resets


CONTEXTS = ("Kswapd", "Direct", "Cgroup-limit")


def reclaim_rates(series: pl.DataFrame) -> pl.DataFrame:
    """A per-interval series (:func:`interval_series`) in long form, one row per interval
    and reclaim context that scanned anything in the capture: ``t_s``, ``context``,
    ``scanned_pages_per_s``, ``reclaimed_pages_per_s`` and ``efficiency_pct``."""
    parts = [
        series.select(
            "t_s",
            pl.lit(ctx).alias("context"),
            (pl.col(f"{ctx} pages scanned") / pl.col("dt_s")).alias("scanned_pages_per_s"),
            (pl.col(f"{ctx} pages reclaimed") / pl.col("dt_s")).alias("reclaimed_pages_per_s"),
            pl.col(f"{ctx} efficiency %").alias("efficiency_pct"),
        )
        for ctx in CONTEXTS
        if series[f"{ctx} pages scanned"].fill_null(0).sum() > 0
    ]
    if not parts:
        return pl.DataFrame(
            schema={
                "t_s": pl.Float64,
                "context": pl.String,
                "scanned_pages_per_s": pl.Float64,
                "reclaimed_pages_per_s": pl.Float64,
                "efficiency_pct": pl.Float64,
            }
        )
    return pl.concat(parts)
