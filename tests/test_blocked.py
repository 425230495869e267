"""analysis.stats.blocked: level effects in randomised complete blocks, checked against a
paired t test (the same model for two levels) and simulations with a known truth
(SYNTHETIC data)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats

from analysis.stats.blocked import blocked_effects


def _frame(values: dict[str, list[float]]) -> pl.DataFrame:
    rows = [(level, b, v) for level, vs in values.items() for b, v in enumerate(vs)]
    return pl.DataFrame(rows, schema=["level", "block", "value"], orient="row")


def test_two_levels_in_complete_blocks_are_a_paired_t_test_on_the_logs():
    base = [10.0, 14.0, 9.0, 30.0, 12.0, 11.0]
    knob = [12.0, 15.0, 11.5, 33.0, 12.5, 14.0]
    result = blocked_effects(_frame({"default": base, "wb20": knob}), "default")
    (effect,) = result.levels
    d = np.log(knob) - np.log(base)
    paired = stats.ttest_rel(np.log(knob), np.log(base))
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    assert result.scale == "log" and result.df == len(d) - 1 and result.blocks == 6
    assert effect.estimate == pytest.approx(math.expm1(d.mean()), rel=1e-9)
    assert effect.ci == pytest.approx((math.expm1(d.mean() - half), math.expm1(d.mean() + half)))
    assert effect.p == pytest.approx(paired.pvalue, rel=1e-6) and effect.q == effect.p
    assert result.reference_value == pytest.approx(math.exp(np.log(base).mean()))


def test_a_zero_puts_the_family_on_the_raw_scale_as_a_difference():
    base = [0.0, 2.0, 1.0, 3.0]
    knob = [1.0, 2.5, 2.5, 3.5]
    result = blocked_effects(_frame({"default": base, "np500": knob}), "default")
    (effect,) = result.levels
    assert result.scale == "raw"
    assert effect.estimate == pytest.approx(np.mean(np.subtract(knob, base)))


def _simulate(rng, effects: dict[str, float], blocks: int, sd: float, block_sd: float):
    drift = rng.normal(0, block_sd, blocks)
    return _frame({
        level: list(np.exp(3.0 + e + drift + rng.normal(0, sd, blocks)))
        for level, e in effects.items()
    })  # fmt: skip


def test_intervals_cover_the_truth_and_aa_levels_are_not_flagged():
    """8 levels x 10 blocks, drifting blocks (sd 0.5) and run noise (sd 0.2): the 95 %
    intervals cover each level's true ratio in 93-97 % of 300 sweeps (± 3 MC se), and the
    A/A level's false verdicts stay at or below 5 %."""
    rng = np.random.default_rng(20261207)
    truth = {"default": 0.0, "aa": 0.0, **{f"k{i}": 0.05 * i for i in range(1, 7)}}
    covered, aa_flagged, sweeps = 0, 0, 300
    for _ in range(sweeps):
        result = blocked_effects(_simulate(rng, truth, 10, 0.2, 0.5), "default")
        for e in result.levels:
            true = math.expm1(truth[e.level])
            covered += e.ci[0] <= true <= e.ci[1]
            aa_flagged += e.level == "aa" and e.changed
    coverage = covered / (sweeps * 7)
    assert 0.95 - 3 * math.sqrt(0.95 * 0.05 / (sweeps * 7)) <= coverage <= 0.97 + 0.008
    assert aa_flagged / sweeps <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / sweeps)


def test_blocks_remove_the_drift_a_pooled_comparison_would_carry():
    """With block drift 2.5x the run noise, the blocked interval is far narrower than a
    Welch interval over the same runs that ignores the blocks."""
    rng = np.random.default_rng(7)
    frame = _simulate(rng, {"default": 0.0, "wb20": 0.2}, 10, 0.1, 0.25)
    (effect,) = blocked_effects(frame, "default").levels
    a = np.log(frame.filter(pl.col("level") == "default")["value"].to_numpy())
    b = np.log(frame.filter(pl.col("level") == "wb20")["value"].to_numpy())
    welch = stats.ttest_ind(b, a, equal_var=False).confidence_interval()
    assert np.log1p(effect.ci[1]) - np.log1p(effect.ci[0]) < 0.6 * (welch.high - welch.low)


def test_the_minimum_detectable_effect_is_found_with_its_power():
    """Two levels, 10 blocks, run sd 0.2: an effect the size of the reported MDE (from the
    known sd: (t_.975 + t_.80) x sd x sqrt(2/10) on the log scale) is found in about 80 %
    of experiments."""
    sd, blocks = 0.2, 10
    mde = (stats.t.ppf(0.975, blocks - 1) + stats.t.ppf(0.8, blocks - 1)) * sd * math.sqrt(0.2)
    rng = np.random.default_rng(11)
    found, reported = 0, []
    for _ in range(400):
        result = blocked_effects(_simulate(rng, {"d": 0.0, "k": mde}, blocks, sd, 0.3), "d")
        (e,) = result.levels
        found += e.changed
        reported.append(math.log1p(e.mde))
    assert 0.72 <= found / 400 <= 0.88
    assert np.median(reported) == pytest.approx(mde, rel=0.15)


def test_a_covariate_that_explains_the_runs_narrows_the_intervals():
    rng = np.random.default_rng(3)
    blocks = 12
    rate = rng.normal(0, 1, 2 * blocks)
    frame = _simulate(rng, {"d": 0.0, "k": 0.1}, blocks, 0.02, 0.0)
    frame = frame.with_columns(rate=pl.Series(rate), value=pl.col("value") * np.exp(0.3 * rate))
    plain = blocked_effects(frame, "d").levels[0]
    adjusted = blocked_effects(frame, "d", covariate="rate")
    (e,) = adjusted.levels
    assert adjusted.covariate_slope[0] == pytest.approx(0.3, abs=0.05)
    assert (e.ci[1] - e.ci[0]) < 0.3 * (plain.ci[1] - plain.ci[0])
    assert e.ci[0] <= math.expm1(0.1) <= e.ci[1]


def test_a_reference_without_runs_is_an_error():
    with pytest.raises(ValueError, match="reference level 'default'"):
        blocked_effects(_frame({"wb20": [1.0, 2.0]}), "default")


def test_runs_that_all_have_one_value_are_an_error_not_a_zero_width_interval():
    # The designed throttle sweep under global pressure: no reclaimer was ever throttled,
    # so every run slept 0 s in reclaim_throttle() at every timeout.
    with pytest.raises(ValueError, match="all 6 runs have the same value, 0: nothing varies"):
        blocked_effects(_frame({"default": [0.0] * 3, "wb20": [0.0] * 3}), "default")
