"""One chart theme: a figure saved for the paper is drawn in the house theme
(``report/charts/theme.py``) whatever theme is active, and leaves the active one alone."""

from __future__ import annotations

import altair as alt
import polars as pl

from analysis.report.charts import theme


def test_saved_figures_use_the_house_theme_and_restore_the_caller_s(tmp_path):
    chart = alt.Chart(pl.DataFrame({"x": [1, 2], "y": [3, 4]})).mark_point().encode(x="x", y="y")
    assert alt.theme.active == "default"
    path = theme.save(chart, tmp_path / "fig.svg", "svg")
    svg = path.read_text()
    # The house font (Vega draws sans-serif without the theme).
    assert "DejaVu Sans" in svg
    assert alt.theme.active == "default"
    plain = tmp_path / "plain.svg"
    chart.save(str(plain), format="svg")
    assert "DejaVu Sans" not in plain.read_text()
