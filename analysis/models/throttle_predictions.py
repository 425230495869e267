"""What ``mmlab model throttle`` computes, in one result: the calibrated cycle model of
:mod:`analysis.models.throttle`, its predictions at every timeout asked for (each also by
models calibrated on one run each) and an optional validation on other runs. Rendered by
:mod:`analysis.report.throttle_model`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from analysis.models.throttle import (
    CycleModel,
    CyclePrediction,
    Observation,
    TimeoutPrediction,
    Validation,
    calibrate,
    per_run,
    predict_cycle,
    predict_timeout,
    validate,
)
from analysis.models.throttle_waits import WaitChoice

__all__ = ["ThrottleReport", "build_report"]


@dataclass(frozen=True)
class ThrottleReport:
    """Everything ``mmlab model throttle`` prints: the runs, the calibrated model, the
    timeout predictions per reason, the cycle predictions and an optional validation."""

    capture: str
    runs: tuple[Observation, ...]
    model: CycleModel
    timeouts: tuple[TimeoutPrediction, ...]
    cycles: tuple[CyclePrediction, ...]
    validation: Validation | None = None
    validation_capture: str | None = None
    waits: tuple[WaitChoice, ...] = ()

    def wait_choice(self, reason: str) -> WaitChoice:
        """Which latent wait ``reason`` used (Kaplan–Meier when no choice was recorded)."""
        known = {c.reason: c for c in self.waits}
        return known.get(reason, WaitChoice(reason, "empirical", None, "the cycle model's own"))


def build_report(
    capture: str,
    runs: Sequence[Observation],
    model: CycleModel,
    taus_us: Mapping[str, Sequence[float]],
    targets: Sequence[Observation] | None = None,
    target_capture: str | None = None,
    *,
    waits: Sequence[WaitChoice] = (),
    seed: int = 0,
) -> ThrottleReport:
    """Predictions at every timeout in ``taus_us`` (reason → timeouts), one reason at a
    time, the cycle at the observed timeouts first; each cycle prediction also by models
    calibrated on one run each; the validation on ``targets`` when given. ``waits``
    records which latent wait each reason of ``model`` carries (:mod:`throttle_waits`)."""
    timeouts: list[TimeoutPrediction] = []
    cycles = [predict_cycle(model, seed=seed)]
    for r in model.reasons:
        reps = [m.reason(r.reason).wait for m in model.replicates]
        for tau in taus_us.get(r.reason, ()):
            timeouts.append(predict_timeout(r.wait, tau, replicates=reps))
            if tau != r.timeout_us:
                cycles.append(predict_cycle(model, {r.reason: tau}, seed=seed))
    singles = [calibrate([run]) for run in runs] if len(runs) > 1 else []
    return ThrottleReport(
        capture=capture,
        runs=tuple(runs),
        model=model,
        timeouts=tuple(timeouts),
        cycles=tuple(per_run(c, singles, seed=seed) for c in cycles),
        validation=validate(model, targets, seed=seed) if targets else None,
        validation_capture=target_capture if targets else None,
        waits=tuple(waits),
    )
