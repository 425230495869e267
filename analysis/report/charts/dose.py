"""A knob's dose and response (:mod:`analysis.study.dose`): each level's change against the
reference with its 95 % interval and, lighter, the change the runs could have detected
(the minimum detectable effect, either way), one panel per endpoint and stratum."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import polars as pl

from analysis.study.dose import DoseResponse

__all__ = ["dose_chart", "dose_frame"]


def _scaled(curve: DoseResponse, value: float) -> float:
    return 100 * value if curve.scale == "log" else value


def dose_frame(curves: Sequence[DoseResponse]) -> pl.DataFrame:
    """Long frame: ``panel`` (endpoint, unit of the change, stratum), ``level``, ``setting``
    and its ``position`` on the knob's axis, ``kind`` (reference, A/A control, level), the
    ``change`` with ``low``/``high`` and the detectable band ``mde_low``/``mde_high``."""
    rows = []
    # Several knobs (a throttle sweep sets two timeouts): one panel per knob, never two
    # knobs' settings on one axis.
    several = len({c.knob for c in curves}) > 1
    for c in curves:
        where = ", ".join(f"{k} {v}" for k, v in c.stratum)
        unit = "change %" if c.scale == "log" else f"difference, {c.unit}"
        knob = f"{c.knob.removeprefix('vm.')}: " if several else ""
        for i, p in enumerate(c.points):
            row = {"panel": f"{knob}{c.endpoint} ({unit}) {where}".strip(), "level": p.level,
                   "setting": p.setting, "position": i,
                   "kind": "reference" if p.effect is None
                   else "A/A control" if p.aa_control else "level"}  # fmt: skip
            e = p.effect
            if e is None:
                empty = dict.fromkeys(("low", "high", "mde_low", "mde_high"))
                rows.append(row | empty | {"change": 0.0})
                continue
            down = 1 - 1 / (1 + e.mde) if c.scale == "log" else e.mde
            rows.append(row | {
                "change": _scaled(c, e.estimate), "low": _scaled(c, e.ci[0]),
                "high": _scaled(c, e.ci[1]), "mde_low": -_scaled(c, down),
                "mde_high": _scaled(c, e.mde),
            })  # fmt: skip
    schema = dict.fromkeys(("change", "low", "high", "mde_low", "mde_high"), pl.Float64)
    return pl.DataFrame(rows, schema_overrides=schema)


def dose_chart(curves: Sequence[DoseResponse], title: str) -> alt.FacetChart:
    """The knob's settings in their order along x (labelled by the value read back), the
    change on y: a point and its interval per level, the reference at 0, and a grey bar per
    level from -MDE to +MDE (a change inside it could have been missed)."""
    frame = dose_frame(curves)
    knobs = list(dict.fromkeys(c.knob for c in curves))
    unit = {c.knob_unit for c in curves} - {""}
    name = knobs[0] if len(knobs) == 1 else "setting read back"
    # The reference and an A/A control share a setting: the axis orders by its first point.
    x = alt.X("setting:N", title=f"{name} ({unit.pop()})" if len(unit) == 1 else name,
              sort=alt.EncodingSortField("position", op="min"),
              axis=alt.Axis(labelAngle=0))  # fmt: skip
    base = alt.Chart().encode(x=x)
    band = base.mark_bar(opacity=0.18, color="grey", size=14).encode(
        y=alt.Y("mde_low:Q", title=None), y2="mde_high:Q"
    )
    zero = alt.Chart().mark_rule(color="black", strokeDash=[3, 3]).encode(y=alt.datum(0))
    interval = base.mark_errorbar(ticks=True).encode(y="low:Q", y2="high:Q")
    points = base.mark_point(filled=True, size=50).encode(
        y=alt.Y("change:Q"),
        shape=alt.Shape("kind:N", title=None),
        color=alt.Color("kind:N", title=None),
        tooltip=["level:N", "setting:N", "change:Q", "low:Q", "high:Q"],
    )
    return (
        alt.layer(band, zero, interval, points, data=frame)
        .properties(width=170, height=130)
        .facet(facet=alt.Facet("panel:N", title=None), columns=3, title=title)
        .resolve_scale(y="independent", x="independent")
        .configure_legend(orient="bottom")
    )
