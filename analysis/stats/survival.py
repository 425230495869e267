"""Nonparametric survival of stall times: Kaplan–Meier, Turnbull and the log-rank test.

- Right-censored continuous durations (direct / memcg reclaim stalls from
  ``mm_vmscan_*_reclaim_begin`` → ``_end``, compaction stalls, mmap latencies):
  Kaplan–Meier by ``statsmodels.duration.survfunc.SurvfuncRight`` (Greenwood variance;
  pointwise 95 % bands on the log(−log) scale, which stay inside [0, 1]) and the log-rank
  test between two captures by ``statsmodels.duration.survfunc.survdiff``.
- Interval-censored waits (jiffy-quantised throttle delays): Turnbull's self-consistency
  EM for the NPMLE. Neither statsmodels nor SciPy has it and lifelines would be a new
  dependency for one estimator, so it is written here (Turnbull 1976, JRSS B 38:290).
  Each record k says only that the latent wait T lies in the set the tick phase allows:
  [0, J) for k = 0, ((k−1)J, (k+1)J) for 0 < k < K, ((K−1)J, ∞) for the timeouts; the
  band is a bootstrap (multinomial resampling of the histogram) percentile band.

Times are µs. Every estimator assumes independent censoring; a reclaim stall open at the
end of a capture is censored at the capture's last event, a lower bound of its length.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import polars as pl
from statsmodels.duration.survfunc import SurvfuncRight, survdiff

from analysis.stats.fit import Z95, JiffyData

__all__ = [
    "LogRank",
    "jiffy_intervals",
    "kaplan_meier",
    "log_rank",
    "stall_durations",
    "turnbull",
    "turnbull_jiffies",
]

SURVIVAL_SCHEMA = {
    "time_us": pl.Float64(),
    "survival": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
}


def stall_durations(intervals: pl.DataFrame) -> pl.DataFrame:
    """``duration_us`` and ``censored`` of the reclaim intervals of
    :func:`analysis.metrics.pairing.pair_intervals` (``status`` closed or open).

    An open interval is censored at the last timestamp of the frame, so its recorded
    length is a lower bound of the stall (the capture ended while it was reclaiming).
    """
    last = intervals.select(
        pl.max_horizontal(pl.col("begin_ts_ns").max(), pl.col("end_ts_ns").max())
    ).item()
    return intervals.select(
        duration_us=pl.when(pl.col("status") == "closed")
        .then(pl.col("duration_ns"))
        .otherwise(pl.lit(last) - pl.col("begin_ts_ns"))
        .cast(pl.Float64)
        / 1e3,
        censored=pl.col("status") != "closed",
    )


def kaplan_meier(
    durations_us: np.ndarray, censored: np.ndarray, weights: np.ndarray | None = None
) -> pl.DataFrame:
    """Kaplan–Meier S(t) at each event time with pointwise 95 % log(−log) bands.

    Columns ``time_us``, ``survival``, ``ci_low``, ``ci_high``. ``weights`` are frequency
    weights (histogram counts).
    """
    durations_us = np.asarray(durations_us, dtype=np.float64)
    if durations_us.size == 0:
        return pl.DataFrame(schema=SURVIVAL_SCHEMA)
    status = (~np.asarray(censored, dtype=bool)).astype(int)
    sf = SurvfuncRight(durations_us, status, freq_weights=weights)
    s = np.asarray(sf.surv_prob)
    se = np.asarray(sf.surv_prob_se)
    with np.errstate(divide="ignore", invalid="ignore"):
        loglog = np.log(-np.log(s))
        half = Z95 * se / (s * np.abs(np.log(s)))
        low = np.exp(-np.exp(loglog + half))
        high = np.exp(-np.exp(loglog - half))
    # At S = 1 or S = 0 the band collapses onto the estimate (no event yet / none left).
    edge = ~np.isfinite(half)
    return pl.DataFrame(
        {
            "time_us": np.asarray(sf.surv_times, dtype=np.float64),
            "survival": s,
            "ci_low": np.where(edge, s, low),
            "ci_high": np.where(edge, s, high),
        },
        schema=SURVIVAL_SCHEMA,
    )


@dataclass(frozen=True)
class LogRank:
    """Log-rank test of equal survival in two samples (χ², 1 df; assumes independent
    censoring and is most powerful under proportional hazards)."""

    chi2: float
    p_value: float
    n_a: int
    n_b: int


def log_rank(
    a_us: np.ndarray, a_censored: np.ndarray, b_us: np.ndarray, b_censored: np.ndarray
) -> LogRank:
    """Compare two right-censored samples (e.g. memcg reclaim stalls of two captures)."""
    time = np.concatenate([a_us, b_us]).astype(np.float64)
    status = (~np.concatenate([a_censored, b_censored]).astype(bool)).astype(int)
    group = np.concatenate([np.zeros(len(a_us)), np.ones(len(b_us))])
    chi2, p = survdiff(time, status, group)
    return LogRank(float(chi2), float(p), len(a_us), len(b_us))


def jiffy_intervals(data: JiffyData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(left, right, count) of latent waits consistent with each occupied jiffy count k."""
    k = np.flatnonzero(data.counts)
    j = data.jiffy_us
    left = np.maximum(k - 1, 0) * j
    right = np.where(k == data.k_timeout, np.inf, (k + 1) * j)
    right = np.where(k == 0, j, right)
    return left.astype(np.float64), right.astype(np.float64), data.counts[k].astype(np.float64)


def turnbull(
    left: np.ndarray, right: np.ndarray, counts: np.ndarray, tol: float = 1e-9
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Turnbull NPMLE for T in (left, right] with ``counts`` records per interval.

    Returns the innermost intervals (``lo``, ``hi``: a left end directly followed by a right
    end among the sorted ends) and S just after each. The mass sits on those intervals and
    the data cannot say where inside them, nor beyond the last one (censored records put
    their mass at the start of their range: S there is an upper bound of what is known).
    """
    edges = np.unique(np.concatenate([left, right]))
    lefts, rights = set(left.tolist()), set(right.tolist())
    inner = [(a, b) for a, b in itertools.pairwise(edges) if a in lefts and b in rights]
    lo = np.array([a for a, _ in inner])
    hi = np.array([b for _, b in inner])
    alpha = (left[:, None] <= lo[None, :]) & (right[:, None] >= hi[None, :])
    mass = np.full(len(inner), 1.0 / len(inner))
    total = counts.sum()
    for _ in range(10_000):
        new = mass * (alpha.T @ (counts / (alpha @ mass))) / total
        converged = np.max(np.abs(new - mass)) < tol
        mass = new
        if converged:
            break
    return lo, hi, 1.0 - np.cumsum(mass)


def turnbull_jiffies(data: JiffyData, bootstrap: int = 200, seed: int = 0) -> pl.DataFrame:
    """Turnbull S(t) of the latent wait of one throttle group with a 95 % bootstrap band.

    Columns as :func:`kaplan_meier`; ``time_us`` are the right ends of the innermost
    intervals, none beyond the timeout.
    """
    left, right, counts = jiffy_intervals(data)
    _, t, s = turnbull(left, right, counts)
    rng = np.random.default_rng(seed)
    n = int(counts.sum())
    draws = []
    for resample in rng.multinomial(n, counts / n, size=bootstrap):
        keep = resample > 0
        _, tb, sb = turnbull(left[keep], right[keep], resample[keep].astype(np.float64))
        draws.append(np.interp(t, tb, sb, left=1.0, right=float(sb[-1])))
    low, high = np.percentile(np.array(draws), [2.5, 97.5], axis=0) if draws else (s, s)
    finite = np.isfinite(t)
    return pl.DataFrame(
        {"time_us": t, "survival": s, "ci_low": low, "ci_high": high}, schema=SURVIVAL_SCHEMA
    ).filter(pl.Series(finite))
