"""The notebooks' opening paragraphs (analysis.report.findings) say what the numbers say:
each claim that could flip is chosen by the numbers handed in."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from analysis.report.findings import (
    monitor_finding,
    seed_finding,
    timeout_prediction_finding,
    trace_finding,
    trace_overview,
    validation_finding,
)


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


def test_seed_finding_counts_the_verdicts_and_names_what_differs():
    checks = pl.DataFrame(
        {"seed": ["000", "000", "001", "001", "002", "003"],
         "row": ["Kswapd velocity", "Direct velocity", "delta", "delta", "x", "y"],
         "verdict": ["differs", "agrees", "differs", "differs", "cannot recompute",
                     "mmlab only"]}
    )  # fmt: skip
    assert seed_finding(checks) == (
        "Of the 5 figures the seeds print and mmlab checks, 1 agree and 3 differ, each for a "
        "reason stated below (seed 000: Kswapd velocity; seed 001: delta). 1 cannot be "
        "recomputed (the mail omits an input), and mmlab adds 1 figures of its own."
    )


def test_monitor_finding_reads_kib_and_takes_each_runs_first_sample():
    vmstat = pl.DataFrame(
        {"run": ["b", "a", "a", "a"], "iteration": [0, 1, 0, 0], "t_s": [0.0, 0.0, 10.0, 0.0],
         "free": [3 * 2**20, 2**19, 2**20, 2 * 2**20], "so": [0, 7, 1200, 3],
         "wa": [1, 9, 0, 2]}
    )  # fmt: skip
    assert monitor_finding(vmstat) == (
        "vmstat(8), per run: a: 3 samples in 2 iteration(s), free memory 2.00 GiB at the first "
        "and 0.50 GiB at its lowest, swap-out peak 1,200 KiB/s, I/O wait peak 9 %; b: 1 samples "
        "in 1 iteration(s), free memory 3.00 GiB at the first and 3.00 GiB at its lowest, "
        "swap-out peak 0 KiB/s, I/O wait peak 1 %."
    )
    assert monitor_finding(vmstat.clear()) == "The tree holds no vmstat(8) monitor."


def test_timeout_prediction_finding_scores_only_the_timeouts_not_run():
    rows = pl.DataFrame(
        {"capture": ["wb20", "wb20", "aa1", "aa1", "observed"],
         "wait": ["Kaplan-Meier", "woken fit"] * 2 + ["kernel"],
         "p_20ms": [0.6, 0.57, 0.62, 0.64, 0.6], "p_100ms": [0.6, 0.11, 0.27, 0.27, 0.165],
         "p_500ms": [0.6, 0.0007, 0.27, 0.17, 0.0]}
    )  # fmt: skip
    # By hand, in points: Kaplan-Meier 43.5, 60 (wb20 at 100, 500 ms), 2, 27 (aa1 at 20,
    # 500 ms): mean 33.125; woken fit 5.5, 0.07, 4, 17: mean 6.6425; closer: KM once (2 < 4).
    assert timeout_prediction_finding(rows, {"wb20": "p_20ms", "aa1": "p_100ms"}) == (
        "Calibrated on one capture and asked for P(timeout) at a timeout it did not run "
        "(4 predictions), Kaplan-Meier errs by 33.1 points on average (largest 60.0; the closer "
        "in 1) and woken fit errs by 6.6 points on average (largest 17.0; the closer in 3). The "
        "kernels observed 20 ms 60.0 %, 100 ms 16.5 %, 500 ms 0.0 % (run means)."
    )


def test_a_validation_null_is_stated_with_its_size():
    from types import SimpleNamespace

    from analysis.report.standing import undetected_lines

    rows = [
        SimpleNamespace(quantity="a", change_p=0.3, change_mde=0.25),  # null: sized
        SimpleNamespace(quantity="b", change_p=0.01, change_mde=0.25),  # a change: no line
        SimpleNamespace(quantity="c", change_p=None, change_mde=1.0),  # untested: sized
        SimpleNamespace(quantity="d", change_p=0.5, change_mde=None),  # no log scale
    ]
    labels = {"a": ("stall",), "b": ("x",), "c": ("eff",), "d": ("y",)}
    assert undetected_lines(rows, labels, 0.05) == [
        "  stall        no change shown at p < 0.05; these runs detect +25.0/-20.0 %",
        "  eff          no change shown at p < 0.05; these runs detect +100/-50.0 %",
    ]
