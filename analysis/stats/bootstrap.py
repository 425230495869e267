"""Harrell–Davis quantiles of run-structured samples and their two-stage bootstrap.

Data are *runs* (independent iterations of a benchmark, each a fresh workload on the same
kernel) holding *samples* (e.g. one mmap latency per mapping of the stutterp probe). Samples
within a run share the run's conditions, so they are not independent replicates of the
kernel; the estimand here is the **mean over runs of each run's statistic** (a run's
Harrell–Davis median, p90, p99 or mean), every run weighted equally.

The two-stage bootstrap draws runs with replacement, then samples with replacement within
each drawn run, and recomputes the estimand. A Harrell–Davis quantile of a within-run
resample needs only the resample's order statistics where the Beta weights are not
negligible; those are drawn exactly from uniform order statistics (gamma spacings) without
drawing the whole resample, so 10 000 resamples of 100 000 samples take seconds
(``benchmarks/bench_compare.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

__all__ = [
    "MEAN",
    "Interval",
    "harrell_davis",
    "hd_weights",
    "run_statistics",
    "t_interval",
    "two_stage",
]

MEAN = "mean"
# Beta weights below this (in total, each tail) are left out of a bootstrap draw.
_TAIL = 1e-10
# Above this many values per run, a resample mean is drawn from its normal limit
# (mean, s²/n): the exact draw would touch every sample of every resample.
_EXACT_MEAN_MAX = 2000
_CHUNK = 1 << 15


def hd_weights(n: int, p: float) -> np.ndarray:
    """Harrell–Davis (1982) weights of the n order statistics for quantile ``p``:
    ``W_i = I_{i/n}(a, b) − I_{(i−1)/n}(a, b)`` with ``a = p(n+1)``, ``b = (1−p)(n+1)``."""
    a, b = p * (n + 1), (1 - p) * (n + 1)
    return np.diff(special.betainc(a, b, np.arange(n + 1) / n))


def harrell_davis(values: np.ndarray, p: float) -> float:
    """Harrell–Davis estimate of quantile ``p`` (a weighted sum of every order statistic;
    smoother and more efficient than one order statistic for heavy-tailed latencies)."""
    return float(np.sort(values) @ hd_weights(len(values), p))


def _statistic(values: np.ndarray, stat: float | str) -> float:
    return float(np.mean(values)) if stat == MEAN else harrell_davis(values, float(stat))


def run_statistics(runs: Sequence[np.ndarray], stat: float | str) -> np.ndarray:
    """Each run's statistic: its mean (``stat == "mean"``) or Harrell–Davis quantile."""
    return np.array([_statistic(r, stat) for r in runs])


def _hd_draws(sorted_values: np.ndarray, p: float, count: int, rng) -> np.ndarray:
    """``count`` Harrell–Davis quantiles of resamples (with replacement) of one run.

    The k-th smallest of n resampled values is ``x_(ceil(n·U_(k)))`` with ``U_(k)`` the
    k-th order statistic of n uniforms; only ranks lo..hi where the weights matter are
    drawn, as ``U_(k) = S_k / T`` with ``S_lo ~ Gamma(lo)``, unit-exponential spacings up
    to hi and ``T = S_hi + Gamma(n + 1 − hi)``.
    """
    n = len(sorted_values)
    w = hd_weights(n, p)
    cum = np.cumsum(w)
    lo = int(np.searchsorted(cum, _TAIL)) + 1
    hi = min(n, int(np.searchsorted(cum, 1 - _TAIL)) + 1)
    window = w[lo - 1 : hi] / w[lo - 1 : hi].sum()
    width = hi - lo + 1
    out = np.empty(count)
    step = max(1, _CHUNK // width)
    for start in range(0, count, step):
        m = min(step, count - start)
        s = np.empty((m, width))
        s[:, 0] = rng.gamma(lo, size=m)
        if width > 1:
            s[:, 1:] = rng.standard_exponential((m, width - 1))
        np.cumsum(s, axis=1, out=s)
        total = s[:, -1] + rng.gamma(n + 1 - hi, size=m)
        ranks = np.ceil(s * (n / total[:, None])).astype(np.int64)
        np.clip(ranks, 1, n, out=ranks)
        out[start : start + m] = sorted_values[ranks - 1] @ window
    return out


def _mean_draws(values: np.ndarray, count: int, rng) -> np.ndarray:
    n = len(values)
    if n > _EXACT_MEAN_MAX:
        sd = float(np.std(values, ddof=1))
        return rng.normal(float(np.mean(values)), sd / np.sqrt(n), size=count)
    out = np.empty(count)
    step = max(1, _CHUNK // n)
    for start in range(0, count, step):
        m = min(step, count - start)
        out[start : start + m] = values[rng.integers(n, size=(m, n))].mean(axis=1)
    return out


def two_stage(
    runs: Sequence[np.ndarray], stats_: Sequence[float | str], resamples: int, rng
) -> dict[float | str, np.ndarray]:
    """Two-stage bootstrap draws, ``(resamples, len(runs))`` per statistic: slot j of
    resample b holds the statistic of a within-run resample of a run drawn at random.
    The estimand's draws are the row means; the draws of one resample share its runs
    across statistics (so a quantile difference keeps their dependence)."""
    n_runs = len(runs)
    chosen = rng.integers(n_runs, size=(resamples, n_runs))
    sorted_runs = [np.sort(r) for r in runs]
    out = {s: np.empty((resamples, n_runs)) for s in stats_}
    for r, values in enumerate(sorted_runs):
        slots = chosen == r
        count = int(slots.sum())
        if count == 0:
            continue
        for s in dict.fromkeys(stats_):
            draws = (
                _mean_draws(values, count, rng)
                if s == MEAN
                else _hd_draws(values, float(s), count, rng)
            )
            out[s][slots] = draws
    return out


@dataclass(frozen=True)
class Interval:
    """An estimate with its confidence interval and the degrees of freedom used."""

    estimate: float
    low: float
    high: float
    se: float
    df: float


def t_interval(estimate: float, draws: np.ndarray, n_runs: int, level: float) -> Interval:
    """``estimate ± t_{R−1} · se``: se is the sd of the bootstrap draws scaled by
    √(R/(R−1)), because resampling R runs underestimates the between-run variance by
    (R−1)/R; Student's t with R−1 df keeps the coverage honest with 3–5 runs, where a
    percentile interval is far too narrow. One run: the within-run (normal) interval only.
    Draws that do not vary give no interval (NaN bounds) rather than one of zero width."""
    se = float(np.std(draws, ddof=1))
    if n_runs > 1:
        se *= np.sqrt(n_runs / (n_runs - 1))
        df = float(n_runs - 1)
        crit = float(stats.t.ppf(0.5 + level / 2, df))
    else:
        df = float("inf")
        crit = float(stats.norm.ppf(0.5 + level / 2))
    if not se > 0:
        return Interval(estimate, float("nan"), float("nan"), se, df)
    return Interval(estimate, estimate - crit * se, estimate + crit * se, se, df)
