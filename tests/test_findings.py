"""The notebooks' opening paragraphs (analysis.report.findings) say what the numbers say:
each claim that could flip is chosen by the numbers handed in."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from analysis.report.findings import knob_finding, trace_finding, trace_overview, validation_finding


@dataclass(frozen=True)
class Score:
    capture: str
    quantity: str
    model_error: float
    no_change_error: float
    change_p: float | None
    tau_us: float = 20_000.0
    calibration_tau_us: float = 100_000.0


def test_validation_finding_says_where_the_model_lost_to_no_change():
    scores = [
        Score("data/vm/wb20", "p_timeout", 9.4, 32.4, 0.079),
        Score("data/vm/wb500", "p_timeout", 17.0, 27.2, 0.0079),
        Score("data/vm/wb20", "velocity_pps", 0.41, 0.34, 0.26),
        Score("data/vm/wb500", "velocity_pps", 0.37, 0.40, 0.29),
    ]
    text = validation_finding(scores, "model", "aa1")
    assert "scored on wb20 and wb500" in text
    assert "beats no change for P(timeout) in every capture" in text
    # Velocity beat no change in wb500 only: it is among the losses, with no what-if support.
    assert "For velocity p/s it does not" in text
    assert "in wb500 P(timeout) (p 0.0079)" in text and "in wb20" not in text
    # The A/A capture (the calibration's own timeout) has nothing to beat: it is left out.
    aa = Score("data/vm/aa2", "velocity_pps", 0.5, 0.4, 0.01, tau_us=100_000.0)
    text = validation_finding([*scores, aa], "model", "aa1")
    assert "(A/A check: aa2)" in text and "beats no change for P(timeout)" in text
    assert "in aa2 velocity p/s (p 0.01)" in text
    flipped = [Score(s.capture, s.quantity, s.model_error, s.no_change_error, 0.5) for s in scores]
    assert "No observed quantity changed at p < 0.05" in validation_finding(flipped, "model", "aa1")
    worse = [Score(s.capture, s.quantity, 1.0, 0.5, None) for s in scores]
    assert "does not beat no change for any quantity" in validation_finding(worse, "model", "aa1")


def test_knob_finding_names_each_pair_changes_and_the_smallest_other_p():
    p = pl.DataFrame(
        {"pair": ["aa1 vs aa2", "aa1 vs wb20"], "stall": [0.22, 0.048], "eff": [0.016, 0.17]}
    )
    text = knob_finding(p, "aa1", {"stall": "stall us", "eff": "efficiency"})
    assert "aa1 vs aa2: efficiency (p 0.016) changed; the rest did not (p ≥ 0.22)." in text
    assert "aa1 vs wb20: stall us (p 0.048) changed; the rest did not (p ≥ 0.17)." in text


def test_trace_overview_and_finding_from_the_study_tables():
    stalls = pl.DataFrame(
        {"run": ["a", "b"], "context": ["memcg", "memcg"], "iterations": [6, 3]}
        | {"stalls_mean": [100.4, 200.6], "stalled_s_mean": [16.94, 64.31]}
        | {"median_ms_mean": [0.229, 0.414], "p99_ms_mean": [19.36, 101.7]}
    )
    throttle = pl.DataFrame(
        {"run": ["b", "a"], "event": ["mm_vmscan_throttled"] * 2, "context": ["memcg"] * 2}
        | {"reason": ["VMSCAN_THROTTLE_WRITEBACK"] * 2, "events_mean": [1024.0, 352.8]}
        | {"timeout_share_mean": [0.0512, 0.0], "zero_share_mean": [0.237, 0.388]}
    )
    overview = trace_overview(throttle, stalls)
    assert overview["run"].to_list() == ["a", "b"]
    assert overview["throttles/iter"].to_list() == [353, 1024]
    text = trace_finding(overview)
    assert "Over 2 runs every traced reclaim stall was memcg reclaim" in text
    assert "16.9–64.3 s stalled" in text and "p99 19–102 ms" in text
    assert "WRITEBACK throttling: 353–1,024 sleeps" in text
    assert "0.0–5.1 % reached the timeout" in text
    none = trace_finding(trace_overview(pl.DataFrame(), stalls))
    assert none.endswith("No task was throttled (`mm_vmscan_throttled`).")
