"""A what-if's out-of-sample standing in words: one plain sentence per quantity from its
``Standing`` (:mod:`analysis.models.run_scoring`, through the studies), the same in the
text and the JSON of ``mmlab model throttle`` and ``mmlab model shrinker`` and in
notebook 06."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from analysis.report.units import PLAIN, up_down

if TYPE_CHECKING:
    from analysis.study.shrinker_model import ShrinkerScore
    from analysis.study.throttle_model import QuantityScore, Standing

__all__ = [
    "error_text",
    "standing_json",
    "standing_lines",
    "standing_sentence",
    "undetected_lines",
]


def error_text(value: float | None, unit: str | None) -> str:
    """A validation error as the tables print it: percentage points (``pp``), a relative
    error in %, or a count with its unit."""
    if unit == "pp":
        return f"{value:.1f}pp"
    if unit == "relative":
        return f"{value:.0%}"
    return f"{PLAIN.text(value)} {unit}"


def standing_sentence(standing: Standing, setting: str) -> str:
    """One sentence: whether the model's prediction beat no change out of sample, on how
    many validation captures that ran another ``setting`` (timeout, divisor), with the
    mean errors behind it."""
    if standing.captures == 0:
        return (
            f"Not validated out of sample: no capture that ran another {setting} was given "
            "to --validate."
        )
    unit = standing.error_unit
    errors = f"error {error_text(standing.model_error, unit)} against no change's " + (
        error_text(standing.no_change_error, unit)
    )
    if standing.linear_error is not None:
        errors += f" and linear's {error_text(standing.linear_error, unit)}"
    how = "beat" if standing.stands else "did not beat"
    return (
        f"Out of sample the model {how} no change (won {standing.won} of "
        f"{standing.captures} validation captures at another {setting}; {errors})."
    )


def standing_json(standing: Standing, setting: str) -> dict:
    """The standing for :func:`~analysis.report.json_output.dumps`, with its sentence."""
    return {
        "quantity": standing.quantity,
        "verdict": standing.verdict,
        "validation_captures": standing.captures,
        "won": standing.won,
        "error_unit": standing.error_unit,
        "model_error": standing.model_error,
        "no_change_error": standing.no_change_error,
        "linear_error": standing.linear_error,
        "sentence": standing_sentence(standing, setting),
    }


def standing_lines(
    standings: Sequence[Standing], labels: Mapping[str, str], setting: str
) -> list[str]:
    """``  label: sentence`` per standing (``labels``: quantity → its name), unwrapped
    (:func:`analysis.report.text.fit` wraps them)."""
    return [f"  {labels[s.quantity]}: {standing_sentence(s, setting)}" for s in standings]


def undetected_lines(
    rows: Sequence[QuantityScore | ShrinkerScore],
    labels: Mapping[str, tuple[str, ...]],
    level: float,
) -> list[str]:
    """A line for each of one capture's quantities whose change from the calibration runs
    was not shown (p ≥ ``level`` or untestable), with the smallest change those runs
    detect: a null stated with its size. ``labels``: the table's label tuples (label
    first)."""
    return [
        f"  {labels[s.quantity][0]:<12} no change shown at p < {level:g}; these runs detect "
        f"{up_down(s.change_mde)}"
        for s in rows
        if (s.change_p is None or s.change_p >= level) and s.change_mde is not None
    ]
