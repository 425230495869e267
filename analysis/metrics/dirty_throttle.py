"""Writer throttling by ``balance_dirty_pages``: the other half of a dirty-ratio change.

Source: ``writeback:balance_dirty_pages`` (include/trace/events/writeback.h; mm/
page-writeback.c ``balance_dirty_pages()``), fired once per pass of the throttling loop of
a task that dirtied pages. Fields: ``limit``, ``setpoint``, ``dirty`` (global, pages);
``bdi_setpoint``/``bdi_dirty`` (printed ``wb_setpoint``/``wb_dirty`` by recent kernels: the
writeback domain's); ``dirty_ratelimit``/``task_ratelimit`` (KB/s; a task ratelimit of 0
means the domain is over its limit); ``pause``, ``period``, ``paused``, ``think`` (ms,
``jiffies * 1000 / HZ``). A pass with ``pause > 0`` is followed by a sleep of that long
(``io_schedule_timeout(pause)``); a pass whose pause fell below the minimum records
``min(pause, 0)`` and does not sleep. So a task's throttled time is the sum of its
positive pauses, each quantised to whole jiffies (4 ms at HZ=250) and the sleep may end
early only on a fatal signal.

Wiring (docs/inputs.md "Writer throttling"): :func:`dirty_throttle` of a trace's
``balance_dirty_pages`` frame, per task and device; :func:`pause_samples` the per-sleep
pauses for latency comparisons.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

__all__ = ["DirtyThrottle", "dirty_throttle", "pause_samples"]

TABLE_SCHEMA = {
    "comm": pl.String(),
    "pid": pl.Int32(),
    "bdi": pl.String(),
    "passes": pl.UInt32(),
    "sleeps": pl.UInt32(),
    "sleep_ms": pl.Int64(),
    "max_pause_ms": pl.Int64(),
    "over_limit_passes": pl.UInt32(),
    "max_wb_dirty": pl.Int64(),
    "max_wb_setpoint": pl.Int64(),
}


@dataclass(frozen=True)
class DirtyThrottle:
    """Throttling of dirtying tasks over a trace (module docstring).

    ``table``: per ``comm``, ``pid`` and ``bdi``, most throttled first: ``passes``
    (events), ``sleeps`` (pause > 0), ``sleep_ms`` (sum of those pauses),
    ``max_pause_ms``, ``over_limit_passes`` (task_ratelimit 0) and the highest writeback
    domain dirty count and setpoint seen (pages). ``traced`` is False when the trace has
    no balance_dirty_pages event at all: "not traced", never "no throttling".
    """

    traced: bool
    passes: int
    sleeps: int
    sleep_ms: int
    table: pl.DataFrame


def _wb(frame: pl.DataFrame, name: str) -> pl.Expr:
    """The writeback domain's field under either spelling (``bdi_*`` or ``wb_*``)."""
    columns = [c for c in (f"bdi_{name}", f"wb_{name}") if c in frame.columns]
    return pl.coalesce(*columns) if columns else pl.lit(None, pl.Int64)


def dirty_throttle(events: pl.DataFrame, *, traced: bool = True) -> DirtyThrottle:
    """:class:`DirtyThrottle` of a ``balance_dirty_pages`` frame; ``traced``: whether the
    capture enabled the event (an empty frame then means no task was throttled)."""
    sleeping = pl.col("pause") > 0
    table = (
        events.with_columns(wb_dirty_=_wb(events, "dirty"), wb_setpoint_=_wb(events, "setpoint"))
        .group_by("comm", "pid", "bdi")
        .agg(
            passes=pl.len(),
            sleeps=sleeping.sum(),
            sleep_ms=pl.col("pause").filter(sleeping).sum(),
            max_pause_ms=pl.col("pause").max(),
            over_limit_passes=(pl.col("task_ratelimit") == 0).sum(),
            max_wb_dirty=pl.col("wb_dirty_").max(),
            max_wb_setpoint=pl.col("wb_setpoint_").max(),
        )
        .sort("sleep_ms", "comm", "pid", descending=[True, False, False])
    )
    table = table.cast(TABLE_SCHEMA) if table.height else pl.DataFrame(schema=TABLE_SCHEMA)
    return DirtyThrottle(
        traced=traced,
        passes=events.height,
        sleeps=int(table["sleeps"].sum()),
        sleep_ms=int(table["sleep_ms"].sum()),
        table=table,
    )


def pause_samples(events: pl.DataFrame) -> pl.Series:
    """Each sleep's pause in ms (pause > 0), in trace order: the writer-side latency."""
    return events.sort("ts_ns").filter(pl.col("pause") > 0)["pause"].alias("pause_ms")
