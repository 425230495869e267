"""What the analysis reads of every event, whatever its tracepoint, in the same pass as the
events it labels (:func:`analysis.metrics.trace_analysis.analyse_trace`): the capture's
first and last timestamps, the kswapd and kcompactd threads' activity
(:func:`analysis.metrics.daemons.daemon_awake`) and whether a line may repeat one far
before it (:class:`analysis.metrics.duplicates.RepeatScreen`). Rows are fed per event in
file order, a block at a time; only the daemons' rows are kept.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from analysis.metrics import daemons
from analysis.metrics.duplicates import RepeatScreen

__all__ = ["COLUMNS", "EveryEvent"]

# What is read of every event.
COLUMNS = ("line", "ts_ns", "pid", "comm")


def _own(daemon: str, pids: pl.Series) -> pl.Expr:
    """Rows of ``daemon``'s threads: a comm naming it (``kswapd0``) or a pid that emitted
    its wake/sleep events (a comm the kernel printed as ``<...>``)."""
    pattern = daemons.DAEMONS[daemon][2]
    return pl.col("comm").str.contains(pattern) | pl.col("pid").is_in(pids.implode())


class EveryEvent:
    """The sums and rows above over the events fed so far; ``daemon_pids``: the pids of
    each daemon's wake and sleep events (``mm_vmscan_kswapd_wake``/``_sleep``,
    ``mm_compaction_kcompactd_wake``/``_sleep``)."""

    def __init__(self, daemon_pids: Mapping[str, pl.Series]) -> None:
        self._own = {d: _own(d, pids.cast(pl.Int32)) for d, pids in daemon_pids.items()}
        # What may be a daemon's row, cheaper than its pattern on every row: its comm
        # starts with the daemon's name, or its pid is one of the daemon's.
        pids = pl.concat(list(daemon_pids.values())).cast(pl.Int32)
        self._kept = pl.col("pid").is_in(pids.implode()) | pl.any_horizontal(
            pl.col("comm").str.starts_with(daemon) for daemon in daemon_pids
        )
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
        timed = rows.select(
            pl.col("pid").cast(pl.Int32), "comm", pl.col("ts_ns").cast(pl.Int64), "line"
        ).filter(pl.col("ts_ns").is_not_null())
        self._daemon_rows.setdefault(name, []).append(timed.filter(self._kept).drop("line"))
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
        """``pid``, ``comm``, ``ts_ns`` of every event of ``daemon``'s threads, event by
        event (sorted by name), each in file order: all :func:`daemons.daemon_awake` reads of
        the capture's activity."""
        frames = [f for name in sorted(self._daemon_rows) for f in self._daemon_rows[name]]
        if not frames:
            return pl.DataFrame(
                schema={"pid": pl.Int32(), "comm": pl.String(), "ts_ns": pl.Int64()}
            )
        return pl.concat(frames).filter(self._own[daemon])
