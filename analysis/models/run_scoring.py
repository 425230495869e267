"""Run-level scoring shared by the model validations (``docs/model-validation.md``
"Throttle timeout", "Shrinker deferral"): a prediction made once per calibration run is
turned into a 95 % prediction interval for one new run and compared run by run with a
capture that ran the setting.

The n one-run predictions are taken as a sample of what one run gives: their mean is the
prediction and mean ± t(n−1, 0.975)·sd·√(1 + 1/n) the interval for one new run (normal
runs, independent), clipped to the quantity's range. Whether a knob changed a quantity at
all is :func:`analysis.stats.significance.permutation_p` over runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

from analysis.stats.significance import permutation_p

__all__ = ["LEVEL", "change_p", "half_width", "inside", "prediction_interval"]

LEVEL = 0.95


def prediction_interval(
    per_run: Sequence[float], *, upper: float = math.inf
) -> tuple[float, tuple[float, float] | None]:
    """Mean of ``per_run`` and its interval for one new run in [0, ``upper``] (None below
    two runs: no spread to size it)."""
    values = np.asarray(per_run, dtype=float)
    centre = float(values.mean())
    if values.size < 2:
        return centre, None
    half = half_width(values)
    return centre, (float(max(centre - half, 0.0)), float(min(centre + half, upper)))


def half_width(per_run: Sequence[float]) -> float:
    """Half-width t(n−1, 0.975)·sd·√(1 + 1/n) of the interval for one new run (n ≥ 2)."""
    values = np.asarray(per_run, dtype=float)
    n = values.size
    return float(
        stats.t.ppf(0.5 + LEVEL / 2, n - 1) * np.std(values, ddof=1) * math.sqrt(1 + 1 / n)
    )


def inside(observed: Sequence[float], interval: tuple[float, float] | None) -> int:
    """How many observed runs lie in ``interval`` (0 without one)."""
    if interval is None:
        return 0
    return int(sum(interval[0] <= v <= interval[1] for v in observed))


def change_p(
    calibration: Sequence[float], observed: Sequence[float], seed: int = 0
) -> float | None:
    """Permutation p of the difference of run means (None below two runs a side)."""
    if len(calibration) < 2 or len(observed) < 2:
        return None
    return permutation_p(np.asarray(calibration, float), np.asarray(observed, float), seed)[0]
