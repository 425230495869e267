"""What ``mmlab model throttle`` computes, in one result: the calibrated cycle model of
:mod:`analysis.models.throttle`, its predictions at every timeout asked for (each also by
models calibrated on one run each), the out-of-sample validation on other captures
(:mod:`analysis.models.throttle_validation`), the model's standing per quantity from it,
and the runs per timeout an experiment needs to see the largest predicted change, given
only where the model beat no change out of sample. Rendered by
:mod:`analysis.report.throttle_model`, which takes the types it prints from here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from analysis.errors import InputError
from analysis.models.run_scoring import CHANGE_LEVEL, Standing
from analysis.models.throttle import (
    CycleModel,
    CyclePrediction,
    Estimate,
    Observation,
    TimeoutPrediction,
    calibrate,
    observe,
    per_run,
    predict_cycle,
    predict_timeout,
)
from analysis.models.throttle_validation import (
    Calibration,
    QuantityScore,
    calibration,
    standings,
    validate,
)
from analysis.models.throttle_waits import WaitChoice
from analysis.outputs import Stages
from analysis.stats.describe import mean_sd
from analysis.stats.significance import design_runs

__all__ = [
    "CHANGE_LEVEL",
    "DESIGN_LEVEL",
    "LADDER",
    "Design",
    "Estimate",
    "ModelRequest",
    "QuantityScore",
    "Standing",
    "ThrottleReport",
    "WaitChoice",
    "build_report",
    "designs",
    "model_throttle",
    "timeouts_asked",
]

# Multiples of each reason's observed timeout predicted when no timeout is asked for.
LADDER = (0.1, 0.25, 0.5, 1.0, 2.0)
# The level a design is sized at (one quantity, one test: no family to split it over).
DESIGN_LEVEL = 0.05


@dataclass(frozen=True)
class Design:
    """The largest change of ``quantity`` (``velocity_pps`` or ``efficiency``) the cycle
    predictions show from the observed timeout, at ``taus_us``: relative ``change`` of the
    pooled prediction, the range of the same change by each run's own model
    (``per_run``, None with one run), the sd of the observed runs (``run_sd``) and of
    their logs (``log_sd``, None with one run), the model's out-of-sample ``standing``
    for the quantity, and the runs per timeout an experiment needs to see it by
    :func:`~analysis.stats.significance.design_runs` at :data:`DESIGN_LEVEL` (None
    without a change, a spread or a feasible design, and whenever the standing does not
    stand: a change the model could not predict out of sample is no basis for a
    design)."""

    quantity: str
    taus_us: tuple[float, ...]
    change: float
    per_run: tuple[float, float] | None
    run_sd: float | None
    log_sd: float | None
    runs_needed: int | None
    standing: Standing


@dataclass(frozen=True)
class ThrottleReport:
    """Everything ``mmlab model throttle`` prints: the runs, the calibrated model, the
    timeout predictions per reason, the cycle predictions, the designs, the validation
    scores (none without targets) and the model's standing per quantity from them."""

    calibration: Calibration
    timeouts: tuple[TimeoutPrediction, ...]
    cycles: tuple[CyclePrediction, ...]
    designs: tuple[Design, ...] = ()
    validation: tuple[QuantityScore, ...] = ()
    standings: tuple[Standing, ...] = ()

    def standing(self, quantity: str) -> Standing:
        """The model's out-of-sample standing for ``quantity`` (not validated without one)."""
        return next((s for s in self.standings if s.quantity == quantity), Standing(quantity))

    @property
    def capture(self) -> str:
        return self.calibration.name

    @property
    def runs(self) -> tuple[Observation, ...]:
        return self.calibration.runs

    @property
    def model(self) -> CycleModel:
        return self.calibration.model

    def wait_choice(self, reason: str) -> WaitChoice:
        """Which latent wait ``reason`` used (Kaplan–Meier when no choice was recorded)."""
        known = {c.reason: c for c in self.calibration.waits}
        return known.get(reason, WaitChoice(reason, "empirical", None, "the cycle model's own"))


def timeouts_asked(calibration: Calibration, asked: Mapping[str, float]) -> dict[str, list[float]]:
    """Per reason of the model, the timeouts to predict: the one ``asked`` for it, else
    :data:`LADDER` times its observed timeout; refuses a reason the model does not have."""
    for reason in asked:
        try:
            calibration.model.reason(reason)
        except ValueError as exc:
            raise InputError(calibration.name, str(exc)) from exc
    return {
        r.reason: [asked[r.reason]] if r.reason in asked else [f * r.timeout_us for f in LADDER]
        for r in calibration.model.reasons
    }


def designs(
    runs: Sequence[Observation],
    cycles: Sequence[CyclePrediction],
    standing: Sequence[Standing] = (),
) -> tuple[Design, ...]:
    """Per quantity, the :class:`Design` of the largest change the ``cycles`` predict from
    the first (the observed timeouts), with the model's ``standing`` for it (not
    validated when absent); none without a prediction at another timeout."""
    base = next((c for c in cycles if not c.taus_us), None)
    others = [c for c in cycles if c.taus_us]
    if base is None or not others:
        return ()
    out = []
    # CyclePrediction.runs holds (velocity, efficiency) per one-run model.
    for i, quantity in enumerate(("velocity_pps", "efficiency")):
        far = max(others, key=lambda c: abs(_value(c, quantity) - _value(base, quantity)))
        change = (_value(far, quantity) - _value(base, quantity)) / _value(base, quantity)
        per_run = None
        if far.runs and base.runs:
            each = [(f[i] - b[i]) / b[i] for f, b in zip(far.runs, base.runs, strict=True)]
            per_run = (min(each), max(each))
        observed = np.array([getattr(r, quantity) for r in runs], dtype=float)
        _, run_sd = mean_sd(list(observed))
        # The design is for the log per-run values, as mmlab compare tests a change.
        _, log_sd = mean_sd(list(np.log(observed))) if (observed > 0).all() else (None, None)
        known = next((s for s in standing if s.quantity == quantity), Standing(quantity))
        needed = None
        if change != 0 and log_sd is not None and known.stands:
            needed = design_runs(log_sd, 100 * change, DESIGN_LEVEL)
        taus = tuple(t for _, t in far.taus_us)
        out.append(Design(quantity, taus, change, per_run, run_sd, log_sd, needed, known))
    return tuple(out)


def _value(cycle: CyclePrediction, quantity: str) -> float:
    return getattr(cycle, quantity).value


def build_report(
    calibration: Calibration,
    taus_us: Mapping[str, Sequence[float]],
    targets: Mapping[str, Sequence[Observation]] | None = None,
    *,
    seed: int = 0,
) -> ThrottleReport:
    """Predictions at every timeout in ``taus_us`` (reason → timeouts), one reason at a
    time, the cycle at the observed timeouts first; each cycle prediction also by models
    calibrated on one run each; the validation on ``targets`` (name → its runs) when
    given, every reason of the model; the standings from it and the designs."""
    model = calibration.model
    timeouts: list[TimeoutPrediction] = []
    cycles = [predict_cycle(model, seed=seed)]
    for r in model.reasons:
        reps = [m.reason(r.reason).wait for m in model.replicates]
        for tau in taus_us.get(r.reason, ()):
            timeouts.append(predict_timeout(r.wait, tau, replicates=reps))
            if tau != r.timeout_us:
                cycles.append(predict_cycle(model, {r.reason: tau}, seed=seed))
    runs = calibration.runs
    singles = [calibrate([run]) for run in runs] if len(runs) > 1 else []
    predicted = tuple(per_run(c, singles, seed=seed) for c in cycles)
    scores = validate(calibration, targets, seed=seed) if targets else ()
    standing = standings(scores)
    return ThrottleReport(
        calibration=calibration,
        timeouts=tuple(timeouts),
        cycles=predicted,
        designs=designs(runs, predicted, standing),
        validation=scores,
        standings=standing,
    )


@dataclass(frozen=True)
class ModelRequest:
    """What ``mmlab model throttle`` asks: the capture (and its workers' phase), the
    latent-wait choice, the bootstrap, the timeouts per reason, and captures to validate on
    (in their own phase)."""

    capture: Path
    phase: int | None = None
    wait: str = "auto"
    bootstrap: int = 0
    seed: int = 0
    timeouts: Mapping[str, float] = field(default_factory=dict)
    validate: Sequence[Path] = ()
    validate_phase: int | None = None


def _label(path: Path, workers: int | None) -> str:
    return f"{path}" if workers is None else f"{path} ({workers} workers)"


def model_throttle(
    request: ModelRequest, progress: Stages | None = None
) -> tuple[ThrottleReport, tuple[str, ...]]:
    """The report of ``request`` (calibrated on its capture, predicted at its timeouts,
    scored on its validation captures), and each capture's note on iterations sharing a
    boot."""
    from analysis.ingest.boots import shared_boot_notes

    runs = observe(request.capture, workers=request.phase)
    if progress:
        progress.done(f"{request.capture} read")
    calibrated = calibration(_label(request.capture, request.phase), runs, wait=request.wait,
                             bootstrap=request.bootstrap, seed=request.seed)  # fmt: skip
    if progress:
        progress.done("latent waits calibrated")
    taus = timeouts_asked(calibrated, dict(request.timeouts))
    phase = request.phase if request.validate_phase is None else request.validate_phase
    targets = {}
    for other in request.validate:
        targets[_label(other, phase)] = observe(other, workers=phase)
        if progress:
            progress.done(f"{other} read")
    report = build_report(calibrated, taus, targets, seed=request.seed)
    if progress:
        progress.done("predictions and validation")
    notes = tuple(
        n for path in (request.capture, *request.validate) for n in shared_boot_notes(path)
    )
    return report, notes
