"""Every reclaim statistic of one trace (or mail histogram) in one pass: :func:`analyse_trace`;
of a trace file with its iteration's CONFIG_HZ and vmstat (:func:`analyse_file`); of every
trace of an mmtests iteration (:func:`analyse_iteration`).

This composes the single-purpose modules (``stalls``, ``throttle``, ``kswapd``,
``compaction``, ``shrinker``, ``lru``, ``distribution``) over anything shaped like
``analysis.ingest.ftrace.Trace`` (``events(name)``, ``event_names``, ``lost_events_total``,
``accounting.lost_events``) or ``analysis.ingest.histogram.Histogram``, and adds the summary
rows of the kernel's ``Documentation/trace/postprocess/trace-vmscan-postprocess.pl``.
Every result carries ``lost_events`` of its source; per-row ``lost_affected`` counts rows
whose interval spans a lost-event marker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from analysis.errors import InputError
from analysis.ingest import mmtests
from analysis.ingest.captures import iteration_of, iteration_traces
from analysis.metrics import compaction, daemons, lru, pairing, shrinker, throttle
from analysis.metrics.pairing import KEY_COLUMNS, event_columns, event_scan
from analysis.stats.describe import distribution_table

__all__ = [
    "UNPARSED_LINES_SHOWN",
    "TraceAnalysis",
    "analyse_file",
    "analyse_iteration",
    "analyse_trace",
    "capture_span",
    "daemon_activity",
    "pooled",
    "reclaim_series",
    "vmscan_summary",
]


# How many unparsed line numbers a report names (mmlab ingest lists them all).
UNPARSED_LINES_SHOWN = 10


@dataclass(frozen=True)
class TraceAnalysis:
    """All derived frames and reports for one source (field docs in the producing modules)."""

    source: str
    input_kind: str
    lost_events: int
    # Lines the reader could not use (a corrupt field, a cut line, ...): count and the first
    # line numbers, printed by every command that analyses the trace.
    unparsed: int
    unparsed_lines: tuple[int, ...]
    capture_s: float | None
    reclaim: Mapping[str, pairing.StallIntervals]
    throttle_events: pl.DataFrame
    throttle: pl.DataFrame
    delay_histogram: pl.DataFrame
    hz: throttle.HzEstimate
    kswapd: tuple[daemons.AwakeReport, ...]
    kcompactd: tuple[daemons.AwakeReport, ...]
    compaction: pairing.StallIntervals
    compaction_time: pl.DataFrame
    compaction_status: pl.DataFrame
    compact_orders: pl.DataFrame
    shrinker_invocations: pl.DataFrame
    shrinker: pl.DataFrame
    shrinker_work: pl.DataFrame
    shrinker_backlog: pl.DataFrame
    lru: pl.DataFrame
    lru_check: pl.DataFrame | None
    distributions: pl.DataFrame
    summary: pl.DataFrame
    histogram_groups: tuple | None


def capture_span(trace) -> tuple[int | None, int | None]:
    """First and last ``ts_ns`` over every event of the trace (None, None without any),
    aggregated per event without holding the events."""
    scans = [
        event_scan(trace, name).select(pl.col("ts_ns").cast(pl.Int64)) for name in trace.event_names
    ]
    if not scans:
        return None, None
    span = pl.concat(scans).select(
        pl.col("ts_ns").min().alias("lo"), pl.col("ts_ns").max().alias("hi")
    )
    lo, hi = span.collect().row(0)
    return lo, hi


def daemon_activity(trace, daemon: str) -> pl.DataFrame:
    """``pid``, ``comm``, ``ts_ns`` of every event of ``daemon``'s threads, in file order:
    rows whose comm names it (e.g. ``kswapd0``) or whose pid emitted its wake/sleep events
    (a comm the kernel printed as ``<...>``), which is all :func:`daemons.daemon_awake`
    reads of the capture's activity."""
    wake, sleep, pattern = daemons.DAEMONS[daemon]
    pids = (
        pl.concat(
            [event_columns(trace, name, ("pid",)) for name in (wake, sleep)], how="vertical_relaxed"
        )["pid"]
        .drop_nulls()
        .unique()
    )
    own = pl.col("comm").str.contains(pattern) | pl.col("pid").is_in(pids.cast(pl.Int32).implode())
    scans = [
        event_scan(trace, name)
        .select(pl.col("pid").cast(pl.Int32), "comm", pl.col("ts_ns").cast(pl.Int64))
        .filter(own & pl.col("ts_ns").is_not_null())
        for name in trace.event_names
    ]
    if not scans:
        return pl.DataFrame(schema={"pid": pl.Int32(), "comm": pl.String(), "ts_ns": pl.Int64()})
    return pl.concat(scans, how="vertical").collect()


def _lost_lines(trace) -> list[int]:
    accounting = getattr(trace, "accounting", None)
    return [int(entry.line) for entry in getattr(accounting, "lost_events", ())]


def _unparsed(trace) -> tuple[int, tuple[int, ...]]:
    """(count, first line numbers) of the lines the reader could not use: a trace's
    unparsed lines, a mail histogram's unidentified ones."""
    accounting = getattr(trace, "accounting", None)
    by_reason = getattr(accounting, "unparsed_by_reason", None)
    if by_reason is None:
        lines = tuple(getattr(accounting, "unidentified_lines", ()))
        return len(lines), lines[:UNPARSED_LINES_SHOWN]
    lines = sorted(n for u in by_reason.values() for n in u.lines)
    return int(accounting.unparsed), tuple(lines[:UNPARSED_LINES_SHOWN])


# What the daemons' wake/sleep accounting reads of their events.
_DAEMON_COLUMNS = ("nid", "pid", "ts_ns", "line")


def _labelled(trace, name: str, intervals: pl.DataFrame, fields: tuple[str, ...]) -> pl.DataFrame:
    """``fields`` of event ``name`` with the reclaim ``context`` of each event."""
    return pairing.label_context(event_columns(trace, name, (*KEY_COLUMNS, *fields)), intervals)


def analyse_trace(
    trace,
    *,
    config_hz: int | None = None,
    vmstat_deltas: Mapping[str, int] | None = None,
) -> TraceAnalysis:
    """Derive every stall, throttle, daemon, compaction, shrinker and LRU statistic.

    ``config_hz`` (CONFIG_HZ of the capturing kernel, if known) is checked against the HZ
    inferred from throttle delays; ``vmstat_deltas`` (counter name → delta over the same
    capture) enables the LRU cross-check.
    """
    lost = int(trace.lost_events_total)
    lost_lines = _lost_lines(trace)
    is_histogram = hasattr(trace, "groups")
    reclaim = {} if is_histogram else pairing.reclaim_intervals(trace, lost_lines=lost_lines)
    intervals = pairing.all_intervals(reclaim)
    start, end = capture_span(trace)

    t_events = throttle.throttle_events(trace, intervals)
    awake: dict[str, tuple[daemons.AwakeReport, ...]] = {}
    for daemon, (wake, sleep, _) in daemons.DAEMONS.items():
        awake[daemon] = tuple(
            daemons.daemon_awake(
                event_columns(trace, wake, _DAEMON_COLUMNS),
                event_columns(trace, sleep, _DAEMON_COLUMNS),
                daemon_activity(trace, daemon),
                daemon=daemon,
                capture_start_ns=int(start or 0),
                capture_end_ns=int(end or 0),
                lost_events=lost,
            )
            if start is not None
            else ()
        )
    comp = compaction.compaction_intervals(trace, lost_lines=lost_lines)
    invocations, _ = shrinker.shrinker_invocations(trace, intervals, lost_lines=lost_lines)
    lru_frame = lru.lru_table(
        _labelled(trace, "mm_vmscan_lru_shrink_inactive", intervals, lru.LRU_FIELDS)
    )
    series: dict[str, tuple[list[float], list[int] | None]] = {}
    for context, paired in reclaim.items():
        closed = paired.intervals.filter(pl.col("status") == "closed")
        series[f"{context} reclaim"] = ((closed["duration_ns"] / 1e6).to_list(), None)
    for (context,), group in comp.intervals.filter(pl.col("status") == "closed").group_by(
        "context", maintain_order=True
    ):
        series[f"{context} compaction"] = ((group["duration_ns"] / 1e6).to_list(), None)
    known = t_events.filter(pl.col("delay_us").is_not_null())
    for (reason, context), group in known.group_by("reason", "context", maintain_order=True):
        series[f"throttle {reason} {context}"] = (
            (group["delay_us"] / 1e3).to_list(),
            group["count"].to_list(),
        )
    # Every table carries its source's lost-event count: any sum may be short by lost events.
    lost_col = pl.lit(lost, dtype=pl.Int64)
    unparsed = _unparsed(trace)
    analysis = TraceAnalysis(
        source=str(trace.source),
        input_kind="histogram" if is_histogram else "trace",
        lost_events=lost,
        unparsed=unparsed[0],
        unparsed_lines=unparsed[1],
        capture_s=(end - start) / 1e9 if start is not None else None,
        reclaim=reclaim,
        throttle_events=t_events,
        throttle=throttle.throttle_table(t_events).with_columns(lost_events=lost_col),
        delay_histogram=throttle.delay_histogram(t_events),
        hz=throttle.infer_hz(t_events, config_hz),
        kswapd=awake["kswapd"],
        kcompactd=awake["kcompactd"],
        compaction=comp,
        compaction_time=compaction.compaction_time(comp.intervals).with_columns(
            lost_events=lost_col
        ),
        compaction_status=compaction.compaction_status(comp.intervals),
        compact_orders=compaction.try_to_compact_by_order(
            event_columns(
                trace, "mm_compaction_try_to_compact_pages", ("order", "priority", "count")
            )
        ),
        shrinker_invocations=invocations,
        shrinker=shrinker.shrinker_table(invocations).with_columns(lost_events=lost_col),
        shrinker_work=shrinker.work_distribution(invocations),
        shrinker_backlog=shrinker.deferred_backlog(
            event_columns(trace, "mm_shrink_slab_end", ("ts_ns", "shrinker", "nid", "new_scan")),
            changes_only=True,
        ),
        lru=lru_frame.with_columns(lost_events=lost_col),
        lru_check=lru.lru_vs_vmstat(lru_frame, vmstat_deltas) if vmstat_deltas else None,
        distributions=distribution_table(dict(sorted(series.items()))),
        summary=pl.DataFrame(),
        histogram_groups=getattr(trace, "groups", None),
    )
    if is_histogram:
        # A mail histogram has no reclaim intervals, LRU or kswapd events to summarise.
        return analysis
    summary = vmscan_summary(
        analysis,
        writes=_labelled_writes(trace, intervals),
        wakeup_requests=_count(trace, "mm_vmscan_wakeup_kswapd"),
    )
    return TraceAnalysis(**{**analysis.__dict__, "summary": summary})


def _count(trace, name: str) -> int:
    """Events of ``name``, weighted by ``count`` where the source has it (a histogram)."""
    frame = event_columns(trace, name, ("count", "line"))
    return int(frame["count"].sum()) if "count" in frame.columns else frame.height


def _labelled_writes(trace, intervals: pl.DataFrame) -> pl.DataFrame:
    """``mm_vmscan_write_folio`` (5.18+; ``mm_vmscan_writepage`` before) with context."""
    name = (
        "mm_vmscan_write_folio"
        if "mm_vmscan_write_folio" in trace.event_names
        else "mm_vmscan_writepage"
    )
    return _labelled(trace, name, intervals, ("flags",))


def vmscan_summary(
    analysis: TraceAnalysis, *, writes: pl.DataFrame, wakeup_requests: int
) -> pl.DataFrame:
    """The summary of ``trace-vmscan-postprocess.pl`` (seed 002's "FTrace Reclaim
    Statistics: vmscan"), as ``statistic``, ``value``, ``unit`` rows.

    Pages scanned/reclaimed come from ``mm_vmscan_lru_shrink_inactive`` (the counters vmstat
    uses), writes (one per event: a page, or since 5.18 a folio) from
    ``mm_vmscan_write_folio``/``writepage`` ``flags``, kswapd awake time is
    the lower bound of :mod:`analysis.metrics.daemons` (its upper bound on the next row).
    """

    def lru_sum(column: str, context: str) -> int:
        return int(analysis.lru.filter(pl.col("context") == context)[column].sum() or 0)

    def write_rows(who: str, context: str) -> list[tuple[str, int, str]]:
        """The script's four write rows: file/anon by ``RECLAIM_WB_FILE``/``_ANON``, sync
        when ``RECLAIM_WB_SYNC`` is set (lumpy reclaim, < 3.x), else async."""
        has_flags = not writes.is_empty() and "flags" in writes.columns
        rows = []
        for mode in ("async", "sync"):
            for kind in ("file", "anon"):
                count = 0
                if has_flags:
                    flags = pl.col("flags")
                    count = writes.filter(
                        (pl.col("context") == context)
                        & flags.list.contains(f"RECLAIM_WB_{kind.upper()}")
                        & (flags.list.contains("RECLAIM_WB_SYNC") == (mode == "sync"))
                    ).height
                rows.append((f"{who} write {kind} {mode} I/O", count, "writes"))
        return rows

    direct = analysis.reclaim.get("direct")
    rows = [
        ("Direct reclaims", direct.report.count if direct else 0, "count"),
        ("Direct reclaim pages scanned", lru_sum("scanned_pages", "direct"), "pages"),
        ("Direct reclaim pages reclaimed", lru_sum("reclaimed_pages", "direct"), "pages"),
        *write_rows("Direct reclaim", "direct"),
        ("Wake kswapd requests", wakeup_requests, "count"),
        ("Kswapd wakeups", sum(r.wakes - r.rewakes for r in analysis.kswapd), "count"),
        ("Kswapd re-wakes while awake", sum(r.rewakes for r in analysis.kswapd), "count"),
        ("Kswapd pages scanned", lru_sum("scanned_pages", "kswapd"), "pages"),
        ("Kswapd pages reclaimed", lru_sum("reclaimed_pages", "kswapd"), "pages"),
        *write_rows("Kswapd reclaim", "kswapd"),
        ("Time stalled direct reclaim", direct.report.total_s if direct else 0.0, "s"),
        ("Time kswapd awake (lower bound)", sum(r.awake_s for r in analysis.kswapd), "s"),
        ("Time kswapd awake (upper bound)", sum(r.awake_upper_s for r in analysis.kswapd), "s"),
    ]
    memcg = analysis.reclaim.get("memcg")
    if memcg:
        rows += [
            ("Memcg reclaims", memcg.report.count, "count"),
            ("Memcg reclaim pages scanned", lru_sum("scanned_pages", "memcg"), "pages"),
            ("Time stalled memcg reclaim", memcg.report.total_s, "s"),
        ]
    return pl.DataFrame(
        {
            "statistic": [r[0] for r in rows],
            "value": [float(r[1]) for r in rows],
            "unit": [r[2] for r in rows],
        }
    )


def _in_iteration(
    trace: Path, iteration: mmtests.Iteration, test: str, config_hz: int | None
) -> TraceAnalysis:
    # Imported here: the trace reader pulls in NumPy, Polars and PyArrow, which `mmlab --help`
    # should not pay for.
    from analysis.ingest import ftrace

    try:
        deltas = iteration.counter_deltas(test)
    except InputError:
        deltas = None  # a trace without vmstat snapshots still has its stall statistics
    hz = config_hz if config_hz is not None else iteration.config_hz
    return analyse_trace(ftrace.read(trace), config_hz=hz, vmstat_deltas=deltas)


def analyse_file(trace: Path, *, config_hz: int | None = None) -> TraceAnalysis:
    """:func:`analyse_trace` of a trace file, with the CONFIG_HZ (unless ``config_hz`` is
    given) and vmstat deltas of the mmtests iteration holding it, when it is in one."""
    if found := iteration_of(trace):
        return _in_iteration(trace, *found, config_hz)
    from analysis.ingest import ftrace

    return analyse_trace(ftrace.read(trace), config_hz=config_hz)


def analyse_iteration(iteration: mmtests.Iteration) -> list[TraceAnalysis]:
    """:func:`analyse_trace` of every trace of ``iteration`` with its CONFIG_HZ and vmstat."""
    return [
        _in_iteration(trace, iteration, test, None) for test, trace in iteration_traces(iteration)
    ]


def reclaim_series(results: Mapping[str, TraceAnalysis]) -> dict[str, tuple[list[float], None]]:
    """Closed reclaim interval durations (ms) per named trace and context, then every
    trace's samples of a context pooled (mmtests' shape), for ``distribution_table``."""
    series: dict[str, tuple[list[float], None]] = {}
    pooled_ms: dict[str, list[float]] = {}
    for name, result in results.items():
        for context, paired in result.reclaim.items():
            closed = paired.intervals.filter(pl.col("status") == "closed")
            ms = (closed["duration_ns"] / 1e6).to_list()
            series[f"{name} {context}"] = (ms, None)
            pooled_ms.setdefault(context, []).extend(ms)
    for context, ms in pooled_ms.items():
        series[f"pooled {context}"] = (ms, None)
    return series


def pooled(results: Mapping[str, TraceAnalysis], table: str) -> pl.DataFrame:
    """One frame of every result's ``table`` (e.g. ``delay_histogram``, ``shrinker_backlog``)
    with a ``trace`` column naming its source; empty when there is none."""
    frames = [getattr(r, table).with_columns(trace=pl.lit(name)) for name, r in results.items()]
    return pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame()
