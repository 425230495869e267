"""The out-of-sample validation tables as ``mmlab sweep`` models: one grid point is one
(calibration capture, validation capture) pair, one row holds every quantity's scored
prediction (``docs/model-validation.md`` "Throttle timeout", "Shrinker deferral").

``throttle-validation`` (:func:`throttle_point`): parameters ``calibration`` and ``target``
(capture directories), ``reason`` (default the calibration's only throttle reason),
``wait`` (the pooled model's latent wait, as ``mmlab model throttle --wait``; default
auto), ``bootstrap`` (replicates of the pooled model, default 0) and ``seed``: the rows of
the recipe of :mod:`analysis.models.throttle_validation`, as ``mmlab model throttle
CALIBRATION --validate TARGET`` prints them.

``shrinker-validation`` (:func:`shrinker_point`): ``calibration``, ``target``, ``seed``: the
rows of the recipe of :mod:`analysis.models.shrinker_validation`, each capture's divisor
read from its ``vm.json`` knob check, as ``mmlab model shrinker CALIBRATION --validate
TARGET``.

Columns are ``<quantity>_<field>``, the unit in the name: ``predicted``, ``pi_low`` and
``pi_high`` (the run-level 95 % prediction interval), ``observed_mean``, ``observed_sd``,
``runs``, ``inside`` (runs in the interval), ``model_error``, ``no_change_error`` (and for
the throttle ``linear_error``), each with the quantity's error unit (``_pp``: percentage
points; ``_rel``: relative; ``_objects``), and ``change_p`` (permutation over runs, did the
knob change it). A field a quantity does not have (no interval below two runs, no
Kaplan–Meier prediction at or below the calibration's timeout) is NaN.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

import numpy as np

from analysis.models import shrinker_validation, throttle_validation
from analysis.models.shrinker_validation import DivisorCapture, ShrinkerScore
from analysis.models.throttle import Observation, observe
from analysis.models.throttle_validation import SHARES, Calibration, QuantityScore

__all__ = [
    "SHRINKER_PARAMETERS",
    "THROTTLE_PARAMETERS",
    "shrinker_point",
    "throttle_point",
]

THROTTLE_PARAMETERS = ("calibration", "target", "reason", "wait", "bootstrap", "seed")
SHRINKER_PARAMETERS = ("calibration", "target", "seed")


def _check(params: Mapping[str, object], accepted: tuple[str, ...], model: str) -> None:
    unknown = set(params) - set(accepted)
    if unknown or not {"calibration", "target"} <= set(params):
        raise ValueError(
            f"{model} parameters are {', '.join(accepted)} (calibration and target "
            f"required); got {', '.join(sorted(params))}"
        )


@lru_cache(maxsize=16)
def _observed(capture: str) -> tuple[Observation, ...]:
    return tuple(observe(Path(capture)))


@lru_cache(maxsize=8)
def _calibration(capture: str, bootstrap: int, seed: int, wait: str) -> Calibration:
    return throttle_validation.calibration(
        capture, _observed(capture), wait=wait, bootstrap=bootstrap, seed=seed
    )


def _interval(interval: tuple[float, float] | None) -> tuple[float, float]:
    return (math.nan, math.nan) if interval is None else interval


def _spread(values: tuple[float, ...]) -> dict[str, float]:
    a = np.asarray(values, dtype=float)
    return {
        "observed_mean": float(a.mean()),
        "observed_sd": float(a.std(ddof=1)) if a.size >= 2 else math.nan,
        "runs": float(a.size),
    }


def _opt(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _scored(s: QuantityScore | ShrinkerScore, unit: str) -> dict[str, float]:
    """The columns every validated quantity has: prediction and its run-level PI, the
    observed runs, how many fell inside, and the model's and no change's errors."""
    low, high = _interval(s.interval)
    return {
        "predicted": s.predicted,
        "pi_low": low,
        "pi_high": high,
        **_spread(s.observed),
        "inside": float(s.inside),
        f"model_error_{unit}": s.model_error,
        "no_change": s.no_change,
        f"no_change_error_{unit}": s.no_change_error,
    }


def throttle_point(params: Mapping[str, object]) -> dict[str, float]:
    """One (calibration, target) pair of the throttle-timeout validation, flattened."""
    _check(params, THROTTLE_PARAMETERS, "throttle-validation")
    seed = int(params.get("seed", 0))
    calibrated = _calibration(
        str(params["calibration"]),
        int(params.get("bootstrap", 0)),
        seed,
        str(params.get("wait", "auto")),
    )
    reasons = calibrated.model.reasons
    if "reason" in params:
        reason = str(params["reason"])
    elif len(reasons) == 1:
        reason = reasons[0].reason
    else:
        raise ValueError("the calibration has several throttle reasons: name one with 'reason'")
    target = str(params["target"])
    scores = throttle_validation.validate(
        calibrated, {target: _observed(target)}, [reason], seed=seed
    )
    first = scores[0]
    row = {
        "tau_us": first.tau_us,
        "calibration_tau_us": first.calibration_tau_us,
        "extrapolated": float(first.extrapolated),
    }
    for s in scores:
        unit = "pp" if s.quantity in SHARES else "rel"
        fields = {
            **_scored(s, unit),
            "linear": s.linear,
            f"linear_error_{unit}": s.linear_error,
            "change_p": _opt(s.change_p),
            "kaplan_meier": _opt(s.kaplan_meier),
            f"kaplan_meier_error_{unit}": _opt(s.kaplan_meier_error),
            "bound_low": _interval(s.bounds)[0],
            "bound_high": _interval(s.bounds)[1],
            f"given_writeback_error_{unit}": _opt(s.given_writeback_error),
            "given_writeback_inside": _opt(s.given_writeback_inside),
        }
        row |= {f"{s.quantity}_{k}": float(v) for k, v in fields.items()}
    return row


throttle_point.parameters = THROTTLE_PARAMETERS
throttle_point.path_parameters = ("calibration", "target")


@lru_cache(maxsize=16)
def _divisor_capture(capture: str) -> DivisorCapture:
    return shrinker_validation.divisor_capture(Path(capture))


def shrinker_point(params: Mapping[str, object]) -> dict[str, float]:
    """One (calibration, target) pair of the shrinker-deferral validation, flattened."""
    _check(params, SHRINKER_PARAMETERS, "shrinker-validation")
    scores = shrinker_validation.validate(
        _divisor_capture(str(params["calibration"])),
        [_divisor_capture(str(params["target"]))],
        seed=int(params.get("seed", 0)),
    )
    row: dict[str, float] = {}
    for s in scores:
        unit = "pp" if s.quantity == "kswapd_share" else "objects"
        d_low, d_high = _interval(s.depleted_interval)
        fields = {
            **_scored(s, unit),
            "change_p": _opt(s.change_p),
            "depleted": _opt(s.depleted),
            "depleted_pi_low": d_low,
            "depleted_pi_high": d_high,
            "depleted_inside": _opt(s.depleted_inside),
            f"depleted_error_{unit}": _opt(s.depleted_error),
        }
        row |= {f"{s.quantity}_{k}": float(v) for k, v in fields.items()}
    return row


shrinker_point.parameters = SHRINKER_PARAMETERS
shrinker_point.path_parameters = ("calibration", "target")
