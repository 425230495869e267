"""Every reclaim statistic of one trace (or mail histogram): :func:`analyse_trace` (of a
trace file, cached, and of every trace of an iteration: :mod:`analysis.metrics.trace_files`).

This composes the single-purpose modules (``stalls``, ``throttle``, ``kswapd``,
``compaction``, ``shrinker``, ``lru``, ``distribution``) over anything shaped like
``analysis.ingest.ftrace.Trace`` (``events(name)``, ``event_names``, ``lost_events_total``,
``accounting.lost_events``) or ``analysis.ingest.histogram.Histogram``, and adds the summary
rows of the kernel's ``Documentation/trace/postprocess/trace-vmscan-postprocess.pl``.
Every result carries ``lost_events`` of its source; per-row ``lost_affected`` counts rows
whose interval spans a lost-event marker.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from analysis.metrics import (
    attribution,
    compaction,
    daemons,
    every_event,
    lru,
    pairing,
    shrinker,
    streams,
    throttle,
)
from analysis.metrics.deferred import Deferred
from analysis.metrics.duplicates import Duplicates, RepeatScreen, duplicate_lines
from analysis.metrics.pairing import KEY_COLUMNS, event_columns, event_scan
from analysis.metrics.rows import RowStore, sum_parts
from analysis.stats.describe import distribution_table

__all__ = [
    "INTERVAL_ORDER",
    "INVOCATION_ORDER",
    "UNPARSED_LINES_SHOWN",
    "TraceAnalysis",
    "analyse_trace",
    "not_traced",
    "pooled",
    "reclaim_series",
    "shrinker_backlog",
    "unparsed_of",
    "vmscan_summary",
    "with_checks",
    "write_counts",
]


# How many unparsed line numbers a report names (mmlab ingest lists them all).
UNPARSED_LINES_SHOWN = 10


@dataclass(frozen=True)
class TraceAnalysis(Deferred):
    """All derived frames and reports for one source (field docs in the producing modules).

    The per-row frames (``reclaim``/``compaction`` intervals, ``shrinker_invocations``,
    ``shrinker_backlog``) of an ingested trace are read from the analysis cache, or
    computed, when first used."""

    source: str
    input_kind: str
    lost_events: int
    # Lines the reader could not use (a corrupt field, a cut line, ...): count and the first
    # line numbers, printed by every command that analyses the trace.
    unparsed: int
    unparsed_lines: tuple[int, ...]
    capture_s: float | None
    # Lines repeating an earlier one exactly, which ftrace does not write (duplicates.py).
    duplicates: Duplicates
    reclaim: Mapping[str, pairing.StallIntervals]
    throttle_events: pl.DataFrame
    throttle: pl.DataFrame
    delay_histogram: pl.DataFrame
    hz: throttle.HzEstimate
    kswapd: tuple[daemons.AwakeReport, ...]
    kcompactd: tuple[daemons.AwakeReport, ...]
    compaction: pairing.StallIntervals
    by_process: pl.DataFrame
    by_order: pl.DataFrame
    by_gfp: pl.DataFrame
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


# What the daemons' wake/sleep accounting reads of their events.
_DAEMON_COLUMNS = ("nid", "pid", "ts_ns", "line")


def _daemon_marks(trace) -> dict[str, tuple[pl.DataFrame, pl.DataFrame]]:
    """Each daemon's wake and sleep events (``nid``, ``pid``, ``ts_ns``, ``line``)."""
    return {
        daemon: tuple(event_columns(trace, name, _DAEMON_COLUMNS) for name in (wake, sleep))
        for daemon, (wake, sleep, _) in daemons.DAEMONS.items()
    }


def _lost_lines(trace) -> list[int]:
    accounting = getattr(trace, "accounting", None)
    return [int(entry.line) for entry in getattr(accounting, "lost_events", ())]


def unparsed_of(trace) -> tuple[int, tuple[int, ...]]:
    """(count, first line numbers) of the lines the reader could not use: a trace's
    unparsed lines, a mail histogram's unidentified ones."""
    accounting = getattr(trace, "accounting", None)
    by_reason = getattr(accounting, "unparsed_by_reason", None)
    if by_reason is None:
        lines = tuple(getattr(accounting, "unidentified_lines", ()))
        return len(lines), lines[:UNPARSED_LINES_SHOWN]
    lines = sorted(n for u in by_reason.values() for n in u.lines)
    return int(accounting.unparsed), tuple(lines[:UNPARSED_LINES_SHOWN])


_COMPACTION = ("mm_compaction_begin", "mm_compaction_end")
_SHRINK_INACTIVE = "mm_vmscan_lru_shrink_inactive"
# Interval and shrinker-call rows in the order the whole-trace pairing gives them.
INTERVAL_ORDER = ("pid", "begin_ts_ns", "begin_line")
INVOCATION_ORDER = ("pid", "ts_ns", "begin_line")


def _write_event(trace) -> str:
    """``mm_vmscan_write_folio`` (5.18+) or ``mm_vmscan_writepage`` before it."""
    names = trace.event_names
    return "mm_vmscan_write_folio" if "mm_vmscan_write_folio" in names else "mm_vmscan_writepage"


def _contexts(trace, is_histogram: bool) -> list[str]:
    """Reclaim contexts to pair: direct always (zero stalls is an answer), the others when
    the trace has their events; none for a mail histogram."""
    if is_histogram:
        return []
    names = set(trace.event_names)
    return [
        context
        for context, (begin, end) in pairing.RECLAIM_EVENTS.items()
        if context == "direct" or begin in names or end in names
    ]


@dataclass(frozen=True)
class _Paired:
    """Pass 1: the reclaim and compaction pairings (rows in the store) and the
    attribution sums."""

    reports: dict[str, pairing.PairingReport]
    compaction: pairing.PairingReport
    stalls: pl.DataFrame
    begins: pl.DataFrame


def _pair_reclaim(
    trace,
    contexts: list[str],
    lost_lines: list[int],
    store: RowStore,
    every: every_event.EveryEvent,
) -> tuple[_Paired, pairing.Labeller]:
    """Pair every reclaim context and compaction block by block into ``store``; also the
    labeller of every later event, which holds the compact interval frame (kind, pid,
    begin, end). The events read are fed to ``every``."""
    pairs = {
        context: pairing.Pairing(
            context,
            begin_fields=pairing.BEGIN_FIELDS,
            end_fields=pairing.END_FIELDS,
            lost_lines=lost_lines,
        )
        for context in contexts
    }
    comp = compaction.compaction_pairing(lost_lines)
    columns: dict[str, tuple[str, ...]] = {}
    for context in contexts:
        begin, end = pairing.RECLAIM_EVENTS[context]
        columns[begin] = (*KEY_COLUMNS, *pairing.BEGIN_FIELDS)
        columns[end] = (*KEY_COLUMNS, *pairing.END_FIELDS)
    columns[_COMPACTION[0]] = (*KEY_COLUMNS, *comp.begin_fields)
    columns[_COMPACTION[1]] = (*KEY_COLUMNS, *comp.end_fields)
    compact: list[pl.DataFrame] = []
    kinds = pl.Enum(list(pairing.RECLAIM_EVENTS))
    stalls = [pl.DataFrame(schema=attribution.STALL_SCHEMA)]
    begins = [pl.DataFrame(schema=attribution.BEGIN_SCHEMA)]

    def keep(context: str, rows: pl.DataFrame) -> None:
        store.add(context, rows)
        # 21 bytes an interval: the kind as a one-byte enum, not a string.
        compact.append(rows.select(pl.col("kind").cast(kinds), "pid", "begin_ts_ns", "end_ts_ns"))
        stalls.append(attribution.stall_sums(rows, context))

    with streams.Ordered() as every_stream:
        for frames in streams.ahead(pairing.event_blocks(trace, columns)):
            every_stream.submit(_feed, every, frames, ())
            for context, paired in pairs.items():
                begin, end = pairing.RECLAIM_EVENTS[context]
                keep(context, paired.add(frames[begin], frames[end]))
                begins.append(attribution.begin_counts(frames[begin], context))
            compacted = comp.add(*map(frames.get, _COMPACTION))
            store.add("compaction", compaction.with_context(compacted))
    for context, paired in pairs.items():
        keep(context, paired.finish())
    store.add("compaction", compaction.with_context(comp.finish()))
    intervals = (
        pl.concat(compact, how="vertical", rechunk=True) if compact else pairing.all_intervals({})
    )
    compact.clear()
    paired = _Paired(
        {c: p.report for c, p in pairs.items()},
        comp.report,
        sum_parts(stalls, attribution.STALL_KEYS),
        sum_parts(begins, ("context", *attribution.PROCESS)),
    )
    return paired, pairing.Labeller(intervals)


def _feed(every: every_event.EveryEvent, frames: Mapping[str, pl.DataFrame], fed) -> None:
    """One block's frames to ``every``, but those of the events in ``fed`` (fed before)."""
    for name, frame in frames.items():
        if name not in fed:
            every.add(name, frame)


@dataclass(frozen=True)
class _Labelled:
    """Pass 2: what the events labelled with their reclaim context add up to."""

    throttle_events: pl.DataFrame
    lru: pl.DataFrame
    lru_by_process: pl.DataFrame
    writes: pl.DataFrame
    shrinker: pl.DataFrame
    shrinker_work: pl.DataFrame
    shrinker_report: pairing.PairingReport


def _label_events(
    trace,
    label: pairing.Labeller,
    lost_lines: list[int],
    store: RowStore,
    every: every_event.EveryEvent,
) -> _Labelled:
    """Label throttle, LRU, write and shrinker events block by block; keep the throttle
    events, the LRU and write sums and the shrinker calls (rows in ``store``). Every
    event, these and those pass 1 did not read, is fed to ``every``."""
    throttled = throttle.throttle_events_of(trace)
    write = _write_event(trace)
    calls = shrinker.shrinker_pairing(lost_lines)
    columns = {name: throttle.throttle_columns(delay) for name, delay in throttled}
    columns[_SHRINK_INACTIVE] = (*KEY_COLUMNS, *lru.LRU_FIELDS)
    columns[write] = (*KEY_COLUMNS, "flags")
    columns[shrinker.START] = (*KEY_COLUMNS, *shrinker.START_FIELDS)
    columns[shrinker.END] = (*KEY_COLUMNS, *shrinker.END_FIELDS)
    fed = every.events
    unread = [n for n in trace.event_names if n not in columns and n not in fed]
    columns.update(dict.fromkeys(unread, every_event.COLUMNS))
    events: dict[str, list[pl.DataFrame]] = {name: [] for name, _ in throttled}
    lru_parts, by_process, write_parts, sums, work = [], [], [], [], []
    label_calls, label_lru = label.fork(), label.fork()

    def lru_sums(shrink_inactive: pl.DataFrame) -> None:
        labelled = label_lru(shrink_inactive)
        lru_parts.append(lru.lru_table(labelled))
        by_process.append(attribution.lru_by_process(labelled))

    def shrinker_calls(start: pl.DataFrame, end: pl.DataFrame) -> None:
        paired = calls.add(shrinker.start_events(start), end)
        invocations = shrinker.invocation_rows(paired, label_calls)
        store.add("shrinker_invocations", invocations)
        sums.append(shrinker.shrinker_sums(invocations))
        work.append(shrinker.work_sums(invocations))

    with (
        streams.Ordered() as every_stream,
        streams.Ordered() as calls_stream,
        streams.Ordered() as lru_stream,
    ):
        for frames in streams.ahead(pairing.event_blocks(trace, columns)):
            every_stream.submit(_feed, every, frames, fed)
            calls_stream.submit(shrinker_calls, frames[shrinker.START], frames[shrinker.END])
            lru_stream.submit(lru_sums, frames[_SHRINK_INACTIVE])
            for name, delay in throttled:
                labelled = label(frames[name])
                throttle.check_fields(trace, name, labelled, delay)
                events[name].append(throttle.throttle_rows(labelled, name, delay))
            write_parts.append(write_counts(label(frames[write])))
    calls.finish()
    return _Labelled(
        # Each event's rows in file order, the events in reporting order.
        throttle_events=throttle.throttle_frame([f for name in events for f in events[name]]),
        lru=lru.lru_totals(lru_parts),
        lru_by_process=sum_parts(by_process, attribution.PROCESS),
        writes=sum_parts(write_parts, ("context", "kind", "mode")),
        shrinker=shrinker.shrinker_shares(sum_parts(sums, ("shrinker", "context"))),
        shrinker_work=shrinker.work_distribution(work),
        shrinker_report=calls.report,
    )


def write_counts(writes: pl.DataFrame) -> pl.DataFrame:
    """``mm_vmscan_write_folio``/``writepage`` events counted per ``context``, ``kind``
    (``file`` by ``RECLAIM_WB_FILE``, else ``anon`` when ``RECLAIM_WB_ANON``) and ``mode``
    (``sync`` when ``RECLAIM_WB_SYNC`` is set, lumpy reclaim < 3.x, else ``async``): the
    script's four write rows per context. Events without either flag count in neither."""
    schema = {
        "context": pl.String(),
        "kind": pl.String(),
        "mode": pl.String(),
        "count": pl.UInt32(),
    }
    if writes.is_empty() or "flags" not in writes.columns:
        return pl.DataFrame(schema=schema)
    flags = pl.col("flags")
    rows = [
        writes.filter(
            flags.list.contains(f"RECLAIM_WB_{kind.upper()}")
            & (flags.list.contains("RECLAIM_WB_SYNC") == (mode == "sync"))
        )
        .group_by("context")
        .agg(count=pl.len())
        .with_columns(kind=pl.lit(kind), mode=pl.lit(mode))
        for mode in ("async", "sync")
        for kind in ("file", "anon")
    ]
    return pl.concat(rows).select(pl.col(name).cast(dtype) for name, dtype in schema.items())


def shrinker_backlog(trace) -> pl.DataFrame:
    """The shrinkers' deferred counters over time (:func:`shrinker.deferred_backlog`)."""
    end = event_columns(trace, shrinker.END, ("ts_ns", "shrinker", "nid", "new_scan"))
    return shrinker.deferred_backlog(end, changes_only=True)


def _closed_ms(rows: pl.LazyFrame) -> np.ndarray:
    """Durations (ms) of the closed intervals among ``rows``."""
    closed = rows.filter(pl.col("status") == "closed").select(pl.col("duration_ns") / 1e6)
    return closed.collect().to_series().to_numpy()


def _duplicates(trace, start: int | None, end: int | None, screen: RepeatScreen) -> Duplicates:
    """:func:`duplicate_lines` of ``trace``, counted only when ``screen`` (fed every event)
    could not rule repeats out."""
    if screen.clear:
        return Duplicates(0, None)
    rows = sum(event_scan(trace, n).select(pl.len()).collect().item() for n in trace.event_names)
    return duplicate_lines(trace, start, end, rows)


def _compute(trace, store: RowStore) -> TraceAnalysis:
    """Every statistic of ``trace`` in two passes over its blocks (see :func:`analyse_trace`),
    without the checks against CONFIG_HZ and vmstat."""
    lost = int(trace.lost_events_total)
    lost_lines = _lost_lines(trace)
    is_histogram = hasattr(trace, "groups")
    marks = _daemon_marks(trace)
    every = every_event.EveryEvent(marks)
    paired, label = _pair_reclaim(trace, _contexts(trace, is_histogram), lost_lines, store, every)
    labelled = _label_events(trace, label, lost_lines, store, every)
    del label  # its intervals are only for labelling: the rest reads sums and stored rows
    start, end = every.span
    dups = Duplicates(0, None) if is_histogram else _duplicates(trace, start, end, every.repeats)
    reclaim = {
        context: pairing.StallIntervals.deferred(
            {"intervals": store.loader(context, INTERVAL_ORDER)}, report=report
        )
        for context, report in paired.reports.items()
    }
    comp_rows = store.scan("compaction")
    wanted = ("status", "context", "duration_ns", "lost_events_inside", "end_status", "comm", "pid")
    present = comp_rows.collect_schema().names()
    comp_closed = comp_rows.select(c for c in wanted if c in present).collect()
    t_events = labelled.throttle_events
    awake: dict[str, tuple[daemons.AwakeReport, ...]] = {}
    for daemon, (wake, sleep) in marks.items():
        awake[daemon] = tuple(
            daemons.daemon_awake(
                wake,
                sleep,
                every.activity(daemon),
                daemon=daemon,
                capture_start_ns=int(start or 0),
                capture_end_ns=int(end or 0),
                lost_events=lost,
            )
            if start is not None
            else ()
        )
    series: dict[str, tuple[np.ndarray, list[int] | None]] = {}
    for context in reclaim:
        series[f"{context} reclaim"] = (_closed_ms(store.scan(context)), None)
    closed_comp = comp_closed.filter(pl.col("status") == "closed")
    for (context,), group in closed_comp.group_by("context", maintain_order=True):
        series[f"{context} compaction"] = ((group["duration_ns"] / 1e6).to_numpy(), None)
    known = t_events.filter(pl.col("delay_us").is_not_null())
    for (reason, context), group in known.group_by("reason", "context", maintain_order=True):
        series[f"throttle {reason} {context}"] = (
            (group["delay_us"] / 1e3).to_numpy(),
            group["count"].to_list(),
        )
    wakeups = event_scan(trace, "mm_vmscan_wakeup_kswapd")
    weight = pl.col("count").sum() if "count" in wakeups.collect_schema().names() else pl.len()
    wakeups = wakeups.group_by(attribution.PROCESS).agg(wakeup_kswapd=weight).collect()
    # Every table carries its source's lost-event count: any sum may be short by lost events.
    lost_col = pl.lit(lost, dtype=pl.Int64)
    unparsed = unparsed_of(trace)
    loaders = {
        "shrinker_invocations": store.loader("shrinker_invocations", INVOCATION_ORDER),
        "shrinker_backlog": functools.partial(shrinker_backlog, trace),
    }
    analysis = TraceAnalysis.deferred(
        loaders,
        source=str(trace.source),
        input_kind="histogram" if is_histogram else "trace",
        lost_events=lost,
        unparsed=unparsed[0],
        unparsed_lines=unparsed[1],
        capture_s=(end - start) / 1e9 if start is not None else None,
        duplicates=dups,
        reclaim=reclaim,
        throttle_events=t_events,
        throttle=throttle.throttle_table(t_events).with_columns(lost_events=lost_col),
        delay_histogram=throttle.delay_histogram(t_events),
        hz=throttle.infer_hz(t_events, None),
        kswapd=awake["kswapd"],
        kcompactd=awake["kcompactd"],
        compaction=pairing.StallIntervals.deferred(
            {"intervals": store.loader("compaction", INTERVAL_ORDER)}, report=paired.compaction
        ),
        by_process=attribution.by_process(
            paired.stalls,
            paired.begins,
            labelled.lru_by_process,
            wakeups,
            t_events,
            comp_closed,
        ),
        by_order=attribution.by_order(paired.stalls),
        by_gfp=attribution.by_gfp(paired.stalls),
        compaction_time=compaction.compaction_time(comp_closed).with_columns(lost_events=lost_col),
        compaction_status=compaction.compaction_status(comp_closed),
        compact_orders=compaction.try_to_compact_by_order(
            event_columns(
                trace, "mm_compaction_try_to_compact_pages", ("order", "priority", "count")
            )
        ),
        shrinker=labelled.shrinker.with_columns(lost_events=lost_col),
        shrinker_work=labelled.shrinker_work,
        lru=labelled.lru.with_columns(lost_events=lost_col),
        lru_check=None,
        distributions=distribution_table(dict(sorted(series.items()))),
        summary=pl.DataFrame(),
        histogram_groups=getattr(trace, "groups", None),
    )
    if is_histogram:
        # A mail histogram has no reclaim intervals, LRU or kswapd events to summarise.
        return analysis
    summary = vmscan_summary(
        analysis,
        writes=labelled.writes,
        wakeup_requests=_count(trace, "mm_vmscan_wakeup_kswapd"),
        event_names=trace.event_names,
    )
    object.__setattr__(analysis, "summary", summary)
    return analysis


def analyse_trace(
    trace,
    *,
    config_hz: int | None = None,
    vmstat_deltas: Mapping[str, int] | None = None,
    store: RowStore | None = None,
) -> TraceAnalysis:
    """Derive every stall, throttle, daemon, compaction, shrinker and LRU statistic.

    ``config_hz`` (CONFIG_HZ of the capturing kernel, if known) is checked against the HZ
    inferred from throttle delays; ``vmstat_deltas`` (counter name → delta over the same
    capture) enables the LRU cross-check.

    An ingested trace is read one 32 MB block at a time (its Parquet parts), twice: first
    pairing reclaim and compaction begin/end events per pid, then labelling throttle, LRU,
    write and shrinker events with the reclaim interval around them; every other event is
    read once, in either pass, for what is read of all (:mod:`.every_event`: the span, the
    daemons' activity, the repeat screen that spares the duplicate count a capture in time
    order). Only the sums, the compact interval frame and the per-row results go on; the
    per-row results go to ``store`` (memory by default; the analysis cache for
    :func:`analysis.metrics.trace_files.analyse_file`), so memory stays that of a block
    and the intervals, not of the trace. A pid going back in time across a block boundary
    starts pairing again there (:class:`pairing.Pairing`).
    """
    return with_checks(_compute(trace, store or RowStore()), config_hz, vmstat_deltas)


def with_checks(
    analysis: TraceAnalysis, config_hz: int | None, vmstat_deltas: Mapping[str, int] | None
) -> TraceAnalysis:
    """``analysis`` with its HZ checked against ``config_hz`` and its LRU sums against
    ``vmstat_deltas`` (the parts of an analysis that depend on the iteration, not the trace)."""
    object.__setattr__(analysis, "hz", throttle.infer_hz(analysis.throttle_events, config_hz))
    check = lru.lru_vs_vmstat(analysis.lru, vmstat_deltas) if vmstat_deltas else None
    object.__setattr__(analysis, "lru_check", check)
    return analysis


def _count(trace, name: str) -> int:
    """Events of ``name``, weighted by ``count`` where the source has it (a histogram)."""
    scan = event_scan(trace, name)
    weight = pl.col("count").sum() if "count" in scan.collect_schema().names() else pl.len()
    return int(scan.select(weight).collect().item() or 0)


def not_traced(names: set[str], *events: str) -> str | None:
    """The note of a statistic whose events are all absent from a trace (``names``): it
    is not 0 but unknown (the events were not enabled, or none fired)."""
    if names.isdisjoint(events):
        return f"not traced: no {' or '.join(events)} events in the trace"
    return None


def vmscan_summary(
    analysis: TraceAnalysis,
    *,
    writes: pl.DataFrame,
    wakeup_requests: int,
    event_names: Sequence[str],
) -> pl.DataFrame:
    """The summary of ``trace-vmscan-postprocess.pl`` (seed 002's "FTrace Reclaim
    Statistics: vmscan"), as ``statistic``, ``value``, ``unit``, ``note`` rows.

    Pages scanned/reclaimed come from ``mm_vmscan_lru_shrink_inactive`` (the counters vmstat
    uses), writes (one per event: a page, or since 5.18 a folio) from :func:`write_counts`,
    kswapd awake time is the lower bound of :mod:`analysis.metrics.daemons` (its upper bound
    on the next row). A row whose events the trace does not have (``event_names``) is null
    with a ``not traced`` note, not 0; the script's own rows cover direct reclaim and kswapd,
    and memcg reclaim (a cgroup's limit) has rows of its own.
    """
    names = set(event_names)
    direct_events = pairing.RECLAIM_EVENTS["direct"]
    lru_note = not_traced(names, _SHRINK_INACTIVE)
    write_note = not_traced(names, "mm_vmscan_write_folio", "mm_vmscan_writepage")
    kswapd_note = (
        None
        if analysis.kswapd
        else "not traced: no mm_vmscan_kswapd_wake or _sleep events and no kswapd activity"
    )

    def lru_sum(column: str, context: str) -> int:
        return int(analysis.lru.filter(pl.col("context") == context)[column].sum() or 0)

    def write_rows(who: str, context: str) -> list[tuple]:
        """The script's four write rows of one context."""
        rows = []
        for mode in ("async", "sync"):
            for kind in ("file", "anon"):
                count = writes.filter(
                    (pl.col("context") == context)
                    & (pl.col("kind") == kind)
                    & (pl.col("mode") == mode)
                )["count"].sum()
                rows.append(
                    (f"{who} write {kind} {mode} I/O", int(count or 0), "writes", write_note)
                )
        return rows

    direct = analysis.reclaim.get("direct")
    direct_note = not_traced(names, *direct_events)
    kswapd = analysis.kswapd

    rows = [
        ("Direct reclaims", direct.report.count, "count", direct_note),
        ("Direct reclaim pages scanned", lru_sum("scanned_pages", "direct"), "pages", lru_note),
        (
            "Direct reclaim pages reclaimed",
            lru_sum("reclaimed_pages", "direct"),
            "pages",
            lru_note,
        ),
        *write_rows("Direct reclaim", "direct"),
        (
            "Wake kswapd requests",
            wakeup_requests,
            "count",
            not_traced(names, "mm_vmscan_wakeup_kswapd"),
        ),
        (
            "Kswapd wakeups",
            sum(r.wakes - r.rewakes for r in kswapd),
            "count",
            kswapd_note,
        ),
        (
            "Kswapd re-wakes while awake",
            sum(r.rewakes for r in kswapd),
            "count",
            kswapd_note,
        ),
        ("Kswapd pages scanned", lru_sum("scanned_pages", "kswapd"), "pages", lru_note),
        ("Kswapd pages reclaimed", lru_sum("reclaimed_pages", "kswapd"), "pages", lru_note),
        *write_rows("Kswapd reclaim", "kswapd"),
        (
            "Time stalled direct reclaim",
            direct.report.total_s,
            "s",
            direct_note,
        ),
        (
            "Time kswapd awake (lower bound)",
            sum(r.awake_s for r in kswapd),
            "s",
            kswapd_note,
        ),
        (
            "Time kswapd awake (upper bound)",
            sum(r.awake_upper_s for r in kswapd),
            "s",
            kswapd_note,
        ),
    ]
    rows = [(label, None if note else value, unit, note) for label, value, unit, note in rows]
    memcg = analysis.reclaim.get("memcg")
    if memcg:
        rows += [
            ("Memcg reclaims", memcg.report.count, "count", None),
            ("Memcg reclaim pages scanned", lru_sum("scanned_pages", "memcg"), "pages", lru_note),
            ("Time stalled memcg reclaim", memcg.report.total_s, "s", None),
        ]
    # A statistic with a note has no value: its events are not in the trace.
    return pl.DataFrame(
        {
            "statistic": [r[0] for r in rows],
            "value": [None if r[3] else float(r[1]) for r in rows],
            "unit": [r[2] for r in rows],
            "note": [r[3] for r in rows],
        },
        schema={
            "statistic": pl.String(),
            "value": pl.Float64(),
            "unit": pl.String(),
            "note": pl.String(),
        },
    )


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
