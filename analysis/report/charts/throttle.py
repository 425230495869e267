"""Altair charts of reclaim throttling: the recorded delays (``mm_vmscan_throttled``) and
the throttle-timeout model's predictions against τ with bootstrap bands."""

from __future__ import annotations

import altair as alt
import polars as pl

__all__ = ["curve_chart", "delay_chart"]

PANELS = (
    ("p_timeout", "P(timeout)"),
    ("mean_stall_us", "mean stall (µs)"),
    ("velocity_pps", "velocity (pages/s of reclaim)"),
    ("efficiency", "efficiency (reclaimed/scanned)"),
)


def curve_chart(curve: pl.DataFrame, observed_tau_us: float, title: str) -> alt.VConcatChart:
    """Each prediction of :func:`analysis.models.throttle.timeout_curve` against τ (log
    axis): line, 95% band, the observed timeout as a rule (right of it is extrapolation)."""
    data = curve.with_columns(tau_ms=pl.col("tau_us") / 1000)
    rule = alt.Chart(pl.DataFrame({"tau_ms": [observed_tau_us / 1000]})).mark_rule(
        strokeDash=[4, 3], color="gray"
    )
    x = alt.X("tau_ms:Q", title="timeout τ (ms)", scale=alt.Scale(type="log"))
    panels = []
    for key, label in PANELS:
        base = alt.Chart(data).encode(x=x)
        band = base.mark_area(opacity=0.25).encode(
            y=alt.Y(f"{key}_low:Q", title=label, scale=alt.Scale(zero=False)),
            y2=f"{key}_high:Q",
        )
        line = base.mark_line(point=True).encode(
            y=alt.Y(f"{key}:Q"), color=alt.Color("extrapolated:N", title="extrapolated")
        )
        panels.append((band + line + rule.encode(x="tau_ms:Q")).properties(width=260, height=120))
    return alt.vconcat(alt.hconcat(*panels[:2]), alt.hconcat(*panels[2:]), title=title)


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
