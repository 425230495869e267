"""The throttle-timeout model: closed forms, a hand-worked Kaplan–Meier, hand-computed cycles.

Every expected number is worked out here by hand (the comments show the arithmetic) or comes
from an exponential distribution's closed form, or from a simulation with known truth
(labelled SYNTHETIC), or from a figure published in the bundled capture's README.
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest
from scipy import stats

from analysis.cli import main
from analysis.errors import InputError
from analysis.ingest import histogram, mmtests
from analysis.metrics import pairing
from analysis.metrics import throttle as throttle_metrics
from analysis.models import throttle as m
from analysis.stats.latent import LatentWait
from analysis.study.throttle_model import Standing, designs
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


def test_p_timeout_counts_what_the_trace_counts():
    """One definition of "timed out": usect_delayed >= usec_timeout. Hand-worked: delays
    0, 0, 4, 8, 8 ms and two at the 12 ms timeout (HZ=250, whole jiffies). Under a timeout
    of 8 ms the trace would count 2 (at 8) + 2 (censored at 12) = 4 of 7 as timed out; the
    old P(T > 8 ms) said 2 of 7, one jiffy off."""
    wait = km_wait()
    assert wait.timed_out(8_000) == pytest.approx(4 / 7)
    assert wait.timed_out(12_000) == pytest.approx(2 / 7)  # the calibration: 2 of 7 hit it
    assert wait.timed_out(4_000) == pytest.approx(5 / 7)
    assert m.predict_timeout(wait, 8_000).p_timeout.value == pytest.approx(4 / 7)
    delays = np.array([0, 0, 4_000, 8_000, 8_000, 12_000, 12_000])
    for tau in (4_000, 8_000, 12_000):  # the observed share under each timeout, by hand
        assert wait.timed_out(tau) == pytest.approx(np.mean(delays >= tau))


def test_all_censored_sleepers_are_all_beyond_the_timeout():
    wait = m.EmpiricalWait.from_delays("WB", [100_000, 104_000], 100_000)
    assert wait.survival(np.array([0.0, 100_000.0, 1e6])) == pytest.approx([1, 1, 1])
    assert (wait.zero_mass, wait.cure_fraction) == (0.0, 1.0)
    assert wait.restricted_mean_us(50_000) == pytest.approx(50_000)
    assert wait.quantile_us(0.5) == math.inf
    assert np.isinf(wait.draws(10, seed=0)).all()


def test_kaplan_meier_with_counts_equals_repeated_delays():
    counted = m.EmpiricalWait.from_delays(
        "WRITEBACK", [0, 4_000, 8_000, 12_000], 12_000, [2, 1, 2, 2]
    )
    t = np.linspace(0, 15_000, 16)
    assert counted.survival(t) == pytest.approx(km_wait().survival(t))


def test_kaplan_meier_censors_each_delay_at_its_own_timeout():
    # Timeout 4 ms: delays 0 and 4 ms (censored); timeout 12 ms: 0, 8 ms and 12 ms (censored).
    # t=0: 5 at risk, 2 events → 3/5; the censoring at 4 ms removes one; t=8: 2 at risk,
    # 1 event → 3/5 · 1/2 = 3/10.
    wait = m.EmpiricalWait.from_delays(
        "WB", [0, 4_000, 0, 8_000, 12_000], [4_000, 4_000, 12_000, 12_000, 12_000]
    )
    assert wait.survival(np.array([0.0, 5_000.0, 8_000.0])) == pytest.approx([3 / 5, 3 / 5, 3 / 10])
    assert wait.support_limit_us == 12_000
    assert wait.cure_fraction == pytest.approx(3 / 10)


def test_group_waits_weigh_histogram_counts():
    events = pl.DataFrame(
        {
            "event": ["mm_vmscan_throttled"] * 4,
            "context": ["kswapd", "kswapd", "kswapd", "direct"],
            "reason": ["WB"] * 4,
            "usec_timeout": [100_000, 100_000, 100_000, None],
            "delay_us": [0, 40_000, 100_000, None],
            "count": [6, 3, 1, 50],
        }
    )
    (key,) = m.group_waits(events)  # the direct totals row has no delay: left out
    wait = m.group_waits(events)[key]
    assert key == ("mm_vmscan_throttled", "kswapd", "WB")
    # 10 sleepers: 6 at 0, 3 at 40 ms, 1 censored at 100 ms: S = 0.4, 0.1, 0.1.
    assert wait.survival(np.array([0.0, 40_000.0, 100_000.0])) == pytest.approx([0.4, 0.1, 0.1])
    assert wait.restricted_mean_us(100_000) == pytest.approx((3 * 40_000 + 100_000) / 10)


def test_seed_000_groups_agree_with_the_throttle_table(seeds_dir):
    labels = {0: "vanilla", 1: "vanilla", 2: "kswapd", 3: "direct totals"}
    labels |= {4: "direct", 5: "direct", 6: "direct"}
    hist = histogram.read(seeds_dir / "000_901e324e43c5b0b5.txt", labels=labels)
    events = throttle_metrics.throttle_events(hist, pairing.all_intervals({}))
    table = throttle_metrics.throttle_table(events).filter(pl.col("known_delay") > 0)
    waits = m.group_waits(events)
    assert len(waits) == table.height == 6
    for row in table.iter_rows(named=True):
        wait = waits[(row["event"], row["context"], row["reason"])]
        tau = row["usec_timeout"]
        # Censoring only at the timeout: KM's S(τ) is the share at the timeout, and its
        # restricted mean the mean of the delays capped at it.
        assert wait.survival(np.array([float(tau)]))[0] == pytest.approx(row["timeout_share"])
        if row["max_usec"] <= tau:
            assert wait.restricted_mean_us(tau) == pytest.approx(row["mean_usec"])


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


# Every cycle reclaims exactly 80%: the GLM fits exactly, which statsmodels warns about.
@pytest.mark.filterwarnings("ignore::statsmodels.tools.sm_exceptions.PerfectSeparationWarning")
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
    curve = m.timeout_curve(model, "WB", [4_000, 12_000])
    assert curve["velocity_pps"].to_list() == pytest.approx([short.velocity_pps.value, 400])
    # P(T ≥ τ), as the trace counts a timeout (usect_delayed ≥ usec_timeout): the 4 ms,
    # the 8 ms and the censored sleeper reach 4 ms (3/4); only the censored one reaches
    # 12 ms (1/4).
    assert curve["p_timeout"].to_list() == pytest.approx([3 / 4, 1 / 4])
    # Twice the throttles per page at τ = 4 ms: s/page = 0.976/400 + 0.02·0.003.
    doubled = m.predict_cycle(model, {"WB": 4_000}, throttles_per_page={"WB": 0.02})
    assert doubled.velocity_pps.value == pytest.approx(1 / (0.976 / 400 + 0.02 * 0.003))


def test_designs_size_the_largest_change_on_the_log_scale():
    # Runs whose logs are -s, 0, s around 1000 pages/s and 0.5: sd of the logs s = 0.2. The
    # cycle at 10 ms predicts +20 % velocity (1200, the larger change; 5 ms: +10 %) and
    # efficiency +10 %; the normal approximation 2(z_0.975 + z_0.8)² s² / log(1 + c)² is
    # what Welch's t needs, give or take its few extra runs.
    s = 0.2
    runs = [
        SimpleNamespace(velocity_pps=1000 * math.exp(x), efficiency=0.5 * math.exp(x))
        for x in (-s, 0.0, s)
    ]

    def cycle(taus, velocity, efficiency):
        return m.CyclePrediction(taus, m.Estimate(velocity), m.Estimate(efficiency), False)

    base = cycle((), 1000.0, 0.5)
    cycles = [
        base,
        cycle((("WB", 5_000.0),), 1100.0, 0.5),
        cycle((("WB", 10_000.0),), 1200.0, 0.55),
    ]
    won = [Standing(q, captures=1, won=1) for q in ("velocity_pps", "efficiency")]
    velocity, efficiency = designs(runs, cycles, won)
    assert velocity.quantity == "velocity_pps" and velocity.taus_us == (10_000.0,)
    assert velocity.change == pytest.approx(0.2) and efficiency.change == pytest.approx(0.1)
    assert velocity.log_sd == pytest.approx(s) and velocity.per_run is None
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    for d, c in ((velocity, 0.2), (efficiency, 0.1)):
        approx = 2 * z**2 * s**2 / math.log1p(c) ** 2
        assert approx <= d.runs_needed <= approx + 3
    # Not validated, or no better than no change in one capture of two: no figure.
    lost = [Standing(q, captures=2, won=1) for q in ("velocity_pps", "efficiency")]
    for standing in ((), lost):
        assert [d.runs_needed for d in designs(runs, cycles, standing)] == [None, None]
    # One run: no spread to size a design on; no prediction at another timeout: no design.
    (one,) = designs(runs[:1], cycles, won)[:1]
    assert one.log_sd is None and one.runs_needed is None
    assert designs(runs, [base]) == ()


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


def test_per_run_models_give_the_run_spread(bundled):
    first, second = bundled
    pooled = m.calibrate(first + second)
    pred = m.per_run(m.predict_cycle(pooled), [m.calibrate(first), m.calibrate(second)])
    # At the observed timeout each run's model reproduces its own run's velocity.
    assert [v for v, _ in pred.runs] == pytest.approx(
        [first[0].velocity_pps, second[0].velocity_pps]
    )
    v_sd, _ = pred.run_sd()
    assert v_sd == pytest.approx(abs(first[0].velocity_pps - second[0].velocity_pps) / math.sqrt(2))


SHRINK_FIELDS = (
    "nr_congested=0 nr_immediate=0 nr_activate_anon=0 nr_activate_file=0 nr_ref_keep=0 "
    "nr_unmap_fail=0 priority=12 flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC"
)


def hand_iteration(tmp_path, *, throttled: bool) -> mmtests.Iteration:
    """A one-reclaim iteration written by hand: 10 ms of memcg reclaim, two scans of 32
    pages (16 then 32 reclaimed), between them an 8 ms writeback throttle (if ``throttled``);
    vmstat: nr_written +1000 then +4000 pages in two 5 s steps, dirty + writeback 100, 200,
    400 pages."""
    it = tmp_path / "run" / "iter-0"
    it.mkdir(parents=True)
    (it / "tests-timestamp").write_text("test begin :: t 1700000000\ntest end :: t 1700000010 0\n")
    task = "          python-100     [000] .....  "
    lines = [
        f"{task}10.000000: mm_vmscan_memcg_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE",
        f"{task}10.000100: mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned=32 nr_reclaimed=16 "
        f"nr_dirty=16 nr_writeback=0 {SHRINK_FIELDS}",
        f"{task}10.008100: mm_vmscan_throttled: nid=0 usec_timeout=100000 usect_delayed=8000 "
        "reason=VMSCAN_THROTTLE_WRITEBACK",
        f"{task}10.008200: mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned=32 nr_reclaimed=32 "
        f"nr_dirty=0 nr_writeback=0 {SHRINK_FIELDS}",
        f"{task}10.010000: mm_vmscan_memcg_reclaim_end: nr_reclaimed=48",
    ]
    if not throttled:
        del lines[2]
    (it / "ftrace-t.txt").write_text("\n".join(lines) + "\n")
    (it / "proc-vmstat-t").write_text(
        "time: 1700000000\nnr_dirty 100\nnr_writeback 0\nnr_written 1000\n"
        "time: 1700000005\nnr_dirty 200\nnr_writeback 0\nnr_written 2000\n"
        "time: 1700000010\nnr_dirty 300\nnr_writeback 100\nnr_written 6000\n"
    )
    # Two phases as mmlab capture records them: 1 worker until 10.005 s, then 2 workers.
    phases = [
        {"workers": w, "start_trace_s": a, "end_trace_s": b, "start_epoch_s": e, "end_epoch_s": f}
        for w, a, b, e, f in (
            (1, 10.0, 10.005, 1700000000, 1700000005),
            (2, 10.005, 10.02, 1700000005, 1700000010),
        )
    ]
    (it / "mmlab.json").write_text(json.dumps({"tool": "mmlab capture", "phases": phases}))
    (run,) = mmtests.find_runs(it)
    return run.iterations[0]


def test_observation_of_a_hand_written_iteration(tmp_path):
    (obs,) = m.observe_iteration(hand_iteration(tmp_path, throttled=True))
    assert obs.reclaim_s == pytest.approx(0.010)
    assert obs.velocity_pps == pytest.approx(64 / 0.010)
    assert obs.efficiency == pytest.approx(48 / 64)
    assert (obs.pre_scanned, obs.pre_reclaimed) == (32, 16)
    assert obs.cycles.select("delay_us", "scanned", "reclaimed").rows() == [(8000.0, 32, 32)]
    assert obs.blocked == 16
    assert obs.blocked_share == pytest.approx(16 / 64)
    assert obs.writeback_pps == pytest.approx(5000 / 10)
    assert obs.dirty_pool_pages == pytest.approx((100 + 200 + 400) / 3)
    # 10 ms of reclaim less 8 ms asleep: 2 ms scanning 64 pages.
    assert m.calibrate([obs]).scan_s_per_page == pytest.approx(0.002 / 64)


def test_phases_split_the_iteration(tmp_path):
    iteration = hand_iteration(tmp_path, throttled=True)
    (one,) = m.observe_iteration(iteration, workers=1)
    (two,) = m.observe_iteration(iteration, workers=2)
    # The reclaim interval 10.000-10.010 s is clipped at 10.005 s: 5 ms in each phase.
    assert (one.reclaim_s, two.reclaim_s) == pytest.approx((0.005, 0.005))
    assert (one.scanned, one.reclaimed, one.cycles.height) == (32, 16, 0)
    assert (two.scanned, two.reclaimed, two.cycles.height) == (32, 32, 1)
    assert (one.writeback_pps, two.writeback_pps) == pytest.approx((1000 / 5, 4000 / 5))
    assert (one.dirty_pool_pages, two.dirty_pool_pages) == pytest.approx((150, 300))
    assert two.source.endswith("#workers=2")
    with pytest.raises(InputError, match="no phase with 3 workers"):
        m.observe_iteration(iteration, workers=3)


def test_real_phases_tile_the_iteration(bundled):
    (whole,), _ = bundled
    iteration = mmtests.find_runs(DATA / "stutterp-dirty20")[0].iterations[0]
    phases = [o for w in (4, 8, 16) for o in m.observe_iteration(iteration, workers=w)]
    assert sum(p.scanned for p in phases) == whole.scanned
    assert sum(p.cycles.height for p in phases) == whole.cycles.height
    assert sum(p.reclaim_s for p in phases) == pytest.approx(whole.reclaim_s, rel=1e-3)


def test_cli_refuses_a_capture_without_throttling(tmp_path, capsys):
    hand_iteration(tmp_path, throttled=False)
    assert main(["model", "throttle", str(tmp_path / "run")]) == 2
    assert "no throttle event with a delay" in capsys.readouterr().err
