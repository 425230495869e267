"""The throttle-timeout model: closed forms, a hand-worked Kaplan–Meier, hand-computed cycles.

Every expected number is worked out here by hand (the comments show the arithmetic) or comes
from an exponential distribution's closed form, or from a simulation with known truth
(labelled SYNTHETIC), or from a figure published in the bundled capture's README.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats

from analysis.errors import InputError
from analysis.ingest import mmtests
from analysis.models import throttle as m
from analysis.stats.latent import LatentWait
from tests.conftest import DATA

RATE = 1 / 20_000  # per µs: mean latent wait 20 ms


def exponential(zero: float = 0.0, cure: float = 0.0) -> m.ParametricWait:
    return m.ParametricWait("WRITEBACK", stats.expon(scale=1 / RATE), zero, cure)


@pytest.mark.parametrize("tau", [1_000.0, 20_000.0, 100_000.0])
def test_exponential_closed_forms(tau):
    wait = exponential()
    assert isinstance(wait, LatentWait)
    pred = m.predict_timeout(wait, tau)
    assert pred.p_timeout.value == pytest.approx(math.exp(-RATE * tau))
    assert pred.mean_stall_us.value == pytest.approx((1 - math.exp(-RATE * tau)) / RATE)
    median = math.log(2) / RATE  # 13863 µs
    assert dict(pred.stall_quantiles_us)[0.5].value == pytest.approx(min(median, tau))


def test_zero_mass_and_cure_fraction_enter_every_answer():
    wait = exponential(zero=0.2, cure=0.1)
    tau = 30_000.0
    body = 0.7 * math.exp(-RATE * tau)
    assert wait.survival(np.array([tau]))[0] == pytest.approx(body + 0.1)
    assert wait.survival(np.array([0.0]))[0] == pytest.approx(0.8)
    assert wait.restricted_mean_us(tau) == pytest.approx(
        0.7 * (1 - math.exp(-RATE * tau)) / RATE + 0.1 * tau
    )
    assert wait.quantile_us(0.15) == 0.0
    # P(T ≤ t) = 0.2 + 0.7 F(t) = 0.5  ⇒  F(t) = 3/7  ⇒  t = −ln(4/7)/λ
    assert wait.quantile_us(0.5) == pytest.approx(-math.log(4 / 7) / RATE)
    assert wait.quantile_us(0.95) == math.inf
    draws = wait.draws(20_000, seed=3)
    # Binomial shares: 4 standard deviations of 20,000 draws.
    assert np.mean(draws == 0) == pytest.approx(0.2, abs=4 * math.sqrt(0.16 / 20_000))
    assert np.mean(np.isinf(draws)) == pytest.approx(0.1, abs=4 * math.sqrt(0.09 / 20_000))
    assert np.array_equal(draws, wait.draws(20_000, seed=3))


def test_invalid_masses_are_refused():
    with pytest.raises(ValueError, match="sum to at most 1"):
        exponential(zero=0.7, cure=0.5)


# Hand-worked Kaplan–Meier, timeout 12 ms, delays 0, 0, 4, 8, 8 ms and two at the timeout
# (censored). At risk / events: t=0 7/2 → S = 5/7; t=4 5/1 → 4/7; t=8 4/2 → 2/7.
KM_DELAYS = [0, 0, 4_000, 8_000, 8_000, 12_000, 12_000]


def km_wait() -> m.EmpiricalWait:
    return m.EmpiricalWait.from_delays("WRITEBACK", KM_DELAYS, 12_000)


def test_kaplan_meier_against_hand_worked_example():
    wait = km_wait()
    assert isinstance(wait, LatentWait)
    t = np.array([-1.0, 0.0, 3_999.0, 4_000.0, 8_000.0, 12_000.0, 50_000.0])
    expected = [1, 5 / 7, 5 / 7, 4 / 7, 2 / 7, 2 / 7, 2 / 7]
    assert wait.survival(t) == pytest.approx(expected)
    assert wait.zero_mass == pytest.approx(2 / 7)
    assert wait.cure_fraction == pytest.approx(2 / 7)
    assert wait.support_limit_us == 12_000
    # ∫0^12ms S = 4000·(5 + 4 + 2)/7, the sample mean of min(delay, timeout).
    assert wait.restricted_mean_us(12_000) == pytest.approx(44_000 / 7)
    assert wait.quantile_us(0.5) == 8_000  # F: 2/7, 3/7, 5/7
    assert wait.quantile_us(0.8) == math.inf  # beyond 5/7 only censored sleepers remain


def test_kaplan_meier_with_counts_equals_repeated_delays():
    counted = m.EmpiricalWait.from_delays(
        "WRITEBACK", [0, 4_000, 8_000, 12_000], 12_000, [2, 1, 2, 2]
    )
    t = np.linspace(0, 15_000, 16)
    assert counted.survival(t) == pytest.approx(km_wait().survival(t))


def test_prediction_below_and_beyond_the_timeout():
    pred = m.predict_timeout(km_wait(), 6_000)
    # S(6 ms) = 4/7; E[min(T, 6 ms)] = 4000·5/7 + 2000·4/7 = 4000 µs.
    assert pred.p_timeout.value == pytest.approx(4 / 7)
    assert pred.mean_stall_us.value == pytest.approx(4_000)
    assert not pred.extrapolated
    assert m.predict_timeout(km_wait(), 20_000).extrapolated


def test_km_draws_follow_the_steps():
    draws = km_wait().draws(70_000, seed=1)
    for value, share in ((0, 2 / 7), (4_000, 1 / 7), (8_000, 2 / 7), (math.inf, 2 / 7)):
        assert np.mean(draws == value) == pytest.approx(share, abs=0.01)


def test_bootstrap_interval_covers_a_known_truth():
    # SYNTHETIC: 2,000 exponential waits (mean 20 ms) censored at 50 ms; true S(10 ms) = e^-0.5.
    rng = np.random.default_rng(7)
    delays = np.minimum(rng.exponential(20_000, 2_000), 50_000)
    wait = m.EmpiricalWait.from_delays("WRITEBACK", delays, 50_000)
    pred = m.predict_timeout(wait, 10_000, replicates=wait.resample(200, seed=2))
    assert pred.p_timeout.low < math.exp(-0.5) < pred.p_timeout.high
    # Width near the binomial 2·1.96·sqrt(p(1−p)/n).
    width = pred.p_timeout.high - pred.p_timeout.low
    p = math.exp(-0.5)
    assert width == pytest.approx(2 * 1.96 * math.sqrt(p * (1 - p) / 2_000), rel=0.25)
    assert pred.replicates == 200


@pytest.mark.parametrize(
    ("delays", "timeout", "reason"),
    [([], 100_000, "no delays"), ([-4_000], 100_000, "negative"), ([4_000], 0, "≤ 0")],
)
def test_bad_delays_name_the_source(delays, timeout, reason):
    with pytest.raises(InputError, match=reason) as err:
        m.EmpiricalWait.from_delays("WRITEBACK", delays, timeout, source="trace.txt")
    assert "trace.txt" in str(err.value)


def test_cycles_attribute_scans_to_the_latest_throttle_of_the_same_pid():
    shrink = pl.DataFrame(
        {
            "pid": [1, 1, 2, 1, 1, 2],
            "ts_ns": [10, 25, 26, 30, 45, 50],
            "nr_scanned": [32, 32, 32, 16, 8, 4],
            "nr_reclaimed": [30, 20, 10, 16, 0, 4],
        }
    )
    throttled = pl.DataFrame(
        {
            "pid": [1, 1, 2],
            "ts_ns": [20, 40, 60],
            "reason": ["WB", "WB", "WB"],
            "usec_timeout": [100, 100, 100],
            "delay_us": [4, 100, 8],
        }
    )
    cycles, pre_s, pre_r = m.cycles_of(shrink, throttled)
    # pid 1: scan at 10 is before its first throttle; 25 and 30 follow the throttle at 20;
    # 45 follows the one at 40. pid 2: both scans precede its only throttle (no scans after).
    assert (pre_s, pre_r) == (32 + 32 + 4, 30 + 10 + 4)
    assert cycles["scanned"].to_list() == [48, 8, 0]
    assert cycles["reclaimed"].to_list() == [36, 0, 0]
    assert cycles["delay_us"].to_list() == [4, 100, 8]


def hand_observation() -> m.Observation:
    # Four throttles (delays 0, 4, 8 ms and one at the 12 ms timeout), each followed by 100
    # scanned / 80 reclaimed pages; 1 s of reclaim in all.
    cycles = pl.DataFrame(
        {
            "reason": ["WB"] * 4,
            "usec_timeout": [12_000.0] * 4,
            "delay_us": [0.0, 4_000.0, 8_000.0, 12_000.0],
            "scanned": [100] * 4,
            "reclaimed": [80] * 4,
        }
    )
    return m.Observation("hand", cycles, 0, 0, 80, 1.0, 50_000.0, 10_000.0)


def test_cycle_model_by_hand():
    model = m.calibrate([hand_observation()])
    # Sleep 24 ms of the 1 s: 0.976 s scanning 400 pages; 4 throttles per 400 pages.
    assert model.scan_s_per_page == pytest.approx(0.976 / 400)
    at_observed = m.predict_cycle(model)
    assert at_observed.velocity_pps.value == pytest.approx(400)
    # τ = 4 ms: E[min(T, 4 ms)] = 4000·3/4 = 3000 µs ⇒ s/page = 0.976/400 + 0.01·0.003.
    short = m.predict_cycle(model, {"WB": 4_000})
    assert short.velocity_pps.value == pytest.approx(1 / (0.976 / 400 + 0.01 * 0.003))
    # Every cycle reclaimed 80%: the efficiency GLM is flat at 0.8.
    assert short.efficiency.value == pytest.approx(0.8)
    assert m.predict_cycle(model, {"WB": 50_000}).extrapolated
    with pytest.raises(ValueError, match="no throttle reason"):
        m.predict_cycle(model, {"CONGESTED": 4_000})


def test_efficiency_glm_recovers_a_known_slope():
    # SYNTHETIC: cycle efficiency logit⁻¹(1 + 2x), x = sleep·w/P = sleep (µs)·1e-5 here.
    rng = np.random.default_rng(5)
    delays = rng.choice([0.0, 20_000.0, 40_000.0, 60_000.0], 400)
    scanned = np.full(400, 1_000)
    reclaimed = rng.binomial(scanned, 1 / (1 + np.exp(-(1 + 2 * delays * 1e-5))))
    cycles = pl.DataFrame(
        {
            "reason": ["WB"] * 400,
            "usec_timeout": [100_000.0] * 400,
            "delay_us": delays,
            "scanned": scanned,
            "reclaimed": reclaimed,
        }
    )
    model = m.calibrate([m.Observation("sim", cycles, 0, 0, 0, 10.0, 10.0, 1.0)])
    a, b = model.reason("WB").coef
    assert a == pytest.approx(1, abs=0.05)
    assert b == pytest.approx(2, abs=0.1)
    # Every sleep at 0 (τ → 0⁺ cuts every sleep): efficiency → logit⁻¹(1).
    tiny = m.predict_cycle(model, {"WB": 1e-9})
    assert tiny.efficiency.value == pytest.approx(1 / (1 + math.exp(-1)), abs=0.01)


@pytest.fixture(scope="module")
def bundled() -> tuple[list[m.Observation], list[m.Observation]]:
    first = [mmtests.find_runs(DATA / "stutterp-dirty20")[0].iterations[0]]
    second = [mmtests.find_runs(DATA / "stutterp-dirty5")[0].iterations[0]]
    return m.observe_iteration(first[0]), m.observe_iteration(second[0])


def test_real_capture_counts_match_its_readme(bundled):
    (obs,), _ = bundled
    # data/stutterp-dirty20/README.md: iteration 0 reclaimed 903196 pages (trace and vmstat);
    # mm_vmscan_throttled are all VMSCAN_THROTTLE_WRITEBACK at HZ/10 = 100 ms.
    assert obs.reclaimed == 903_196
    assert set(obs.cycles["reason"]) == {"VMSCAN_THROTTLE_WRITEBACK"}
    assert set(obs.cycles["usec_timeout"]) == {100_000.0}
    model = m.calibrate([obs])
    # At its own timeout the calibrated cycle reproduces the observed velocity exactly.
    assert m.predict_cycle(model).velocity_pps.value == pytest.approx(obs.velocity_pps)
    shorter = m.predict_cycle(model, {"VMSCAN_THROTTLE_WRITEBACK": 10_000})
    assert shorter.velocity_pps.value > obs.velocity_pps


def test_validation_scores_against_the_naive_baseline(bundled):
    first, second = bundled
    result = m.validate(m.calibrate(first), second)
    row = result.rows.row(0, named=True)
    assert row["baseline_velocity_pps"] == pytest.approx(first[0].velocity_pps)
    assert result.velocity_error == pytest.approx(
        abs(row["predicted_velocity_pps"] - row["velocity_pps"]) / row["velocity_pps"]
    )
    assert result.velocity_error_sd is None  # one target run: no spread
