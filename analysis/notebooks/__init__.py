"""Running the notebooks: :mod:`.execute` runs one jupytext percent ``.py`` headless
(papermill) into ``.ipynb`` + ``.html``; :mod:`.sweep` runs one per point of a parameter
grid and tabulates the points. What a notebook shows is computed by the package it calls;
the sweep index is rendered by :mod:`analysis.report.sweep`."""
