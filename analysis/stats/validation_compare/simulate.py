"""SYNTHETIC run-structured latencies for validating ``mmlab compare`` (known truth).

A kernel's row is ``runs`` runs of ``samples`` latencies each. Every run has its own
multiplicative level ``exp(N(0, run_sd))`` (run-to-run variation: placement, page cache,
timing), so samples within a run are correlated, as on real captures. Shapes:

- ``lognormal``: exp(N(0, 1)) · 500;
- ``pareto``: Pareto (type I) with α = 2.5 and scale 400 (heavy tail: finite variance,
  infinite third moment);
- ``mixture``: 95 % lognormal(σ 0.3) around 500 plus 5 % slow stalls ×20 (reclaim);
- ``lognormal-2``: exp(N(0, 2)) · 500 (the audit's very heavy lognormal);
- ``pareto-1.5``: Pareto (type I) with α = 1.5 and scale 400 (infinite variance);
- ``zero-heavy``: lognormal σ 1 around 500 where each sample is exactly 0 with the run's
  own probability, logit-normal around :data:`ZERO_SHARE` (25 %, the threshold of the
  zero-share test; sd 0.3 on the logit), as throttle delays woken in the first jiffy.

Run effects (``run_effect``), each run's multiplicative level:

- ``lognormal``: exp(N(0, run_sd));
- ``outlier``: exp(N(0, run_sd)), and one run of every kernel, at random, ×:data:`OUTLIER`
  (a warm-up run far from the rest; each kernel of a row has one, so it cancels in the
  change while it widens both kernels' spread);
- ``bimodal``: exp(N(0, run_sd)) ×:data:`BIMODAL` with probability ½ (two regimes a run
  falls into, e.g. placement on one NUMA node or the other).

Changes: ``location`` multiplies every sample by (1 + effect); ``scale`` raises the
spread (log-deviations from the median ×(1 + effect)); ``tail`` changes only the slow
component (the mixture's slow share 5 % → 5 %·(1 + effect)), leaving the median alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = [
    "BIMODAL",
    "MMLAB",
    "OUTLIER",
    "RUN_EFFECTS",
    "SHAPES",
    "ZERO_SHARE",
    "kernel_runs",
    "rate",
    "ratio",
    "run_levels",
    "runs_at",
]

# How the validation names mmlab's verdict among the methods it compares.
MMLAB = "mmlab verdict"
SHAPES = ("lognormal", "pareto", "mixture", "lognormal-2", "pareto-1.5", "zero-heavy")
RUN_EFFECTS = ("lognormal", "outlier", "bimodal")
OUTLIER = 2.0
BIMODAL = 1.5
ZERO_SHARE = 0.25
_MEDIAN = 500.0


def _body(shape: str, size: int, rng, tail_share: float) -> np.ndarray:
    if shape == "lognormal":
        return _MEDIAN * rng.lognormal(0.0, 1.0, size)
    if shape == "pareto":
        return 400.0 * (1 + rng.pareto(2.5, size))
    if shape == "lognormal-2":
        return _MEDIAN * rng.lognormal(0.0, 2.0, size)
    if shape == "pareto-1.5":
        return 400.0 * (1 + rng.pareto(1.5, size))
    if shape == "zero-heavy":
        logit = math.log(ZERO_SHARE / (1 - ZERO_SHARE)) + rng.normal(0.0, 0.3)
        zero = rng.random(size) < 1 / (1 + math.exp(-logit))
        return np.where(zero, 0.0, _MEDIAN * rng.lognormal(0.0, 1.0, size))
    slow = rng.random(size) < tail_share
    return _MEDIAN * rng.lognormal(0.0, 0.3, size) * np.where(slow, 20.0, 1.0)


def run_levels(
    rng: np.random.Generator, runs: int, run_sd: float = 0.1, run_effect: str = "lognormal"
) -> tuple[np.ndarray, int | None]:
    """Each run's multiplicative level (``run_effect``, see above), and the position of the
    outlying run (run effect ``outlier``; None otherwise)."""
    levels = np.exp(rng.normal(0.0, run_sd, runs))
    far = None
    if run_effect == "outlier":
        far = int(rng.integers(runs))
        levels[far] *= OUTLIER
    elif run_effect == "bimodal":
        levels *= np.where(rng.random(runs) < 0.5, BIMODAL, 1.0)
    elif run_effect != "lognormal":
        raise ValueError(f"unknown run effect {run_effect!r}; known: {', '.join(RUN_EFFECTS)}")
    return levels, far


def runs_at(
    rng: np.random.Generator,
    shape: str,
    levels: np.ndarray,
    samples: int,
    change: str = "location",
    effect: float = 0.0,
) -> list[np.ndarray]:
    """One kernel's runs of ``samples`` each, run i at ``levels[i]``, changed by ``effect``."""
    tail_share = 0.05 * (1 + effect) if change == "tail" else 0.05
    out = []
    for level in levels:
        x = _body(shape, samples, rng, tail_share) * level
        if change == "location":
            x = x * (1 + effect)
        elif change == "scale":
            med = np.median(x)
            x = med * (x / med) ** (1 + effect)
        out.append(x)
    return out


def kernel_runs(
    rng: np.random.Generator,
    shape: str,
    runs: int,
    samples: int,
    run_sd: float = 0.1,
    change: str = "location",
    effect: float = 0.0,
    run_effect: str = "lognormal",
) -> list[np.ndarray]:
    """One kernel's runs; ``effect`` 0 is the base (an A/A pair is two calls with 0)."""
    levels, _ = run_levels(rng, runs, run_sd, run_effect)
    return runs_at(rng, shape, levels, samples, change, effect)


def rate(hits: int, n: int) -> dict:
    """A proportion with its Monte-Carlo standard error (at least that of one hit, so a
    rate of 0 is not shown as exact); null with nothing counted."""
    if not n:
        return {"rate": None, "mc_se": None, "n": 0}
    return {"rate": hits / n, "mc_se": math.sqrt(max(hits, 1) * (n - min(hits, n - 1)) / n) / n,
            "n": n}  # fmt: skip


def ratio(hits: Sequence[int], oracle: Sequence[int]) -> dict:
    """Power of a method over the oracle's on the same tables, with the Monte-Carlo se of
    a ratio estimator (paired: sd of hits − ratio · oracle hits over √n, / oracle rate);
    null when the oracle found nothing."""
    h, o = np.asarray(hits, float), np.asarray(oracle, float)
    if not o.sum():
        return {"rate": None, "mc_se": None, "n": len(h)}
    r = h.sum() / o.sum()
    se = float(np.std(h - r * o, ddof=1) / math.sqrt(len(h)) / o.mean()) if len(h) > 1 else math.nan
    return {"rate": float(r), "mc_se": se, "n": len(h)}
