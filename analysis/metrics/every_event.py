"""What the analysis reads of every event, whatever its tracepoint, in the same pass as the
events it labels (:func:`analysis.metrics.trace_analysis.analyse_trace`): the capture's
first and last timestamps, the kswapd and kcompactd threads' activity
(:func:`analysis.metrics.daemons.daemon_awake`) and whether a line may repeat one far
before it (:class:`analysis.metrics.duplicates.RepeatScreen`). Rows are fed per event in
file order, a block at a time; of the daemons' rows only those their awake time can tell
apart from the rest are kept (:func:`activity_points`), so memory grows with their wakes,
not with their events.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from analysis.metrics import daemons
from analysis.metrics.duplicates import RepeatScreen

__all__ = ["COLUMNS", "EveryEvent", "activity_points"]

# What is read of every event.
COLUMNS = ("line", "ts_ns", "pid", "comm")


def _own(daemon: str, pids: pl.Series) -> pl.Expr:
    """Rows of ``daemon``'s threads: a comm naming it (``kswapd0``) or a pid that emitted
    its wake/sleep events (a comm the kernel printed as ``<...>``)."""
    pattern = daemons.DAEMONS[daemon][2]
    return pl.col("comm").str.contains(pattern) | pl.col("pid").is_in(pids.implode())


def activity_points(rows: pl.DataFrame, wakes: np.ndarray) -> pl.DataFrame:
    """The rows (``pid``, ``comm``, ``ts_ns``, in file order) that
    :func:`daemons.daemon_awake` can tell apart from all of ``rows``: each comm's first
    (which pid a ``kswapdN`` is), each pid's earliest, and each pid's latest before every
    wake (``wakes``: every wake's timestamp, sorted), which is all its bounds read of a
    pid's activity: the first, the last, and the last before a wake."""
    if rows.is_empty():
        return rows
    ts = pl.col("ts_ns")
    since_wake = pl.Series(np.searchsorted(wakes, rows["ts_ns"].to_numpy(), side="right"))
    return (
        rows.with_columns(_since=since_wake)
        .filter(
            (ts == ts.max().over("pid", "_since"))
            | (ts == ts.min().over("pid"))
            | (pl.int_range(pl.len()).over("comm") == 0)
        )
        .drop("_since")
    )


class EveryEvent:
    """The span, activity and repeat screen of the events fed so far; ``marks``: each
    daemon's wake and sleep events (``mm_vmscan_kswapd_wake``/``_sleep``,
    ``mm_compaction_kcompactd_wake``/``_sleep``: ``pid``, ``ts_ns`` ...)."""

    def __init__(self, marks: Mapping[str, tuple[pl.DataFrame, pl.DataFrame]]) -> None:
        pids = {
            d: pl.concat([f.select("pid") for f in pair], how="vertical_relaxed")["pid"]
            .drop_nulls()
            .unique()
            .cast(pl.Int32)
            for d, pair in marks.items()
        }
        self._own = {d: _own(d, p) for d, p in pids.items()}
        # What may be a daemon's row, cheaper than its pattern on every row: its comm
        # starts with the daemon's name (as every DAEMONS pattern does), or its pid is one
        # of the daemons'.
        self._kept = pl.col("pid").is_in(pl.concat(list(pids.values())).implode()) | (
            pl.any_horizontal(pl.col("comm").str.starts_with(d) for d in marks)
        )
        wakes = [wake["ts_ns"].drop_nulls().cast(pl.Int64) for wake, _ in marks.values()]
        self._wakes = np.unique(pl.concat(wakes).to_numpy())
        # Per event fed so far, its daemon rows block by block.
        self._daemon_rows: dict[str, list[pl.DataFrame]] = {}
        self._lo: int | None = None
        self._hi: int | None = None
        self.repeats = RepeatScreen()

    @property
    def events(self) -> set[str]:
        """The events fed so far."""
        return set(self._daemon_rows)

    def add(self, name: str, rows: pl.DataFrame) -> None:
        """One block of event ``name``'s rows (at least :data:`COLUMNS`), in file order."""
        self._daemon_rows.setdefault(name, [])
        if rows.is_empty():  # most events are absent from most blocks
            return
        timed = rows.select(
            pl.col("pid").cast(pl.Int32), "comm", pl.col("ts_ns").cast(pl.Int64), "line"
        ).filter(pl.col("ts_ns").is_not_null())
        daemon_rows = timed.filter(self._kept).drop("line")
        self._daemon_rows[name].append(activity_points(daemon_rows, self._wakes))
        if timed.is_empty():
            return
        lo, hi = timed.select(lo=pl.col("ts_ns").min(), hi=pl.col("ts_ns").max()).row(0)
        self._lo = lo if self._lo is None else min(self._lo, lo)
        self._hi = hi if self._hi is None else max(self._hi, hi)
        self.repeats.add(name, timed["line"].to_numpy(), timed["ts_ns"].to_numpy())

    @property
    def span(self) -> tuple[int | None, int | None]:
        """First and last ``ts_ns`` over every event (None, None without any)."""
        return self._lo, self._hi

    def activity(self, daemon: str) -> pl.DataFrame:
        """``pid``, ``comm``, ``ts_ns`` of the events of ``daemon``'s threads that its
        awake time reads (:func:`activity_points`), event by event (sorted by name), each
        in file order."""
        frames = [f for name in sorted(self._daemon_rows) for f in self._daemon_rows[name]]
        if not frames:
            return pl.DataFrame(
                schema={"pid": pl.Int32(), "comm": pl.String(), "ts_ns": pl.Int64()}
            )
        return pl.concat(frames).filter(self._own[daemon])
