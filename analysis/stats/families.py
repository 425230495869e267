"""Parametric families for the latent wait T of a throttled reclaimer (µs), on SciPy.

Each family gives what the jiffy observation model (:mod:`analysis.stats.fit`) needs: the
survival function S(t) and its integral ∫₀ᵗ S = E[min(T, t)] (the restricted mean, closed
form from the partial expectations so that one call evaluates every jiffy bin), the log
density for continuous durations, the quantile function and draws. Distributions are
``scipy.stats``'s; the closed forms use ``scipy.special`` (regularised incomplete gamma,
Gauss hypergeometric).

Parameters travel in an unconstrained vector ``theta`` (logs of scales and shapes, a logit
for the mixture weight) so the optimiser needs no bounds logic; ``natural`` names them.
The closed forms broadcast: parameters given as (B, 1) columns (``to_natural`` of a batch
of thetas) give a (B, len(t)) table, which the fits' finite-difference gradient evaluates
in one vectorised call, element for element the same arithmetic as B scalar calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

__all__ = ["FAMILIES", "Family", "family"]

Array = np.ndarray


@dataclass(frozen=True)
class Family:
    """A continuous distribution on (0, ∞) with everything the fits need.

    ``natural(theta)`` maps the unconstrained vector to the named parameters (``params``;
    scales in µs); ``to_natural`` does so for arrays whose first axis runs over theta (a
    batch along the others). ``starts(scale_us)`` proposes unconstrained starting points
    for a wait of typical size ``scale_us``.
    """

    name: str
    params: tuple[str, ...]
    to_natural: Callable[[Array], tuple[Array, ...]]
    sf: Callable[[Array, tuple[float, ...]], Array]
    integrated_sf: Callable[[Array, tuple[float, ...]], Array]
    logpdf: Callable[[Array, tuple[float, ...]], Array]
    ppf: Callable[[float, tuple[float, ...]], float]
    rvs: Callable[[int, tuple[float, ...], np.random.Generator], Array]
    starts: Callable[[float], list[Array]]

    def natural(self, theta: Array) -> tuple[float, ...]:
        return tuple(float(x) for x in self.to_natural(theta))

    def __reduce__(self) -> tuple[Callable[[str], Family], tuple[str]]:
        # Pickled by name (its functions are lambdas): a kept fit (analysis.stats.memo)
        # comes back holding the module's own family.
        return family, (self.name,)


def _exp_each(th: Array) -> tuple[Array, ...]:
    return tuple(np.exp(th))


def _shape_scale_starts(scale_us: float) -> list[Array]:
    log_s = np.log(scale_us)
    return [np.array([0.0, log_s]), np.array([-0.7, log_s]), np.array([0.7, log_s + 1.0])]


def _exp_isf(t: Array, p: tuple[float, ...]) -> Array:
    (s,) = p
    return -s * np.expm1(-t / s)


EXPONENTIAL = Family(
    name="exponential",
    params=("scale_us",),
    to_natural=_exp_each,
    sf=lambda t, p: stats.expon.sf(t, scale=p[0]),
    integrated_sf=_exp_isf,
    logpdf=lambda t, p: stats.expon.logpdf(t, scale=p[0]),
    ppf=lambda q, p: float(stats.expon.ppf(q, scale=p[0])),
    rvs=lambda n, p, rng: stats.expon.rvs(scale=p[0], size=n, random_state=rng),
    starts=lambda s: [np.array([np.log(s)]), np.array([np.log(s) + 1.5])],
)


def _weibull_isf(t: Array, p: tuple[float, ...]) -> Array:
    c, s = p
    z = (t / s) ** c
    return s * special.gamma(1 + 1 / c) * special.gammainc(1 + 1 / c, z) + t * np.exp(-z)


WEIBULL = Family(
    name="weibull",
    params=("shape", "scale_us"),
    to_natural=_exp_each,
    sf=lambda t, p: stats.weibull_min.sf(t, p[0], scale=p[1]),
    integrated_sf=_weibull_isf,
    logpdf=lambda t, p: stats.weibull_min.logpdf(t, p[0], scale=p[1]),
    ppf=lambda q, p: float(stats.weibull_min.ppf(q, p[0], scale=p[1])),
    rvs=lambda n, p, rng: stats.weibull_min.rvs(p[0], scale=p[1], size=n, random_state=rng),
    starts=_shape_scale_starts,
)


def _lognorm_isf(t: Array, p: tuple[float, ...]) -> Array:
    sigma, s = p
    mu = np.log(s)
    # libm's pow, as Python's float ** takes it: numpy's ** squares (x*x), a last bit
    # apart in 0.1 % of values, and scalar and batched likelihoods must agree to the bit.
    var = np.float_power(sigma, 2)
    with np.errstate(divide="ignore"):
        log_t = np.log(t)
    partial = np.exp(mu + var / 2) * special.ndtr((log_t - mu - var) / sigma)
    return partial + t * special.ndtr((mu - log_t) / sigma)


LOGNORMAL = Family(
    name="lognormal",
    params=("sigma", "scale_us"),
    to_natural=_exp_each,
    sf=lambda t, p: stats.lognorm.sf(t, p[0], scale=p[1]),
    integrated_sf=_lognorm_isf,
    logpdf=lambda t, p: stats.lognorm.logpdf(t, p[0], scale=p[1]),
    ppf=lambda q, p: float(stats.lognorm.ppf(q, p[0], scale=p[1])),
    rvs=lambda n, p, rng: stats.lognorm.rvs(p[0], scale=p[1], size=n, random_state=rng),
    starts=_shape_scale_starts,
)


def _gamma_isf(t: Array, p: tuple[float, ...]) -> Array:
    a, s = p
    return a * s * special.gammainc(a + 1, t / s) + t * special.gammaincc(a, t / s)


GAMMA = Family(
    name="gamma",
    params=("shape", "scale_us"),
    to_natural=_exp_each,
    sf=lambda t, p: stats.gamma.sf(t, p[0], scale=p[1]),
    integrated_sf=_gamma_isf,
    logpdf=lambda t, p: stats.gamma.logpdf(t, p[0], scale=p[1]),
    ppf=lambda q, p: float(stats.gamma.ppf(q, p[0], scale=p[1])),
    rvs=lambda n, p, rng: stats.gamma.rvs(p[0], scale=p[1], size=n, random_state=rng),
    starts=_shape_scale_starts,
)


def _fisk_isf(t: Array, p: tuple[float, ...]) -> Array:
    # ∫₀ᵗ 1/(1+(u/s)^c) du = t·₂F₁(1, 1/c; 1+1/c; −(t/s)^c)
    c, s = p
    return t * special.hyp2f1(1.0, 1.0 / c, 1.0 + 1.0 / c, -((t / s) ** c))


LOGLOGISTIC = Family(
    name="log-logistic",
    params=("shape", "scale_us"),
    to_natural=_exp_each,
    sf=lambda t, p: stats.fisk.sf(t, p[0], scale=p[1]),
    integrated_sf=_fisk_isf,
    logpdf=lambda t, p: stats.fisk.logpdf(t, p[0], scale=p[1]),
    ppf=lambda q, p: float(stats.fisk.ppf(q, p[0], scale=p[1])),
    rvs=lambda n, p, rng: stats.fisk.rvs(p[0], scale=p[1], size=n, random_state=rng),
    starts=_shape_scale_starts,
)


def _lomax_isf(t: Array, p: tuple[float, ...]) -> Array:
    c, s = p
    log1p = np.log1p(t / s)
    # At c = 1 the general form is 0/0; np.where computes both and keeps the limit there.
    with np.errstate(divide="ignore", invalid="ignore"):
        general = s * -np.expm1((1.0 - c) * log1p) / (c - 1.0)
    return np.where(np.abs(c - 1.0) < 1e-9, s * log1p, general)


LOMAX = Family(
    name="lomax",
    params=("shape", "scale_us"),
    to_natural=_exp_each,
    sf=lambda t, p: stats.lomax.sf(t, p[0], scale=p[1]),
    integrated_sf=_lomax_isf,
    logpdf=lambda t, p: stats.lomax.logpdf(t, p[0], scale=p[1]),
    ppf=lambda q, p: float(stats.lomax.ppf(q, p[0], scale=p[1])),
    rvs=lambda n, p, rng: stats.lomax.rvs(p[0], scale=p[1], size=n, random_state=rng),
    starts=_shape_scale_starts,
)


def _mix_natural(th: Array) -> tuple[Array, ...]:
    # The second component is the slower one (scale2 > scale1), so the labels cannot swap.
    s1 = np.exp(th[2])
    return (special.expit(th[0]), np.exp(th[1]), s1, np.exp(th[3]), s1 * np.exp(th[4]))


def _mix(fn: Callable, t: Array, p: tuple[float, ...]) -> Array:
    w, sig1, s1, sig2, s2 = p
    return w * fn(t, (sig1, s1)) + (1 - w) * fn(t, (sig2, s2))


def _mix_logpdf(t: Array, p: tuple[float, ...]) -> Array:
    w, sig1, s1, sig2, s2 = p
    return np.logaddexp(
        np.log(w) + stats.lognorm.logpdf(t, sig1, scale=s1),
        np.log1p(-w) + stats.lognorm.logpdf(t, sig2, scale=s2),
    )


def _mix_ppf(q: float, p: tuple[float, ...]) -> float:
    # The mixture's quantile lies between its components'. Solved for log t: the bracket
    # spans decades when one component is wide, and brentq on t itself then ran out of
    # iterations (issue 29: 2 of 98 simulated lognormal captures crashed `mmlab fit`).
    lo = min(stats.lognorm.ppf(q, p[1], scale=p[2]), stats.lognorm.ppf(q, p[3], scale=p[4]))
    hi = max(stats.lognorm.ppf(q, p[1], scale=p[2]), stats.lognorm.ppf(q, p[3], scale=p[4]))
    if hi <= lo:
        return float(lo)
    u = optimize.brentq(
        lambda x: _mix(LOGNORMAL.sf, np.exp(x), p) - (1 - q), np.log(lo), np.log(hi), maxiter=500
    )
    return float(np.exp(u))


def _mix_rvs(n: int, p: tuple[float, ...], rng: np.random.Generator) -> Array:
    w, sig1, s1, sig2, s2 = p
    first = rng.random(n) < w
    return np.where(
        first,
        stats.lognorm.rvs(sig1, scale=s1, size=n, random_state=rng),
        stats.lognorm.rvs(sig2, scale=s2, size=n, random_state=rng),
    )


MIXTURE = Family(
    name="lognormal-mixture",
    params=("weight1", "sigma1", "scale1_us", "sigma2", "scale2_us"),
    to_natural=_mix_natural,
    sf=lambda t, p: _mix(LOGNORMAL.sf, t, p),
    integrated_sf=lambda t, p: _mix(_lognorm_isf, t, p),
    logpdf=_mix_logpdf,
    ppf=_mix_ppf,
    rvs=_mix_rvs,
    starts=lambda s: [
        np.array([0.0, -0.5, np.log(s) - 1.0, -0.5, 2.0]),
        np.array([1.0, 0.0, np.log(s) - 0.5, -1.0, 3.0]),
    ],
)

FAMILIES: dict[str, Family] = {
    f.name: f for f in (EXPONENTIAL, WEIBULL, LOGNORMAL, GAMMA, LOGLOGISTIC, LOMAX, MIXTURE)
}


def family(name: str) -> Family:
    """The family called ``name``; ValueError listing the known names otherwise."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"unknown family {name!r}; known: {', '.join(FAMILIES)}") from None
