"""SYNTHETIC run-structured latencies for validating ``mmlab compare`` (known truth).

A kernel's row is ``runs`` runs of ``samples`` latencies each. Every run has its own
multiplicative level ``exp(N(0, run_sd))`` (run-to-run variation: placement, page cache,
timing), so samples within a run are correlated, as on real captures. Shapes:

- ``lognormal``: exp(N(0, 1)) · 500;
- ``pareto``: Pareto (type I) with α = 2.5 and scale 400 (heavy tail: finite variance,
  infinite third moment);
- ``mixture``: 95 % lognormal(σ 0.3) around 500 plus 5 % slow stalls ×20 (reclaim);
- ``lognormal-2``: exp(N(0, 2)) · 500 (the audit's very heavy lognormal);
- ``pareto-1.5``: Pareto (type I) with α = 1.5 and scale 400 (infinite variance).

Changes: ``location`` multiplies every sample by (1 + effect); ``scale`` raises the
spread (log-deviations from the median ×(1 + effect)); ``tail`` changes only the slow
component (the mixture's slow share 5 % → 5 %·(1 + effect)), leaving the median alone.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["MMLAB", "SHAPES", "kernel_runs", "rate"]

# How the validation names mmlab's verdict among the methods it compares.
MMLAB = "mmlab verdict"
SHAPES = ("lognormal", "pareto", "mixture", "lognormal-2", "pareto-1.5")
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
    slow = rng.random(size) < tail_share
    return _MEDIAN * rng.lognormal(0.0, 0.3, size) * np.where(slow, 20.0, 1.0)


def kernel_runs(
    rng: np.random.Generator,
    shape: str,
    runs: int,
    samples: int,
    run_sd: float = 0.1,
    change: str = "location",
    effect: float = 0.0,
) -> list[np.ndarray]:
    """One kernel's runs; ``effect`` 0 is the base (an A/A pair is two calls with 0)."""
    tail_share = 0.05 * (1 + effect) if change == "tail" else 0.05
    out = []
    for _ in range(runs):
        x = _body(shape, samples, rng, tail_share) * np.exp(rng.normal(0.0, run_sd))
        if change == "location":
            x = x * (1 + effect)
        elif change == "scale":
            med = np.median(x)
            x = med * (x / med) ** (1 + effect)
        out.append(x)
    return out


def rate(hits: int, n: int) -> dict:
    """A proportion with its Monte-Carlo standard error (at least that of one hit, so a
    rate of 0 is not shown as exact)."""
    return {"rate": hits / n, "mc_se": math.sqrt(max(hits, 1) * (n - min(hits, n - 1)) / n) / n,
            "n": n}  # fmt: skip
