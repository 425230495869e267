"""Out-of-sample scoring of the throttle-timeout model against kernels that ran the timeout.

The model (:mod:`analysis.models.throttle`) is calibrated on one capture at its timeout τ₀
of one ``reclaim_throttle()`` reason (mm/vmscan.c). Each validation capture ran another
timeout τ (read from its own trace: every ``mm_vmscan_throttled`` of the reason in a run
must print the same ``usec_timeout``, else the run is refused). The model predicts, at τ
and with nothing from the validation capture but τ, four run-level quantities:

- ``p_timeout``: the share of the reason's throttles whose ``usect_delayed`` reached the
  timeout (delay ≥ ``usec_timeout``, as ``analysis.metrics.throttle.throttle_table``);
- ``mean_stall_us``: the mean recorded sleep min(delay, timeout), µs;
- ``velocity_pps``: pages scanned (``mm_vmscan_lru_shrink_inactive``) per second of reclaim;
- ``efficiency``: reclaimed / scanned pages of the same scans.

Each observed run of the validation capture is scored against:

- the **model**, at run level: the same prediction by models calibrated on one run each
  (n runs); their mean and 95 % **prediction interval** for one new run
  (:func:`analysis.models.run_scoring.prediction_interval`). A run "falls in"
  when its observed value lies inside. At τ₀ each run's model gives back that run's own
  values (Kaplan–Meier at the censoring point; velocity by construction), so the A/A
  prediction is the no-change baseline. The pooled calibration's prediction with its
  bootstrap interval (uncertainty of a throttle-weighted mean, not of a run) is kept
  beside it as ``pooled``;
- **no change**: the calibration runs' mean observed value (the knob does nothing);
- **linear in the timeout**: every recorded sleep scaled by τ/τ₀: the mean stall scales by
  τ/τ₀, P(timeout) and efficiency stay, and the sleep part of each calibration run's
  seconds per scanned page scales by τ/τ₀ (velocity = 1 / (scan s/page + τ/τ₀·sleep
  s/page), averaged over runs).

Errors are per run, then averaged over the validation capture's runs (each an independent
run): absolute error in percentage points for the two shares (P(timeout), efficiency),
relative error for the stall and the velocity. Whether the knob changed a quantity at all
is a permutation test over runs (:func:`analysis.stats.significance.permutation_p`),
calibration runs against validation runs. Captures at the calibration's own timeout are an
A/A check: the prediction must agree within the run-to-run noise. See
``docs/model-validation.md`` "Throttle timeout".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from analysis.errors import InputError
from analysis.models.run_scoring import change_p, inside, prediction_interval
from analysis.models.throttle import (
    CycleModel,
    Estimate,
    Observation,
    calibrate,
    per_run,
    predict_cycle,
    predict_timeout,
)

__all__ = [
    "QUANTITIES",
    "QuantityScore",
    "RunValues",
    "linear_velocity",
    "run_values",
    "score_capture",
]

QUANTITIES = ("p_timeout", "mean_stall_us", "velocity_pps", "efficiency")
SHARES = ("p_timeout", "efficiency")  # scored in absolute percentage points


@dataclass(frozen=True)
class RunValues:
    """One run's observed quantities for ``reason``: its timeout (µs), the share of its
    throttles at the timeout, the mean recorded sleep (µs), velocity (pages/s of reclaim),
    efficiency, and the seconds per scanned page spent asleep in this reason."""

    source: str
    tau_us: float
    p_timeout: float
    mean_stall_us: float
    velocity_pps: float
    efficiency: float
    sleep_s_per_page: float

    def value(self, quantity: str) -> float:
        return float(getattr(self, quantity))


def run_values(obs: Observation, reason: str) -> RunValues:
    """Observed :class:`RunValues` of one run; refuses a run whose throttles of ``reason``
    printed several timeouts (no single τ to score) or that has none."""
    cycles = obs.cycles.filter(obs.cycles["reason"] == reason)
    if cycles.height == 0:
        raise InputError(obs.source, f"no {reason} throttle with a delay in this run")
    taus = cycles["usec_timeout"].unique().to_list()
    if len(taus) != 1:
        raise InputError(obs.source, f"{reason} throttles printed several timeouts {taus} µs")
    delay = cycles["delay_us"].to_numpy()
    tau = float(taus[0])
    sleeps = np.minimum(delay, tau)
    return RunValues(
        source=obs.source,
        tau_us=tau,
        p_timeout=float(np.mean(delay >= tau)),
        mean_stall_us=float(sleeps.mean()),
        velocity_pps=obs.velocity_pps,
        efficiency=obs.efficiency,
        sleep_s_per_page=float(sleeps.sum()) / 1e6 / obs.scanned,
    )


def linear_velocity(run: RunValues, tau_us: float) -> float:
    """The run's velocity with every sleep scaled by ``tau_us``/its timeout (pages/s)."""
    scan = 1.0 / run.velocity_pps - run.sleep_s_per_page
    return 1.0 / (scan + run.sleep_s_per_page * tau_us / run.tau_us)


@dataclass(frozen=True)
class QuantityScore:
    """One quantity of one validation capture: the model's prediction at the capture's
    timeout (``predicted``: mean of the one-run models; ``interval``: run-level prediction
    interval; ``pooled``: the pooled model with its bootstrap interval), the observed
    per-run values, how many fall in the interval, the mean per-run error (``error_unit``:
    ``pp`` or ``relative``) of the model and of the two baselines, and the permutation p
    of the observed change from the calibration runs."""

    capture: str
    quantity: str
    tau_us: float
    calibration_tau_us: float
    predicted: float
    pooled: Estimate
    interval: tuple[float, float] | None
    observed: tuple[float, ...]
    inside: int
    error_unit: str
    model_error: float
    model_error_sd: float | None
    no_change: float
    no_change_error: float
    linear: float
    linear_error: float
    change_p: float | None
    extrapolated: bool


def _errors(predicted: float | np.ndarray, observed: np.ndarray, quantity: str) -> np.ndarray:
    diff = np.abs(np.asarray(predicted) - observed)
    return diff * 100 if quantity in SHARES else diff / observed


def score_capture(
    model: CycleModel,
    calibration: Sequence[Observation],
    targets: Sequence[Observation],
    reason: str,
    capture: str,
    *,
    seed: int = 0,
) -> tuple[QuantityScore, ...]:
    """Score ``model`` (calibrated on ``calibration``, the same runs) against the runs of
    one validation capture ``targets``, all at the timeout they ran (one τ per capture)."""
    cycle = model.reason(reason)
    base = [run_values(o, reason) for o in calibration]
    observed = [run_values(o, reason) for o in targets]
    taus = {r.tau_us for r in observed}
    if len(taus) != 1:
        raise InputError(capture, f"runs of this capture ran several {reason} timeouts {taus}")
    tau = taus.pop()
    tau0 = cycle.timeout_us
    singles = [calibrate([o]) for o in calibration]
    reps = [m.reason(reason).wait for m in model.replicates]
    wait = predict_timeout(cycle.wait, tau, replicates=reps)
    flow = per_run(predict_cycle(model, {reason: tau}, seed=seed), singles, seed=seed)
    single_waits = [predict_timeout(s.reason(reason).wait, tau) for s in singles]
    per_run_pred = {
        "p_timeout": [w.p_timeout.value for w in single_waits],
        "mean_stall_us": [w.mean_stall_us.value for w in single_waits],
        "velocity_pps": [v for v, _ in flow.runs],
        "efficiency": [e for _, e in flow.runs],
    }
    pooled = {
        "p_timeout": wait.p_timeout,
        "mean_stall_us": wait.mean_stall_us,
        "velocity_pps": flow.velocity_pps,
        "efficiency": flow.efficiency,
    }
    scale = tau / tau0
    out = []
    for q in QUANTITIES:
        obs = np.array([r.value(q) for r in observed])
        calib = np.array([r.value(q) for r in base])
        no_change = float(calib.mean())
        linear = {
            "mean_stall_us": no_change * scale,
            "velocity_pps": float(np.mean([linear_velocity(r, tau) for r in base])),
        }.get(q, no_change)
        centre, interval = prediction_interval(
            per_run_pred[q], upper=1.0 if q in SHARES else math.inf
        )
        model_err = _errors(centre, obs, q)
        out.append(
            QuantityScore(
                capture=capture,
                quantity=q,
                tau_us=tau,
                calibration_tau_us=tau0,
                predicted=centre,
                pooled=pooled[q],
                interval=interval,
                observed=tuple(float(v) for v in obs),
                inside=inside(list(obs), interval),
                error_unit="pp" if q in SHARES else "relative",
                model_error=float(model_err.mean()),
                model_error_sd=float(np.std(model_err, ddof=1)) if len(obs) >= 2 else None,
                no_change=no_change,
                no_change_error=float(_errors(no_change, obs, q).mean()),
                linear=linear,
                linear_error=float(_errors(linear, obs, q).mean()),
                change_p=change_p(list(calib), list(obs), seed),
                extrapolated=tau > cycle.wait.support_limit_us,
            )
        )
    return tuple(out)
