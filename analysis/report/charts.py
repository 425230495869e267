"""Altair charts of trace analyses (the notebooks' figures): throttle delays, stall
timeline, shrinker deferred backlog; and :func:`offline`, the one chart setup every notebook
calls first."""

from __future__ import annotations

from pathlib import Path

import altair as alt
import polars as pl

__all__ = ["THEME", "backlog_chart", "delay_chart", "offline", "save", "timeline_chart"]

# The house theme: one font the SVG renderer and LaTeX-side PDFs both have, no chart border.
THEME = "mmlab"


@alt.theme.register(THEME, enable=False)
def _theme() -> alt.theme.ThemeConfig:
    return alt.theme.ThemeConfig(
        config={
            "font": "DejaVu Sans",
            "view": {"stroke": None},
            "axis": {"labelFontSize": 11, "titleFontSize": 12},
            "legend": {"labelFontSize": 11, "titleFontSize": 12},
            "title": {"fontSize": 13, "anchor": "start"},
        }
    )


def save(chart: alt.TopLevelMixin, path: Path, fmt: str) -> Path:
    """Write ``chart`` to ``path`` (``fmt``: pdf, svg, png through vl-convert) in the house
    theme, whatever theme the caller has enabled: a paper figure looks like the
    notebook's chart of the same data."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with alt.theme.enable(THEME):
        chart.save(str(path), format=fmt)
    return path


def offline() -> None:
    """Charts drawn as static SVG (vl-convert) in the house theme.

    Altair's default renderer stores a Vega-Lite spec plus ``<script>`` tags that load
    vega from a CDN: with no network, and in any viewer that runs no JavaScript (GitHub,
    nbviewer, an e-mailed ``.ipynb``), every chart is then blank. The SVG is drawn when the
    cell runs and saved in the notebook itself.
    """
    alt.theme.enable(THEME)
    alt.renderers.enable("svg")
    # The 5000-row guard keeps specs with inline data out of notebooks; an SVG holds marks,
    # not data, so a capture's 25,000-point backlog draws instead of raising.
    alt.data_transformers.disable_max_rows()


def delay_chart(delays: pl.DataFrame, title: str) -> alt.FacetChart:
    """Throttle delay histogram per reason: count on a log axis, censored bars marked.

    Bars start at 0.5 events, not 0, which a log axis cannot show.
    """
    data = delays.with_columns(delay_ms=pl.col("delay_us") / 1000, base=pl.lit(0.5))
    return (
        alt.Chart(data)
        .mark_bar(width=4)
        .encode(
            x=alt.X("delay_ms:Q", title="usect_delayed (ms)"),
            y=alt.Y("count:Q", title="events", scale=alt.Scale(type="log")),
            y2="base:Q",
            color=alt.Color("at_timeout:N", title="at timeout (censored)"),
            tooltip=["context", "reason", "usec_timeout", "delay_us", "count"],
        )
        .properties(width=260, height=140)
        .facet(row=alt.Row("context:N", title=None), column=alt.Column("reason:N", title=None))
        .resolve_scale(x="independent")
        .properties(title=title)
    )


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


def backlog_chart(backlog: pl.DataFrame) -> alt.FacetChart:
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
