"""The paper's figures (Altair; saved as PDF through vl-convert by :func:`save_pdf`)."""

from __future__ import annotations

import math
from pathlib import Path

import altair as alt
import numpy as np
import polars as pl

from analysis.report.charts import theme

__all__ = ["reclaim_rate_figure", "save_pdf", "stall_ecdf_figure", "throttle_delay_figure"]

# Probabilities at which each iteration's stall ECDF is drawn: enough for the shape,
# few enough that the PDF stays small (an iteration has ~10^4 stalls).
_ECDF_P = np.linspace(0.005, 0.995, 100)


def save_pdf(chart: alt.TopLevelMixin, path: Path) -> Path:
    """Write ``chart`` as a vector PDF (vl-convert) in the house theme (``charts.theme.save``)."""
    return theme.save(chart, path, "pdf")


def throttle_delay_figure(delays: pl.DataFrame) -> alt.FacetChart:
    """``mm_vmscan_throttled`` delays: events per iteration at each recorded delay (one
    jiffy apart), one panel per run; bars at the timeout are right-censored sleeps.

    ``delays``: ``run``, ``delay_us``, ``at_timeout``, ``events_per_iteration``."""
    data = delays.with_columns(
        delay_ms=pl.col("delay_us") / 1000,
        censored=pl.when(pl.col("at_timeout"))
        .then(pl.lit("at timeout"))
        .otherwise(pl.lit("woken")),
    )
    return (
        alt.Chart(data)
        .mark_bar(width=3)
        .encode(
            x=alt.X("delay_ms:Q", title="recorded delay (ms)"),
            y=alt.Y("events_per_iteration:Q", title="events per iteration"),
            color=alt.Color("censored:N", title=None, legend=alt.Legend(orient="top")),
        )
        .properties(width=190, height=120)
        .facet(column=alt.Column("run:N", title=None))
    )


def stall_ecdf_figure(stalls: pl.DataFrame) -> alt.Chart:
    """Empirical CDF of reclaim stall durations, one line per iteration, coloured by run.

    ``stalls``: ``run``, ``iteration``, ``ms`` (closed intervals of one context)."""
    rows = []
    for (run, iteration), group in stalls.group_by("run", "iteration", maintain_order=True):
        ms = np.sort(group["ms"].to_numpy())
        idx = np.clip(np.ceil(_ECDF_P * len(ms)).astype(int) - 1, 0, len(ms) - 1)
        rows += [
            (run, int(iteration), float(ms[i]), float(p)) for i, p in zip(idx, _ECDF_P, strict=True)
        ]
    data = pl.DataFrame(rows, schema=["run", "iteration", "ms", "p"], orient="row")
    # Ticks at whole decades only: a log axis labels 2, 20, 200 too, and they collide.
    low, high = math.floor(math.log10(data["ms"].min())), math.ceil(math.log10(data["ms"].max()))
    decades = [10.0**k for k in range(low, high + 1)]
    return (
        alt.Chart(data)
        .mark_line(interpolate="step-after", opacity=0.8)
        .encode(
            x=alt.X(
                "ms:Q",
                title="stall duration (ms)",
                scale=alt.Scale(type="log"),
                axis=alt.Axis(values=decades, format="~g"),
            ),
            y=alt.Y("p:Q", title="fraction of stalls <= x"),
            color=alt.Color("run:N", title="run", legend=alt.Legend(orient="right")),
            detail="iteration:N",
        )
        .properties(width=330, height=160)
    )


def reclaim_rate_figure(rates: pl.DataFrame) -> alt.Chart:
    """Pages scanned per second in each 1 s monitor interval, one line per iteration.

    ``rates``: :func:`analysis.metrics.compare.monitor_series` of one reclaim context."""
    return (
        alt.Chart(rates)
        .mark_line(opacity=0.8)
        .encode(
            x=alt.X("t_s:Q", title="time since capture start (s)"),
            y=alt.Y("scanned_pages_per_s:Q", title="pages scanned / s"),
            color=alt.Color("run:N", title="run"),
            detail="iteration:N",
        )
        .properties(width=330, height=140)
    )
