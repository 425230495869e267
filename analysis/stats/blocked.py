"""Effects of a factor's levels in a randomised complete block design, one value per run.

``mmlab experiment`` runs every setting once per block, in a shuffled order (blocks are
time: the host's drift, a session's machine). The effect of each level against the
reference is the level's coefficient in an ordinary least squares fit of

    y = reference mean + level effect + block effect (+ slope x covariate) + error

with y the log of the run's value (a ratio, reported as a % change) when every value is
positive, else the value itself (a difference). Blocks absorb what drifts between blocks;
the error's sd is what is left between runs of one block. Each effect has its t interval,
its two-sided p, the Benjamini–Hochberg q over the levels of the family, and the minimum
detectable effect: the smallest change this many runs would find with ``power`` at the
level's standard error (a design figure from the residual sd, not observed power).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.multitest import multipletests

__all__ = ["BlockedEffects", "LevelEffect", "NoVariation", "blocked_effects", "detectable_reach"]


@dataclass(frozen=True)
class LevelEffect:
    """One level against the reference. On the log scale ``estimate``, ``ci`` and ``mde``
    are relative changes (0.2 = +20 %); on the raw scale, differences in the value's unit."""

    level: str
    runs: int
    reference_runs: int
    estimate: float
    ci: tuple[float, float]
    p: float
    q: float
    mde: float
    # The verdict: BH q below the family's alpha and an interval that excludes no change.
    changed: bool

    @property
    def excludes_no_change(self) -> bool:
        """Whether the interval lies clear of no change (0), whatever its q."""
        return _excludes_zero(self.ci)


def _excludes_zero(ci: tuple[float, float]) -> bool:
    return not ci[0] <= 0.0 <= ci[1]


@dataclass(frozen=True)
class BlockedEffects:
    """Every level of a family against ``reference``; ``scale`` is ``log`` or ``raw``."""

    reference: str
    scale: str
    reference_value: float  # geometric mean (log) or mean (raw) of the reference runs
    residual_sd: float
    df: int
    blocks: int
    runs: int
    covariate: str | None
    covariate_slope: tuple[float, float] | None  # estimate and its standard error
    levels: tuple[LevelEffect, ...]
    alpha: float
    power: float


class NoVariation(ValueError):
    """Every run has the same ``value``: nothing varies, so no level can differ (e.g. no
    reclaimer slept in ``reclaim_throttle()`` at any timeout)."""

    def __init__(self, value: float, runs: int) -> None:
        # The arguments are the exception's args, so it pickles (Dask workers, xdist).
        super().__init__(value, runs)
        self.value = value
        self.runs = runs

    def __str__(self) -> str:
        return (
            f"all {self.runs} runs have the same value, {self.value:g}: nothing varies, so no "
            "level can differ"
        )


def detectable_reach(df: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """Standard errors between no change and the minimum detectable effect: a two-sided t
    test at ``alpha`` with ``df`` residual degrees of freedom finds an effect this many
    standard errors large with probability ``power`` (t_{1-alpha/2} + t_{power})."""
    return float(stats.t.ppf(1 - alpha / 2, df) + stats.t.ppf(power, df))


def _design(frame: pl.DataFrame, reference: str, covariate: str | None):
    levels = [x for x in frame["level"].unique(maintain_order=True).to_list() if x != reference]
    blocks = sorted(frame["block"].unique().to_list())
    columns = [np.ones(len(frame))]
    columns += [(frame["level"] == x).to_numpy().astype(float) for x in levels]
    columns += [(frame["block"] == b).to_numpy().astype(float) for b in blocks[1:]]
    if covariate is not None:
        c = frame[covariate].to_numpy().astype(float)
        columns.append(c - c.mean())
    return np.column_stack(columns), levels, blocks


def blocked_effects(
    frame: pl.DataFrame,
    reference: str,
    *,
    covariate: str | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> BlockedEffects:
    """:class:`BlockedEffects` of ``frame`` (columns ``level``, ``block``, ``value``, and
    ``covariate`` if given; one row per run, rows with a null value left out first).
    ValueError when the reference or the residual degrees of freedom are missing;
    :class:`NoVariation` when every run has the same value (an effect of 0 with an interval
    of no width would claim a precision no run gave)."""
    frame = frame.drop_nulls(["value", *([covariate] if covariate else [])])
    if reference not in frame["level"].to_list():
        raise ValueError(f"no run of the reference level {reference!r} has a value")
    if frame["value"].n_unique() == 1:
        raise NoVariation(float(frame["value"][0]), len(frame))
    scale = "log" if (frame["value"] > 0).all() else "raw"
    y = frame["value"].to_numpy().astype(float)
    y = np.log(y) if scale == "log" else y
    x, levels, blocks = _design(frame, reference, covariate)
    fit = sm.OLS(y, x).fit()
    df = int(fit.df_resid)
    if df < 1:
        raise ValueError(f"{len(frame)} runs leave no residual degrees of freedom")
    t = stats.t.ppf(1 - alpha / 2, df)
    reach = detectable_reach(df, alpha, power)
    ps = [float(fit.pvalues[1 + i]) for i in range(len(levels))]
    qs = multipletests(ps, method="fdr_bh")[1] if ps else []
    back = (lambda v: math.expm1(v)) if scale == "log" else float
    found = []
    counts = frame["level"].value_counts()
    n = dict(zip(counts["level"], counts["count"], strict=True))
    for i, level in enumerate(levels):
        b, se = float(fit.params[1 + i]), float(fit.bse[1 + i])
        ci = (back(b - t * se), back(b + t * se))
        found.append(LevelEffect(
            level, n[level], n[reference], back(b), ci, ps[i], float(qs[i]), back(reach * se),
            bool(qs[i] < alpha and _excludes_zero(ci)),
        ))  # fmt: skip
    ref = y[(frame["level"] == reference).to_numpy()]
    slope = (float(fit.params[-1]), float(fit.bse[-1])) if covariate else None
    return BlockedEffects(
        reference, scale, float(np.exp(ref.mean()) if scale == "log" else ref.mean()),
        float(math.sqrt(fit.scale)), df, len(blocks), len(frame), covariate, slope,
        tuple(found), alpha, power,
    )  # fmt: skip
