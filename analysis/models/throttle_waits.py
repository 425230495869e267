"""Which latent wait each throttle reason's predictions use: the censored fit or Kaplan–Meier.

The timeout model (:mod:`analysis.models.throttle`) needs, per reason of
``reclaim_throttle()`` (mm/vmscan.c), the latent wait T and bootstrap replicates of it. Two
estimates answer: the best censored, jiffy-quantised fit of the reason's throttles
(:func:`analysis.stats.fit.fit_group`, contexts pooled as the cycle model pools them;
replicates are the best model refitted to resampled histograms) and the Kaplan–Meier estimate
of the recorded delays (:class:`~analysis.models.throttle.EmpiricalWait`; replicates resample
throttle cycles). Only the fit can speak beyond the observed timeout (its family's tail, an
extrapolation); Kaplan–Meier takes every sleeper still waiting there as never woken.

``auto`` uses the fit where it is identified (it converged, its information matrix is
invertible and :func:`~analysis.stats.fit.fit_group` raised no identifiability warning) and
Kaplan–Meier otherwise; every choice carries the reason it was made.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import polars as pl

from analysis.errors import InputError
from analysis.metrics.throttle import infer_hz
from analysis.models.throttle import (
    CycleModel,
    Observation,
    calibrate,
    observe,
    predict_cycle,
    predict_timeout,
)
from analysis.stats.fit import FittedWait, GroupFit, best_woken_fit, fit_group, frame_data

__all__ = [
    "SWEEP_MODEL",
    "WAIT_MODES",
    "WaitChoice",
    "calibrate_with_waits",
    "calibrated",
    "fit_reasons",
    "with_waits",
    "woken_wait",
]

WAIT_MODES = ("auto", "fit", "empirical")


@dataclass(frozen=True)
class WaitChoice:
    """The latent wait used for ``reason``: ``source`` is ``fit`` (``model`` names the best
    family ± zero mass ± cure fraction) or ``empirical`` (Kaplan–Meier); ``why`` says why."""

    reason: str
    source: str
    model: str | None
    why: str


def _jiffy_us(observations: Sequence[Observation], cycles: pl.DataFrame) -> float | None:
    """1e6/CONFIG_HZ of the capturing kernel, else HZ inferred from the delays' jiffy quantum."""
    config = {o.config_hz for o in observations} - {None}
    if len(config) == 1:
        return 1e6 / config.pop()
    hz = infer_hz(cycles.with_columns(count=pl.lit(1)), None).hz
    return 1e6 / hz if hz else None


def fit_reasons(
    observations: Sequence[Observation],
    *,
    families: Iterable[str] | None = None,
) -> dict[str, GroupFit | str]:
    """Per reason, the censored fit of its throttles pooled over the runs and contexts of
    ``observations`` (their ``cycles``), or the message saying why it cannot be fitted."""
    cycles = pl.concat([o.cycles for o in observations], how="vertical")
    jiffy = _jiffy_us(observations, cycles)
    names = list(families) if families is not None else None
    out: dict[str, GroupFit | str] = {}
    for (reason,), group in cycles.group_by("reason", maintain_order=True):
        try:
            if jiffy is None:
                raise InputError(str(reason), "no jiffy length: no CONFIG_HZ, no non-zero delay")
            data = frame_data(group, jiffy, source=str(reason))
            out[str(reason)] = fit_group(data, reason=str(reason), families=names)
        except InputError as exc:
            out[str(reason)] = exc.reason
    return out


def woken_wait(observation: Observation, reason: str) -> FittedWait:
    """The AIC-best censored, jiffy-quantised fit of one run's throttles of ``reason``
    (every family of :mod:`analysis.stats.families`, with and without a zero mass) under the
    assumption that every sleeper is woken by its condition eventually: no cure fraction.

    Beyond the run's timeout Kaplan–Meier knows only that a sleeper reaching it would have
    woken later, and takes it as never woken (an upper bound); a fit with a cure fraction
    puts the same unobserved mass wherever its family's tail allows (not identified, see
    :func:`analysis.stats.fit.fit_group`). Without a cure fraction the family's shape
    below the timeout sets the tail beyond it: an extrapolation, scored against kernels
    that ran longer timeouts in
    ``docs/model-validation.md`` "Beyond the calibrated timeout".
    ``reclaim_throttle()`` (mm/vmscan.c) wakes WRITEBACK sleepers as writeback completes,
    so a sleeper that never wakes needs writeback that never completes."""
    cycles = observation.cycles.filter(pl.col("reason") == reason)
    jiffy = _jiffy_us([observation], cycles)
    if jiffy is None:
        raise InputError(observation.source, "no jiffy length: no CONFIG_HZ, no non-zero delay")
    data = frame_data(cycles, jiffy, source=observation.source)
    best = best_woken_fit(data)
    if best is None:
        raise InputError(observation.source, f"{reason}: too few distinct delays to fit")
    return replace(best, reason=reason, support_limit_us=data.timeout_us)


def _choice(reason: str, fit: GroupFit | str | None, mode: str) -> WaitChoice:
    if mode == "empirical":
        return WaitChoice(reason, "empirical", None, "asked for (--wait empirical)")
    if fit is None or isinstance(fit, str):
        return WaitChoice(reason, "empirical", None, f"no fit: {fit or 'reason not fitted'}")
    problems = list(fit.identifiability)
    if not fit.best.converged:
        problems.append(f"{fit.best.name}: optimiser did not converge")
    if mode == "fit":
        why = "asked for (--wait fit)" + (f"; caveats: {'; '.join(problems)}" if problems else "")
        return WaitChoice(reason, "fit", fit.best.name, why)
    if problems:
        return WaitChoice(reason, "empirical", None, "fit not identified: " + "; ".join(problems))
    return WaitChoice(reason, "fit", fit.best.name, "fit identified (best by AIC)")


def with_waits(
    model: CycleModel,
    fits: Mapping[str, GroupFit | str],
    mode: str = "auto",
    *,
    seed: int = 0,
) -> tuple[CycleModel, tuple[WaitChoice, ...]]:
    """``model`` with each reason's latent wait (and its bootstrap replicates, one per model
    replicate) taken from its fit where ``mode`` and the fit allow, and what was chosen."""
    if mode not in WAIT_MODES:
        raise ValueError(f"wait mode must be one of {', '.join(WAIT_MODES)}, got {mode!r}")
    choices = tuple(_choice(r.reason, fits.get(r.reason), mode) for r in model.reasons)
    fitted = {c.reason: fits[c.reason] for c in choices if c.source == "fit"}
    replicates = {
        reason: fit.bootstrap_latents(len(model.replicates), seed) for reason, fit in fitted.items()
    }

    def retarget(m: CycleModel, index: int | None) -> CycleModel:
        reasons = []
        for r in m.reasons:
            if r.reason in fitted:
                fit = fitted[r.reason]
                wait = fit.latent() if index is None else replicates[r.reason][index]
                r = replace(r, wait=wait)
            reasons.append(r)
        return replace(m, reasons=tuple(reasons))

    reps = tuple(retarget(m, i) for i, m in enumerate(model.replicates))
    return replace(retarget(model, None), replicates=reps), choices


def calibrate_with_waits(
    observations: Sequence[Observation], bootstrap: int = 0, seed: int = 0, wait: str = "auto"
) -> tuple[CycleModel, tuple[WaitChoice, ...]]:
    """:func:`~analysis.models.throttle.calibrate` on ``observations``, then each reason's
    latent wait as ``wait`` picks it (:func:`with_waits`; no fits for ``empirical``)."""
    model = calibrate(observations, bootstrap=bootstrap, seed=seed)
    fits = {} if wait == "empirical" else fit_reasons(observations)
    return with_waits(model, fits, wait, seed=seed)


@lru_cache(maxsize=8)
def calibrated(
    capture: str,
    bootstrap: int = 0,
    seed: int = 0,
    workers: int | None = None,
    wait: str = "auto",
) -> tuple[CycleModel, tuple[WaitChoice, ...]]:
    """:func:`~analysis.models.throttle.calibrate` on every trace (or phase with ``workers``
    workers) below ``capture`` with the latent waits ``wait`` picks (as ``mmlab model
    throttle --wait``), once per process: sweeps ask for the same capture at every point."""
    return calibrate_with_waits(observe(Path(capture), workers=workers), bootstrap, seed, wait)


def SWEEP_MODEL(params: dict[str, object]) -> dict[str, float]:
    """One sweep point: ``capture`` (path), ``tau_us`` (timeout of ``reason``, by default
    the capture's only throttle reason), ``wait`` (``auto``, ``fit`` or ``empirical``, as
    ``mmlab model throttle --wait``; default auto), ``bootstrap`` (replicates, default 0),
    ``seed`` and ``workers`` (calibrate on ``mmlab capture`` phases with that many workers).

    Outputs velocity (pages/s of reclaim), efficiency, P(timeout), the mean stall (µs),
    ``extrapolated`` (1 when τ is beyond the observed timeout), ``wait_fit`` (1 when the
    reason's wait is its censored fit, 0 for Kaplan–Meier) and, with a bootstrap,
    ``*_low``/``*_high`` 95% interval bounds.
    """
    workers = params.get("workers")
    model, choices = calibrated(
        str(params["capture"]),
        int(params.get("bootstrap", 0)),
        int(params.get("seed", 0)),
        None if workers is None else int(workers),
        str(params.get("wait", "auto")),
    )
    if "reason" in params:
        reason = model.reason(str(params["reason"]))
    elif len(model.reasons) == 1:
        (reason,) = model.reasons
    else:
        raise ValueError("the capture has several throttle reasons: name one with 'reason'")
    tau = float(params["tau_us"])
    cycle = predict_cycle(model, {reason.reason: tau})
    replicates = [m.reason(reason.reason).wait for m in model.replicates]
    wait = predict_timeout(reason.wait, tau, replicates=replicates)
    (choice,) = (c for c in choices if c.reason == reason.reason)
    out = {"extrapolated": float(cycle.extrapolated), "wait_fit": float(choice.source == "fit")}
    for key, est in (
        ("velocity_pps", cycle.velocity_pps),
        ("efficiency", cycle.efficiency),
        ("p_timeout", wait.p_timeout),
        ("mean_stall_us", wait.mean_stall_us),
    ):
        out[key] = est.value
        if est.low is not None:
            out[f"{key}_low"], out[f"{key}_high"] = est.low, est.high
    return out


SWEEP_MODEL.parameters = ("capture", "tau_us", "reason", "wait", "bootstrap", "seed", "workers")
SWEEP_MODEL.path_parameters = ("capture",)  # checked on every worker before a sweep
