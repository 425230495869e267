"""Estimators of ``mmlab compare`` against independent computations (SciPy's own
Harrell–Davis, a naive bootstrap, hand-worked examples) and its error rates on a
fixed-seed SYNTHETIC simulation with known truth."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.stats.mstats import hdquantiles
from statsmodels.stats.multitest import multipletests

from analysis.stats import rules
from analysis.stats.bootstrap import MEAN, harrell_davis, t_interval, two_stage
from analysis.stats.significance import (
    compare_samples,
    mmtests_summary,
    needed_runs,
    permutation_p,
    superiority,
)
from analysis.stats.validation_compare.simulate import kernel_runs


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9, 0.99])
def test_harrell_davis_matches_scipy(p):
    x = np.random.default_rng(1).lognormal(size=257)
    assert harrell_davis(x, p) == pytest.approx(hdquantiles(x, [p])[0], rel=1e-12)


def test_windowed_draws_match_a_naive_bootstrap():
    """One run: the gamma-spacing draws have the distribution of HD of full resamples."""
    rng = np.random.default_rng(2)
    x = rng.lognormal(size=150)
    fast = two_stage([x], [0.9], 4000, rng)[0.9][:, 0]
    naive = [harrell_davis(x[rng.integers(150, size=150)], 0.9) for _ in range(4000)]
    assert fast.mean() == pytest.approx(np.mean(naive), rel=0.02)
    assert fast.std() == pytest.approx(np.std(naive), rel=0.08)


def test_two_stage_resamples_runs():
    """Runs far apart: the bootstrap sd of the run-mean comes from the between-run spread
    (resampling 2 runs {0, 10}: mean is 0, 5 or 10 w.p. ¼, ½, ¼ → sd √12.5)."""
    rng = np.random.default_rng(3)
    runs = [np.full(50, 0.0) + rng.normal(0, 1e-6, 50), np.full(50, 10.0)]
    draws = two_stage(runs, [MEAN], 20000, rng)[MEAN].mean(axis=1)
    assert draws.std() == pytest.approx(math.sqrt(12.5), rel=0.03)


def test_t_interval_corrects_for_few_runs():
    draws = np.array([1.0, 3.0])  # sd 1.4142 → ×√(3/2) with 3 runs, t(2) 4.3027
    iv = t_interval(2.0, draws, 3, 0.95)
    assert iv.high - 2.0 == pytest.approx(4.302653 * math.sqrt(2) * math.sqrt(1.5), rel=1e-5)


def test_permutation_p_hand_worked():
    # 3 vs 3 fully separated runs: only the observed split and its mirror are as extreme.
    assert permutation_p(np.array([1.0, 2, 3]), np.array([4.0, 5, 6])) == (0.1, 20)
    # Identical groups: every split is at least as extreme.
    assert permutation_p(np.array([2.0, 2]), np.array([2.0, 2]))[0] == 1.0


def test_superiority_hand_worked_and_scipy_statistic():
    iv = superiority(np.array([1.0, 3.0]), np.array([2.0, 4.0]), 0.95)
    assert iv.estimate == 0.75  # pairs new>base: 2>1, 4>1, 4>3 of 4
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=40), rng.normal(0.5, size=30)
    iv = superiority(a, b, 0.95)
    w = stats.brunnermunzel(a, b).statistic
    assert (iv.estimate - 0.5) / iv.se == pytest.approx(w, rel=1e-9)
    assert iv.low < iv.estimate < iv.high


def test_bh_q_values_hand_worked():
    # p 0.01, 0.04, 0.03 -> sorted ranks 1..3: 0.03, 0.04, 0.04 (Benjamini–Hochberg).
    q = multipletests([0.01, 0.04, 0.03], method="fdr_bh")[1]
    assert list(np.round(q, 10)) == [0.03, 0.04, 0.04]


def test_needed_runs_normal_approximation():
    """Two-sample t power, checked against the normal formula 2(z_.975 + z_.8)²/d² (+1)."""
    base, new = np.log([100.0, 110, 90, 105]), np.log([112.0, 120, 101, 116])
    n = needed_runs(np.exp(base), np.exp(new), 0.05)
    sd = math.sqrt((np.var(base, ddof=1) + np.var(new, ddof=1)) / 2)
    d = abs(new.mean() - base.mean()) / sd
    approx = 2 * (stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) ** 2 / d**2
    assert approx <= n <= approx + 2


def test_mmtests_summary_hand_worked():
    runs = [np.array([1.0, 2.0, 3.0]), np.array([4.0, 10.0, 6.0])]
    s = mmtests_summary(runs, higher_is_better=False)
    assert s["Amean"] == pytest.approx((2 + 20 / 3) / 2)
    assert s["Stddev"] == pytest.approx(np.std([1, 2, 3, 4, 10, 6], ddof=1))
    assert s["BAmean-50"] == pytest.approx(2.0)  # best 3 of 6 (lowest): 1, 2, 3
    assert (s["Min"], s["Max"]) == (1.0, 10.0)
    assert mmtests_summary(runs, higher_is_better=True)["BAmean-50"] == pytest.approx(20 / 3)


def test_mmtests_rules_hand_worked():
    base, new = np.array([10.0, 11, 12]), np.array([13.0, 14, 15])
    # t = 3 / sqrt(1/3 + 1/3) = 3.674, df 4 -> p 0.021 < 0.10
    assert rules.mmtests_2018(base, new)
    # mean ± 1.96 sd: [9.04, 12.96] and [12.04, 15.96] overlap
    assert not rules.mmtests_2024(base, new)


def test_simulated_aa_rate_and_coverage():
    """Fixed-seed subset of the validation (analysis/stats/validation_compare): 5 runs per
    kernel, heavy-tailed mixture with a run random effect. The run-level test's A/A
    rejection rate stays within 5 % + 2 MC se; the 95 % CI of the change covers the true
    +20 % in 93 % ± 2 MC se; pooled Mann–Whitney, on the same data, rejects far too often."""
    rng = np.random.default_rng(20261123)
    sims, rejected, covered, pooled = 120, 0, 0, 0
    for _ in range(sims):
        a = kernel_runs(rng, "mixture", 5, 60, run_sd=0.1)
        b = kernel_runs(rng, "mixture", 5, 60, run_sd=0.1)
        c = kernel_runs(rng, "mixture", 5, 60, run_sd=0.1, change="location", effect=0.2)
        rejected += compare_samples(a, b, resamples=200, seed=rng).p < 0.05
        pooled += rules.pooled_mannwhitney(np.concatenate(a), np.concatenate(b))
        lo, hi = compare_samples(a, c, resamples=400, seed=rng).change_ci
        covered += lo <= 20.0 <= hi
    se = math.sqrt(0.05 * 0.95 / sims)
    assert rejected / sims <= 0.05 + 2 * se
    assert covered / sims >= 0.95 - 2 * math.sqrt(0.95 * 0.05 / sims)
    assert pooled / sims > 0.2


def test_needed_runs_never_below_what_the_permutation_test_can_resolve():
    # A huge effect: 4 runs each is the fewest for which 2/C(8,4) = 0.029 < 0.05.
    base, new = np.array([1.0, 1.0 + 1e-12, 1.0 + 2e-12]), np.array([5.0, 5.0, 5.0 + 1e-12])
    assert needed_runs(base, new, 0.05) == 4
    assert needed_runs(base, base, 0.05) is None
