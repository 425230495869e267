"""Fixed-seed subset of the simulation study (analysis.stats.validation.simulate).

Synthetic data with known truth: a kswapd-WRITEBACK-like wait (Weibull shape 0.8, scale
12 ms, 20 % woken at once, 100 ms timeout) at HZ 250 through k = floor(T/J + U).
"""

from __future__ import annotations

from analysis.stats.validation.simulate import CHECKED, TRUTHS, Cell, simulate_cell


def test_tick_phase_fit_covers_and_floor_binning_is_biased():
    row = simulate_cell(Cell(TRUTHS[0], hz=250, n=1000), reps=200, seed=4, aic_reps=0)
    assert row["reps"] == 200
    pooled = sum(row[name]["coverage"] for name in CHECKED) / len(CHECKED)
    assert 0.93 <= pooled <= 0.97
    for name in CHECKED:
        assert row[name]["coverage"] >= 0.90, name
        # Small: under 3 % or within 3 Monte-Carlo SEs (P(timeout) is a rare event here).
        bias = abs(row[name]["rel_bias"])
        assert bias < max(0.03, 3 * row[name]["rel_bias_se"]), (name, row[name])
    # Ignoring the tick phase reads every wait half a jiffy long: the median, 2 ms here,
    # comes out far too high.
    assert row["q0.5"]["naive_rel_bias"] > 0.2
