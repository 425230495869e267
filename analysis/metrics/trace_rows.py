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
with a note, not 0. Compaction by khugepaged, which mmtests counts as "direct" (anything not
kswapd), has its own row here.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from analysis.metrics.daemons import AwakeReport
from analysis.metrics.trace_analysis import TraceAnalysis

__all__ = ["TraceRow", "mmtests_trace_rows"]

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


def mmtests_trace_rows(analysis: TraceAnalysis) -> tuple[TraceRow, ...]:
    """Seed 002's vmscan block then seed 003's compaction block (see module docstring);
    empty for a mail histogram, which has no reclaim intervals."""
    if analysis.summary.is_empty():
        return ()
    summary = dict(zip(analysis.summary["statistic"], analysis.summary["value"], strict=True))
    units = dict(zip(analysis.summary["statistic"], analysis.summary["unit"], strict=True))
    vmscan = [TraceRow(VMSCAN, label, summary[key], units[key]) for label, key in _VMSCAN_ROWS]
    vmscan.append(_awake(analysis.kswapd, "kswapd", VMSCAN, "Time kswapd awake (seconds)"))
    compaction = [
        _awake(analysis.kswapd, "kswapd", COMPACTION, "Time kswapd awake"),
        _awake(analysis.kcompactd, "kcompactd", COMPACTION, "Time kcompactd awake"),
        *(_compacting(analysis, c) for c in ("direct", "kswapd", "kcompactd", "khugepaged")),
    ]
    return (*vmscan, *compaction)
