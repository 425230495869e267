"""One chart of the out-of-sample validation tables (``docs/model-validation.md``): per
validation capture and quantity, the model's prediction with its run-level 95 % interval,
the no-change baseline and every observed run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import altair as alt
import polars as pl

from analysis.study.sweep import QuantityScore, ShrinkerScore

__all__ = ["scores_chart", "scores_frame"]


def scores_frame(scores: Sequence[QuantityScore | ShrinkerScore]) -> pl.DataFrame:
    """Long frame: ``capture`` (its directory name), ``quantity``, ``series`` (``model``,
    ``no change`` or ``observed run``), ``value`` and the interval ``low``/``high`` (the
    model's only)."""
    rows = []
    for s in scores:
        key = {"capture": Path(s.capture).name, "quantity": s.quantity}
        low, high = s.interval if s.interval is not None else (None, None)
        rows.append(key | {"series": "model", "value": s.predicted, "low": low, "high": high})
        rows.append(key | {"series": "no change", "value": s.no_change, "low": None, "high": None})
        rows += [
            key | {"series": "observed run", "value": v, "low": None, "high": None}
            for v in s.observed
        ]
    return pl.DataFrame(rows, schema_overrides={"low": pl.Float64, "high": pl.Float64})


def scores_chart(scores: Sequence[QuantityScore | ShrinkerScore], title: str) -> alt.FacetChart:
    """Prediction (point and 95 % run-level interval), no change and the observed runs per
    capture, one panel per quantity (each with its own scale)."""
    frame = scores_frame(scores)
    x = alt.X("capture:N", title=None)
    base = alt.Chart().encode(x=x)
    interval = (
        base.transform_filter(alt.datum.series == "model")
        .mark_errorbar()
        .encode(y=alt.Y("low:Q", title=None), y2="high:Q", xOffset=alt.XOffset("series:N"))
    )
    points = base.mark_point(filled=True).encode(
        y=alt.Y("value:Q"),
        color=alt.Color("series:N", title=None),
        shape=alt.Shape("series:N", title=None),
        xOffset=alt.XOffset("series:N"),
    )
    return (
        alt.layer(interval, points, data=frame)
        .properties(width=200, height=140)
        .facet(facet=alt.Facet("quantity:N", title=None), columns=2, title=title)
        .resolve_scale(y="independent")
    )
