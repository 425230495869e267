"""Run-level scoring shared by the model validations (``docs/model-validation.md``
"Throttle timeout", "Shrinker deferral"): a prediction made once per calibration run is
turned into a 95 % prediction interval for one new run and compared run by run with a
capture that ran the setting.

The n one-run predictions are taken as a sample of what one run gives: their mean is the
prediction and mean ± t(n−1, 0.975)·sd·√(1 + 1/n) the interval for one new run (normal
runs, independent), clipped to the quantity's range. Whether a knob changed a quantity at
all is :func:`analysis.stats.significance.permutation_p` over runs.

A what-if of a quantity is only as good as the model's :class:`Standing` for it: how its
errors compared with the baselines' on captures that ran another setting.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from analysis.stats.significance import permutation_p, run_mde

__all__ = [
    "BEAT_NO_CHANGE",
    "CHANGE_LEVEL",
    "DID_NOT_BEAT",
    "LEVEL",
    "NOT_VALIDATED",
    "Standing",
    "change_mde",
    "change_p",
    "half_width",
    "inside",
    "prediction_interval",
    "standing",
]

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


# The level at which a validation capture's change from the calibration is tested, and
# its smallest detectable change computed.
CHANGE_LEVEL = 0.05


def change_mde(calibration: Sequence[float], observed: Sequence[float]) -> float | None:
    """The smallest relative change of the run mean these runs detect (80 % power, Welch t
    on the logs at :data:`CHANGE_LEVEL`): the size of a null :func:`change_p` states."""
    return run_mde(calibration, observed, CHANGE_LEVEL)


BEAT_NO_CHANGE, DID_NOT_BEAT, NOT_VALIDATED = (
    "beat no change",
    "did not beat no change",
    "not validated",
)


@dataclass(frozen=True)
class Standing:
    """The out-of-sample standing of a model's prediction of ``quantity``: over the
    ``captures`` validation captures that ran another setting than the calibration (an
    A/A capture tests the noise, not the model's response to the knob), the mean over
    captures of each capture's mean per-run error of the model, of no change and of the
    linear baseline (``error_unit``; None where the model has no linear baseline or no
    capture), and in how many captures the model's error was below no change's (``won``).
    A what-if of the quantity stands only when the model beat no change in every one."""

    quantity: str
    captures: int = 0
    won: int = 0
    error_unit: str | None = None
    model_error: float | None = None
    no_change_error: float | None = None
    linear_error: float | None = None

    @property
    def verdict(self) -> str:
        """:data:`NOT_VALIDATED`, :data:`DID_NOT_BEAT` (lost or tied in any capture) or
        :data:`BEAT_NO_CHANGE`."""
        if self.captures == 0:
            return NOT_VALIDATED
        return BEAT_NO_CHANGE if self.won == self.captures else DID_NOT_BEAT

    @property
    def stands(self) -> bool:
        return self.verdict == BEAT_NO_CHANGE


def standing(
    quantity: str, error_unit: str, errors: Sequence[tuple[float, float, float | None]]
) -> Standing:
    """The :class:`Standing` of ``quantity`` from each validation capture's (model,
    no change, linear or None) mean per-run errors, captures at another setting only."""
    if not errors:
        return Standing(quantity)
    model, none, linear = zip(*errors, strict=True)
    return Standing(
        quantity=quantity,
        captures=len(errors),
        won=sum(m < n for m, n in zip(model, none, strict=True)),
        error_unit=error_unit,
        model_error=float(np.mean(model)),
        no_change_error=float(np.mean(none)),
        linear_error=None if None in linear else float(np.mean(linear)),
    )
