"""Is a latency change between two kernels real? One row of a benchmark at a time.

Input is a long table (``analysis.ingest.long_table``): per kernel, row (e.g. ``mmap-4``),
run (an independent iteration) the samples of that run. The statistic that decides a row
(``metric``: the mean or a Harrell–Davis quantile) is computed per run; the kernel's
estimate is the mean over its runs, its interval and that of the change come from the
spread between runs (t, Welch; log scale for positive values: :func:`run_interval`,
:func:`run_difference`); the Hodges–Lehmann shift's interval from the two-stage bootstrap
(``analysis.stats.bootstrap``). Assumptions stated:

- runs are independent and exchangeable within a kernel (fresh workload, same machine);
  samples within a run are not assumed independent;
- the deciding p-value is **Welch's t over runs** on the log per-run statistics
  (:func:`run_test`): a per-run median or mean of hundreds of samples is close to
  log-normal, and t's p is continuous at few runs, where an exact
  permutation test cannot go below :func:`min_attainable_p` (0.0079 with 5 runs each,
  above the 0.05/k BH needs for a lone change among k > 6 rows). The exact permutation
  p is computed beside it as a distribution-free check: when the two differ by
  :data:`DISAGREE` × or more (one of them below the level), the larger decides and a
  note names the run farthest from the rest of its kernel (a warm-up run, say);
  when no run varies, the permutation p decides;
- a run far from the rest **in both kernels** (with ≥ 5 runs each: in each kernel the run
  farthest from the median of its others, on the same side, both more than
  :data:`SET_ASIDE` run sds away, the sd pooled over the runs left) is set aside in each
  (:func:`paired_far_runs`), and the change, its CI and both tests use the other runs.
  Such a pair is what one systematic outlying run per kernel gives (a warm-up run): it
  cancels in the change but inflates the spread of every kernel, so left in, the
  interval over-covers and no change, however large, can be found. A far run in one
  kernel only is not set aside (it may be the change itself); when it makes the two
  tests disagree, the note names it;
- a verdict needs ≥ 2 runs per kernel: with one run the difference is described (no p,
  no interval, no verdict), because a session effect cannot be told from a kernel change;
- Benjamini–Hochberg q-values are computed **per family** of rows and per new kernel:
  the workload's own rows (the primary family), trace-derived rows (``--traces``) and
  vmstat Ops rows (``--ops``) are separate families, so extra descriptive rows do not
  take power from the workload's rows. Within a family BH controls the false discovery
  rate at ``level``; across the families of one comparison the expected false verdicts
  add up (at most ``level`` per family);
- a row is ``improved``/``regressed`` when q < level and the change's 95 % CI excludes 0,
  ``equivalent`` when ``delta`` is given and the (1 − 2·level) CI of the change lies
  within ±delta (TOST), otherwise ``no change shown`` with the reason — including, when
  the permutation p decided and its floor makes a verdict impossible, the smallest
  reachable q and the runs needed;
- a **zero-heavy** row (≥ 25 % of both kernels' samples pooled are exactly 0, e.g.
  throttle delays woken within the first jiffy) is decided on each run's share of zero
  samples (absolute change in percentage points); the metric of its non-zero samples is
  described, never printed as the change. A quantile of a mostly-zero sample is a
  smoothing artefact, not a latency;
- the design calculation (``needed_runs``) is for an effect the user names (``effect``,
  default 10 %), from the run-level spread, never from the observed effect.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import polars as pl
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestIndPower

from analysis.stats.blocked import detectable_reach
from analysis.stats.bootstrap import MEAN, Interval, run_statistics, t_interval, two_stage

__all__ = [
    "CI_LEVEL",
    "DEFAULT_EFFECT",
    "DISAGREE",
    "IMPROVED",
    "METRICS",
    "NOT_COMPARED",
    "NO_CHANGE",
    "NO_VERDICT",
    "PERMUTATION",
    "POWER",
    "PRIMARY",
    "REGRESSED",
    "SET_ASIDE",
    "WELCH",
    "ZERO_HEAVY",
    "RowComparison",
    "RunTest",
    "compare_samples",
    "compare_table",
    "design_runs",
    "difference_interval",
    "hodges_lehmann",
    "lone_change_floor",
    "min_attainable_p",
    "minimum_detectable_change",
    "mmtests_summary",
    "paired_far_runs",
    "permutation_p",
    "run_difference",
    "run_interval",
    "run_mde",
    "run_test",
    "runs_of",
    "shift_function",
    "welch_power",
]

# --metric name -> statistic for analysis.stats.bootstrap (mean or quantile probability).
METRICS: dict[str, float | str] = {"mean": MEAN, "p50": 0.5, "p90": 0.9, "p99": 0.99}
CI_LEVEL = 0.95
POWER = 0.8
# The change (%) the design calculation is for when the user names none (--effect).
DEFAULT_EFFECT = 10.0
# Share of zero samples (both kernels pooled) from which a row is decided on its zero share.
ZERO_HEAVY = 0.25
# The family of rows a benchmark measures itself; other families: "traces", "ops".
PRIMARY = "workload"
_MAX_SPLITS = 20_000
# Welch's t needs two runs per kernel (a spread in each).
_MIN_RUNS = 2
TIME_UNITS = frozenset({"ns", "us", "µs", "ms", "s", "seconds", "microseconds", "milliseconds"})
IMPROVED, REGRESSED, EQUIVALENT, NO_CHANGE, NOT_COMPARED, NO_VERDICT = (
    "improved",
    "regressed",
    "equivalent",
    "no change shown",
    "not compared",
    "no verdict",
)


def _log_if_positive(values: np.ndarray) -> tuple[np.ndarray, bool]:
    positive = bool(np.all(values > 0))
    return (np.log(values) if positive else values), positive


def permutation_p(base: np.ndarray, new: np.ndarray, seed: int = 0) -> tuple[float, int]:
    """Two-sided permutation p of the difference of means between two groups of per-run
    values, and the number of splits used: every split when there are at most 20 000,
    else 20 000 random ones (the observed split always counts, so p > 0)."""
    pooled = np.concatenate([base, new])
    n, k = len(pooled), len(base)
    observed = abs(new.mean() - base.mean())
    total = math.comb(n, k)
    if total <= _MAX_SPLITS:
        splits = np.array(list(itertools.combinations(range(n), k)))
    else:
        rng = np.random.default_rng(seed)
        splits = np.argsort(rng.random((_MAX_SPLITS - 1, n)), axis=1)[:, :k]
        splits = np.vstack([np.arange(k), splits])
    in_base = np.zeros((len(splits), n), dtype=bool)
    np.put_along_axis(in_base, splits, True, axis=1)
    sum_base = (in_base * pooled).sum(axis=1)
    diffs = np.abs((pooled.sum() - sum_base) / (n - k) - sum_base / k)
    # A relative tolerance so that floating-point noise does not split exact ties.
    tol = 1e-12 * max(1.0, float(np.abs(pooled).max()))
    return float(np.mean(diffs >= observed - tol)), len(splits)


def min_attainable_p(runs_a: int, runs_b: int) -> float:
    """Smallest two-sided p an exact permutation test over runs can give: 1/C(R_a+R_b, R_a)
    (only the observed split is as extreme) when R_a ≠ R_b, 2/C when R_a = R_b (the mirror
    split, groups swapped, gives the same |difference|)."""
    return (2 if runs_a == runs_b else 1) / math.comb(runs_a + runs_b, runs_a)


def lone_change_floor(runs_a: int, runs_b: int, rows: int) -> float:
    """Smallest BH q a change in one row can reach when the other ``rows − 1`` rows of its
    family show nothing: its q is ``rows · p`` and p cannot go below
    :func:`min_attainable_p`."""
    return min(1.0, rows * min_attainable_p(runs_a, runs_b))


def _runs_for_floor(rows: int, level: float) -> int:
    """Fewest runs per kernel for which a lone change in ``rows`` rows can reach q < level."""
    return next(r for r in itertools.count(2) if lone_change_floor(r, r, rows) < level)


def welch_power(d: float, runs: int, alpha: float) -> float:
    """Power of the two-sided Welch t at ``alpha`` with ``runs`` per kernel, equal true
    sds and a standardised difference ``d``. With equal runs Welch's statistic is the
    pooled t's (noncentral t, 2n − 2 df, noncentrality d·√(n/2)); only its df differ,
    (n − 1)/(B² + (1 − B)²) with B = s₁²/(s₁² + s₂²) ~ Beta((n − 1)/2, (n − 1)/2),
    independent of the statistic (Lukacs), so the power is one integral over B
    (Gauss–Legendre over B's quantiles). At 2 runs the df fall to as low as 1, which the
    pooled t's power (df 2) misses: for d = 6 it is 0.51, not 0.84."""
    nodes, weights = np.polynomial.legendre.leggauss(48)
    half = (runs - 1) / 2
    share = stats.beta.ppf((nodes + 1) / 2, half, half)
    crit = stats.t.ppf(1 - alpha / 2, (runs - 1) / (share**2 + (1 - share) ** 2))
    df, nc = 2 * runs - 2, d * math.sqrt(runs / 2)
    # The lower tail as the upper one of -T (nct.cdf far in its lower tail gives NaN).
    reject = stats.nct.sf(crit, df, nc) + stats.nct.sf(crit, df, -nc)
    return float(np.sum(weights / 2 * reject))


def design_runs(sd: float, effect_pct: float, level: float, rows: int = 1) -> int | None:
    """Runs per kernel that detect a change of ``effect_pct`` % (a ratio 1 + effect/100 of
    the run statistic, tested on the log scale) with 80 % power when the run-level sd of
    the log statistic is ``sd``: the power of the deciding Welch test
    (:func:`welch_power`, equal runs and spread) at level/rows, since a lone change among
    ``rows`` rows of a BH family needs p < level/rows. Welch's p has no floor and
    :func:`run_test` does not hold the permutation p against it below the permutation's
    own floor, so 2 runs (the least with a spread) can reach any level; None when the
    solver gives up (an effect far below the run noise)."""
    floor = _MIN_RUNS
    if not sd > 0:
        return floor
    d = abs(math.log1p(effect_pct / 100)) / sd
    alpha = level / rows
    # The pooled t's power bounds Welch's from above: start from its solution (solved only
    # above the floor: the solver fails, and warns, when fewer than 2 would do).
    pooled = TTestIndPower()
    n = floor
    if pooled.power(effect_size=d, nobs1=floor, alpha=alpha) < POWER:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            solved = pooled.solve_power(effect_size=d, alpha=alpha, power=POWER)
        if not np.isfinite(solved):
            return None
        n = max(math.ceil(solved), floor)
    while welch_power(d, n, alpha) < POWER:
        n += 1
    return n


def minimum_detectable_change(sd: float, runs_a: int, runs_b: int, level: float) -> float:
    """The smallest relative change (0.2 = +20 %) of a run statistic that a two-sided t
    test over ``runs_a`` and ``runs_b`` runs finds at ``level`` with :data:`POWER`, when the
    run-level sd of its log is ``sd``: a design figure from the spread, not observed power
    (the block design's MDE, :func:`~analysis.stats.blocked.detectable_reach`, with one
    block). Downwards the same distance on the log scale is 1/(1 + mde) − 1."""
    se = sd * math.sqrt(1 / runs_a + 1 / runs_b)
    return math.expm1(detectable_reach(runs_a + runs_b - 2, level, POWER) * se)


def run_mde(base: Sequence[float], new: Sequence[float], level: float) -> float | None:
    """:func:`minimum_detectable_change` of two kernels' per-run values (one value a run),
    from their pooled log sd; None below two runs a side or where a value is not positive
    (no log scale, so no relative change to state)."""
    sd = _run_sd(np.asarray(base, float), np.asarray(new, float))
    if sd is None or min(len(base), len(new)) < 2:
        return None
    return minimum_detectable_change(sd, len(base), len(new), level)


def _pooled_sd(groups: Sequence[np.ndarray]) -> float:
    """The sd of the values about their own group's mean, over Σ(n − 1) df."""
    ss = sum(float(np.sum((v - v.mean()) ** 2)) for v in groups if len(v) > 1)
    return math.sqrt(ss / sum(len(v) - 1 for v in groups))


def _run_sd(base: np.ndarray, new: np.ndarray) -> float | None:
    """Pooled sd of the per-run log statistics (raw when not all positive); None without
    two runs in some kernel."""
    if max(len(base), len(new)) < 2:
        return None
    vb, log_b = _log_if_positive(base)
    vn, log_n = _log_if_positive(new)
    if not (log_b and log_n):
        return None
    return _pooled_sd((vb, vn))


def difference_interval(
    new: tuple[float, np.ndarray, int],
    base: tuple[float, np.ndarray, int],
    level: float,
    log: bool,
) -> Interval:
    """Interval of ``new − base`` (or of ``log new − log base``) from each side's
    (estimate, bootstrap draws, runs): variances scaled by R/(R−1) as in
    :func:`~analysis.stats.bootstrap.t_interval`, Welch–Satterthwaite df on R−1 each.
    No interval (NaN bounds) when neither side's draws vary."""
    parts = []
    for est, draws, runs in (new, base):
        d = np.log(draws) if log else draws
        scale = runs / (runs - 1) if runs > 1 else 1.0
        parts.append((math.log(est) if log else est, np.var(d, ddof=1) * scale, runs - 1))
    (e_new, v_new, df_new), (e_base, v_base, df_base) = parts
    var = v_new + v_base
    diff = e_new - e_base
    if not var > 0:
        return Interval(diff, math.nan, math.nan, 0.0, math.nan)
    terms = [v**2 / df for v, df in ((v_new, df_new), (v_base, df_base)) if df > 0 and v > 0]
    df = var**2 / sum(terms) if terms and min(df_new, df_base) > 0 else math.inf
    crit = float(stats.t.ppf(0.5 + level / 2, df)) if math.isfinite(df) else 1.96
    se = math.sqrt(var)
    return Interval(diff, diff - crit * se, diff + crit * se, se, df)


def hodges_lehmann(
    base_medians: np.ndarray,
    new_medians: np.ndarray,
    base_draws: np.ndarray,
    new_draws: np.ndarray,
    level: float,
) -> Interval:
    """Hodges–Lehmann shift: the median of every difference (new run − base run) of the
    runs' Harrell–Davis medians; its interval from the same two-stage bootstrap draws
    (``(resamples, runs)`` per kernel), t with min(R)−1 df. No interval with one run in
    a kernel or when the draws do not vary (never one of zero width)."""
    est = float(np.median(new_medians[:, None] - base_medians[None, :]))
    draws = np.median(new_draws[:, :, None] - base_draws[:, None, :], axis=(1, 2))
    runs = min(len(base_medians), len(new_medians))
    if runs < 2:
        return Interval(est, math.nan, math.nan, math.nan, math.nan)
    return t_interval(est, draws, runs, level)


def _usable(frame: pl.DataFrame, kernel: str) -> tuple[pl.DataFrame, tuple[str, ...]]:
    """The samples of one kernel's row a comparison can use, and what was left out, in
    words: NaN or empty values, infinite ones, and negative ones where the unit is a
    time (a latency cannot be negative)."""
    value = pl.col("value")
    unit = frame["unit"][0] if frame.height else ""
    checks = [
        ("NaN/empty", (value.is_null() | value.is_nan()).fill_null(True)),
        ("infinite", value.is_infinite().fill_null(False)),
    ]
    if unit in TIME_UNITS:
        checks.append((f"negative {unit}", (value < 0).fill_null(False)))
    dropped = []
    for what, bad in checks:
        count = frame.filter(bad).height
        if count:
            dropped.append(f"{kernel}: {count} {what} values dropped")
        frame = frame.filter(~bad)
    return frame, tuple(dropped)


def runs_of(table: pl.DataFrame, row: str, kernel: str) -> list[np.ndarray]:
    """The samples of each run (in run order) of one row of one kernel, without the
    values a comparison leaves out (NaN, infinite, negative times: :func:`_usable`), so
    that every summary of the row describes the samples its verdict used."""
    frame = table.filter((pl.col("row") == row) & (pl.col("kernel") == kernel))
    frame = _usable(frame, kernel)[0]
    return [
        g["value"].to_numpy() for _, g in frame.sort("run").group_by("run", maintain_order=True)
    ]


@dataclass(frozen=True)
class KernelRow:
    """One row of one kernel: its runs' samples and the estimate of the deciding metric."""

    kernel: str
    runs: tuple[np.ndarray, ...]
    dropped: tuple[str, ...]

    @property
    def samples(self) -> int:
        return sum(len(r) for r in self.runs)


@dataclass(frozen=True)
class RowComparison:
    """The verdict on one row of one kernel against the base. ``change`` is new/base − 1
    in % (``change_kind`` "relative"), or new − base in the row's unit ("absolute", when
    an estimate is not positive) or in percentage points of the zero share
    ("zero share", zero-heavy rows); never sign-flipped. ``family``: the BH family (rows
    of one kind, :data:`PRIMARY` for the workload's own), ``family_rows`` its size.
    ``p`` is the deciding p (:class:`RunTest`): ``decided_by`` says whether Welch's t
    (``p_welch``) or the permutation test (``p_permutation``) gave it, ``disagree``
    whether the two were :data:`DISAGREE` × apart. ``set_aside``: the positions (in run
    order) of the base and new run left out of the change, its CI and both tests
    (:func:`paired_far_runs`), None when every run was used. ``mde``: the minimum
    detectable effect at the runs tested (:func:`minimum_detectable_change`), a relative
    change (0.2 = +20 %); None where the change is not relative."""

    row: str
    unit: str
    higher_is_better: bool
    kernel: str
    base: str
    metric: str
    verdict: str
    reason: str
    family: str = PRIMARY
    family_rows: int = 1
    runs: int = 0
    base_runs: int = 0
    samples: int = 0
    base_samples: int = 0
    estimate: Interval | None = None
    base_estimate: Interval | None = None
    change: float | None = None
    change_ci: tuple[float, float] | None = None
    change_kind: str = "relative"
    hl_shift: Interval | None = None
    zero_share: tuple[float, float] | None = None
    p: float | None = None
    q: float | None = None
    method: str = ""
    p_welch: float | None = None
    p_permutation: float | None = None
    splits: int | None = None
    decided_by: str = ""
    disagree: bool = False
    set_aside: tuple[int, int] | None = None
    effect: float = DEFAULT_EFFECT
    run_sd: float | None = None
    needed_runs: int | None = None
    mde: float | None = None
    notes: tuple[str, ...] = ()

    @property
    def tested_runs(self) -> tuple[int, int]:
        """(base, new) runs the tests and the change's CI used."""
        left = 1 if self.set_aside else 0
        return self.base_runs - left, self.runs - left


def _kernel_row(frame: pl.DataFrame, row: str, kernel: str) -> KernelRow:
    """Runs of one kernel's row; what :func:`_usable` leaves out is said."""
    frame = frame.filter((pl.col("row") == row) & (pl.col("kernel") == kernel))
    dropped = _usable(frame, kernel)[1]
    return KernelRow(kernel, tuple(runs_of(frame, row, kernel)), dropped)


@dataclass(frozen=True)
class _Side:
    estimate: Interval
    run_values: np.ndarray
    medians: np.ndarray
    median_draws: np.ndarray


def run_interval(values: np.ndarray, level: float) -> Interval:
    """Interval of the mean over runs of a per-run statistic from the spread between runs:
    t with R−1 df; on the log scale by the delta method (se of log m = sd/(√R·m)) when
    every run's value is positive, so a latency's interval stays positive. The runs are
    the independent replicates: their spread already holds the within-run noise, which a
    second resampling stage would count again. No interval (NaN) with one run or when
    the runs do not vary."""
    est = float(values.mean())
    runs = len(values)
    sd = float(np.std(values, ddof=1)) if runs > 1 else math.nan
    if not sd > 0:
        return Interval(est, math.nan, math.nan, math.nan, math.nan)
    crit = float(stats.t.ppf(0.5 + level / 2, runs - 1))
    if est > 0 and bool(np.all(values > 0)):
        se = sd / math.sqrt(runs) / est
        return Interval(est, est * math.exp(-crit * se), est * math.exp(crit * se), se, runs - 1)
    se = sd / math.sqrt(runs)
    return Interval(est, est - crit * se, est + crit * se, se, runs - 1.0)


def _side(kr: KernelRow, stat: float | str, resamples: int, rng) -> _Side:
    """The kernel's estimate (mean over runs of the run statistic) with its
    :func:`run_interval`, and the two-stage bootstrap draws of the run medians (for the
    Hodges–Lehmann interval)."""
    values = run_statistics(kr.runs, stat)
    draws = two_stage(kr.runs, [0.5], resamples, rng)
    return _Side(run_interval(values, CI_LEVEL), values, run_statistics(kr.runs, 0.5), draws[0.5])


@dataclass(frozen=True)
class RunTest:
    """The deciding p of one row and how it was reached. ``p_welch``: Welch's t on the
    (log) per-run values (a run far from the rest widens it rather than deciding it, as
    it would the log of their mean); None when no run varies. ``p_permutation``: the
    exact (or 20 000-split) permutation p of the same means, the distribution-free check
    beside it; ``floor`` its smallest attainable value. The permutation decides when
    Welch cannot (no run varies); when the two disagree grossly (:data:`DISAGREE` ×, one
    of them below the level) the larger p decides, and ``outlier`` names the run
    farthest from the rest of its kernel."""

    p: float
    p_welch: float | None
    p_permutation: float
    splits: int
    exact: bool
    floor: float
    decided_by: str
    disagree: bool
    outlier: str = ""

    @property
    def method(self) -> str:
        """Which test decided and why, in words (the same for every row so decided)."""
        if self.p_welch is None:
            return "permutation over runs (no run varies, so Welch's t has no se)"
        if self.disagree:
            return f"the larger of Welch's t and the permutation p (≥ {DISAGREE:g}× apart)"
        return "Welch's t over runs"


# Welch's t decides unless its p and the permutation p differ by this factor or more
# (the permutation p counted at no less than its floor Welch may pass).
DISAGREE = 10.0
WELCH, PERMUTATION = "Welch t", "permutation"


# A run is set aside when it and one run of the other kernel lie, on the same side, this
# many run sds from the median of their kernel's other runs (sd pooled over the runs left).
# validation_compare ("runs set aside"): with 5 log-normal runs per kernel a pair of
# ordinary runs passes in 2–5 % of rows (their interval is then too narrow: coverage over
# the cell drops by at most 0.014, staying in 93–97 %); a ×2 run in each kernel passes in
# 72 % of rows among lognormal σ 2 runs (4.7 run sd out) and 97 % among Pareto 1.5 ones.
SET_ASIDE = 3.5
# Fewest runs per kernel from which a far run can be told from the spread (4 left in each,
# 6 df for the sd); with 4, pairs of ordinary runs pass in 6–7 % of rows.
_SET_ASIDE_RUNS = 5


def _offsets(values: np.ndarray) -> np.ndarray:
    """Each value's signed distance from the median of the other values."""
    return np.array([values[i] - np.median(np.delete(values, i)) for i in range(len(values))])


def _far_run_words(offset: float, i: int, runs: int, name: str, log: bool) -> str:
    how = f"{math.exp(offset):.3g}×" if log else f"{offset:+.4g} from"
    return f"run {i + 1} of {runs} of {name} is {how} the median of its others"


def _farthest_run(values: Sequence[np.ndarray], names: Sequence[str], log: bool) -> str:
    """The run farthest from the median of the other runs of its kernel, in words
    (ratio on the log scale, difference otherwise): the usual cause of a disagreement
    is one run far from the rest, as a warm-up run is."""
    best = (-1.0, "")
    for vals, name in zip(values, names, strict=True):
        if len(vals) <= 2:
            continue
        off = _offsets(np.log(vals) if log else vals)
        i = int(np.argmax(np.abs(off)))
        if abs(off[i]) > best[0]:
            best = (abs(off[i]), _far_run_words(float(off[i]), i, len(vals), name, log))
    return best[1]


def paired_far_runs(base: np.ndarray, new: np.ndarray, log: bool) -> tuple[int, int] | None:
    """The run of each kernel to set aside (its position in run order), or None: in each
    kernel the run farthest from the median of its others (log scale when ``log``), when
    the two lie on the same side and both more than :data:`SET_ASIDE` sds of the runs
    left (pooled over both kernels) away. One systematic outlying run per kernel (a
    warm-up run) cancels in the change but inflates both kernels' spread; a far run in
    one kernel only may be the change itself and is kept."""
    if min(len(base), len(new)) < _SET_ASIDE_RUNS:
        return None
    values = [np.log(v) if log else v for v in (base, new)]
    offsets = [_offsets(v) for v in values]
    far = [int(np.argmax(np.abs(o))) for o in offsets]
    off_b, off_n = (float(o[i]) for o, i in zip(offsets, far, strict=True))
    left = [np.delete(v, i) for v, i in zip(values, far, strict=True)]
    if off_b * off_n > 0 and min(abs(off_b), abs(off_n)) > SET_ASIDE * _pooled_sd(left):
        return far[0], far[1]
    return None


def _set_aside_note(
    values: Sequence[np.ndarray], far: tuple[int, int], names: Sequence[str], log: bool
) -> str:
    """What :func:`paired_far_runs` set aside, and why, in words."""
    words = [
        _far_run_words(float(_offsets(np.log(v) if log else v)[i]), i, len(v), name, log)
        for v, i, name in zip(values, far, names, strict=True)
    ]
    left = [len(v) - 1 for v in values]
    return (
        f"{words[0]} and {words[1]}: one run per kernel far from its others on the same "
        f"side (> {SET_ASIDE:g} run sd), as a warm-up run is, set aside: it cancels in the "
        f"change but would inflate the spread; the change, its CI and both tests use the "
        f"other {left[0]} vs {left[1]} runs"
    )


def run_test(
    base: np.ndarray,
    new: np.ndarray,
    level: float,
    names: Sequence[str] = ("base", "new"),
    log: bool | None = None,
) -> RunTest:
    """The deciding test of per-run statistics ``base`` and ``new`` (≥ 2 runs each): see
    :class:`RunTest`. On the log scale when every value is positive (a ratio is tested;
    ``log`` False forces the values themselves, e.g. shares compared in points)."""
    if log is None:
        log = bool(np.all(base > 0) and np.all(new > 0))
    vb, vn = (np.log(base), np.log(new)) if log else (base, new)
    p_welch = None
    if np.ptp(vb) > 0 or np.ptp(vn) > 0:
        with warnings.catch_warnings():
            # Nearly constant runs: SciPy warns of precision loss; the p stands.
            warnings.simplefilter("ignore", RuntimeWarning)
            p_welch = float(stats.ttest_ind(vn, vb, equal_var=False).pvalue)
        p_welch = p_welch if math.isfinite(p_welch) else None
    p_perm, splits = permutation_p(vb, vn)
    exact = splits == math.comb(len(vb) + len(vn), len(vb))
    floor = min_attainable_p(len(vb), len(vn)) if exact else 1 / splits
    common = dict(p_permutation=p_perm, splits=splits, exact=exact, floor=floor)
    if p_welch is None:
        return RunTest(p=p_perm, p_welch=None, decided_by=PERMUTATION, disagree=False, **common)
    low, high = sorted((max(p_welch, floor), p_perm))
    if low < level and high >= DISAGREE * low:
        outlier = _farthest_run((base, new), names, log)
        by = WELCH if p_welch >= p_perm else PERMUTATION
        return RunTest(p=max(p_welch, p_perm), p_welch=p_welch, decided_by=by, disagree=True,
                       outlier=outlier, **common)  # fmt: skip
    return RunTest(p=p_welch, p_welch=p_welch, decided_by=WELCH, disagree=False, **common)


def _disagreement_note(t: RunTest) -> str:
    return f"Welch's t and the permutation p disagree ≥ {DISAGREE:g}×" + (
        f": {t.outlier}" if t.outlier else ""
    )


def _one_run_reason(base_runs: int, runs: int) -> str:
    return (
        f"{base_runs} vs {runs} runs: "
        + ("one run per kernel" if base_runs == runs == 1 else "a single run in one kernel")
        + " gives no p, no interval and no verdict (a session effect cannot be told from a "
        "kernel change); the difference is described only"
    )


def run_difference(new: np.ndarray, base: np.ndarray, level: float, log: bool) -> Interval:
    """Welch interval of ``mean(new) − mean(base)`` of per-run values, or of
    ``log mean(new) − log mean(base)`` (delta method: var = s²/(R·m²) per side), with
    Welch–Satterthwaite df on R−1 each. NaN bounds when neither side's runs vary or a
    side has one run."""
    parts = []
    for v in (new, base):
        m = float(v.mean())
        var = float(np.var(v, ddof=1)) / len(v) if len(v) > 1 else math.nan
        parts.append((math.log(m) if log else m, var / m**2 if log else var, len(v) - 1))
    (e_new, v_new, df_new), (e_base, v_base, df_base) = parts
    diff = e_new - e_base
    var = v_new + v_base
    if not var > 0:
        return Interval(diff, math.nan, math.nan, math.nan, math.nan)
    df = var**2 / sum(v**2 / d for v, d in ((v_new, df_new), (v_base, df_base)) if v > 0)
    half = float(stats.t.ppf(0.5 + level / 2, df)) * math.sqrt(var)
    return Interval(diff, diff - half, diff + half, math.sqrt(var), df)


def _change(nv: np.ndarray, bv: np.ndarray, level: float):
    """(change, 95 % CI, TOST CI, kind) from the per-run values: relative (on the log
    scale) when every run's value is positive, else absolute (new − base, row unit)."""
    log = bool(np.all(nv > 0) and np.all(bv > 0))
    ci = run_difference(nv, bv, CI_LEVEL, log)
    tost = run_difference(nv, bv, 1 - 2 * level, log)
    back = (lambda x: (math.exp(x) - 1) * 100) if log else (lambda x: x)
    kind = "relative" if log else "absolute"
    if not math.isfinite(ci.low):
        return back(ci.estimate), None, None, kind
    return (
        back(ci.estimate),
        (back(ci.low), back(ci.high)),
        (back(tost.low), back(tost.high)),
        kind,
    )


def _zero_shares(kr: KernelRow) -> np.ndarray:
    return np.array([float(np.mean(r == 0)) for r in kr.runs])


def _share_interval(values: np.ndarray) -> Interval:
    """Mean over runs of a per-run share, t interval with R−1 df, intersected with [0, 1]
    (the share cannot leave it, so the intersection keeps the coverage)."""
    est = float(values.mean())
    if len(values) < 2 or not np.ptp(values) > 0:
        return Interval(est, math.nan, math.nan, math.nan, math.nan)
    se = float(np.std(values, ddof=1) / math.sqrt(len(values)))
    half = float(stats.t.ppf(0.5 + CI_LEVEL / 2, len(values) - 1)) * se
    return Interval(est, max(0.0, est - half), min(1.0, est + half), se, len(values) - 1.0)


def _zero_heavy(
    key: dict,
    base: KernelRow,
    new: KernelRow,
    sizes: dict,
    notes: tuple[str, ...],
    level: float,
) -> RowComparison:
    """A row with many exact zeros: each run's share of zero samples decides (Welch's t
    over runs with the permutation p beside it, :func:`run_test` on the shares
    themselves; Welch interval of the difference, in percentage points); the metric of
    the non-zero samples is described in a note."""
    zb, zn = _zero_shares(base), _zero_shares(new)
    shares = tuple(float(np.mean(np.concatenate(kr.runs) == 0)) for kr in (base, new))
    stat = METRICS[key["metric"]]
    described = []
    for kr in (base, new):
        nonzero = [r[r != 0] for r in kr.runs if np.any(r != 0)]
        described.append(float(run_statistics(nonzero, stat).mean()) if nonzero else math.nan)
    label = "mean" if stat == MEAN else f"HD-{round(100 * float(stat))}"
    note = (f"zero-heavy row: {100 * shares[0]:.1f}% of {base.kernel} and "
            f"{100 * shares[1]:.1f}% of {new.kernel} samples are 0; {label} of the non-zero "
            f"samples {described[0]:.4g} vs {described[1]:.4g} {key['unit']}")  # fmt: skip
    notes = (*notes, note)
    common = dict(**key, **sizes, zero_share=shares, change_kind="zero share", notes=notes)
    est_b, est_n = _share_interval(zb), _share_interval(zn)
    change = 100 * (est_n.estimate - est_b.estimate)
    if min(len(zb), len(zn)) < 2:
        return RowComparison(
            **common, verdict=NO_VERDICT, reason=_one_run_reason(len(zb), len(zn)),
            estimate=est_n, base_estimate=est_b, change=change,
        )  # fmt: skip
    test = run_test(zb, zn, level, (base.kernel, new.kernel), log=False)
    diff = run_difference(zn, zb, CI_LEVEL, log=False)
    ci = (100 * diff.low, 100 * diff.high) if math.isfinite(diff.low) else None
    r = RowComparison(
        **common, verdict=NO_CHANGE, reason="", estimate=est_n, base_estimate=est_b,
        change=change, change_ci=ci,
    )  # fmt: skip
    return _tested(r, test)


def _compare_row(
    key: dict, base: KernelRow, new: KernelRow, resamples: int, rng, level: float
) -> tuple[RowComparison, tuple[float, float] | None]:
    """One row of ``new`` against ``base`` (q and the final verdict come later);
    ``key`` holds the identity fields of :class:`RowComparison` (row ... family)."""
    notes = (*base.dropped, *new.dropped)
    for kr in (base, new):
        if not kr.runs:
            reason = f"{kr.kernel}: no values in this row"
            return RowComparison(**key, verdict=NOT_COMPARED, reason=reason, notes=notes), None
    sizes = {
        "runs": len(new.runs),
        "base_runs": len(base.runs),
        "samples": new.samples,
        "base_samples": base.samples,
    }
    pooled = np.concatenate([*base.runs, *new.runs])
    if np.ptp(pooled) == 0:
        # Zero variance everywhere (e.g. a counter that never moved): nothing to test,
        # and a p of 1 would only dilute the q-values of the rows that vary.
        reason = f"every value is {pooled[0]:g} in both kernels"
        return RowComparison(**key, verdict=NO_CHANGE, reason=reason, notes=notes, **sizes), None
    several = max(len(r) for r in (*base.runs, *new.runs)) > 1
    # Both kernels' samples pooled: the path must not depend on which kernel has more
    # zeros, or rows near the threshold take the zero-share test when they differ by chance.
    if several and float(np.mean(pooled == 0)) >= ZERO_HEAVY:
        return _zero_heavy(key, base, new, sizes, notes, level), None
    b = _side(base, METRICS[key["metric"]], resamples, rng)
    n = _side(new, METRICS[key["metric"]], resamples, rng)
    names = (base.kernel, new.kernel)
    bv, nv = b.run_values, n.run_values
    log = bool(np.all(bv > 0) and np.all(nv > 0))
    far = paired_far_runs(bv, nv, log)
    if far:
        notes = (*notes, _set_aside_note((bv, nv), far, names, log))
        bv, nv = np.delete(bv, far[0]), np.delete(nv, far[1])
    change, change_ci, tost_ci, kind = _change(nv, bv, level)
    hl = hodges_lehmann(b.medians, n.medians, b.median_draws, n.median_draws, CI_LEVEL)
    common = dict(
        **key, **sizes, estimate=n.estimate, base_estimate=b.estimate, change=change,
        change_ci=change_ci, change_kind=kind, hl_shift=hl, run_sd=_run_sd(bv, nv),
        set_aside=far, notes=notes,
    )  # fmt: skip
    if min(len(base.runs), len(new.runs)) < 2:
        reason = _one_run_reason(len(base.runs), len(new.runs))
        return RowComparison(**common, verdict=NO_VERDICT, reason=reason), None
    test = run_test(bv, nv, level, names)
    return _tested(RowComparison(**common, verdict=NO_CHANGE, reason=""), test), tost_ci


def _tested(r: RowComparison, test: RunTest) -> RowComparison:
    """``r`` with the p of ``test``, which test decided, and a note when they disagree."""
    notes = (*r.notes, _disagreement_note(test)) if test.disagree else r.notes
    method = f"{test.method}, one far run per kernel set aside" if r.set_aside else test.method
    return replace(
        r, p=test.p, method=method, p_welch=test.p_welch,
        p_permutation=test.p_permutation, splits=test.splits, decided_by=test.decided_by,
        disagree=test.disagree, notes=notes,
    )  # fmt: skip


def _limit(r: RowComparison, level: float) -> str:
    """Why the run count cannot give a verdict here, and how many runs could ("" when it
    can): a lone change among the family's rows must reach q < level. Only the
    permutation p has a floor; Welch's t has none."""
    if r.decided_by != PERMUTATION:
        return ""
    base_runs, runs = r.tested_runs
    floor = lone_change_floor(base_runs, runs, r.family_rows)
    if floor < level:
        return ""
    need = _runs_for_floor(r.family_rows, level)
    rows = f" over {r.family_rows} {r.family} rows" if r.family_rows > 1 else ""
    return (
        f"; {base_runs} vs {runs} runs{rows}: the smallest permutation p is "
        f"{min_attainable_p(base_runs, runs):.3g}, so a change in this row alone cannot "
        f"reach q below {floor:.3g}; {need} runs per kernel could"
    )


def _verdict(r: RowComparison, tost_ci, level: float, delta: float | None) -> RowComparison:
    """Fill in the verdict, reason and design calculation once q is known (see the module
    docstring)."""
    if r.verdict in (NOT_COMPARED, NO_VERDICT) or r.q is None:
        return r
    need = mde = None
    if r.run_sd is not None and r.change_kind == "relative":
        need = design_runs(r.run_sd, r.effect, level, r.family_rows)
        mde = minimum_detectable_change(r.run_sd, *r.tested_runs, level)
    r = replace(r, needed_runs=need, mde=mde)
    excludes_zero = r.change_ci is not None and (r.change_ci[0] > 0 or r.change_ci[1] < 0)
    if r.q < level and excludes_zero:
        better = (r.change > 0) == r.higher_is_better
        if r.change_kind == "zero share":
            # More zero samples (woken at once) is better where lower values are.
            better = (r.change > 0) != r.higher_is_better
        return replace(
            r, verdict=IMPROVED if better else REGRESSED, reason=f"q {r.q:.3g} < {level:g}"
        )
    if delta is not None and tost_ci is not None and -delta < tost_ci[0] and tost_ci[1] < delta:
        ci_pct = round(100 * (1 - 2 * level))
        return replace(r, verdict=EQUIVALENT, reason=f"{ci_pct}% CI of change within ±{delta:g}%")
    if r.q >= level:
        reason = f"q {r.q:.3g} ≥ {level:g}" + _limit(r, level)
    elif r.change_ci is None:
        reason = f"q {r.q:.3g} < {level:g} but the change has no interval (the runs do not vary)"
    else:
        reason = "95% CI of the change includes 0"
    return replace(r, verdict=NO_CHANGE, reason=reason)


def _bh(results: list[RowComparison]) -> list[float | None]:
    """BH q-values per (new kernel, family) over the rows with a p."""
    qs: list[float | None] = [None] * len(results)
    groups: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(results):
        if r.p is not None:
            groups.setdefault((r.kernel, r.family), []).append(i)
    for idx in groups.values():
        for i, q in zip(idx, multipletests([results[i].p for i in idx], method="fdr_bh")[1],
                        strict=True):  # fmt: skip
            qs[i] = float(q)
    return qs


def compare_table(
    table: pl.DataFrame,
    base: str,
    kernels: Sequence[str],
    metric: str = "p50",
    level: float = 0.05,
    delta: float | None = None,
    resamples: int = 2000,
    seed: int = 0,
    families: Mapping[str, str] | None = None,
    effect: float = DEFAULT_EFFECT,
) -> list[RowComparison]:
    """Every row of ``table`` (long format, see ``analysis.ingest.long_table``) of each
    kernel in ``kernels`` against ``base``; q-values per (kernel, family) of rows
    (``families``: row → family, default every row in :data:`PRIMARY`); the design
    calculation for a change of ``effect`` %."""
    rng = np.random.default_rng(seed)
    families = families or {}
    results: list[tuple[RowComparison, tuple[float, float] | None]] = []
    rows = table.select("row", "unit", "higher_is_better").unique(maintain_order=True)
    for row, unit, hib in rows.iter_rows():
        in_row = table.filter(pl.col("row") == row)
        present = set(in_row["kernel"].unique())
        base_kr = _kernel_row(in_row, row, base)
        for kernel in kernels:
            key = {"row": row, "unit": unit, "higher_is_better": hib, "kernel": kernel,
                   "base": base, "metric": metric, "family": families.get(row, PRIMARY),
                   "effect": effect}  # fmt: skip
            missing = [k for k in (base, kernel) if k not in present]
            if missing:
                reason = f"row missing for {', '.join(missing)}"
                results.append((RowComparison(**key, verdict=NOT_COMPARED, reason=reason), None))
                continue
            new_kr = _kernel_row(in_row, row, kernel)
            results.append(_compare_row(key, base_kr, new_kr, resamples, rng, level))
    plain = [r for r, _ in results]
    sizes: dict[tuple[str, str], int] = {}
    for r in plain:
        if r.p is not None:
            sizes[(r.kernel, r.family)] = sizes.get((r.kernel, r.family), 0) + 1
    out = []
    for (r, tost_ci), q in zip(results, _bh(plain), strict=True):
        r = replace(r, q=q, family_rows=sizes.get((r.kernel, r.family), 1))
        out.append(_verdict(r, tost_ci, level, delta))
    return out


def compare_samples(
    base_runs: Sequence[np.ndarray],
    new_runs: Sequence[np.ndarray],
    metric: str = "p50",
    level: float = 0.05,
    resamples: int = 2000,
    seed: int | np.random.Generator = 0,
    higher_is_better: bool = False,
) -> RowComparison:
    """One row compared on its own (q = p): the runs' samples of each kernel as arrays."""
    rng = np.random.default_rng(seed)
    base, new = KernelRow("base", tuple(base_runs), ()), KernelRow("new", tuple(new_runs), ())
    key = {"row": "row", "unit": "", "higher_is_better": higher_is_better, "kernel": "new",
           "base": "base", "metric": metric}  # fmt: skip
    r, tost = _compare_row(key, base, new, resamples, rng, level)
    return _verdict(replace(r, q=r.p), tost, level, None)


def shift_function(
    base: Sequence[np.ndarray], new: Sequence[np.ndarray], resamples: int = 2000, seed: int = 0
) -> pl.DataFrame:
    """Shift function (Doksum): per decile, the new − base difference of the run-mean
    Harrell–Davis deciles, with 95 % intervals from the two-stage bootstrap
    (:func:`difference_interval`). Columns decile, base, new, shift, low, high."""
    rng = np.random.default_rng(seed)
    deciles = [d / 10 for d in range(1, 10)]
    db, dn = two_stage(base, deciles, resamples, rng), two_stage(new, deciles, resamples, rng)
    rows = []
    for d in deciles:
        eb, en = run_statistics(base, d).mean(), run_statistics(new, d).mean()
        iv = difference_interval(
            (en, dn[d].mean(axis=1), len(new)), (eb, db[d].mean(axis=1), len(base)),
            CI_LEVEL, log=False,
        )  # fmt: skip
        rows.append((d, eb, en, iv.estimate, iv.low, iv.high))
    return pl.DataFrame(
        rows, schema=["decile", "base", "new", "shift", "low", "high"], orient="row"
    )


def mmtests_summary(runs: Sequence[np.ndarray], higher_is_better: bool) -> dict[str, float]:
    """mmtests' summary rows of one kernel's row. Amean and the Harrell–Davis rows are
    means over runs of each run's statistic (the estimands tested here; Amean equals
    mmtests' pooled mean when runs are equally long); Stddev (n−1), CoeffVar, Min, Max
    and BAmean-p (mean of the best max(1, ⌊n·p/100⌋) samples, best first) pool samples
    as mmtests does."""
    pooled = np.concatenate(runs)
    best_first = np.sort(pooled)[::-1] if higher_is_better else np.sort(pooled)
    mean = float(run_statistics(runs, MEAN).mean())
    sd = float(np.std(pooled, ddof=1)) if len(pooled) > 1 else math.nan
    out = {"Amean": mean, "Stddev": sd, "CoeffVar": 100 * sd / mean if mean else 0.0}
    out["Min"] = float(pooled.min())
    if max(len(r) for r in runs) > 1:
        for label, p in (("HD-50", 0.5), ("HD-90", 0.9), ("HD-99", 0.99)):
            out[label] = float(run_statistics(runs, p).mean())
        for p in (50, 99):
            out[f"BAmean-{p}"] = float(best_first[: max(1, len(pooled) * p // 100)].mean())
    out["Max"] = float(pooled.max())
    return out
