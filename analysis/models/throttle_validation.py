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

Beyond the calibration's timeout (τ > τ₀) a one-run Kaplan–Meier model knows only that a
sleeper still asleep at τ₀ would have woken later, and takes it as never woken: S(τ₀) is
an upper bound of P(timeout) at τ, not an estimate. There the one-run models take each
run's censored fit with every sleeper woken eventually
(:func:`analysis.models.throttle_waits.woken_wait`, an extrapolation through the family's
tail); the Kaplan–Meier prediction is kept as ``kaplan_meier`` with its error, and the
pooled calibration's identification bounds (what holds whatever the unobserved tail is:
0 ≤ P(timeout) ≤ S(τ₀), R(τ₀) ≤ E[min(T, τ)] ≤ R(τ₀) + S(τ₀)·(τ − τ₀)) as ``bounds``.

Velocity and efficiency follow each run's writeback rate (vmstat ``nr_written``/s) more
than any timeout moves them (``docs/model-validation.md`` "What the data says"). Beside the
cycle model, ``given_writeback`` predicts each validation run from its own writeback rate
by a least-squares line over the calibration runs (log velocity, or efficiency, against
log writeback rate), with the line's 95 % prediction interval for one run: a conditional
prediction, which needs the run's writeback rate and says nothing of the timeout.

Errors are per run, then averaged over the validation capture's runs (each an independent
run): absolute error in percentage points for the two shares (P(timeout), efficiency),
relative error for the stall and the velocity. Whether the knob changed a quantity at all
is a permutation test over runs (:func:`analysis.stats.significance.permutation_p`),
calibration runs against validation runs. Captures at the calibration's own timeout are an
A/A check: the prediction must agree within the run-to-run noise. See
``docs/model-validation.md`` "Throttle timeout".

The recipe, one for every caller (``mmlab model throttle --validate``, the
``throttle-validation`` sweep point, the paper's sweep in :mod:`analysis.study.sweep`):
:func:`calibration` (the calibration capture's runs and the model calibrated on them, its
latent waits as ``--wait`` picks them), then :func:`validate` against each target's runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import statsmodels.api as sm

from analysis.errors import InputError
from analysis.models.run_scoring import (
    Standing,
    change_mde,
    change_p,
    inside,
    prediction_interval,
    standing,
)
from analysis.models.throttle import (
    CycleModel,
    CyclePrediction,
    Estimate,
    Observation,
    calibrate,
    per_run,
    predict_cycle,
    predict_timeout,
)
from analysis.models.throttle_waits import WaitChoice, calibrate_with_waits, woken_wait
from analysis.stats.latent import LatentWait

__all__ = [
    "QUANTITIES",
    "SHARES",
    "Calibration",
    "QuantityScore",
    "RunValues",
    "calibration",
    "identification_bounds",
    "linear_velocity",
    "run_values",
    "score_capture",
    "standings",
    "validate",
    "writeback_conditioned",
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
    of the observed change from the calibration runs with the smallest relative change
    those runs detect (``change_mde``, :func:`~analysis.models.run_scoring.change_mde`).

    Beyond the calibration's timeout (``extrapolated``) the one-run models use the woken
    fit; ``kaplan_meier`` and its error are the Kaplan–Meier prediction there (an upper
    bound for P(timeout) and the stall), ``bounds`` what holds whatever the tail
    (P(timeout) and stall only). For velocity and efficiency, ``given_writeback`` holds
    the per-run predictions from each validation run's writeback rate, their 95 %
    intervals, how many runs fall inside and the mean error (and its sd over runs)."""

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
    kaplan_meier: float | None = None
    kaplan_meier_error: float | None = None
    bounds: tuple[float, float] | None = None
    given_writeback: tuple[float, ...] | None = None
    given_writeback_intervals: tuple[tuple[float, float], ...] | None = None
    given_writeback_inside: int | None = None
    given_writeback_error: float | None = None
    given_writeback_error_sd: float | None = None
    change_mde: float | None = None


def identification_bounds(wait: LatentWait, tau0_us: float, tau_us: float) -> dict:
    """What the data at timeout ``tau0_us`` says of P(timeout) and E[min(T, τ)] (µs) at a
    longer ``tau_us`` whatever T does beyond τ₀: every sleeper still asleep at τ₀ wakes
    at once (lower) or never (upper)."""
    s0 = wait.timed_out(tau0_us)
    r0 = wait.restricted_mean_us(tau0_us)
    return {"p_timeout": (0.0, s0), "mean_stall_us": (r0, r0 + s0 * (tau_us - tau0_us))}


def writeback_conditioned(
    calibration: Sequence[Observation], targets: Sequence[Observation], quantity: str
) -> tuple[np.ndarray, np.ndarray]:
    """Each target run's ``quantity`` (``velocity_pps`` or ``efficiency``) predicted from
    its writeback rate (vmstat ``nr_written``/s) by least squares over the calibration
    runs — log velocity, or efficiency, on log writeback rate — and the line's 95 %
    prediction interval for one run (n × 2, efficiency clipped to [0, 1])."""
    if len(calibration) < 3:
        raise InputError(calibration[0].source, "a writeback line needs three runs or more")
    x = sm.add_constant(np.log([o.writeback_pps for o in calibration]))
    y = np.array([getattr(o, quantity) for o in calibration], dtype=float)
    log = quantity == "velocity_pps"
    fit = sm.OLS(np.log(y) if log else y, x).fit()
    new = sm.add_constant(np.log([o.writeback_pps for o in targets]), has_constant="add")
    frame = fit.get_prediction(new).summary_frame(alpha=0.05)
    centre = frame["mean"].to_numpy()
    bounds = frame[["obs_ci_lower", "obs_ci_upper"]].to_numpy()
    if log:
        return np.exp(centre), np.exp(bounds)
    return np.clip(centre, 0, 1), np.clip(bounds, 0, 1)


def _sd(errors: np.ndarray) -> float | None:
    """Sample sd of per-run errors (None below two runs)."""
    return float(np.std(errors, ddof=1)) if errors.size >= 2 else None


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
    beyond = tau > tau0
    flow = predict_cycle(model, {reason: tau}, seed=seed)
    kaplan_meier = _one_run_predictions(flow, singles, reason, tau, seed)
    if beyond:
        woken = [
            _with_wait(s, reason, woken_wait(o, reason))
            for s, o in zip(singles, calibration, strict=True)
        ]
        per_run_pred = _one_run_predictions(flow, woken, reason, tau, seed)
    else:
        per_run_pred = kaplan_meier
    bounds = identification_bounds(calibrate(calibration).reason(reason).wait, tau0, tau)
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
        extra: dict[str, object] = {}
        if beyond:
            km = float(np.mean(kaplan_meier[q]))
            extra |= {"kaplan_meier": km, "kaplan_meier_error": float(_errors(km, obs, q).mean())}
            extra["bounds"] = bounds.get(q)
        if q in ("velocity_pps", "efficiency") and len(calibration) >= 3:
            given, intervals = writeback_conditioned(calibration, targets, q)
            given_err = _errors(given, obs, q)
            extra |= {
                "given_writeback": tuple(float(v) for v in given),
                "given_writeback_intervals": tuple((float(a), float(b)) for a, b in intervals),
                "given_writeback_inside": int(
                    np.sum((intervals[:, 0] <= obs) & (obs <= intervals[:, 1]))
                ),
                "given_writeback_error": float(given_err.mean()),
                "given_writeback_error_sd": _sd(given_err),
            }
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
                model_error_sd=_sd(model_err),
                no_change=no_change,
                no_change_error=float(_errors(no_change, obs, q).mean()),
                linear=linear,
                linear_error=float(_errors(linear, obs, q).mean()),
                change_p=change_p(list(calib), list(obs), seed),
                change_mde=change_mde(list(calib), list(obs)),
                extrapolated=tau > cycle.wait.support_limit_us,
                **extra,
            )
        )
    return tuple(out)


def _with_wait(model: CycleModel, reason: str, wait: LatentWait) -> CycleModel:
    return replace(
        model,
        reasons=tuple(replace(r, wait=wait) if r.reason == reason else r for r in model.reasons),
    )


def _one_run_predictions(
    pooled: CyclePrediction, singles: Sequence[CycleModel], reason: str, tau: float, seed: int
) -> dict[str, list[float]]:
    """The four quantities at ``tau`` by each one-run model (its own wait and environment)."""
    flow = per_run(pooled, singles, seed=seed)
    waits = [predict_timeout(s.reason(reason).wait, tau) for s in singles]
    return {
        "p_timeout": [w.p_timeout.value for w in waits],
        "mean_stall_us": [w.mean_stall_us.value for w in waits],
        "velocity_pps": [v for v, _ in flow.runs],
        "efficiency": [e for _, e in flow.runs],
    }


@dataclass(frozen=True)
class Calibration:
    """The calibration side of a validation: the runs of the capture ``name``, the cycle
    model calibrated on them and the latent wait each of its reasons uses."""

    name: str
    runs: tuple[Observation, ...]
    model: CycleModel
    waits: tuple[WaitChoice, ...]


def calibration(
    name: str,
    runs: Sequence[Observation],
    *,
    wait: str = "auto",
    bootstrap: int = 0,
    seed: int = 0,
) -> Calibration:
    """The model of ``runs`` with each reason's latent wait as ``wait`` picks it
    (:func:`~analysis.models.throttle_waits.calibrate_with_waits`, as ``mmlab model throttle
    --wait``); refuses runs with no throttle that has a delay (nothing to model)."""
    model, waits = calibrate_with_waits(list(runs), bootstrap, seed, wait)
    if not model.reasons:
        raise InputError(name, "no throttle event with a delay: no timeout to model")
    return Calibration(name, tuple(runs), model, waits)


def validate(
    calibrated: Calibration,
    targets: Mapping[str, Sequence[Observation]],
    reasons: Sequence[str] | None = None,
    *,
    seed: int = 0,
) -> tuple[QuantityScore, ...]:
    """:func:`score_capture` of ``calibrated`` against every target (name → its runs),
    target by target, for each of ``reasons`` (default: every reason of the model)."""
    chosen = [r.reason for r in calibrated.model.reasons] if reasons is None else reasons
    return tuple(
        s
        for name, runs in targets.items()
        for reason in chosen
        for s in score_capture(calibrated.model, calibrated.runs, runs, reason, name, seed=seed)
    )


def standings(scores: Sequence[QuantityScore]) -> tuple[Standing, ...]:
    """Per quantity (:data:`QUANTITIES`), the model's :class:`Standing` over the validation
    captures that ran another timeout than the calibration (none: not validated)."""
    return tuple(
        standing(
            q,
            "pp" if q in SHARES else "relative",
            [
                (s.model_error, s.no_change_error, s.linear_error)
                for s in scores
                if s.quantity == q and s.tau_us != s.calibration_tau_us
            ],
        )
        for q in QUANTITIES
    )
