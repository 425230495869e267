"""mmtests' ftrace summary rows, under its names and in its units, from a
:class:`~analysis.metrics.trace_analysis.TraceAnalysis`, so that a seed's table can be set
beside mmlab's line by line (docs/mmtests-conventions.md, "Trace-derived totals").

Two blocks, as the seeds print them:

- ``vmscan`` — "FTrace Reclaim Statistics: vmscan" of ``trace-vmscan-postprocess.pl``
  (seed 002): counts, pages, writes (``mm_vmscan_write_folio``/``writepage`` events by
  ``RECLAIM_WB_*`` flags) and times in seconds;
- ``compaction`` — the kcompactd-era rows of seed 003 (mmtests' ftrace monitor as its
  author adjusted it), times in milliseconds.

Where mmtests' own monitor (``MonitorFtracevmscan``) is wrong, this does not copy it: it
subtracts the end timestamp from the begin one (negative times), stores a compaction's
begin in the direct-reclaim table so "Time direct compacting" stays 0 and a compaction can
end a reclaim stall, and resets the direct-reclaim state on ``mm_vmscan_kswapd_sleep``
instead of kswapd's. Here intervals are paired per pid by :mod:`analysis.metrics.pairing`
and :mod:`analysis.metrics.daemons`.

kswapd and kcompactd awake times are the lower bound of :mod:`analysis.metrics.daemons`
(mmtests counts only wake→sleep intervals, so an interval still open at the end of the
capture adds nothing there); when it is not exact the row's note gives the upper bound.
A time whose events are absent from the trace (not traced, or nothing happened) is null
with a note, not 0. The script's closing ratios (:func:`vmscan_ratios`) need the
benchmark's own user+system and elapsed seconds (``tests-timestamp``, found by
:func:`benchmark_times`); without them those rows are null. Compaction by khugepaged,
which mmtests counts as "direct" (anything not kswapd), has its own row here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from analysis.ingest.captures import iteration_of
from analysis.ingest.mmtests import TestTimes
from analysis.metrics.daemons import AwakeReport
from analysis.metrics.trace_analysis import TraceAnalysis

__all__ = [
    "TraceRow",
    "VmscanTotals",
    "benchmark_times",
    "mmtests_trace_rows",
    "vmscan_ratios",
]

VMSCAN, COMPACTION = "vmscan", "compaction"


def _writes(who: str) -> tuple[str, ...]:
    """The script's four write rows of ``who`` ("Direct reclaim", "Kswapd reclaim")."""
    return tuple(
        f"{who} write {kind} {mode} I/O" for mode in ("async", "sync") for kind in ("file", "anon")
    )


# Seed 002's rows in its order: (mmtests label, vmscan_summary statistic).
_VMSCAN_ROWS = (
    *(
        (label, label)
        for label in (
            "Direct reclaims",
            "Direct reclaim pages scanned",
            "Direct reclaim pages reclaimed",
            *_writes("Direct reclaim"),
            "Wake kswapd requests",
            "Kswapd wakeups",
            "Kswapd pages scanned",
            "Kswapd pages reclaimed",
            *_writes("Kswapd reclaim"),
        )
    ),
    ("Time stalled direct reclaim (seconds)", "Time stalled direct reclaim"),
)


@dataclass(frozen=True)
class TraceRow:
    """One mmtests summary row: ``value`` in ``unit``, None with ``note`` saying why."""

    block: str
    label: str
    value: float | None
    unit: str
    note: str = ""


def _awake(reports: tuple[AwakeReport, ...], daemon: str, block: str, label: str) -> TraceRow:
    """Σ over nodes of a daemon's awake time, in the block's unit."""
    scale, unit = (1.0, "s") if block == VMSCAN else (1e3, "ms")
    if not reports:
        return TraceRow(block, label, None, unit, f"no {daemon} wake/sleep events in the trace")
    lower = sum(r.awake_s for r in reports) * scale
    upper = sum(r.awake_upper_s for r in reports) * scale
    note = "" if upper == lower else f"lower bound (open at capture end); upper {upper:.6g} {unit}"
    return TraceRow(block, label, lower, unit, note)


def _compacting(analysis: TraceAnalysis, context: str) -> TraceRow:
    label = f"Time {context} compacting"
    if analysis.compaction.intervals.is_empty():
        return TraceRow(COMPACTION, label, None, "ms", "no mm_compaction_begin/end in the trace")
    total = analysis.compaction_time.filter(pl.col("context") == context)["total_s"].sum()
    return TraceRow(COMPACTION, label, float(total or 0.0) * 1e3, "ms")


def _pct(label: str, num: float | None, den: float | None, why: str, missing: str = "") -> TraceRow:
    """``100 · num / den``; ``missing`` (what the trace lacks) when an input is not in the
    trace, ``why`` when ``den`` is 0 or not known otherwise."""
    if num is None or (den is None and missing):
        return TraceRow(VMSCAN, label, None, "%", missing or "no kswapd awake time in the trace")
    if not den:
        return TraceRow(VMSCAN, label, None, "%", why)
    return TraceRow(VMSCAN, label, 100 * num / den, "%")


@dataclass(frozen=True)
class VmscanTotals:
    """The inputs of the script's closing rows: pages, writes (all, file) and seconds;
    None where the trace does not have the events (with ``note`` saying which), and
    ``covers`` saying what the totals leave out (memcg reclaim has rows of its own)."""

    scanned: float | None
    reclaimed: float | None
    written: float | None
    file_written: float | None
    stalled_s: float | None
    awake_s: float | None
    lru_note: str = ""
    write_note: str = ""
    direct_note: str = ""
    covers: str = ""


def vmscan_ratios(totals: VmscanTotals, times: TestTimes | None) -> tuple[TraceRow, ...]:
    """The closing rows of seed 002's block: totals, %age ratios of pages scanned, and
    the share of time spent in direct reclaim, 100 · stalled / (user + system + stalled),
    and awake, 100 · awake / elapsed, over the benchmark's own times."""
    nothing = "nothing scanned by direct reclaim or kswapd"
    if totals.covers:
        nothing += f"; {totals.covers}"
    no_times = "needs the benchmark's user, system and elapsed time (tests-timestamp)"
    cpu = times.user_s + times.system_s if times and times.user_s is not None else None
    elapsed = times.elapsed_s if times else None
    stalled = totals.stalled_s
    missing = totals.lru_note
    covers = f"direct reclaim and kswapd only: {totals.covers}" if totals.covers else ""
    unwritten = totals.write_note or missing
    return (
        TraceRow(VMSCAN, "Total pages scanned", totals.scanned, "pages", missing or covers),
        TraceRow(VMSCAN, "Total pages reclaimed", totals.reclaimed, "pages", missing or covers),
        _pct(
            "%age total pages scanned/reclaimed",
            totals.reclaimed,
            totals.scanned,
            nothing,
            missing,
        ),
        _pct(
            "%age total pages scanned/written", totals.written, totals.scanned, nothing, unwritten
        ),
        _pct(
            "%age file pages scanned/written",
            totals.file_written,
            totals.scanned,
            nothing,
            unwritten,
        ),
        _pct(
            "Percentage Time Spent Direct Reclaim",
            stalled,
            None if cpu is None or stalled is None else cpu + stalled,
            no_times,
            totals.direct_note,
        ),
        _pct("Percentage Time kswapd Awake", totals.awake_s, elapsed, no_times),
    )


def _sum(values) -> float | None:
    """Sum, or None when any term is (its events are not in the trace)."""
    values = list(values)
    return None if any(v is None for v in values) else sum(values)


def benchmark_times(source: str | Path) -> TestTimes | None:
    """``tests-timestamp``'s times of the test whose trace is ``source``, when the trace
    is in an mmtests iteration that has them."""
    found = iteration_of(Path(source))
    return found[0].times.get(found[1]) if found else None


def mmtests_trace_rows(
    analysis: TraceAnalysis, times: TestTimes | None = None
) -> tuple[TraceRow, ...]:
    """Seed 002's vmscan block then seed 003's compaction block (see module docstring);
    empty for a mail histogram, which has no reclaim intervals. ``times`` are the
    benchmark's own (:func:`benchmark_times`), for the time percentages."""
    if analysis.summary.is_empty():
        return ()
    table = analysis.summary
    summary = dict(zip(table["statistic"], table["value"], strict=True))
    units = dict(zip(table["statistic"], table["unit"], strict=True))
    notes = dict(zip(table["statistic"], table["note"], strict=True))
    vmscan = [
        TraceRow(VMSCAN, label, summary[key], units[key], notes[key] or "")
        for label, key in _VMSCAN_ROWS
    ]
    awake = _awake(analysis.kswapd, "kswapd", VMSCAN, "Time kswapd awake (seconds)")
    vmscan.append(awake)
    writes = [summary[w] for who in ("Direct reclaim", "Kswapd reclaim") for w in _writes(who)]
    writes_label = _writes("Direct reclaim")[0]
    scanned = ("Direct reclaim pages scanned", "Kswapd pages scanned")
    memcg = summary.get("Memcg reclaim pages scanned")
    totals = VmscanTotals(
        scanned=_sum(summary[k] for k in scanned),
        reclaimed=_sum(
            summary[k] for k in ("Direct reclaim pages reclaimed", "Kswapd pages reclaimed")
        ),
        written=_sum(writes),
        # _writes order: file async, anon async, file sync, anon sync.
        file_written=_sum(writes[0::2]),
        stalled_s=summary["Time stalled direct reclaim"],
        awake_s=awake.value,
        lru_note=notes[scanned[0]] or "",
        write_note=notes[writes_label] or "",
        direct_note=notes["Time stalled direct reclaim"] or "",
        covers=""
        if memcg is None
        else f"memcg reclaim scanned {memcg:,.0f} pages (Memcg reclaim rows)",
    )
    vmscan += vmscan_ratios(totals, times)
    compaction = [
        _awake(analysis.kswapd, "kswapd", COMPACTION, "Time kswapd awake"),
        _awake(analysis.kcompactd, "kcompactd", COMPACTION, "Time kcompactd awake"),
        *(_compacting(analysis, c) for c in ("direct", "kswapd", "kcompactd", "khugepaged")),
    ]
    return (*vmscan, *compaction)
