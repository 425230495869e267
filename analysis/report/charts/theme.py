"""The one chart theme (``mmlab``) and how charts leave the package: :func:`offline`, the
setup every notebook calls first, and :func:`save` for the paper's figures. The charts
themselves are in one module per subject beside this one (:mod:`analysis.report.charts`)."""

from __future__ import annotations

from pathlib import Path

import altair as alt

__all__ = ["THEME", "offline", "save"]

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
