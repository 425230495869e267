"""Altair charts of shrinkers: the deferred backlog a capture recorded
(``mm_shrink_slab_end``), the backlog the deferral model replays under each rule
(:mod:`analysis.models.shrinker`), and the divisor sweep's trade-off."""

from __future__ import annotations

import altair as alt
import polars as pl

__all__ = ["capture_backlog_chart", "replay_backlog_chart", "tradeoff_chart"]


def capture_backlog_chart(backlog: pl.DataFrame) -> alt.FacetChart:
    """``deferred_objects`` after each ``mm_shrink_slab_end`` over time, one panel per trace."""
    backlog = backlog.with_columns(
        t_s=(pl.col("ts_ns") - pl.col("ts_ns").min().over("trace")) / 1e9,
        shrinker=pl.col("shrinker").str.replace(r"\+0x.*$", ""),
    )
    return (
        alt.Chart(backlog)
        .mark_line(interpolate="step-after")
        .encode(
            x=alt.X("t_s:Q", title="time (s)"),
            y=alt.Y("deferred_objects:Q", title="deferred objects"),
            color=alt.Color("shrinker:N"),
            detail="nid:N",
        )
        .properties(width=260, height=140)
        .facet(facet=alt.Facet("trace:N", title=None), columns=3)
    )


def replay_backlog_chart(
    backlogs: dict[str, pl.DataFrame], title: str, bins: int = 400
) -> alt.Chart:
    """Deferred backlog (``Replay.backlog``) over time, one step line per variant label:
    the largest backlog in each of ``bins`` equal time bins (a capture has ~10^5 events)."""
    frames = []
    for label, backlog in backlogs.items():
        origin, end = backlog["ts_ns"].min(), backlog["ts_ns"].max()
        width_ns = max((end - origin) // bins, 1)
        frames.append(
            backlog.group_by(((pl.col("ts_ns") - origin) // width_ns).alias("bin"))
            .agg(pl.col("backlog_objects").max())
            .select(
                pl.lit(label).alias("variant"),
                (pl.col("bin") * width_ns / 1e9).alias("time_s"),
                "backlog_objects",
            )
            .sort("time_s")
        )
    return (
        alt.Chart(pl.concat(frames))
        .mark_line(interpolate="step-after")
        .encode(
            x=alt.X("time_s:Q", title="time since the first shrinker call (s)"),
            y=alt.Y("backlog_objects:Q", title="deferred objects, max per bin"),
            color=alt.Color("variant:N", title="rule"),
        )
        .properties(width=520, height=200, title=title)
    )


def tradeoff_chart(sweep: pl.DataFrame, title: str) -> alt.LayerChart:
    """Divisor sweep (:func:`analysis.models.shrinker.divisor_sweep` rows, optionally with a
    ``trace`` column): worst work landed on one direct reclaimer against the deferred
    backlog left behind; point size = objects scanned (cache trimmed)."""
    data = sweep.with_columns(
        trace=pl.col("trace") if "trace" in sweep.columns else pl.lit("capture")
    )
    base = alt.Chart(data).encode(
        x=alt.X("backlog_max_objects:Q", title="deferred backlog, max (objects)"),
        y=alt.Y("direct_max_scanned:Q", title="max objects scanned by one direct call"),
    )
    points = base.mark_circle(opacity=0.7).encode(
        color=alt.Color("trace:N", title="capture"),
        size=alt.Size("scanned_objects:Q", title="objects scanned"),
        tooltip=[
            "trace",
            "divisor",
            "direct_p99_scanned",
            "scanned_objects",
            "backlog_end_objects",
        ],
    )
    labels = base.mark_text(align="left", dx=6, fontSize=9).encode(text="divisor:N")
    return (points + labels).properties(width=420, height=260, title=title)
