"""Altair charts of reclaim stalls (``mm_vmscan_*_reclaim_begin`` to ``_end`` of one
task): the stall timeline."""

from __future__ import annotations

import altair as alt
import polars as pl

__all__ = ["timeline_chart"]


def timeline_chart(intervals: pl.DataFrame, window_s: float, title: str) -> alt.Chart:
    """One bar per closed reclaim interval of one task, for the first ``window_s`` seconds
    (time since the first stall): a whole capture has tens of thousands of stalls."""
    origin = intervals["begin_ts_ns"].min()
    return (
        alt.Chart(
            intervals.select(
                "kind",
                pl.col("pid").cast(pl.String),
                begin_s=(pl.col("begin_ts_ns") - origin) / 1e9,
                end_s=(pl.col("end_ts_ns") - origin) / 1e9,
            ).filter(pl.col("begin_s") < window_s)
        )
        .mark_bar(height=3)
        .encode(
            x=alt.X("begin_s:Q", title="time (s)"),
            x2="end_s:Q",
            y=alt.Y("pid:N", title="task", axis=alt.Axis(labels=False, ticks=False)),
            color=alt.Color("kind:N", title="reclaim"),
        )
        .properties(width=560, height=220, title=title)
    )
