"""Validation of ``mmlab compare`` and ``mmlab fit`` on SYNTHETIC data with known truth
(never real results).

:mod:`.simulate` draws run-structured heavy-tailed latencies, :mod:`.fits` throttle groups
from known waits; ``python -m analysis.stats.validation_compare`` (``make validation``)
writes results.md / results.json beside this file.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

__all__ = ["RESULTS", "rates_frame", "results"]

# Written by ``make validation``, shipped with the package (the paper quotes it).
RESULTS = Path(__file__).resolve().parent / "results.json"


def results() -> dict:
    """The last ``make validation``'s results (:data:`RESULTS`), as written."""
    return json.loads(RESULTS.read_text())


def rates_frame(results: dict) -> pl.DataFrame:
    """The compare cells of a ``results.json`` as one row per (cell, method): shape, run
    effect (``run_effect`` and its ``s``), runs, rows per table, samples, effect, method,
    per-row null rate, power and FDR (null where a cell has none), each with its
    Monte-Carlo se."""
    rows = []
    for c in results["compare"]:
        for method, m in c["methods"].items():
            row = {"shape": c["shape"], "run_effect": c.get("run_effect", "lognormal"),
                   "s": c["run_sd"], "runs": c["runs"], "rows": c.get("rows", results["rows"]),
                   "samples": c["samples"], "effect": c["effect"], "method": method}  # fmt: skip
            for key in ("null_row", "power", "fdr"):
                row[key] = m[key]["rate"] if key in m else None
                row[f"{key}_mc_se"] = m[key]["mc_se"] if key in m else None
            rows.append(row)
    return pl.DataFrame(rows)
