"""Parametric fits of right-censored continuous latencies (any per-sample latency column).

For durations measured in ns rather than jiffies: direct / memcg reclaim stalls
(``mm_vmscan_*_reclaim_begin`` → ``_end``; an interval still open at the end of the capture
is censored), compaction stalls, mmap latencies. The likelihood is the usual one,
Σ w·log f(t) over completed samples plus Σ w·log S(c) over censored ones, with the
families of :mod:`analysis.stats.families` (optionally with a cure fraction: samples that
would never end). Estimation, standard errors and delta-method CIs as in
:mod:`analysis.stats.fit`; samples are assumed independent, which stalls of one capture
are only approximately.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from scipy import special

from analysis.errors import InputError
from analysis.stats.families import FAMILIES
from analysis.stats.fit import (
    QUANTILES,
    Z95,
    Estimate,
    FittedWait,
    candidate_models,
    jacobian,
    latent_wait,
    model_name,
    observed_covariance,
    optimise,
    search_bounds,
)

__all__ = ["DurationFit", "fit_duration_models", "fit_durations"]


@dataclass(frozen=True)
class DurationFit:
    """One family (± cure fraction) fitted to censored durations, ranked by ``aic``."""

    model: str
    n: int
    events: int
    loglik: float
    aic: float
    params: dict[str, Estimate]
    restricted_mean_us: Estimate
    quantiles: dict[float, Estimate]
    horizon_us: float
    wait: FittedWait


def _validate(durations: np.ndarray, censored: np.ndarray, source: str) -> None:
    if durations.size == 0:
        raise InputError(source, "no durations")
    if np.any(~np.isfinite(durations)) or np.any(durations <= 0):
        raise InputError(source, "durations must be finite and > 0 us")
    if np.all(censored):
        raise InputError(source, "every duration is censored: nothing ended to fit")
    if np.unique(durations[~censored]).size < 3:
        raise InputError(source, "fewer than 3 distinct completed durations")


def _estimates(values, theta: np.ndarray, cov: np.ndarray | None, probability: np.ndarray):
    """Delta-method 95 % CIs of ``values(theta)`` on the scale where each is unbounded (logit
    of a probability, log of a positive time or parameter), taken back: a duration's CI
    cannot go below zero, which a symmetric interval does for a skewed estimate from a few
    dozen stalls (a Weibull median of 260 ms from 31 stalls printed [-10, 530] ms). A value
    with no information (``cov`` None, or at 0 or infinity) gets a NaN interval."""
    centre = values(theta)
    inside = np.isfinite(centre) & (centre > 0) & (~probability | (centre < 1))

    def linked(th: np.ndarray) -> np.ndarray:
        v = np.clip(values(th), 1e-12, None)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(probability, special.logit(np.clip(v, None, 1 - 1e-12)), np.log(v))

    se = np.full(centre.size, math.nan)
    if cov is not None:
        with np.errstate(invalid="ignore"):
            jac = np.where(inside[:, None], jacobian(linked, theta), 0.0)
        se = np.where(inside, np.sqrt(np.clip(np.diag(jac @ cov @ jac.T), 0, None)), math.nan)
    link = linked(theta)

    def back(x: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return np.where(probability, special.expit(x), np.exp(x))

    low, high = back(link - Z95 * se), back(link + Z95 * se)
    return [
        Estimate(float(c), float(lo), float(hi), "delta")
        for c, lo, hi in zip(centre, low, high, strict=True)
    ]


def fit_durations(
    durations_us: np.ndarray,
    censored: np.ndarray,
    family: str,
    *,
    cure: bool = False,
    weights: np.ndarray | None = None,
    source: str = "<durations>",
) -> DurationFit:
    """Weighted censored ML fit of one family; observables up to the longest duration."""
    t = np.asarray(durations_us, dtype=np.float64)
    cens = np.asarray(censored, dtype=bool)
    w = np.ones_like(t) if weights is None else np.asarray(weights, dtype=np.float64)
    _validate(t, cens, source)
    fam = FAMILIES[family]

    def nll(theta: np.ndarray) -> float:
        wait = latent_wait(fam, False, cure, theta)
        with np.errstate(all="ignore"):
            dens = np.log(wait.continuous_mass) + fam.logpdf(t[~cens], wait.params)
            surv = np.log(wait.survival(t[cens]))
            value = -float(np.dot(w[~cens], dens) + np.dot(w[cens], surv))
        return value if math.isfinite(value) else 1e300

    bounds = search_bounds(fam, float(t.min()), float(t.max()), int(cure))
    typical = float(np.median(t[~cens]))
    extra = [math.log(0.05)] if cure else []
    res = optimise(nll, [np.concatenate([s, extra]) for s in fam.starts(typical)], bounds)
    theta = np.asarray(res.x)
    lo, hi = np.array(bounds).T
    cov = observed_covariance(
        lambda thetas: np.array([nll(th) for th in thetas]),
        theta,
        (theta - lo < 1e-3) | (hi - theta < 1e-3),
    )
    wait = latent_wait(fam, False, cure, theta)
    horizon = float(t.max())

    def values(th: np.ndarray) -> np.ndarray:
        fitted = latent_wait(fam, False, cure, th)
        return np.array(
            [
                *fitted.params,
                fitted.cure_fraction,
                fitted.restricted_mean_us(horizon),
                *(fitted.quantile_us(q) for q in QUANTILES),
            ]
        )

    m = len(fam.params)
    # A mixture's weight and the cure fraction are probabilities; the rest positive.
    probability = np.arange(m + 2 + len(QUANTILES)) == m
    probability[:m] = [n.startswith("weight") for n in fam.params]
    est = _estimates(values, theta, cov, probability)
    params = dict(zip(fam.params, est[:m], strict=True))
    if cure:
        params["cure_fraction"] = est[m]
    loglik = -float(res.fun)
    return DurationFit(
        model=model_name(family, False, cure),
        n=int(w.sum()),
        events=int(w[~cens].sum()),
        loglik=loglik,
        aic=2 * theta.size - 2 * loglik,
        params=params,
        restricted_mean_us=est[m + 1],
        quantiles=dict(zip(QUANTILES, est[m + 2 :], strict=True)),
        horizon_us=horizon,
        wait=wait,
    )


def fit_duration_models(
    durations_us: np.ndarray,
    censored: np.ndarray,
    families: Iterable[str] | None = None,
    *,
    with_cure: bool = False,
    source: str = "<durations>",
) -> list[DurationFit]:
    """Every family (each also with a cure fraction if ``with_cure``), best AIC first."""
    fits = [
        fit_durations(durations_us, censored, fam, cure=cure, source=source)
        for fam, zero, cure in candidate_models(families)
        if not zero and (with_cure or not cure)
    ]
    return sorted(fits, key=lambda f: f.aic)
