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
    linear_velocity,
    run_values,
    score_capture,
)

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
    return {c: m.observe(SWEEP / c) for c in ("aa1", "aa2", "wb20")}


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
