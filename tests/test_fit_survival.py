"""Kaplan–Meier, log-rank and Turnbull (analysis.stats.survival) against hand-worked values
and independent computations written out here."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

from analysis.stats.fit import JiffyData
from analysis.stats.survival import (
    jiffy_intervals,
    kaplan_meier,
    log_rank,
    turnbull,
    turnbull_jiffies,
)


def test_kaplan_meier_hand_worked():
    # Events at 1, 3, 4; a censored stall at 2: S = 3/4, then 3/4 · 1/2, then 0.
    km = kaplan_meier(np.array([1.0, 2.0, 3.0, 4.0]), np.array([False, True, False, False]))
    assert km["time_us"].to_list() == [1.0, 3.0, 4.0]
    assert km["survival"].to_list() == pytest.approx([0.75, 0.375, 0.0])
    assert all(lo <= s <= hi for lo, s, hi in km.select("ci_low", "survival", "ci_high").rows())


def _log_rank_by_hand(a, b):
    times = np.unique(np.concatenate([a, b]))
    o_minus_e = var = 0.0
    for t in times:
        at_a, at_b = np.sum(a >= t), np.sum(b >= t)
        d_a, d = np.sum(a == t), np.sum(a == t) + np.sum(b == t)
        n = at_a + at_b
        o_minus_e += d_a - d * at_a / n
        if n > 1:
            var += d * (at_a / n) * (at_b / n) * (n - d) / (n - 1)
    return o_minus_e**2 / var


def test_log_rank_matches_the_textbook_statistic():
    rng = np.random.default_rng(2)
    a = np.round(rng.exponential(10.0, 60), 1)
    b = np.round(rng.exponential(16.0, 50), 1)
    result = log_rank(a, np.zeros(60, bool), b, np.zeros(50, bool))
    expected = _log_rank_by_hand(a, b)
    assert result.chi2 == pytest.approx(expected, rel=1e-9)
    assert result.p_value == pytest.approx(stats.chi2.sf(expected, 1), rel=1e-9)


def test_turnbull_on_disjoint_intervals_is_the_histogram():
    _, t, s = turnbull(np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0]), np.array([2.0, 1, 1]))
    assert t.tolist() == [1.0, 2.0, 3.0]
    assert s == pytest.approx([0.5, 0.25, 0.0])


def test_turnbull_maximises_the_interval_likelihood():
    data = JiffyData(np.array([30, 50, 25, 10, 0, 5, 8]), 4000.0, 24000.0)
    left, right, counts = jiffy_intervals(data)
    lo, hi, s = turnbull(left, right, counts)
    mass = -np.diff(np.concatenate([[1.0], s]))
    alpha = (left[:, None] <= lo[None, :]) & (right[:, None] >= hi[None, :])

    def nll(z):
        p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        return -np.dot(counts, np.log(np.clip(alpha @ p, 1e-300, None)))

    best = optimize.minimize(
        nll, np.zeros(len(hi)), method="Nelder-Mead", options={"maxiter": 20000}
    )
    assert -nll(np.log(np.maximum(mass, 1e-300))) >= -best.fun - 1e-6


def test_turnbull_band_holds_the_estimate():
    data = JiffyData(np.array([94, 112, 11, 5, 6, 0, 0, 0, 0, 0, 0, 11]), 4000.0, 44000.0)
    curve = turnbull_jiffies(data, bootstrap=50, seed=1)
    rows = curve.select("ci_low", "survival", "ci_high").rows()
    assert all(lo - 1e-9 <= s <= hi + 1e-9 for lo, s, hi in rows)
    assert curve["survival"].is_sorted(descending=True)
