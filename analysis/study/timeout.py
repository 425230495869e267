"""What another ``reclaim_throttle()`` timeout would have done to the base run's sleepers,
computed once per study (the paper's "Timeout model" section renders it).

The cycle model of :mod:`analysis.models.throttle` is calibrated on every trace of the base
run, each reason's latent wait taken as ``mmlab model throttle --wait auto`` takes it
(:mod:`analysis.models.throttle_waits`: the censored fit where identified, else
Kaplan–Meier), and predicts P(timeout), the mean stall E[min(T, τ)], velocity and
efficiency at a ladder of timeouts τ, with bootstrap intervals and the spread of models
calibrated on one iteration each; it is then scored on the other run in each direction.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.ingest.mmtests import Run
from analysis.models import throttle
from analysis.models.throttle_predictions import ThrottleReport, build_report
from analysis.models.throttle_waits import WaitChoice, fit_reasons, with_waits

__all__ = ["BOOTSTRAP", "LADDER", "TimeoutModel", "timeout_model"]

# Bootstrap models (cycles resampled, fitted waits refitted): few, for `make`'s budget; the
# per-iteration models give the run-level spread beside them.
BOOTSTRAP = 20
# Timeouts as multiples of the observed one (HZ/10 for WRITEBACK: 1 to 20 jiffies at
# HZ 250, then twice the observed timeout, which is extrapolation).
LADDER = (0.04, 0.08, 0.12, 0.2, 0.3, 0.5, 1.0, 2.0)


@dataclass(frozen=True)
class TimeoutModel:
    """The base run's model report (predictions at every ``LADDER`` timeout of each reason,
    validated on the new run) and the model calibrated on the new run, validated on the
    base run (``reverse``)."""

    base_run: str
    new_run: str
    report: ThrottleReport
    reverse: throttle.Validation
    choices: tuple[WaitChoice, ...]


def timeout_model(base: Run, new: Run, *, bootstrap: int = BOOTSTRAP) -> TimeoutModel:
    """Calibrate on ``base`` (waits chosen as ``--wait auto``), predict along the ladder,
    validate on ``new``; and the reverse validation, calibrated on ``new``."""
    runs = throttle.observe(base.path)
    targets = throttle.observe(new.path)
    calibrated = throttle.calibrate(runs, bootstrap=bootstrap)
    model, choices = with_waits(calibrated, fit_reasons(runs), "auto")
    taus = {r.reason: [f * r.timeout_us for f in LADDER] for r in model.reasons}
    report = build_report(str(base.path), runs, model, taus, targets, str(new.path), waits=choices)
    reverse = throttle.validate(throttle.calibrate(targets), runs)
    return TimeoutModel(base.name, new.name, report, reverse, choices)
