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

import polars as pl

from analysis.errors import InputError
from analysis.metrics.throttle import infer_hz
from analysis.models.throttle import CycleModel, Observation
from analysis.stats.fit import GroupFit, fit_group, frame_data

__all__ = ["WAIT_MODES", "WaitChoice", "fit_reasons", "with_waits"]

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
