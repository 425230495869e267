"""The significance rules other tools apply to run-structured samples, reimplemented to
measure them against mmlab's (docs/mmtests-conventions.md, "Summary rows"). Each pools the
samples of every run as if they were independent, which is what mmlab does not do.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

__all__ = ["RULES", "mmtests_2018", "mmtests_2024", "pooled_mannwhitney", "pooled_welch"]


def pooled_welch(base: np.ndarray, new: np.ndarray, level: float = 0.05) -> bool:
    """Welch's t-test on the pooled samples, two-sided p < level."""
    return bool(stats.ttest_ind(base, new, equal_var=False).pvalue < level)


def pooled_mannwhitney(base: np.ndarray, new: np.ndarray, level: float = 0.05) -> bool:
    """Mann–Whitney U on the pooled samples, two-sided p < level."""
    return bool(stats.mannwhitneyu(base, new, alternative="two-sided").pvalue < level)


def mmtests_2018(base: np.ndarray, new: np.ndarray, level: float = 0.10) -> bool:
    """mmtests 2018–2024: t = |m_b − m_n| / √(s_b²/n_b + s_n²/n_n) with
    df = n_b + n_n − 2 (not Welch's), two-sided p < 0.10, on the mean."""
    nb, nn = len(base), len(new)
    se = math.sqrt(np.var(base, ddof=1) / nb + np.var(new, ddof=1) / nn)
    if se == 0:
        return bool(base.mean() != new.mean())
    t = abs(base.mean() - new.mean()) / se
    return bool(2 * stats.t.sf(t, nb + nn - 2) < level)


def mmtests_2024(base: np.ndarray, new: np.ndarray, level: float = 0.05) -> bool:
    """mmtests since December 2024: the intervals mean ± 1.96·sd (the sample sd, not the
    standard error) do not overlap. ``level`` is unused: the rule has none of its own."""
    del level
    lo_b, hi_b = base.mean() - 1.96 * base.std(ddof=1), base.mean() + 1.96 * base.std(ddof=1)
    lo_n, hi_n = new.mean() - 1.96 * new.std(ddof=1), new.mean() + 1.96 * new.std(ddof=1)
    return bool(hi_b < lo_n or hi_n < lo_b)


RULES = {
    "pooled Welch": pooled_welch,
    "pooled Mann–Whitney": pooled_mannwhitney,
    "mmtests 2018": mmtests_2018,
    "mmtests 2024": mmtests_2024,
}
