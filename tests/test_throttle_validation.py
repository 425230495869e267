"""Out-of-sample scoring of the throttle-timeout model on the bundled patched-kernel sweep
(data/vm-6.12, real captures made under TCG emulation): observed values recomputed
independently from the trace text, the A/A identity, the baselines by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import zstandard

from analysis import cli
from analysis.errors import InputError
from analysis.models import throttle as m
from analysis.models.throttle_validation import (
    RunValues,
    identification_bounds,
    linear_velocity,
    run_values,
    score_capture,
    writeback_conditioned,
)
from analysis.models.throttle_waits import woken_wait

SWEEP = Path(__file__).resolve().parents[1] / "data" / "vm-6.12"
WB = "VMSCAN_THROTTLE_WRITEBACK"
THROTTLED = re.compile(
    r"mm_vmscan_throttled: nid=\d+ usec_timeout=(\d+) usect_delayed=(\d+) reason=(\w+)"
)


def _regex_runs(capture: str) -> dict[str, tuple[int, float, float]]:
    """Per iteration directory: (timeout µs, share of WRITEBACK throttles at the timeout,
    mean min(delay, timeout) µs), read with a regex from the raw trace text."""
    out = {}
    for trace in sorted((SWEEP / capture).glob("*/iter-*/ftrace-*.zst")):
        text = zstandard.ZstdDecompressor().decompressobj().decompress(trace.read_bytes())
        rows = [(int(t), int(d)) for t, d, r in THROTTLED.findall(text.decode()) if r == WB]
        (tau,) = {t for t, _ in rows}
        delays = np.array([d for _, d in rows])
        sleeps = np.minimum(delays, tau)
        out[trace.parent.name] = (tau, float(np.mean(delays >= tau)), float(np.mean(sleeps)))
    return out


@pytest.fixture(scope="module")
def sweep() -> dict[str, list[m.Observation]]:
    return {c: m.observe(SWEEP / c) for c in ("aa1", "aa2", "wb20", "wb500")}


def _iteration(obs: m.Observation) -> str:
    return Path(obs.source).parent.name


def test_run_values_match_the_trace_text(sweep):
    for capture in ("aa1", "wb20"):
        expected = _regex_runs(capture)
        assert len(expected) == len(sweep[capture]) == 5
        for obs in sweep[capture]:
            tau, share, stall = expected[_iteration(obs)]
            got = run_values(obs, WB)
            assert got.tau_us == tau
            assert got.p_timeout == pytest.approx(share, abs=1e-12)
            assert got.mean_stall_us == pytest.approx(stall, rel=1e-12)


def test_wb20_throttle_counts_match_its_readme(sweep):
    # data/vm-6.12/wb20/README.md: "WRITEBACK 20000 x 489, 423, 316, 313, 461" per iteration.
    counts = {_iteration(o): o.cycles.height for o in sweep["wb20"]}
    assert counts == {"iter-0": 489, "iter-1": 423, "iter-2": 316, "iter-3": 313, "iter-4": 461}


@pytest.fixture(scope="module")
def scores(sweep):
    model = m.calibrate(sweep["aa1"], bootstrap=20, seed=1)
    return {
        c: {s.quantity: s for s in score_capture(model, sweep["aa1"], sweep[c], WB, c)}
        for c in ("aa2", "wb20")
    }


def test_aa_prediction_is_the_no_change_baseline(scores):
    # At the calibration's own timeout each one-run Kaplan–Meier model gives back its run's
    # share at the timeout, mean sleep and velocity: the model is the no-change baseline.
    aa = scores["aa2"]
    for q in ("p_timeout", "mean_stall_us", "velocity_pps"):
        assert aa[q].predicted == pytest.approx(aa[q].no_change, rel=1e-6)
        assert aa[q].model_error == pytest.approx(aa[q].no_change_error, rel=1e-6)
    expected = _regex_runs("aa1")
    assert aa["p_timeout"].no_change == pytest.approx(np.mean([v[1] for v in expected.values()]))
    assert aa["p_timeout"].tau_us == aa["p_timeout"].calibration_tau_us == 100_000


def test_wb20_scores_against_the_observed_runs(scores):
    s = scores["wb20"]
    expected = _regex_runs("wb20")
    observed = sorted(v[1] for v in expected.values())
    assert sorted(s["p_timeout"].observed) == pytest.approx(observed)
    assert s["p_timeout"].tau_us == 20_000
    # Errors recomputed: percentage points of a share, relative for the stall.
    p = s["p_timeout"]
    assert p.model_error == pytest.approx(np.mean(np.abs(p.predicted - np.array(observed))) * 100)
    stall = s["mean_stall_us"]
    obs = np.array(stall.observed)
    assert stall.linear == pytest.approx(stall.no_change * 0.2)
    assert stall.linear_error == pytest.approx(np.mean(np.abs(stall.linear - obs) / obs))
    for q in s.values():
        lo, hi = q.interval
        assert q.inside == sum(lo <= v <= hi for v in q.observed)
        assert not q.extrapolated
    # A shorter timeout: no more sleepers can reach it than at 100 ms.
    assert p.predicted >= scores["aa2"]["p_timeout"].predicted


def test_linear_velocity_by_hand():
    # 1000 pages/s = 1 ms/page, 0.4 ms of it asleep; at a fifth of the timeout the sleep is
    # 0.08 ms/page: 1 / 0.68 ms = 1470.6 pages/s.
    run = RunValues("r", 100_000, 0.5, 50_000, 1000.0, 0.5, 0.0004)
    assert linear_velocity(run, 20_000) == pytest.approx(1 / 0.00068)
    assert linear_velocity(run, 100_000) == pytest.approx(1000.0)


def test_a_run_with_two_timeouts_is_refused():
    cycles = pl.DataFrame(
        {
            "reason": [WB, WB],
            "usec_timeout": [100_000.0, 20_000.0],
            "delay_us": [4_000.0, 20_000.0],
            "scanned": [32, 32],
            "reclaimed": [1, 2],
        }
    )
    obs = m.Observation("iter-9/trace", cycles, 0, 0, 0, 1.0, 100.0, 10.0)
    with pytest.raises(InputError, match="several timeouts"):
        run_values(obs, WB)


def test_command_prints_one_table_for_several_captures(capsys):
    argv = ["model", "throttle", str(SWEEP / "aa1"), "--bootstrap", "0", "--json"]
    assert cli.main([*argv, "--validate", str(SWEEP / "aa2"), str(SWEEP / "wb20")]) == 0
    out = json.loads(capsys.readouterr().out)["validation"]
    rows = out["scores"]
    assert [(Path(r["capture"]).name, r["quantity"]) for r in rows][::4] == [
        ("aa2", "p_timeout"),
        ("wb20", "p_timeout"),
    ]
    assert len(rows) == 8
    assert {r["tau_us"] for r in rows} == {100_000, 20_000}
    assert all(len(r["observed_runs"]) == 5 for r in rows)
    assert cli.main([*argv[:-1], "--validate", str(SWEEP / "wb20")]) == 0
    text = capsys.readouterr().out
    table = text[text.index("out-of-sample validation") :]
    assert "tau 20000 us vs 100000 us (another timeout), 5 runs" in table
    assert max(len(line) for line in table.splitlines()) <= 80


def _run(cycles: pl.DataFrame, writeback_pps: float = 100.0) -> m.Observation:
    return m.Observation("iter-0/trace", cycles, 0, 0, 0, 1.0, writeback_pps, 10.0, 250)


def _quantised_exponential(mean_us: float, tau_us: float, n: int, seed: int) -> pl.DataFrame:
    """Synthetic (statistical validation only): exponential latent waits recorded as the
    kernel records them at HZ=250, floor(T/J + U) jiffies of 4000 µs, censored at tau."""
    rng = np.random.default_rng(seed)
    ticks = np.floor(rng.exponential(mean_us, n) / 4000 + rng.random(n))
    delays = np.minimum(ticks * 4000, tau_us)
    return pl.DataFrame(
        {
            "reason": [WB] * n,
            "usec_timeout": [tau_us] * n,
            "delay_us": delays,
            "scanned": [32] * n,
            "reclaimed": rng.binomial(32, 0.5, n),
        }
    )


def test_woken_wait_recovers_a_known_tail_beyond_the_timeout():
    # Exponential waits of mean 30 ms seen through a 20 ms timeout: Kaplan–Meier stops at
    # S(20 ms) = exp(-2/3) = 0.513 and keeps it as never woken; the truth at 100 ms is
    # exp(-10/3) = 0.0357 and E[min(T, 100 ms)] = 30 ms (1 - exp(-10/3)) = 28 930 µs.
    obs = _run(_quantised_exponential(30_000, 20_000, 4000, seed=3))
    km = m.calibrate([obs]).reason(WB).wait
    assert km.survival(np.array([100_000.0]))[0] == pytest.approx(np.exp(-2 / 3), abs=0.03)
    fit = woken_wait(obs, WB)
    assert fit.cure_fraction == 0
    assert fit.survival(np.array([100_000.0]))[0] == pytest.approx(np.exp(-10 / 3), abs=0.02)
    assert fit.restricted_mean_us(100_000) == pytest.approx(28_930, rel=0.08)
    assert fit.support_limit_us == 20_000


def test_identification_bounds_by_hand():
    # Four sleeps, timeout 10 ms: 0, 4 ms, and two at the timeout. S(10 ms) = 1/2,
    # R(10 ms) = (0 + 4 + 10 + 10)/4 = 6 ms; at 50 ms the stall lies in [6, 6 + 40/2] ms.
    wait = m.EmpiricalWait.from_delays(WB, [0, 4000, 10_000, 10_000], 10_000)
    bounds = identification_bounds(wait, 10_000, 50_000)
    assert bounds["p_timeout"] == pytest.approx((0.0, 0.5))
    assert bounds["mean_stall_us"] == pytest.approx((6000.0, 26_000.0))


def test_writeback_conditioned_is_exact_on_a_power_law():
    # Velocity = 3 w^0.8 and efficiency = 0.1 + 0.05 ln w exactly in the calibration runs:
    # the line through them predicts a run at w = 5000 pages/s with no error.
    cycles = _quantised_exponential(10_000, 100_000, 5, seed=0)
    runs = []
    for w in (500.0, 1000.0, 2000.0, 4000.0):
        scanned = 3 * w**0.8  # pages in 1 s of reclaim
        eff = 0.1 + 0.05 * np.log(w)
        runs.append(
            m.Observation("r", cycles.head(0), round(scanned * 1000), round(scanned * 1000 * eff),
                          0, 1000.0, w, 10.0, 250)
        )  # fmt: skip
    target = [m.Observation("t", cycles.head(0), 10, 5, 0, 1.0, 5000.0, 10.0, 250)]
    v, v_pi = writeback_conditioned(runs, target, "velocity_pps")
    e, _ = writeback_conditioned(runs, target, "efficiency")
    assert v[0] == pytest.approx(3 * 5000**0.8, rel=1e-3)
    assert e[0] == pytest.approx(0.1 + 0.05 * np.log(5000), abs=1e-3)
    assert v_pi[0, 0] <= v[0] <= v_pi[0, 1]


def test_beyond_the_timeout_the_woken_fit_beats_kaplan_meier_on_wb500(sweep):
    # Real kernel: calibrated at 20 ms, scored on the kernel that ran 500 ms, where no
    # sleep of any of the 5 runs reached the timeout (README: every delay < 500 ms).
    model = m.calibrate(sweep["wb20"])
    s = {q.quantity: q for q in score_capture(model, sweep["wb20"], sweep["wb500"], WB, "wb500")}
    p, stall = s["p_timeout"], s["mean_stall_us"]
    assert p.extrapolated and set(p.observed) == {0.0}
    # Kaplan–Meier carries S(20 ms), the share of wb20's sleeps at their timeout, to 500 ms.
    assert p.kaplan_meier == pytest.approx(np.mean([v[1] for v in _regex_runs("wb20").values()]))
    assert p.predicted < 0.05 < p.kaplan_meier
    assert p.model_error < p.kaplan_meier_error / 10
    assert stall.model_error < stall.kaplan_meier_error
    lo, hi = stall.bounds
    assert lo <= np.mean(stall.observed) <= hi
    assert p.bounds == (0.0, pytest.approx(p.kaplan_meier, rel=0.05))
    # Velocity and efficiency given each run's writeback rate: one prediction per run.
    assert len(s["velocity_pps"].given_writeback) == 5
    assert s["p_timeout"].given_writeback is None


def test_woken_wait_refuses_a_run_whose_sleeps_all_reached_the_timeout():
    # Every delay at the timeout: only "the wake comes later" is known, no shape to fit.
    cycles = _quantised_exponential(10_000_000, 20_000, 50, seed=1)
    assert set(cycles["delay_us"].to_list()) == {20_000.0}
    with pytest.raises(InputError, match="reached the 20000 us timeout"):
        woken_wait(_run(cycles), WB)
