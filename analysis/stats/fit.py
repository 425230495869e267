"""Censored, jiffy-quantised maximum-likelihood fits of throttle delays.

Observation model of ``mm_vmscan_throttled`` (mm/vmscan.c ``reclaim_throttle()``, which
records ``usect_delayed = jiffies_to_usecs(timeout - remaining)``): a sleeper whose wake
condition would come after a latent wait T (µs) starts at a uniform phase U of the current
jiffy J, so the kernel counts k = floor(T/J + U) ticks; a sleep reaching its timeout of K
jiffies records K whatever T was (right-censored). T has an optional atom at zero
(``zero_mass``) and an optional part that nothing wakes early (``cure_fraction``).

Averaging over the phase gives the bin probabilities from R(t) = E[min(T, t)] alone:
P(k=0) = 1 − R(J)/J, P(k=j) = −(R((j+1)J) − 2R(jJ) + R((j−1)J))/J for 0 < j < K and
P(k=K) = (R(KJ) − R((K−1)J))/J. Histogram counts are the likelihood weights, so a million
events cost no more than a hundred.

Estimation: ``scipy.optimize.minimize`` (SLSQP, whose small dense steps do not wake
the threaded BLAS that L-BFGS-B calls) from several starts, given the forward-difference
gradient it would compute itself, but from one vectorised likelihood of all the steps
(:func:`forward_gradient`); standard errors from the observed information
(``statsmodels.tools.numdiff.approx_hess3``'s differences of the negative log-likelihood,
batched likewise: :func:`hessian`), delta method to every derived quantity on a logit /
log scale, averaged over the candidate models by Akaike weight so that the CI carries the
model choice);
optional bootstrap: a parametric-bootstrap p-value of the G² goodness-of-fit statistic
(a rejected best model is flagged) and the best model's refits to multinomial resamples.
Inference assumes independent sleeps, which events of one capture are not exactly (one
writeback burst wakes many sleepers): treat CIs from a single capture as lower bounds of
the run-to-run spread.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

import numpy as np
import polars as pl
from scipy import optimize, special
from statsmodels.stats.proportion import proportion_confint
from statsmodels.tools.numdiff import approx_fprime
from threadpoolctl import threadpool_limits

from analysis.errors import InputError
from analysis.stats.families import FAMILIES, Family
from analysis.stats.memo import memoised

__all__ = [
    "AT_BOUND",
    "FIT_ERRORS",
    "LACK_OF_FIT_LEVEL",
    "NOT_FITTED",
    "OBSERVABLES",
    "QUANTILES",
    "STEP",
    "Z95",
    "Estimate",
    "FittedWait",
    "GroupFailure",
    "GroupFit",
    "JiffyData",
    "ModelFit",
    "averaged_observables",
    "best_woken_fit",
    "bin_probabilities",
    "candidate_models",
    "delta_observables",
    "empirical_observables",
    "fit_group",
    "fit_model",
    "fit_throttle_groups",
    "forward_gradient",
    "frame_data",
    "hessian",
    "jacobian",
    "jiffy_data",
    "lack_of_fit",
    "latent_wait",
    "log_likelihood",
    "model_name",
    "nll_functions",
    "observed_covariance",
    "optimise",
    "refits",
    "search_bounds",
    "select_groups",
]

QUANTILES = (0.5, 0.9, 0.99)
Z95 = 1.959963984540054
# LR statistic below which a zero mass / cure fraction is not distinguished from none
# (χ²₁ 95 % point; the boundary makes this conservative).
CHI2_1_95 = 3.841458820694124
# G² p at or below which the best model is reported as not fitting.
LACK_OF_FIT_LEVEL = 0.05
# What a model's optimisation or its observables raise when they do not converge (a
# root-finder out of iterations, a singular system, an overflow): that model is skipped.
FIT_ERRORS = (RuntimeError, ValueError, ArithmeticError, np.linalg.LinAlgError)
NOT_FITTED = "not fitted"
# The method of a parameter's Estimate when the optimum sits on its search bound.
AT_BOUND = "at search bound"
# Logit bounds of the zero mass and cure fraction: e^-12 ≈ 6e-6 is "none" at any n we see.
EXTRA_BOUND = 12.0


@dataclass(frozen=True)
class JiffyData:
    """One throttle group as counts of recorded jiffies k = 0..K (``counts[K]``: timeouts).

    ``jiffy_us`` is 1e6/HZ; ``timeout_us`` is the group's ``usec_timeout`` (K jiffies).
    """

    counts: np.ndarray
    jiffy_us: float
    timeout_us: float

    @property
    def k_timeout(self) -> int:
        return len(self.counts) - 1

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @staticmethod
    def from_bins(
        k: Iterable[int],
        counts: Iterable[int],
        jiffy_us: float,
        timeout_us: float,
        source: str = "<bins>",
    ) -> JiffyData:
        """From strictly increasing jiffy numbers and their counts (a histogram's bins)."""
        k_arr = np.asarray(list(k), dtype=np.int64)
        c_arr = np.asarray(list(counts), dtype=np.int64)
        k_timeout = round(timeout_us / jiffy_us)
        problem = None
        if len(k_arr) != len(c_arr):
            problem = f"{len(k_arr)} bins but {len(c_arr)} counts"
        elif np.any(np.diff(k_arr) <= 0):
            problem = f"bins are not strictly increasing: {k_arr.tolist()}"
        elif np.any(c_arr < 0):
            problem = f"negative counts: {c_arr[c_arr < 0].tolist()}"
        elif len(k_arr) and (k_arr[0] < 0 or k_arr[-1] > k_timeout):
            problem = f"bins outside 0..{k_timeout} jiffies: {k_arr.tolist()}"
        if problem:
            raise InputError(source, problem)
        full = np.zeros(k_timeout + 1, dtype=np.int64)
        full[k_arr] = c_arr
        return JiffyData(full, float(jiffy_us), float(timeout_us))


def jiffy_data(
    delays_us: Iterable[int],
    counts: Iterable[int],
    *,
    timeout_us: int,
    jiffy_us: float,
    source: str = "<group>",
) -> JiffyData:
    """Validate one group's recorded delays and bin them by jiffy.

    Delays at or above the timeout are censored at K (legacy ``congestion_wait`` overshoots
    its timeout). Raises :class:`InputError` naming the reason: no delays, negative delays or
    counts, delays off the jiffy grid, a timeout that is not whole jiffies, all delays zero,
    all censored, or a single distinct delay (the shape of the wait is then not identified).
    """
    d = np.asarray(list(delays_us), dtype=np.float64)
    c = np.asarray(list(counts), dtype=np.int64)
    if d.size == 0 or c.sum() == 0:
        raise InputError(source, "empty group: no recorded delays")
    if np.any(d < 0):
        raise InputError(source, f"negative delays (e.g. {d[d < 0][0]:.0f} us)")
    if np.any(c < 0):
        raise InputError(source, "negative counts")
    k_timeout = timeout_us / jiffy_us
    if timeout_us <= 0 or abs(k_timeout - round(k_timeout)) > 1e-3:
        raise InputError(
            source, f"timeout {timeout_us} us is not a whole number of {jiffy_us:g} us jiffies"
        )
    ratio = d / jiffy_us
    off = np.abs(ratio - np.round(ratio)) > 1e-3
    if np.any(off):
        raise InputError(
            source, f"delay {d[off][0]:.0f} us is not a whole number of {jiffy_us:g} us jiffies"
        )
    k = np.minimum(np.round(ratio).astype(np.int64), round(k_timeout))
    full = np.bincount(k, weights=c, minlength=round(k_timeout) + 1).astype(np.int64)
    n = int(full.sum())
    if full[0] == n:
        raise InputError(
            source,
            f"all {n} delays are 0 (woken within the first jiffy): only P(k=0) = 1 is "
            "observed, no wait distribution can be fitted",
        )
    if full[-1] == n:
        raise InputError(
            source,
            f"all {n} delays reached the {timeout_us} us timeout (all censored): the wait is "
            "only known to exceed the timeout",
        )
    if np.count_nonzero(full) == 1:
        raise InputError(
            source,
            f"all {n} delays are {int(np.flatnonzero(full)[0] * jiffy_us)} us: one distinct "
            "value cannot identify a wait distribution",
        )
    return JiffyData(full, float(jiffy_us), float(timeout_us))


def frame_data(frame: pl.DataFrame, jiffy_us: float, *, source: str = "<group>") -> JiffyData:
    """:func:`jiffy_data` of one group's ``usec_timeout``, ``delay_us`` and ``count`` rows;
    InputError when the rows mix timeouts (each timeout censors at its own K)."""
    timeouts = frame["usec_timeout"].drop_nulls().unique().sort().to_list()
    if len(timeouts) > 1:
        raise InputError(source, f"mixed timeouts in one group: {timeouts} us; fit each alone")
    if not timeouts:
        raise InputError(source, "empty group: no recorded delays")
    counts = frame["count"] if "count" in frame.columns else pl.Series([1] * frame.height)
    return jiffy_data(
        frame["delay_us"].to_list(),
        counts.to_list(),
        timeout_us=int(timeouts[0]),
        jiffy_us=jiffy_us,
        source=source,
    )


@dataclass(frozen=True)
class FittedWait:
    """A fitted latent wait T (µs): a :class:`analysis.stats.latent.LatentWait`."""

    reason: str
    family: Family = field(repr=False)
    params: tuple[float, ...]
    zero_mass: float
    cure_fraction: float
    support_limit_us: float

    @property
    def continuous_mass(self) -> float:
        return 1.0 - self.zero_mass - self.cure_fraction

    def survival(self, t_us: np.ndarray) -> np.ndarray:
        t = np.asarray(t_us, dtype=np.float64)
        inner = self.family.sf(np.maximum(t, 0.0), self.params)
        s = self.continuous_mass * inner + self.cure_fraction
        return np.where(t < 0, 1.0, s)

    def timed_out(self, tau_us: float) -> float:
        # Continuous between the atoms at 0 and never: P(T >= tau) = S(tau) for tau > 0.
        return float(self.survival(np.array([tau_us]))[0])

    def restricted_mean_us(self, tau_us: float) -> float:
        return float(self._restricted_means(np.array([tau_us]))[0])

    def _restricted_means(self, t: np.ndarray) -> np.ndarray:
        return self.continuous_mass * self.family.integrated_sf(t, self.params) + (
            self.cure_fraction * t
        )

    def quantile_us(self, p: float) -> float:
        if p <= self.zero_mass:
            return 0.0
        if p >= 1.0 - self.cure_fraction:
            return math.inf
        return self.family.ppf((p - self.zero_mass) / self.continuous_mass, self.params)

    def draws(self, n: int, seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        u = rng.random(n)
        t = self.family.rvs(n, self.params, rng)
        t = np.where(u < self.zero_mass, 0.0, t)
        return np.where(u >= 1.0 - self.cure_fraction, math.inf, t)


@functools.cache
def _grid(k_timeout: int, jiffy_us: float) -> np.ndarray:
    """0, J, ..., KJ: kept, since the likelihood asks for the same one 10⁵ times a fit."""
    grid = jiffy_us * np.arange(k_timeout + 1, dtype=np.float64)
    grid.flags.writeable = False
    return grid


def bin_probabilities(
    wait: FittedWait, k_timeout: int, jiffy_us: float, *, phase: bool = True
) -> np.ndarray:
    """P(k = 0..K) under the observation model (module docstring); ``phase=False`` is the
    naive floor binning k = floor(T/J), kept to show what ignoring the tick phase costs."""
    grid = _grid(k_timeout, jiffy_us)
    # Along the last axis: a batch of waits (:func:`_latent_waits`) gives one row each.
    if not phase:
        s = wait.survival(grid[1:])
        upper = np.concatenate([np.ones_like(s[..., :1]), s], axis=-1)
        return np.concatenate([upper[..., :-1] - upper[..., 1:], s[..., -1:]], axis=-1)
    r = wait._restricted_means(grid)
    p = np.empty(r.shape)
    p[..., 0] = 1.0 - r[..., 1] / jiffy_us
    p[..., 1:-1] = -(r[..., 2:] - 2.0 * r[..., 1:-1] + r[..., :-2]) / jiffy_us
    p[..., -1] = (r[..., -1] - r[..., -2]) / jiffy_us
    return p


def model_name(family: str, zero: bool, cure: bool) -> str:
    return family + ("+zero" if zero else "") + ("+cure" if cure else "")


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a 95 % CI (``method``: ``delta`` or ``bootstrap``)."""

    estimate: float
    ci_low: float
    ci_high: float
    method: str


@dataclass(frozen=True)
class ModelFit:
    """One family ± zero mass ± cure fraction fitted to one group."""

    family: str
    zero: bool
    cure: bool
    theta: np.ndarray = field(repr=False)
    cov: np.ndarray | None = field(repr=False)
    boundary: tuple[str, ...]
    params: dict[str, Estimate]
    loglik: float
    n_params: int
    aic: float
    bic: float
    g2: float
    g2_p: float | None
    max_cdf_gap: float
    converged: bool
    wait: FittedWait = field(repr=False)

    @property
    def name(self) -> str:
        return model_name(self.family, self.zero, self.cure)


def _masses(zero: bool, cure: bool, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zero mass and cure fraction (0.0 when absent) from their logits, the rows of
    ``logits``: the softmax against the continuous part's logit 0 written out as
    ``scipy.special.softmax`` computes it, exp(x - max) over a left-to-right sum (the same
    bits), at a fraction of its 80 µs a call on three numbers."""
    if not (zero or cure):
        return 0.0, 0.0
    top = np.maximum(logits.max(axis=0), 0.0)
    e = np.exp(logits - top)
    total = np.exp(-top) + e[0]
    if zero and cure:
        total = total + e[1]
    return (e[0] / total if zero else 0.0), (e[-1] / total if cure else 0.0)


def latent_wait(fam: Family, zero: bool, cure: bool, theta: np.ndarray) -> FittedWait:
    """The wait an unconstrained ``theta`` stands for: the family's parameters, then the
    zero-mass and cure logits (softmax against the continuous part) when present."""
    m = len(fam.params)
    z, c = _masses(zero, cure, np.asarray(theta[m:], dtype=np.float64))
    return FittedWait("", fam, fam.natural(theta[:m]), float(z), float(c), math.inf)


def _latent_waits(fam: Family, zero: bool, cure: bool, thetas: np.ndarray) -> FittedWait:
    """The waits of a batch of thetas (rows) as one FittedWait whose parameters and masses
    are (B, 1) columns, so that its survival and restricted means come as (B, t) tables:
    B likelihoods in one vectorised evaluation, each the same arithmetic as
    :func:`latent_wait`'s."""
    m = len(fam.params)
    columns = np.ascontiguousarray(thetas.T)[:, :, None]
    z, c = _masses(zero, cure, columns[m:])
    return FittedWait("", fam, fam.to_natural(columns[:m]), z, c, math.inf)


def search_bounds(
    fam: Family, low_us: float, high_us: float, extra: int
) -> list[tuple[float, float]]:
    """Search box of theta: scales from ``low_us``/1000 to ``high_us``·10⁴, shapes 0.03-30,
    and ``extra`` zero-mass / cure logits."""
    scale = (math.log(low_us / 1000.0), math.log(high_us * 1e4))
    kinds = {
        "weight1": (-10.0, 10.0),
        "scale2_us": (0.0, 12.0),
        "scale_us": scale,
        "scale1_us": scale,
    }
    shape = (math.log(0.03), math.log(30.0))
    out = [kinds.get(name, shape) for name in fam.params]
    return out + [(-EXTRA_BOUND, EXTRA_BOUND)] * extra


def log_likelihood(data: JiffyData, wait: FittedWait, *, phase: bool = True) -> float:
    """Σ counts·log P(k) of the data under a latent wait (``phase=False``: floor binning)."""
    p = bin_probabilities(wait, data.k_timeout, data.jiffy_us, phase=phase)
    mask = data.counts > 0
    return float(np.dot(data.counts[mask], np.log(p[mask])))


def nll_functions(
    fam: Family, zero: bool, cure: bool, data: JiffyData, counts: np.ndarray, phase: bool
) -> tuple[Callable[[np.ndarray], float], Callable[[np.ndarray], np.ndarray]]:
    """The negative log-likelihood (1e300 where it is not finite) of a theta, and of each
    row of a (B, params) batch of thetas: the same arithmetic, to the bit, so that
    finite differences of the batch are those of the single one. (The single one keeps
    the wait's parameters Python floats: cheaper than (1, 1) arrays.)"""
    mask = counts > 0
    weights = counts[mask]

    def minus_loglik(p: np.ndarray) -> float:
        value = -float(np.dot(weights, np.log(np.maximum(p[mask], 1e-300))))
        return value if math.isfinite(value) else 1e300

    def nll(theta: np.ndarray) -> float:
        with np.errstate(all="ignore"):
            wait = latent_wait(fam, zero, cure, theta)
            return minus_loglik(bin_probabilities(wait, data.k_timeout, data.jiffy_us, phase=phase))

    def nll_batch(thetas: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            wait = _latent_waits(fam, zero, cure, thetas)
            p = bin_probabilities(wait, data.k_timeout, data.jiffy_us, phase=phase)
            log_p = np.log(np.maximum(np.compress(mask, p, axis=1), 1e-300))
            # A dot product a row, rows contiguous (unlike p[:, mask]): BLAS sums a matrix
            # product, or a strided vector, in another order than a single theta's.
            values = -np.array([np.dot(weights, row) for row in log_p])
        return np.where(np.isfinite(values), values, 1e300)

    return nll, nll_batch


# SLSQP's default finite-difference step (scipy.optimize._slsqp_py._epsilon).
STEP = math.sqrt(np.finfo(np.float64).eps)


def forward_gradient(
    nll: Callable[[np.ndarray], np.ndarray], bounds
) -> Callable[[np.ndarray], np.ndarray]:
    """The gradient SLSQP estimates without ``jac`` (scipy's ``approx_derivative``,
    '2-point', absolute step ``STEP``, a step lost to rounding replaced by a relative one,
    steps flipped or shortened to stay inside the bounds as ``_adjust_scheme_to_bounds``
    does), from one call of the batched ``nll`` at theta and at each forward step: the
    same differences to the bit, so the optimiser takes the same path, at the cost of
    about two likelihoods instead of one per parameter."""
    lo, hi = np.array(bounds, dtype=np.float64).T
    n = lo.size
    diagonal = (np.arange(1, n + 1), np.arange(n))

    def gradient(theta: np.ndarray) -> np.ndarray:
        h = np.full(n, STEP)
        lost = (theta + h) - theta == 0
        if lost.any():
            sign = (theta >= 0).astype(float) * 2 - 1
            h = np.where(lost, STEP * sign * np.maximum(1.0, np.abs(theta)), h)
        ahead = theta + h
        if ((ahead < lo) | (ahead > hi)).any():
            lower, upper = theta - lo, hi - theta
            fitting = np.abs(h) <= np.maximum(lower, upper)
            h = np.where(((ahead < lo) | (ahead > hi)) & fitting, -h, h)
            h = np.where(fitting, h, np.where(upper >= lower, upper, -lower))
            ahead = theta + h
        steps = np.empty((n + 1, n))
        steps[:] = theta
        steps[diagonal] = ahead
        values = nll(steps)
        return (values[1:] - values[0]) / (ahead - theta)

    return gradient


def _starts(fam: Family, data: JiffyData, zero: bool, cure: bool) -> list[np.ndarray]:
    counts = data.counts
    n = counts.sum()
    inside = counts[1:-1]
    ks = np.arange(1, data.k_timeout)
    typical = (
        float(np.average(ks, weights=inside)) * data.jiffy_us if inside.sum() else data.jiffy_us
    )
    extra = []
    if zero:
        extra.append(math.log(max(counts[0] / n, 1e-3)))
    if cure:
        extra.append(math.log(max(counts[-1] / n, 1e-3)))
    return [np.concatenate([s, extra]) for s in fam.starts(max(typical, data.jiffy_us / 2))]


def _warm(
    nested: list[ModelFit], data: JiffyData, zero: bool, cure: bool
) -> list[np.ndarray] | None:
    """Starts from the family's already fitted nested models (the optimum of a model with a
    zero mass or cure fraction lies near theirs) besides the default starts."""
    if not nested:
        return None
    fam = FAMILIES[nested[0].family]
    m = len(fam.params)
    default = _starts(fam, data, zero, cure)
    starts = []
    for fit in nested:
        extra = list(default[0][m:])
        if zero and fit.zero:
            extra[0] = fit.theta[m]
        if cure and fit.cure:
            extra[-1] = fit.theta[-1]
        starts.append(np.concatenate([fit.theta[:m], extra]))
    return starts + default


def _g2(counts: np.ndarray, p: np.ndarray) -> float:
    n = counts.sum()
    mask = counts > 0
    expected = n * np.clip(p[mask], 1e-300, None)
    return float(2.0 * np.sum(counts[mask] * np.log(counts[mask] / expected)))


def optimise(nll, starts: list[np.ndarray], bounds, jac=None) -> optimize.OptimizeResult:
    """A short run from every start, then the best one to convergence (``jac``: the
    gradient, SLSQP's own finite differences without it)."""
    lo, hi = np.array(bounds).T
    if len(starts) == 1:
        return optimize.minimize(
            nll, np.clip(starts[0], lo, hi), method="SLSQP", jac=jac, bounds=bounds
        )
    rough = [
        optimize.minimize(
            nll,
            np.clip(x0, lo, hi),
            method="SLSQP",
            jac=jac,
            bounds=bounds,
            options={"maxiter": 40},
        )
        for x0 in starts
    ]
    best = min(rough, key=lambda r: r.fun)
    return optimize.minimize(nll, best.x, method="SLSQP", jac=jac, bounds=bounds)


def _natural_vector(fam: Family, zero: bool, cure: bool, theta: np.ndarray) -> np.ndarray:
    w = latent_wait(fam, zero, cure, theta)
    return np.array([*w.params, w.zero_mass, w.cure_fraction])


def jacobian(fn: Callable[[np.ndarray], np.ndarray], theta: np.ndarray) -> np.ndarray:
    """d fn / d theta by central differences (statsmodels), shape (outputs, params)."""
    return np.atleast_2d(approx_fprime(theta, fn, centered=True))


def fit_model(
    data: JiffyData,
    family: str,
    *,
    zero: bool = False,
    cure: bool = False,
    counts: np.ndarray | None = None,
    starts: list[np.ndarray] | None = None,
    information: bool = True,
    phase: bool = True,
) -> ModelFit:
    """Maximum-likelihood fit of one model; ``counts`` replaces the data's (bootstrap),
    ``starts`` replaces the default starting points (warm starts), ``information=False``
    skips the standard errors, ``phase=False`` fits the naive floor binning instead."""
    fam = FAMILIES[family]
    counts = data.counts if counts is None else counts
    nll, nll_batch = nll_functions(fam, zero, cure, data, counts, phase)
    bounds = search_bounds(fam, data.jiffy_us, data.timeout_us, zero + cure)
    res = optimise(
        nll,
        starts or _starts(fam, data, zero, cure),
        bounds,
        jac=forward_gradient(nll_batch, bounds),
    )
    theta = np.asarray(res.x)
    lo, hi = np.array(bounds).T
    at_bound = (theta - lo < 1e-3) | (hi - theta < 1e-3)
    names = [*fam.params, "zero_mass", "cure_fraction"]
    free = [*([True] * len(fam.params)), zero, cure]
    theta_names = [n for n, f in zip(names, free, strict=True) if f]
    cov = None
    if information:
        cov = observed_covariance(nll_batch, theta, at_bound)
    natural = _natural_vector(fam, zero, cure, theta)
    # Intervals on the scale where the parameter is unbounded (log of a positive scale or
    # shape, logit of the zero mass and cure fraction), taken back: they stay in range.
    positive = natural > 0
    # The zero mass, the cure fraction and a mixture's weight are probabilities.
    probability = np.array([n.startswith("weight") for n in fam.params] + [True, True])

    def linked(th: np.ndarray) -> np.ndarray:
        v = _natural_vector(fam, zero, cure, th)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(
                probability,
                special.logit(np.clip(v, 1e-12, 1 - 1e-12)),
                np.where(positive, np.log(np.abs(v)), v),
            )

    centre = linked(theta)
    if cov is not None:
        jac = jacobian(linked, theta)
        se = np.sqrt(np.clip(np.diag(jac @ cov @ jac.T), 0, None))
    else:
        se = np.full(natural.size, math.nan)

    def back(x: np.ndarray) -> np.ndarray:
        # np.where evaluates every branch: exp of a logit may overflow where unused.
        with np.errstate(over="ignore"):
            return np.where(probability, special.expit(x), np.where(positive, np.exp(x), x))

    low, high = back(centre - Z95 * se), back(centre + Z95 * se)
    # A parameter at its search bound is not estimated: the information matrix leaves it
    # out (its se 0), and a zero-width interval would read as a precise value.
    bound = dict(zip(theta_names, at_bound, strict=True))
    params = {
        name: Estimate(float(natural[i]), math.nan, math.nan, AT_BOUND)
        if bound[name]
        else Estimate(float(natural[i]), float(low[i]), float(high[i]), "delta")
        for i, (name, is_free) in enumerate(zip(names, free, strict=True))
        if is_free
    }
    n = counts.sum()
    k = theta.size
    loglik = -float(res.fun)
    wait = latent_wait(fam, zero, cure, theta)
    p = bin_probabilities(wait, data.k_timeout, data.jiffy_us, phase=phase)
    gap = float(np.max(np.abs(np.cumsum(counts) / n - np.cumsum(p))))
    return ModelFit(
        family=family,
        zero=zero,
        cure=cure,
        theta=theta,
        cov=cov,
        boundary=tuple(name for name, b in zip(theta_names, at_bound, strict=True) if b),
        params=params,
        loglik=loglik,
        n_params=k,
        aic=2 * k - 2 * loglik,
        bic=k * math.log(n) - 2 * loglik,
        g2=_g2(counts, p),
        g2_p=None,
        max_cdf_gap=gap,
        converged=bool(res.success),
        wait=wait,
    )


def hessian(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """statsmodels' ``approx_hess3`` (Ridout's central differences, steps EPS^¼·max(|x|,
    0.1)) of a function ``f`` of a batch of points (rows), its 4·n(n+1)/2 points in one
    call: the same points and differences as its loop, to the bit."""
    h = np.finfo(float).eps ** (1.0 / 4) * np.maximum(np.abs(x), 0.1)
    ee = np.diag(h)
    i, j = np.triu_indices(x.size)
    points = [x + ee[i] + ee[j], x + ee[i] - ee[j], x - ee[i] + ee[j], x - ee[i] - ee[j]]
    pp, pm, mp, mm = f(np.concatenate(points)).reshape(4, -1)
    hess = np.empty((x.size, x.size))
    hess[i, j] = hess[j, i] = (pp - pm - (mp - mm)) / (4.0 * np.outer(h, h)[i, j])
    return hess


def observed_covariance(
    nll: Callable[[np.ndarray], np.ndarray], theta: np.ndarray, at_bound: np.ndarray
) -> np.ndarray | None:
    """Inverse observed information over the interior parameters (boundary ones fixed);
    ``nll`` takes a batch of thetas (rows)."""
    free = np.flatnonzero(~at_bound)
    cov = np.zeros((theta.size, theta.size))
    if free.size == 0:
        return cov

    def sub(x: np.ndarray) -> np.ndarray:
        full = np.tile(theta, (len(x), 1))
        full[:, free] = x
        return nll(full)

    hess = hessian(sub, theta[free])
    try:
        inv = np.linalg.inv(hess)
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(inv)) or np.any(np.diag(inv) < 0):
        return None
    cov[np.ix_(free, free)] = inv
    return cov


# ---- observables ---------------------------------------------------------------------------


def _observable_values(wait: FittedWait, data: JiffyData) -> np.ndarray:
    p = bin_probabilities(wait, data.k_timeout, data.jiffy_us)
    return np.array(
        [
            p[0],
            p[-1],
            wait.restricted_mean_us(data.timeout_us),
            *(wait.quantile_us(q) for q in QUANTILES),
        ]
    )


OBSERVABLES = ("p_zero", "p_timeout", "restricted_mean_usec", *(f"q{q:g}" for q in QUANTILES))


def _link(values: np.ndarray) -> np.ndarray:
    """logit for the two probabilities, log for the times: CIs respect the ranges."""
    with np.errstate(divide="ignore"):
        probs = special.logit(np.clip(values[:2], 1e-12, 1 - 1e-12))
        return np.concatenate([probs, np.log(np.maximum(values[2:], 1e-9))])


def _unlink(values: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # a bound beyond float range is inf, as it should be
        return np.concatenate([special.expit(values[:2]), np.exp(values[2:])])


def delta_observables(model: ModelFit, data: JiffyData) -> dict[str, Estimate]:
    """P(k=0), P(timeout), E[min(T, timeout)] and quantiles of T with delta-method CIs."""
    fam = FAMILIES[model.family]

    def linked(theta: np.ndarray) -> np.ndarray:
        return _link(_observable_values(latent_wait(fam, model.zero, model.cure, theta), data))

    values = _observable_values(model.wait, data)
    # A quantile inside the cure fraction (inf) or the zero mass (0) stays there at every
    # nearby theta: its CI is the point itself.
    finite = np.isfinite(values) & (values > 0)
    if model.cov is None:
        sd = np.full(values.size, math.nan)
    else:
        with np.errstate(invalid="ignore"):
            jac = np.where(finite[:, None], jacobian(linked, model.theta), 0.0)
        sd = np.sqrt(np.clip(np.diag(jac @ model.cov @ jac.T), 0, None))
    centre = _link(values)
    low = np.where(finite, _unlink(centre - Z95 * sd), values)
    high = np.where(finite, _unlink(centre + Z95 * sd), values)
    return {
        name: Estimate(float(v), float(lo), float(hi), "delta")
        for name, v, lo, hi in zip(OBSERVABLES, values, low, high, strict=True)
    }


def averaged_observables(
    models: list[ModelFit],
    data: JiffyData,
    per_model: list[dict[str, Estimate]] | None = None,
) -> dict[str, Estimate]:
    """Observables averaged over the candidate models by Akaike weight, w ∝ exp(−ΔAIC/2),
    on the link scale (logit / log), with Buckland et al. (1997)'s unconditional se
    Σ w_i √(se_i² + (θ_i − θ̄)²): the interval carries the uncertainty of which model is
    right, which an interval of the AIC-best model alone leaves out (AIC picks a wrong
    family often at a few thousand sleeps). Models without an information matrix, and
    per observable models whose value is 0 or infinite, are left out (weights
    renormalised); when none is left the best model's delta interval stands.
    ``per_model``: each model's :func:`delta_observables`, when already computed."""
    if per_model is None:
        per_model = [delta_observables(m, data) for m in models]
    aic = np.array([m.aic for m in models])
    weight = np.exp(-(aic - aic.min()) / 2)
    out = {}
    for name in OBSERVABLES:
        ests = [obs[name] for obs in per_model]
        ok = np.array(
            [
                m.cov is not None and 0 < e.estimate < math.inf and math.isfinite(e.ci_low)
                for m, e in zip(models, ests, strict=True)
            ]
        )
        if not ok.any() or not ok[0]:
            out[name] = replace(ests[0], method="delta (best model)")
            continue
        w = weight[ok] / weight[ok].sum()
        link = _link_one(name)
        centre = np.array([link(e.estimate) for e in np.array(ests, dtype=object)[ok]])
        se = np.array(
            [
                (link(e.ci_high) - link(e.ci_low)) / (2 * Z95)
                for e in np.array(ests, dtype=object)[ok]
            ]
        )
        mean = float(w @ centre)
        sd = float(w @ np.sqrt(se**2 + (centre - mean) ** 2))
        unlink = _unlink_one(name)
        out[name] = Estimate(
            unlink(mean), unlink(mean - Z95 * sd), unlink(mean + Z95 * sd), "model-averaged delta"
        )
    return out


def _link_one(name: str) -> Callable[[float], float]:
    if name in ("p_zero", "p_timeout"):
        return lambda x: float(special.logit(min(max(x, 1e-12), 1 - 1e-12)))
    return lambda x: math.log(max(x, 1e-9))


def _unlink_one(name: str) -> Callable[[float], float]:
    return (lambda x: float(special.expit(x))) if name in ("p_zero", "p_timeout") else math.exp


def empirical_observables(data: JiffyData) -> dict[str, Estimate]:
    """Model-free estimates: the shares of k = 0 and of timeouts (Wilson 95 % CIs,
    statsmodels), and the mean recorded delay J·E[k], which equals E[min(T, timeout)]
    under the tick-phase model whatever the wait's distribution (the bin probabilities
    of the module docstring sum to Σ_j P(k ≥ j) = R(KJ)/J), with a normal 95 % CI."""
    out = {}
    for name, count in (("p_zero", data.counts[0]), ("p_timeout", data.counts[-1])):
        lo, hi = proportion_confint(int(count), data.n, alpha=0.05, method="wilson")
        out[name] = Estimate(float(count / data.n), float(lo), float(hi), "wilson")
    k = np.arange(data.counts.size) * data.jiffy_us
    mean = float(data.counts @ k / data.n)
    sd = math.sqrt(float(data.counts @ (k - mean) ** 2) / max(data.n - 1, 1))
    half = Z95 * sd / math.sqrt(data.n)
    out["restricted_mean_usec"] = Estimate(mean, max(0.0, mean - half), mean + half, "normal")
    return out


# ---- one group, every model ----------------------------------------------------------------


@dataclass(frozen=True)
class GroupFit:
    """Every candidate model of one throttle group, the best by AIC, and what it implies:
    ``observables`` averaged over the models by Akaike weight (:func:`averaged_observables`),
    ``empirical`` the model-free estimates, ``lack_of_fit`` why the best model is rejected
    (None when it is not, or without a bootstrap)."""

    event: str
    context: str
    reason: str
    usec_timeout: int
    data: JiffyData = field(repr=False)
    models: tuple[ModelFit, ...]
    skipped: tuple[str, ...]
    observables: dict[str, Estimate]
    empirical: dict[str, Estimate]
    identifiability: tuple[str, ...]
    bootstrap: int
    replicates: tuple[FittedWait, ...] = field(default=(), repr=False)
    lack_of_fit: str | None = None

    @property
    def n(self) -> int:
        return self.data.n

    @property
    def best(self) -> ModelFit:
        return self.models[0]

    def latent(self) -> FittedWait:
        """The best model's latent wait, valid up to the group's timeout."""
        return self._labelled(self.best.wait)

    def latent_replicates(self) -> tuple[FittedWait, ...]:
        """The best model refitted to each bootstrap resample (empty without bootstrap):
        the ``replicates`` :func:`analysis.models.throttle.predict_timeout` takes for CIs."""
        return tuple(self._labelled(w) for w in self.replicates)

    def _labelled(self, wait: FittedWait) -> FittedWait:
        return replace(wait, reason=self.reason, support_limit_us=self.data.timeout_us)

    def bootstrap_latents(self, replicates: int, seed: int) -> tuple[FittedWait, ...]:
        """``replicates`` bootstrap replicates of :meth:`latent`: the best model refitted to
        multinomial resamples of the group's histogram (events taken as independent)."""
        rng = np.random.default_rng(seed)
        resamples = rng.multinomial(self.n, self.data.counts / self.n, size=replicates)
        return tuple(self._labelled(r.wait) for r in refits(self.data, self.best, resamples))


@dataclass(frozen=True)
class GroupFailure:
    """A group that cannot be fitted, and why (bad input is reported per group)."""

    event: str
    context: str
    reason: str
    usec_timeout: int | None
    n: int
    message: str


def candidate_models(families: Iterable[str] | None = None) -> list[tuple[str, bool, bool]]:
    """(family, zero, cure) for every family with and without each extra component."""
    names = list(families) if families is not None else list(FAMILIES)
    return [(f, z, c) for f in names for z in (False, True) for c in (False, True)]


def _identifiability(models: list[ModelFit], data: JiffyData) -> list[str]:
    best = models[0]
    notes = []
    by_name = {m.name: m for m in models}
    close = [m for m in models if m.aic - best.aic <= 2.0]
    for attr, label, flag in (
        ("zero_mass", "zero mass", "zero"),
        ("cure_fraction", "cure fraction", "cure"),
    ):
        values = [getattr(m.wait, attr) for m in close]
        if max(values) - min(values) > 0.02:
            notes.append(
                f"{label} not identified: models within dAIC 2 put it between "
                f"{min(values):.3f} and {max(values):.3f}"
            )
        if not getattr(best, flag):
            continue
        without = by_name.get(
            model_name(best.family, best.zero and flag != "zero", best.cure and flag != "cure")
        )
        if without is not None and 2 * (best.loglik - without.loglik) < CHI2_1_95:
            notes.append(
                f"{label} not identified: dropping it costs LR "
                f"{2 * (best.loglik - without.loglik):.2f} < 3.84 (flat profile)"
            )
        if attr in best.boundary:
            notes.append(f"{label} at the boundary of its range: not estimated")
        est = best.params[attr]
        if math.isfinite(est.ci_high) and est.ci_high - est.ci_low > 0.5:
            notes.append(
                f"{label} barely constrained: 95 % CI width {est.ci_high - est.ci_low:.2f}"
            )
    for name in best.boundary:
        if name in best.params and name not in ("zero_mass", "cure_fraction"):
            notes.append(
                f"{name} at the bound of its search range ({best.params[name].estimate:.4g}): "
                f"not estimated, no CI, held fixed in the observables' CIs; {best.family} "
                "fits these delays only at its limit"
            )
    if best.cure:
        notes.append(
            "cure fraction rests on the family's tail beyond the "
            f"{data.timeout_us:.0f} us timeout, which no event observes"
        )
    if best.cov is None:
        notes.append(f"{best.name}: observed information singular; CIs unavailable")
    return notes


def refits(data: JiffyData, model: ModelFit, resamples: np.ndarray) -> list[ModelFit]:
    """``model`` refitted to each row of ``resamples`` (histograms of ``data``'s bins),
    started at its optimum and without standard errors: its bootstrap replicates."""
    return [
        fit_model(
            data,
            model.family,
            zero=model.zero,
            cure=model.cure,
            counts=counts,
            starts=[model.theta],
            information=False,
        )
        for counts in resamples
    ]


def _bootstrap(
    data: JiffyData, models: list[ModelFit], replicates: int, seed: int
) -> tuple[dict[str, float], tuple[FittedWait, ...]]:
    """Parametric-bootstrap G² p-values of the models within dAIC 4 of the best, and the
    best model refitted to multinomial resamples of the histogram (its replicates, which
    :func:`analysis.models.throttle.predict_timeout` takes for CIs)."""
    rng = np.random.default_rng(seed)
    best = models[0]
    n = data.n
    resamples = rng.multinomial(n, data.counts / n, size=replicates)
    waits = tuple(r.wait for r in refits(data, best, resamples))
    g2_p = {}
    for model in models:
        if model.aic - best.aic > 4.0:
            continue
        # Second differences of restricted means fall ~1e-15 below 0 where a bin's
        # probability is 0 (seen on 15 sleeps in 3 bins): 0, as the likelihood takes them.
        p = np.clip(bin_probabilities(model.wait, data.k_timeout, data.jiffy_us), 0.0, None)
        resamples = rng.multinomial(n, p / p.sum(), size=replicates)
        exceed = sum(refit.g2 >= model.g2 for refit in refits(data, model, resamples))
        g2_p[model.name] = (1 + exceed) / (1 + replicates)
    return g2_p, waits


def lack_of_fit(best: ModelFit, replicates: int, level: float = LACK_OF_FIT_LEVEL) -> str | None:
    """Why the best model is rejected by its G² goodness-of-fit test (parametric bootstrap
    p ≤ ``level`` from ``replicates`` replicates), or None when it is not (or was not
    tested). The p is printed at the resolution its Monte-Carlo error allows: with no
    replicate at or above the observed G², as the bound ``1/(replicates+1)`` it is (the
    same for every seed); else to one significant digit beside the count and the
    Monte-Carlo standard error ``sqrt(p(1-p)/(replicates+1))``.
    """
    if best.g2_p is None or best.g2_p > level:
        return None
    reached = round(best.g2_p * (replicates + 1)) - 1
    if reached == 0:
        test = (
            f"none of {replicates} parametric-bootstrap replicates reach it "
            f"(p = 1/{replicates + 1} = {1 / (replicates + 1):.2g} <= {level:g})"
        )
    else:
        se = math.sqrt(best.g2_p * (1 - best.g2_p) / (replicates + 1))
        test = (
            f"{reached} of {replicates} parametric-bootstrap replicates reach it (p "
            f"{best.g2_p:.1g} <= {level:g}, Monte-Carlo se {se:.1g})"
        )
    return (
        f"best model {best.name} rejected: G2 {best.g2:.1f}, {test}, so no candidate family "
        "describes these delays; the model-free estimates lead, and quantities that rest on "
        "the model (quantiles past the timeout, cure fraction) are not supported"
    )


def fit_group(
    data: JiffyData,
    *,
    event: str = "",
    context: str = "",
    reason: str = "",
    families: Iterable[str] | None = None,
    bootstrap: int = 0,
    seed: int = 0,
    cache: bool = True,
) -> GroupFit:
    """Fit every candidate (or those of ``families``) to one group, rank by AIC, derive the
    observables (averaged over the models by Akaike weight, delta method on the link
    scale, whatever ``bootstrap``), test the fit (``bootstrap`` > 0: parametric-bootstrap
    G² p-values, lack of fit flagged) and say what is not identified. Models with as many
    parameters as the histogram has occupied bins less one are skipped (the fit would be
    exact and say nothing). The fit is kept on disk (:mod:`analysis.stats.memo`) unless
    ``cache`` is false (simulations, whose every group is new)."""
    names = None if families is None else tuple(families)

    def compute() -> GroupFit:
        # One BLAS thread: a multi-threaded reduction sums in another order, and the fit
        # moved by up to 8e-5 relative between OPENBLAS_NUM_THREADS=1 and 2 (Dask workers
        # run with 1).
        with threadpool_limits(limits=1, user_api="blas"):
            return _fit_group(data, event, context, reason, names, bootstrap, seed)

    if not cache:
        return compute()
    counts = np.ascontiguousarray(data.counts)
    options = (counts.dtype.str, data.jiffy_us, data.timeout_us, event, context, reason)
    key = counts.tobytes() + repr((*options, names, bootstrap, seed)).encode()
    return memoised(key, compute)


def _fit_group(
    data: JiffyData,
    event: str,
    context: str,
    reason: str,
    families: Iterable[str] | None,
    bootstrap: int,
    seed: int,
) -> GroupFit:
    occupied = int(np.count_nonzero(data.counts))
    fits: list[ModelFit] = []
    skipped = []
    nested: dict[str, list[ModelFit]] = {}
    observed: dict[str, dict[str, Estimate]] = {}
    for fam, zero, cure in candidate_models(families):
        k = len(FAMILIES[fam].params) + zero + cure
        if k >= occupied:
            skipped.append(f"{model_name(fam, zero, cure)}: {k} parameters, {occupied} bins")
            continue
        try:
            fit = fit_model(
                data, fam, zero=zero, cure=cure, starts=_warm(nested.get(fam, []), data, zero, cure)
            )
            observed[fit.name] = delta_observables(fit, data)
        except FIT_ERRORS as exc:
            # A model whose optimum or observables cannot be computed is one candidate
            # less, with its reason, never the end of the whole fit.
            skipped.append(f"{model_name(fam, zero, cure)}: {NOT_FITTED} ({exc})")
            continue
        nested.setdefault(fam, []).append(fit)
        fits.append(fit)
    if not fits:
        why = "; ".join(skipped) or "no candidate model"
        raise InputError(reason or "<group>", f"no model could be fitted: {why}")
    fits.sort(key=lambda m: m.aic)
    observables = averaged_observables(fits, data, [observed[m.name] for m in fits])
    replicates: tuple[FittedWait, ...] = ()
    if bootstrap > 0:
        g2_p, replicates = _bootstrap(data, fits, bootstrap, seed)
        fits = [replace(m, g2_p=g2_p.get(m.name)) for m in fits]
    return GroupFit(
        event=event,
        context=context,
        reason=reason,
        usec_timeout=round(data.timeout_us),
        data=data,
        models=tuple(fits),
        skipped=tuple(skipped),
        observables=observables,
        empirical=empirical_observables(data),
        identifiability=tuple(_identifiability(fits, data)),
        bootstrap=bootstrap,
        replicates=replicates,
        lack_of_fit=lack_of_fit(fits[0], bootstrap),
    )


def select_groups(
    events: pl.DataFrame, reason: str | None = None, context: str | None = None
) -> pl.DataFrame:
    """Throttle event rows with a delay, of reasons containing ``reason`` and of ``context``
    (each when given): the rows :func:`fit_throttle_groups` fits."""
    known = events.filter(pl.col("delay_us").is_not_null())
    if reason is not None:
        known = known.filter(pl.col("reason").str.contains(reason, literal=True))
    if context is not None:
        known = known.filter(pl.col("context") == context)
    return known


def best_woken_fit(data: JiffyData) -> FittedWait | None:
    """The latent wait of the AIC-best fit with no cure fraction (every family, with and
    without a zero mass; none when no model has fewer parameters than the occupied bins
    less one, as :func:`fit_group` skips those): the woken fit of
    :func:`analysis.models.throttle_waits.woken_wait`. Kept on disk as a group's fit is:
    the notebooks and the model's validation score the same runs' waits."""

    def compute() -> FittedWait | None:
        occupied = int((data.counts > 0).sum())
        fits = [
            fit_model(data, family, zero=zero, information=False)
            for family, spec in FAMILIES.items()
            for zero in (False, True)
            if len(spec.params) + zero < occupied
        ]
        return min(fits, key=lambda f: f.aic).wait if fits else None

    counts = np.ascontiguousarray(data.counts)
    options = ("woken", counts.dtype.str, data.jiffy_us, data.timeout_us)
    return memoised(counts.tobytes() + repr(options).encode(), compute)


def fit_throttle_groups(
    events: pl.DataFrame,
    jiffy_us: float | None,
    *,
    reason: str | None = None,
    context: str | None = None,
    families: Iterable[str] | None = None,
    bootstrap: int = 0,
    seed: int = 0,
) -> list[GroupFit | GroupFailure]:
    """Fit every (event, context, reason, timeout) group of
    :func:`analysis.metrics.throttle.throttle_events` rows (``count``-weighted); bad groups
    come back as :class:`GroupFailure` with the reason instead of raising."""
    known = select_groups(events, reason, context)
    out: list[GroupFit | GroupFailure] = []
    keys = ("event", "context", "reason", "usec_timeout")
    for (ev, ctx, rsn, timeout), group in known.group_by(*keys, maintain_order=True):
        label = f"{ev} {ctx} {rsn} timeout={timeout}"
        n = int(group["count"].sum())
        try:
            if jiffy_us is None:
                raise InputError(label, "no jiffy length: no non-zero delay and no CONFIG_HZ")
            data = frame_data(group, jiffy_us, source=label)
            out.append(
                fit_group(
                    data,
                    event=ev,
                    context=ctx,
                    reason=rsn,
                    families=families,
                    bootstrap=bootstrap,
                    seed=seed,
                )
            )
        except InputError as exc:
            out.append(GroupFailure(ev, ctx, rsn, int(timeout), n, exc.reason))
    return sorted(out, key=lambda g: (g.event, g.context or "", g.reason, g.usec_timeout or 0))
