"""The timeout model fed by the censored fits (issue 12 from issue 10), against a known truth.

Synthetic data (statistical validation only): a known latent wait goes through the kernel's
observation model (k = floor(T/J + U), censored at the timeout; the fit package's simulator),
is fitted, and the prediction at other timeouts is compared with the truth's closed forms.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from analysis.models import throttle as m
from analysis.models.throttle_validation import Calibration
from analysis.models.throttle_waits import fit_reasons, with_waits
from analysis.report.throttle_model import as_json, format_report
from analysis.stats.families import FAMILIES
from analysis.stats.fit import FittedWait, JiffyData, fit_group
from analysis.stats.validation.simulate import simulate_counts
from analysis.study.throttle_model import build_report

HZ = 250
JIFFY_US = 1e6 / HZ
TIMEOUT_US = 100_000  # VMSCAN_THROTTLE_WRITEBACK at HZ 250: HZ/10 = 25 jiffies
REPLICATES = 40


def _truth(family: str, params: tuple[float, ...]) -> FittedWait:
    return FittedWait("WB", FAMILIES[family], params, 0.0, 0.0, math.inf)


def _counts(truth: FittedWait, n: int, seed: int) -> np.ndarray:
    k_timeout = round(TIMEOUT_US / JIFFY_US)
    return simulate_counts(truth, n, JIFFY_US, k_timeout, np.random.default_rng(seed))


def _covers(estimate: m.Estimate, truth: float) -> bool:
    return estimate.low <= truth <= estimate.high


# Weibull scale 30 ms, shape 0.8: E[min(T, τ)] = ∫₀^τ exp(-(t/λ)^k) dt, by the family's own
# closed form (the regularised lower incomplete gamma) in FittedWait; S(τ) = exp(-(τ/λ)^k).
WEIBULL = ("weibull", (0.8, 30_000.0))


@pytest.fixture(scope="module")
def weibull_fit() -> tuple[FittedWait, tuple[FittedWait, ...]]:
    data = JiffyData(_counts(_truth(*WEIBULL), 3000, seed=7), JIFFY_US, float(TIMEOUT_US))
    group = fit_group(data, reason="WB", families=["weibull"])
    return group.latent(), group.bootstrap_latents(REPLICATES, 1)


@pytest.mark.parametrize("tau", [20_000.0, 50_000.0, 250_000.0], ids=["20ms", "50ms", "250ms"])
def test_fitted_weibull_prediction_covers_the_truth(weibull_fit, tau):
    truth = _truth(*WEIBULL)
    wait, replicates = weibull_fit
    pred = m.predict_timeout(wait, tau, replicates=replicates)
    shape, scale = WEIBULL[1]
    assert _covers(pred.p_timeout, math.exp(-((tau / scale) ** shape)))
    assert _covers(pred.mean_stall_us, truth.restricted_mean_us(tau))
    # Beyond the 100 ms the data were censored at, the answer is the family's extrapolation.
    assert pred.extrapolated == (tau > TIMEOUT_US)
    assert pred.replicates == REPLICATES


def _observation(delays_us: np.ndarray) -> m.Observation:
    """Throttle cycles of one synthetic run: each throttle followed by 32 pages scanned,
    24 reclaimed; 1 s of scanning besides the sleeps; HZ 250 from its kconfig."""
    n = delays_us.size
    cycles = pl.DataFrame(
        {
            "reason": ["WB"] * n,
            "usec_timeout": [float(TIMEOUT_US)] * n,
            "delay_us": delays_us.astype(float),
            "scanned": [32] * n,
            "reclaimed": [24] * n,
        }
    )
    sleep_s = float(np.minimum(delays_us, TIMEOUT_US).sum()) / 1e6
    return m.Observation("synthetic", cycles, 0, 0, 0, 1.0 + sleep_s, 1e4, 1e4, HZ)


# Exponential mean 40 ms: S(τ) = exp(-τ/40 ms), E[min(T, τ)] = 40 ms·(1 − exp(-τ/40 ms)).
MEAN_US = 40_000.0


@pytest.mark.filterwarnings("ignore::statsmodels.tools.sm_exceptions.PerfectSeparationWarning")
def test_cycle_model_carries_the_fit_and_its_bootstrap():
    truth = _truth("exponential", (MEAN_US,))
    counts = _counts(truth, 1500, seed=3)
    delays = np.repeat(np.arange(counts.size) * JIFFY_US, counts)
    runs = [_observation(delays)]
    model = m.calibrate(runs, bootstrap=REPLICATES, seed=0)
    fits = fit_reasons(runs, families=["exponential"])
    fitted, choices = with_waits(model, fits, "fit", seed=1)
    (choice,) = choices
    assert (choice.source, choice.model) == ("fit", fits["WB"].best.name)
    reason = fitted.reason("WB")
    assert isinstance(reason.wait, FittedWait)
    tau = 2.5 * TIMEOUT_US
    km = m.predict_timeout(
        model.reason("WB").wait,
        tau,
        replicates=[r.reason("WB").wait for r in model.replicates],
    )
    fit = m.predict_timeout(
        reason.wait, tau, replicates=[r.reason("WB").wait for r in fitted.replicates]
    )
    true_s = math.exp(-tau / MEAN_US)
    assert _covers(fit.p_timeout, true_s)
    assert _covers(fit.mean_stall_us, MEAN_US * (1 - true_s))
    # Kaplan–Meier stops at the timeout: every sleeper left is taken as never woken, an
    # upper bound that misses the truth (S(100 ms) = 0.08 against S(250 ms) = 0.002).
    assert km.p_timeout.low > true_s
    assert km.mean_stall_us.low > MEAN_US * (1 - true_s)
    # The cycle model's velocity moves with the wait it was given (longer stalls: slower).
    at_tau = m.predict_cycle(fitted, {"WB": tau}).velocity_pps
    assert at_tau.value > m.predict_cycle(model, {"WB": tau}).velocity_pps.value
    empirical, (kept,) = with_waits(model, fits, "empirical")
    assert kept.source == "empirical" and empirical.reason("WB").wait is model.reason("WB").wait


def test_auto_falls_back_to_kaplan_meier_and_says_why():
    # All throttles reached the timeout: nothing can be fitted, and auto says so.
    runs = [_observation(np.full(50, float(TIMEOUT_US)))]
    model = m.calibrate(runs)
    fits = fit_reasons(runs, families=["exponential"])
    assert "all censored" in fits["WB"]
    same, (choice,) = with_waits(model, fits, "auto")
    assert choice.source == "empirical"
    assert choice.why.startswith("no fit:") and "all censored" in choice.why
    assert same.reason("WB").wait is model.reason("WB").wait
    with pytest.raises(ValueError, match="wait mode"):
        with_waits(model, fits, "parametric")


@pytest.mark.filterwarnings("ignore::statsmodels.tools.sm_exceptions.PerfectSeparationWarning")
def test_report_says_which_wait_and_why():
    counts = _counts(_truth("exponential", (MEAN_US,)), 400, seed=5)
    runs = [_observation(np.repeat(np.arange(counts.size) * JIFFY_US, counts))]
    model = m.calibrate(runs, bootstrap=5)
    fitted, choices = with_waits(model, fit_reasons(runs, families=["exponential"]), "fit")
    report = build_report(
        Calibration("synthetic", tuple(runs), fitted, choices), {"WB": [TIMEOUT_US]}
    )
    text = format_report(report)
    assert f"latent wait: fit {choices[0].model} (asked for (--wait fit)" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    (reason,) = as_json(report)["reasons"]
    assert reason["wait"]["source"] == "fit" and not reason["cure_fraction_is_upper_bound"]
    # Without a recorded choice the cycle model's own Kaplan–Meier wait is reported.
    plain = as_json(
        build_report(Calibration("synthetic", tuple(runs), model, ()), {"WB": [TIMEOUT_US]})
    )
    assert plain["reasons"][0]["wait"]["source"] == "empirical"
