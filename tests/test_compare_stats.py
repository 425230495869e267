"""Estimators of ``mmlab compare`` against independent computations (SciPy's own
Harrell–Davis, a naive bootstrap, hand-worked examples) and its error rates on a
fixed-seed SYNTHETIC simulation with known truth."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats
from scipy.stats.mstats import hdquantiles
from statsmodels.stats.multitest import multipletests

from analysis.stats import rules
from analysis.stats.bootstrap import (
    MEAN,
    harrell_davis,
    run_statistics,
    t_interval,
    two_stage,
)
from analysis.stats.significance import (
    compare_samples,
    compare_table,
    design_runs,
    hodges_lehmann,
    min_attainable_p,
    mmtests_summary,
    permutation_p,
    run_difference,
    run_interval,
    runs_of,
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


def test_bh_q_values_hand_worked():
    # p 0.01, 0.04, 0.03 -> sorted ranks 1..3: 0.03, 0.04, 0.04 (Benjamini–Hochberg).
    q = multipletests([0.01, 0.04, 0.03], method="fdr_bh")[1]
    assert list(np.round(q, 10)) == [0.03, 0.04, 0.04]


def test_design_runs_normal_approximation():
    """Two-sample t power for a named effect, checked against the normal formula
    2(z_(1−α/2) + z_.8)²/d² plus Guenther's t correction z²/4 (+1 for rounding up);
    α = level/rows for a lone change."""
    sd = 0.1
    for effect, rows in ((10.0, 1), (10.0, 4), (5.0, 1)):
        n = design_runs(sd, effect, 0.05, rows)
        d = math.log(1 + effect / 100) / sd
        z = stats.norm.ppf(1 - 0.05 / rows / 2)
        approx = 2 * (z + stats.norm.ppf(0.8)) ** 2 / d**2
        assert approx <= n <= approx + z**2 / 4 + 1
    # No spread between runs: Welch's p has no floor, so two runs (a spread each) suffice.
    assert design_runs(0.0, 10.0, 0.05, 4) == 2


@pytest.mark.parametrize(("ra", "rb"), [(3, 4), (5, 5), (2, 5), (3, 3)])
def test_min_attainable_p_is_what_brute_force_reaches(ra, rb):
    """Fully separated runs give the smallest p the exact test has: 1/C with unequal run
    counts (3 vs 4: 1/35 = 0.0286), 2/C with equal ones (issue 19, defect 7)."""
    base, new = np.arange(ra, dtype=float), 100.0 + np.arange(rb) ** 2
    p, splits = permutation_p(base, new)
    assert splits == math.comb(ra + rb, ra)
    assert min_attainable_p(ra, rb) == pytest.approx(p)
    assert min_attainable_p(3, 4) == pytest.approx(1 / 35)


def long_table(rows: dict[str, dict[str, list[np.ndarray]]], unit: str = "us") -> pl.DataFrame:
    records = [
        (kernel, row, f"{i:02d}", float(v), unit, False)
        for row, kernels in rows.items()
        for kernel, runs in kernels.items()
        for i, run in enumerate(runs)
        for v in run
    ]
    schema = ["kernel", "row", "run", "value", "unit", "higher_is_better"]
    return pl.DataFrame(records, schema=schema, orient="row")


def _aa_rows(rng, names, runs=5, effect=None):
    """SYNTHETIC rows: lognormal samples, run effect exp(N(0, 0.1)); ``effect`` names a
    row whose new kernel is ×2."""
    out = {}
    for name in names:
        scale = 2.0 if name == effect else 1.0
        out[name] = {
            k: [s * 100 * rng.lognormal(rng.normal(0, 0.1), 1.0, 200) for _ in range(runs)]
            for k, s in (("a", 1.0), ("b", scale))
        }
    return out


def test_per_family_bh_keeps_a_primary_change_findable():
    """5 vs 5 runs, one workload row doubled among 4 workload rows and 8 trace rows: BH
    per family (issue 19, defect 1), and the doubled row is found over all 12 rows too,
    where the permutation p alone (≥ 2/252, so q ≥ 12 · 2/252 = 0.095) could not reach
    a verdict (issue 33): Welch's p, the same as SciPy's from the per-run summaries."""
    rng = np.random.default_rng(19)
    work = [f"w{i}" for i in range(4)]
    trace = [f"t{i}" for i in range(8)]
    table = long_table(_aa_rows(rng, work + trace, effect="w0"))
    families = {**dict.fromkeys(work, "workload"), **dict.fromkeys(trace, "traces")}
    split = {r.row: r for r in compare_table(table, "a", ["b"], resamples=300, families=families)}
    pooled = {r.row: r for r in compare_table(table, "a", ["b"], resamples=300)}
    assert split["w0"].p_permutation == pytest.approx(2 / 252)
    assert split["w0"].verdict == "regressed" and split["w0"].family_rows == 4
    assert split["t0"].family == "traces" and split["t0"].family_rows == 8
    w0 = pooled["w0"]
    assert w0.verdict == "regressed" and w0.family_rows == 12 and w0.decided_by == "Welch t"
    assert w0.p_permutation == pytest.approx(2 / 252) and w0.q < 0.05 < 12 * 2 / 252
    b, n = (run_statistics(runs_of(table, "w0", k), 0.5) for k in ("a", "b"))
    welch = stats.ttest_ind(np.log(n), np.log(b), equal_var=False)
    assert w0.p == pytest.approx(welch.pvalue, rel=1e-9)


def test_one_run_is_described_with_no_verdict_and_no_interval():
    """One run per kernel, a 10× difference: change described, no p, CI or verdict; and
    no equivalence either (issue 19, defect 3)."""
    rng = np.random.default_rng(3)
    a, b = [rng.lognormal(0, 0.1, 300)], [10 * rng.lognormal(0, 0.1, 300)]
    r = compare_samples(a, b, resamples=200)
    assert r.verdict == "no verdict" and r.p is None and r.change_ci is None
    assert r.change == pytest.approx(900, rel=0.05)
    assert math.isnan(r.estimate.low) and math.isnan(r.hl_shift.low)


def test_kernel_interval_of_a_heavy_tailed_latency_stays_positive():
    """Runs whose means differ by 100×: the t interval on the raw scale would go below 0
    (mean 3.4e3, se ≈ 3e3 with 3 runs); on the log scale it cannot (defect 7)."""
    runs = [np.full(50, 1.0), np.full(50, 100.0), np.full(50, 10000.0)]
    runs = [r * np.random.default_rng(i).lognormal(0, 0.01, 50) for i, r in enumerate(runs)]
    r = compare_samples(runs, runs, metric="mean", resamples=400)
    assert 0 < r.base_estimate.low < r.base_estimate.estimate < r.base_estimate.high


def test_zero_heavy_row_is_decided_on_its_zero_share():
    """Runs with 56-64 % zeros in a, 16-24 % in b (non-zero values alike): decided on the
    zero share, change −40 percentage points (the mean of the run shares), not on HD
    medians near 0."""
    rng = np.random.default_rng(8)

    def run(zeros):
        x = 1000 * rng.lognormal(0, 0.3, 100)
        x[:zeros] = 0
        return x

    a, b = [run(z) for z in (56, 58, 60, 62, 64)], [run(z) for z in (16, 18, 20, 22, 24)]
    r = compare_samples(a, b, resamples=200)
    assert r.change_kind == "zero share" and r.change == pytest.approx(-40.0)
    shares = [np.arange(56, 65, 2) / 100, np.arange(16, 25, 2) / 100]
    welch = stats.ttest_ind(shares[1], shares[0], equal_var=False)
    assert r.p == pytest.approx(welch.pvalue, rel=1e-9) and r.verdict == "regressed"
    assert r.p_permutation == pytest.approx(2 / 252)
    low, high = welch.confidence_interval(0.95)
    assert r.change_ci == pytest.approx((100 * low, 100 * high), rel=1e-9)
    assert r.zero_share == pytest.approx((0.6, 0.2))
    assert 0 <= r.base_estimate.estimate <= 1
    assert any("non-zero samples" in n for n in r.notes)


def test_counter_from_zero_gets_an_absolute_change_and_a_verdict():
    """A counter 0 in every base run and ~1000 in every new one (one value per run, 6
    runs): the relative change is undefined, the absolute one is ~+1000 with a CI that
    excludes 0; p SciPy's Welch on the raw values (a 0 has no log), the permutation p
    beside it 2/C(12, 6) (defect 6)."""
    base = [np.array([0.0])] * 6
    new = [np.array([v]) for v in (990.0, 1010.0, 1000.0, 1005.0, 995.0, 1002.0)]
    r = compare_samples(base, new, metric="mean", resamples=300)
    assert r.change_kind == "absolute" and r.change == pytest.approx(1000.3333, rel=1e-6)
    assert r.change_ci[0] > 0 and r.p_permutation == pytest.approx(2 / 924)
    welch = stats.ttest_ind([v[0] for v in new], [0.0] * 6, equal_var=False)
    assert r.p == pytest.approx(welch.pvalue, rel=1e-9)
    assert r.verdict == "regressed"


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


def test_run_level_intervals_match_scipy():
    """The change's interval is Welch's t interval over per-run values (SciPy's
    ttest_ind confidence_interval); the kernel's is the one-sample t interval, taken
    through the log by the delta method for positive values."""
    base, new = np.array([10.0, 12.0, 11.0, 13.0]), np.array([14.0, 18.0, 15.0])
    iv = run_difference(new, base, 0.95, log=False)
    low, high = stats.ttest_ind(new, base, equal_var=False).confidence_interval(0.95)
    assert (iv.low, iv.high) == pytest.approx((low, high), rel=1e-9)
    one = run_interval(base, 0.95)
    se = np.std(base, ddof=1) / 2 / base.mean()
    t = stats.t.ppf(0.975, 3)
    assert (one.low, one.high) == pytest.approx(
        (base.mean() * math.exp(-t * se), base.mean() * math.exp(t * se)), rel=1e-12
    )


def test_hodges_lehmann_never_gives_a_zero_width_interval():
    """Runs whose medians do not vary in any bootstrap draw: the shift (hand-worked: every
    difference is 2 − 1 = 1) stands, with no interval instead of [1, 1] (defect 7)."""
    same = np.ones((50, 3))
    iv = hodges_lehmann(np.ones(3), 2 * np.ones(3), same, 2 * same, 0.95)
    assert iv.estimate == 1.0 and math.isnan(iv.low) and math.isnan(iv.high)


def test_the_minimum_detectable_change_is_found_with_80_percent_power():
    """The MDE of a row (t approximation, blocked.detectable_reach) against the exact power
    of the two-sample t at that effect (noncentral t): about 0.8, and it grows as runs
    shrink."""
    import math

    from scipy import stats as st

    from analysis.stats.significance import minimum_detectable_change

    sd, n = 0.1, 6
    mde = minimum_detectable_change(sd, n, n, 0.05)
    df = 2 * n - 2
    nc = math.log1p(mde) / (sd * math.sqrt(2 / n))
    crit = st.t.ppf(0.975, df)
    power = 1 - st.nct.cdf(crit, df, nc) + st.nct.cdf(-crit, df, nc)
    assert 0.77 < power < 0.83
    assert (
        minimum_detectable_change(sd, 3, 3, 0.05)
        > mde
        > minimum_detectable_change(sd, 20, 20, 0.05)
    )


def test_run_mde_takes_the_pooled_sd_of_the_run_logs():
    from analysis.stats.significance import minimum_detectable_change, run_mde

    # Logs 0, 1, 2 and 1, 2, 3: each side's sd is 1 by hand, so the pooled sd is 1.
    base, new = np.exp([0.0, 1.0, 2.0]), np.exp([1.0, 2.0, 3.0])
    assert run_mde(base, new, 0.05) == pytest.approx(minimum_detectable_change(1.0, 3, 3, 0.05))
    assert run_mde(base, new, 0.05) > run_mde(base, new, 0.2)  # a laxer level sees less
    assert run_mde(base[:1], new, 0.05) is None  # one run: no spread to size a change by
    assert run_mde([0.0, 1.0], new, 0.05) is None  # a zero: no log scale, no relative size
