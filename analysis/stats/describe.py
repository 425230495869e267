"""Descriptive summaries: mean ± sample sd of independent runs, and stall distributions in
the shape of mmtests' stall tables (nearest-rank percentiles, millisecond buckets).

mmtests prints, per kernel: Min, percentiles, Max, Amean, Samples and counts of stalls in
millisecond buckets [0,5) [5,10) [10,100) [100,500) [500,1000) [1000,5000) [5000,max).
Its percentile is a nearest rank without interpolation, ``k = max(1, floor(n*p/100))`` on the
samples sorted best-first (ascending: a shorter stall is better). This module keeps that
shape and rule but pools every sample it is given (mmtests reports one iteration's minimum in
places; here the caller passes all iterations) and accepts weights (histogram ``count``).
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

__all__ = [
    "BUCKETS_MS",
    "PERCENTILES",
    "distribution_table",
    "mean_sd",
    "nearest_rank",
    "stall_distribution",
]

PERCENTILES = (25, 50, 75, 90, 95, 99)
BUCKETS_MS = (0, 5, 10, 100, 500, 1000, 5000)


def mean_sd(values: Sequence[float | None]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (n−1) of the values present (None and NaN are
    missing); None where undefined (no value; fewer than two for the sd)."""
    present = [v for v in values if v is not None and not math.isnan(v)]
    mean = statistics.fmean(present) if present else None
    sd = statistics.stdev(present) if len(present) >= 2 else None
    return mean, sd


def nearest_rank(values: np.ndarray, weights: np.ndarray, p: float) -> float:
    """mmtests' percentile: the k-th smallest sample, ``k = max(1, floor(n*p/100))``.

    ``values`` must be sorted ascending; ``weights`` are integer multiplicities (n = their sum).
    """
    cumulative = np.cumsum(weights)
    k = max(1, math.floor(int(cumulative[-1]) * p / 100))
    return float(values[np.searchsorted(cumulative, k, side="left")])


def _bucket_names() -> list[str]:
    edges = [*BUCKETS_MS, None]
    return [
        f"stalls_{lo}_{hi if hi is not None else 'max'}ms" for lo, hi in itertools.pairwise(edges)
    ]


def stall_distribution(
    values_ms: Sequence[float], weights: Sequence[int] | None = None
) -> dict[str, float | int | None]:
    """One mmtests stall row: ``min_ms``, ``pct<p>_ms``, ``max_ms``, ``amean_ms``,
    ``samples`` and ``stalls_<lo>_<hi>ms`` bucket counts. Empty input gives null statistics
    and zero counts (no stall is not a stall of 0 ms)."""
    values = np.asarray(values_ms, dtype=float)
    w = (
        np.ones(values.size, dtype=np.int64)
        if weights is None
        else np.asarray(weights, dtype=np.int64)
    )
    keep = w > 0
    values, w = values[keep], w[keep]
    order = np.argsort(values, kind="stable")
    values, w = values[order], w[order]
    n = int(w.sum())
    row: dict[str, float | int | None] = {"min_ms": float(values[0]) if n else None}
    for p in PERCENTILES:
        row[f"pct{p}_ms"] = nearest_rank(values, w, p) if n else None
    row["max_ms"] = float(values[-1]) if n else None
    row["amean_ms"] = float(np.dot(values, w) / n) if n else None
    row["samples"] = n
    edges = np.asarray([*BUCKETS_MS, np.inf], dtype=float)
    counts = np.bincount(
        np.searchsorted(edges, values, side="right") - 1, weights=w, minlength=len(BUCKETS_MS)
    )
    for name, count in zip(_bucket_names(), counts[: len(BUCKETS_MS)], strict=True):
        row[name] = int(count)
    return row


def distribution_table(
    series: Mapping[str, tuple[Sequence[float], Sequence[int] | None]],
) -> pl.DataFrame:
    """:func:`stall_distribution` for each named series (``{name: (values_ms, weights)}``),
    one row per series with a leading ``series`` column."""
    rows = [{"series": name, **stall_distribution(v, w)} for name, (v, w) in series.items()]
    schema: dict[str, pl.DataType] = {"series": pl.String()}
    for key in stall_distribution([]):
        schema[key] = pl.Int64() if key == "samples" or key.startswith("stalls_") else pl.Float64()
    return pl.DataFrame(rows, schema=schema)
