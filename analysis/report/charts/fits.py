"""Altair figures of throttle-delay fits: nonparametric survival (Turnbull or Kaplan–Meier
with its band) against the fitted models on a log time axis, and observed against fitted
jiffy-bin probabilities."""

from __future__ import annotations

import altair as alt
import numpy as np
import polars as pl

from analysis.stats.fit import GroupFit, bin_probabilities

__all__ = ["bins_chart", "km_chart", "survival_chart"]

MODELS_SHOWN = 4


def _model_curves(group: GroupFit, models: int) -> pl.DataFrame:
    data = group.data
    t = np.geomspace(data.jiffy_us / 20, data.timeout_us, 200)
    return pl.concat(
        [
            pl.DataFrame({"time_ms": t / 1e3, "survival": m.wait.survival(t), "model": m.name})
            for m in group.models[:models]
        ]
    )


def survival_chart(
    group: GroupFit, curve: pl.DataFrame, title: str, models: int = MODELS_SHOWN
) -> alt.LayerChart:
    """P(T > t) of the latent wait up to the timeout: ``curve`` (``time_us``, ``survival``,
    ``ci_low``, ``ci_high``, e.g. :func:`analysis.stats.survival.turnbull_jiffies`) as a
    step line with its band, and the best ``models`` by AIC as lines."""
    empirical = curve.filter(pl.col("time_us") > 0).with_columns(time_ms=pl.col("time_us") / 1e3)
    x = alt.X("time_ms:Q", title="latent wait t (ms)", scale=alt.Scale(type="log"))
    band = (
        alt.Chart(empirical)
        .mark_area(opacity=0.25, interpolate="step-after", color="gray")
        .encode(x=x, y="ci_low:Q", y2="ci_high:Q")
    )
    steps = (
        alt.Chart(empirical)
        .mark_line(interpolate="step-after", color="black")
        .encode(x=x, y=alt.Y("survival:Q", title="P(T > t)", scale=alt.Scale(domain=[0, 1])))
    )
    fitted = (
        alt.Chart(_model_curves(group, models))
        .mark_line(strokeDash=[4, 2])
        .encode(x=x, y="survival:Q", color=alt.Color("model:N", title="model (AIC order)"))
    )
    return (band + steps + fitted).properties(width=420, height=220, title=title)


def bins_chart(group: GroupFit, title: str, models: int = MODELS_SHOWN) -> alt.LayerChart:
    """Observed share of each recorded jiffy count k (black ticks; k = K: timeouts) against
    the bin probabilities of the best ``models`` (points), on a log axis."""
    data = group.data
    k = np.arange(data.k_timeout + 1)
    observed = pl.DataFrame({"k": k, "share": data.counts / data.n}).filter(pl.col("share") > 0)
    fitted = pl.concat(
        [
            pl.DataFrame(
                {
                    "k": k,
                    "share": bin_probabilities(m.wait, data.k_timeout, data.jiffy_us),
                    "model": m.name,
                }
            )
            for m in group.models[:models]
        ]
    )
    y = alt.Y("share:Q", title="P(k)", scale=alt.Scale(type="log"))
    ticks = (
        alt.Chart(observed)
        .mark_tick(color="black", thickness=2)
        .encode(x=alt.X("k:O", title="recorded jiffies k (K = timeout)"), y=y)
    )
    points = (
        alt.Chart(fitted.filter(pl.col("share") > 1e-6))
        .mark_point()
        .encode(x="k:O", y=y, color=alt.Color("model:N", title="model (AIC order)"))
    )
    return (ticks + points).properties(width=420, height=200, title=title)


def km_chart(curves: pl.DataFrame, title: str, points: int = 200) -> alt.Chart:
    """Kaplan–Meier curves (:func:`analysis.stats.survival.kaplan_meier` rows with a
    ``curve`` label) as steps on a log time axis, each read at ``points`` log-spaced times
    (a capture has tens of thousands of stalls; the chart needs no more)."""
    positive = curves.filter(pl.col("time_us") > 0)
    grid = np.geomspace(positive["time_us"].min(), positive["time_us"].max(), points)
    thinned = pl.concat(
        [
            pl.DataFrame({"time_us": grid, "curve": label})
            .join_asof(part.sort("time_us").drop("curve"), on="time_us")
            .drop_nulls("survival")
            for (label,), part in positive.group_by("curve", maintain_order=True)
        ]
    )
    return (
        alt.Chart(thinned)
        .mark_line(interpolate="step-after")
        .encode(
            x=alt.X("time_us:Q", title="stall (us)", scale=alt.Scale(type="log")),
            y=alt.Y("survival:Q", title="P(stall > t)"),
            color=alt.Color("curve:N", title=None),
        )
        .properties(width=480, height=240, title=title)
    )
