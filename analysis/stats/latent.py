"""The latent wait of a throttled reclaimer: the contract between the fits and the models.

A task throttled in ``reclaim_throttle()`` (mm/vmscan.c) sleeps until its wake condition
(writeback completes, a page is isolated back, progress is made) or until its timeout.
The wait it *would* have had with no timeout is the latent wait T. A fitted distribution
(:mod:`analysis.stats.fit`) or a nonparametric estimate provides T; the timeout model
(:mod:`analysis.models.throttle`) asks it what another timeout would do. Times are in
microseconds throughout.

T has an atom at zero (``zero_mass``: woken before the first tick) and may never end
(``cure_fraction``: sleepers nothing wakes early, who always hit the timeout); in between
it is continuous. ``support_limit_us`` is the longest wait the data can speak for (a
nonparametric estimate says nothing beyond its largest observation or the timeout it
was censored at); predictions beyond it are extrapolations and say so.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["LatentWait"]


@runtime_checkable
class LatentWait(Protocol):
    """What a latent-wait estimate answers, whichever family or estimator made it."""

    reason: str
    zero_mass: float
    cure_fraction: float
    support_limit_us: float

    def survival(self, t_us: np.ndarray) -> np.ndarray:
        """P(T > t) for each t (µs), zero mass and cure fraction included."""
        ...

    def timed_out(self, tau_us: float) -> float:
        """P(T ≥ tau): the share of sleepers a timeout of tau ends — what a trace counts as
        timed out (``usect_delayed >= usec_timeout``), so prediction and observation count
        the same thing. S(tau) for a continuous wait; a step estimate includes its step at
        tau (a sleeper recorded at exactly tau is one the timeout ends)."""
        ...

    def restricted_mean_us(self, tau_us: float) -> float:
        """E[min(T, tau)] in µs: the mean stall under a timeout of tau."""
        ...

    def quantile_us(self, p: float) -> float:
        """Smallest t with P(T ≤ t) ≥ p, in µs; ``inf`` when p falls in the cure fraction."""
        ...

    def draws(self, n: int, seed: int) -> np.ndarray:
        """n independent draws of T in µs (``inf`` for cured sleepers), reproducible by seed."""
        ...
