"""Is a latency change between two kernels real? One row of a benchmark at a time.

Input is a long table (``analysis.ingest.long_table``): per kernel, row (e.g. ``mmap-4``),
run (an independent iteration) the samples of that run. The statistic that decides a row
(``metric``: the mean or a Harrell–Davis quantile) is computed per run; the kernel's
estimate is the mean over its runs (``analysis.stats.bootstrap``). Assumptions stated:

- runs are independent and exchangeable within a kernel (fresh workload, same machine);
  samples within a run are not assumed independent;
- the deciding p-value is a **permutation test over runs** (exact when the splits are
  few): the per-run statistics (logged when all positive) of both kernels are exchangeable
  under "no change"; it is valid for any distribution but cannot go below
  ``2 / C(R_a + R_b, R_a)`` (0.10 with 3 runs each);
- with one run per kernel there is no between-run variation to test against: repetitions
  are treated as replicates (Brunner–Munzel over the samples) and the method says that a
  session effect cannot be excluded;
- Benjamini–Hochberg q-values across every row of the table control the false discovery
  rate; a row is ``improved``/``regressed`` when q < level and the change's 95 % CI
  excludes 0, ``equivalent`` when ``delta`` is given and the (1 − 2·level) CI of the
  change lies within ±delta (TOST), otherwise ``no change shown`` with the reason and,
  when the runs are too few, how many would detect the observed effect with 80 % power.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import polars as pl
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestIndPower

from analysis.ingest.long_table import runs_of
from analysis.stats.bootstrap import MEAN, Interval, run_statistics, t_interval, two_stage

__all__ = [
    "CI_LEVEL",
    "IMPROVED",
    "METRICS",
    "NOT_COMPARED",
    "POWER",
    "REGRESSED",
    "RowComparison",
    "compare_samples",
    "compare_table",
    "difference_interval",
    "hodges_lehmann",
    "min_attainable_p",
    "mmtests_summary",
    "needed_runs",
    "permutation_p",
    "runs_p",
    "shift_function",
    "superiority",
]

# --metric name -> statistic for analysis.stats.bootstrap (mean or quantile probability).
METRICS: dict[str, float | str] = {"mean": MEAN, "p50": 0.5, "p90": 0.9, "p99": 0.99}
CI_LEVEL = 0.95
POWER = 0.8
_MAX_SPLITS = 20_000
TIME_UNITS = frozenset({"ns", "us", "µs", "ms", "s", "seconds", "microseconds", "milliseconds"})
IMPROVED, REGRESSED, EQUIVALENT, NO_CHANGE, NOT_COMPARED = (
    "improved",
    "regressed",
    "equivalent",
    "no change shown",
    "not compared",
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
    """Smallest two-sided p an exact permutation test over runs can give."""
    return 2 / math.comb(runs_a + runs_b, runs_a)


def needed_runs(base: np.ndarray, new: np.ndarray, level: float) -> int | None:
    """Runs per kernel that would detect the observed run-level effect (two-sample t,
    80 % power at ``level``; at least enough for the permutation test to reach ``level``).
    None when the effect is zero, the runs show no variation, or the effect is too small
    for the solver (far beyond any feasible number of runs)."""
    a, _ = _log_if_positive(base)
    b, _ = _log_if_positive(new)
    sd = math.sqrt(
        ((len(a) - 1) * np.var(a, ddof=1) + (len(b) - 1) * np.var(b, ddof=1))
        / (len(a) + len(b) - 2)
    )
    effect = abs(b.mean() - a.mean())
    if sd == 0 or effect == 0:
        return None
    floor = next(r for r in itertools.count(2) if min_attainable_p(r, r) <= level)
    power = TTestIndPower()
    # Solve only above the floor: the solver fails (and warns) when fewer than 2 would do.
    at_floor = power.power(effect_size=effect / sd, nobs1=floor, alpha=level)
    if not at_floor < POWER:  # also NaN: an effect too large for the noncentral t
        return floor
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        n = power.solve_power(effect_size=effect / sd, alpha=level, power=POWER)
    # The solver gives up (NaN) on effects so small that the answer is astronomically large.
    return max(math.ceil(n), floor) if np.isfinite(n) else None


def difference_interval(
    new: tuple[float, np.ndarray, int],
    base: tuple[float, np.ndarray, int],
    level: float,
    log: bool,
) -> Interval:
    """Interval of ``new − base`` (or of ``log new − log base``) from each side's
    (estimate, bootstrap draws, runs): variances scaled by R/(R−1) as in
    :func:`~analysis.stats.bootstrap.t_interval`, Welch–Satterthwaite df on R−1 each."""
    parts = []
    for est, draws, runs in (new, base):
        d = np.log(draws) if log else draws
        scale = runs / (runs - 1) if runs > 1 else 1.0
        parts.append((math.log(est) if log else est, np.var(d, ddof=1) * scale, runs - 1))
    (e_new, v_new, df_new), (e_base, v_base, df_base) = parts
    var = v_new + v_base
    terms = [v**2 / df for v, df in ((v_new, df_new), (v_base, df_base)) if df > 0 and v > 0]
    df = var**2 / sum(terms) if terms and min(df_new, df_base) > 0 else math.inf
    crit = float(stats.t.ppf(0.5 + level / 2, df)) if math.isfinite(df) else 1.96
    se = math.sqrt(var)
    diff = e_new - e_base
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
    (``(resamples, runs)`` per kernel), t with min(R)−1 df."""
    est = float(np.median(new_medians[:, None] - base_medians[None, :]))
    draws = np.median(new_draws[:, :, None] - base_draws[:, None, :], axis=(1, 2))
    return t_interval(est, draws, min(len(base_medians), len(new_medians)), level)


def superiority(base: np.ndarray, new: np.ndarray, level: float) -> Interval | None:
    """Brunner–Munzel probability of superiority P(new > base) + ½·P(tie) over the pooled
    samples, with its Welch-type interval from the placements (Brunner & Munzel 2000).
    Pooled samples ignore runs: an effect size, never the deciding test. None when the
    kernel has fewer than two samples; no interval when the placements do not vary."""
    n_b, n_n = len(base), len(new)
    if min(n_b, n_n) < 2:
        return None
    ranks = stats.rankdata(np.concatenate([base, new]))
    place_b = (ranks[:n_b] - stats.rankdata(base)) / n_n
    place_n = (ranks[n_b:] - stats.rankdata(new)) / n_b
    p_hat = float(place_n.mean())
    v_b, v_n = np.var(place_b, ddof=1) / n_b, np.var(place_n, ddof=1) / n_n
    var = v_b + v_n
    if not var > 0:
        # Complete separation or all tied: the estimate stands, its interval does not.
        return Interval(p_hat, math.nan, math.nan, 0.0, math.nan)
    df = var**2 / (v_b**2 / (n_b - 1) + v_n**2 / (n_n - 1))
    half = float(stats.t.ppf(0.5 + level / 2, df)) * math.sqrt(var)
    return Interval(p_hat, max(0.0, p_hat - half), min(1.0, p_hat + half), math.sqrt(var), df)


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
    """The verdict on one row of one kernel against the base; ``change`` is the relative
    change of the metric in % (new/base − 1, not sign-flipped), None when not computed."""

    row: str
    unit: str
    higher_is_better: bool
    kernel: str
    base: str
    metric: str
    verdict: str
    reason: str
    runs: int = 0
    base_runs: int = 0
    samples: int = 0
    base_samples: int = 0
    estimate: Interval | None = None
    base_estimate: Interval | None = None
    change: float | None = None
    change_ci: tuple[float, float] | None = None
    hl_shift: Interval | None = None
    superiority: Interval | None = None
    p: float | None = None
    q: float | None = None
    method: str = ""
    needed_runs: int | None = None
    notes: tuple[str, ...] = ()


def _kernel_row(frame: pl.DataFrame, row: str, kernel: str, unit: str) -> KernelRow:
    """Runs of one kernel's row; NaN (and negative times) dropped and said."""
    frame = frame.filter((pl.col("row") == row) & (pl.col("kernel") == kernel))
    dropped = []
    bad = frame.filter(pl.col("value").is_nan() | pl.col("value").is_null())
    if bad.height:
        dropped.append(f"{kernel}: {bad.height} NaN/empty values dropped")
    frame = frame.filter(pl.col("value").is_not_nan() & pl.col("value").is_not_null())
    if unit in TIME_UNITS:
        negative = frame.filter(pl.col("value") < 0).height
        if negative:
            dropped.append(f"{kernel}: {negative} negative {unit} values dropped")
        frame = frame.filter(pl.col("value") >= 0)
    return KernelRow(kernel, tuple(runs_of(frame, row, kernel)), tuple(dropped))


@dataclass(frozen=True)
class _Side:
    estimate: Interval
    run_values: np.ndarray
    draws: np.ndarray
    medians: np.ndarray
    median_draws: np.ndarray


def _side(kr: KernelRow, stat: float | str, resamples: int, rng) -> _Side:
    draws = two_stage(kr.runs, [stat, 0.5], resamples, rng)
    values = run_statistics(kr.runs, stat)
    est = t_interval(float(values.mean()), draws[stat].mean(axis=1), len(kr.runs), CI_LEVEL)
    if kr.samples == 1:
        # One value in all: nothing to estimate its uncertainty from.
        est = Interval(est.estimate, math.nan, math.nan, math.nan, math.nan)
    return _Side(est, values, draws[stat], run_statistics(kr.runs, 0.5), draws[0.5])


def runs_p(base: np.ndarray, new: np.ndarray) -> tuple[float, str]:
    """The deciding p of per-run statistics (logged when all positive, so a ratio is
    tested) by :func:`permutation_p`, and the method in words."""
    vb, log_b = _log_if_positive(base)
    vn, log_n = _log_if_positive(new)
    if not (log_b and log_n):
        vb, vn = base, new
    p, splits = permutation_p(vb, vn)
    kind = "exact" if splits == math.comb(len(vb) + len(vn), len(vb)) else "random"
    scale = " of log" if log_b and log_n else ""
    return p, f"permutation over runs ({kind}, {splits} splits{scale})"


def _decide(
    base: KernelRow, new: KernelRow, b: _Side, n: _Side, level: float
) -> tuple[float | None, str, str]:
    """(p, method, reason-if-no-p) at the level of runs, or of repetitions for one run."""
    if len(base.runs) >= 2 and len(new.runs) >= 2:
        return (*runs_p(b.run_values, n.run_values), "")
    if len(base.runs) == 1 and len(new.runs) == 1:
        return _repetitions_p(base.runs[0], new.runs[0])
    return (
        None,
        "none",
        f"{len(base.runs)} vs {len(new.runs)} runs: a test over runs needs ≥2 runs per kernel",
    )


SESSION = "one run per kernel: a session effect cannot be excluded"


def _repetitions_p(xb: np.ndarray, xn: np.ndarray) -> tuple[float | None, str, str]:
    """One run per kernel: repetitions as replicates. Exact (or 20 000-split) permutation
    of mean ranks (Wilcoxon–Mann–Whitney, ties exact) when the splits are few enough to
    enumerate or the samples small, else Brunner–Munzel (t approximation)."""
    if len(xb) < 2 or len(xn) < 2:
        return None, f"none ({SESSION})", "fewer than 2 repetitions per kernel"
    if len(xb) + len(xn) <= 200:
        ranks = stats.rankdata(np.concatenate([xb, xn]))
        p, splits = permutation_p(ranks[: len(xb)], ranks[len(xb) :])
        return p, f"rank permutation over repetitions, {splits} splits ({SESSION})", ""
    method = f"Brunner–Munzel over repetitions ({SESSION})"
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.brunnermunzel(xb, xn)
    if not np.isfinite(res.pvalue):
        return None, method, "Brunner–Munzel undefined (no variation within a kernel)"
    return float(res.pvalue), method, ""


def _change(n: _Side, b: _Side, runs: tuple[int, int], level: float):
    if b.estimate.estimate == 0:
        return None, None, None
    log = n.estimate.estimate > 0 and b.estimate.estimate > 0
    log = log and bool(np.all(n.draws > 0) and np.all(b.draws > 0))
    if not log or math.isnan(n.estimate.se) or math.isnan(b.estimate.se):
        return (n.estimate.estimate / b.estimate.estimate - 1) * 100, None, None
    args = (
        (n.estimate.estimate, n.draws.mean(axis=1), runs[0]),
        (b.estimate.estimate, b.draws.mean(axis=1), runs[1]),
    )
    ci = difference_interval(*args, CI_LEVEL, log=True)
    tost = difference_interval(*args, 1 - 2 * level, log=True)
    pct = lambda x: (math.exp(x) - 1) * 100  # noqa: E731
    return pct(ci.estimate), (pct(ci.low), pct(ci.high)), (pct(tost.low), pct(tost.high))


def _compare_row(
    key: dict, base: KernelRow, new: KernelRow, resamples: int, rng, level: float
) -> tuple[RowComparison, tuple[float, float] | None]:
    """One row of ``new`` against ``base`` (q and the final verdict come later);
    ``key`` holds the identity fields of :class:`RowComparison` (row ... metric)."""
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
    b = _side(base, METRICS[key["metric"]], resamples, rng)
    n = _side(new, METRICS[key["metric"]], resamples, rng)
    p, method, why = _decide(base, new, b, n, level)
    change, change_ci, tost_ci = _change(n, b, (len(new.runs), len(base.runs)), level)
    if change_ci is None and change is not None:
        notes = (*notes, "no CI of the relative change (one value, or estimates not all positive)")
    need = None
    if len(base.runs) >= 2 and len(new.runs) >= 2:
        need = needed_runs(b.run_values, n.run_values, level)
    result = RowComparison(
        **key,
        verdict=NO_CHANGE,
        reason=why,
        **sizes,
        estimate=n.estimate,
        base_estimate=b.estimate,
        change=change,
        change_ci=change_ci,
        hl_shift=hodges_lehmann(b.medians, n.medians, b.median_draws, n.median_draws, CI_LEVEL),
        superiority=superiority(np.concatenate(base.runs), np.concatenate(new.runs), CI_LEVEL),
        p=p,
        method=method,
        needed_runs=need,
        notes=notes,
    )
    return result, tost_ci


def _verdict(r: RowComparison, tost_ci, level: float, delta: float | None) -> RowComparison:
    """Fill in the verdict and reason once q is known (see the module docstring)."""
    if r.verdict == NOT_COMPARED:
        return r
    need = r.needed_runs
    excludes_zero = r.change_ci is not None and (r.change_ci[0] > 0 or r.change_ci[1] < 0)
    if r.q is not None and r.q < level and excludes_zero:
        better = (r.change > 0) == r.higher_is_better
        reason = f"q {r.q:.3g} < {level:g}"
        if r.runs == 1 and r.base_runs == 1:
            reason += f" over repetitions; {SESSION}"
        return _with(r, IMPROVED if better else REGRESSED, reason, None)
    if delta is not None and tost_ci is not None and -delta < tost_ci[0] and tost_ci[1] < delta:
        ci_pct = round(100 * (1 - 2 * level))
        return _with(r, EQUIVALENT, f"{ci_pct}% CI of change within ±{delta:g}%", None)
    if r.q is None:
        reason = r.reason or "no p-value"
    elif r.q >= level:
        reason = f"q {r.q:.3g} ≥ {level:g}"
        if r.base_runs >= 2 and r.runs >= 2:
            floor = min_attainable_p(r.base_runs, r.runs)
            if floor > level:
                reason += f"; {r.base_runs} vs {r.runs} runs cannot give p < {floor:.3g}"
    else:
        reason = "CI of the change includes 0"
    return _with(r, NO_CHANGE, reason, need)


def _with(r: RowComparison, verdict: str, reason: str, need: int | None) -> RowComparison:
    return replace(r, verdict=verdict, reason=reason, needed_runs=need)


def compare_table(
    table: pl.DataFrame,
    base: str,
    kernels: Sequence[str],
    metric: str = "p50",
    level: float = 0.05,
    delta: float | None = None,
    resamples: int = 2000,
    seed: int = 0,
) -> list[RowComparison]:
    """Every row of ``table`` (long format, see ``analysis.ingest.long_table``) of each
    kernel in ``kernels`` against ``base``; q-values across every compared row."""
    rng = np.random.default_rng(seed)
    results: list[tuple[RowComparison, tuple[float, float] | None]] = []
    rows = table.select("row", "unit", "higher_is_better").unique(maintain_order=True)
    for row, unit, hib in rows.iter_rows():
        in_row = table.filter(pl.col("row") == row)
        present = set(in_row["kernel"].unique())
        base_kr = _kernel_row(in_row, row, base, unit)
        for kernel in kernels:
            key = {"row": row, "unit": unit, "higher_is_better": hib, "kernel": kernel,
                   "base": base, "metric": metric}  # fmt: skip
            missing = [k for k in (base, kernel) if k not in present]
            if missing:
                reason = f"row missing for {', '.join(missing)}"
                results.append((RowComparison(**key, verdict=NOT_COMPARED, reason=reason), None))
                continue
            new_kr = _kernel_row(in_row, row, kernel, unit)
            results.append(_compare_row(key, base_kr, new_kr, resamples, rng, level))
    tested = [i for i, (r, _) in enumerate(results) if r.p is not None]
    qs = multipletests([results[i][0].p for i in tested], method="fdr_bh")[1] if tested else []
    out = []
    for i, (r, tost_ci) in enumerate(results):
        q = float(qs[tested.index(i)]) if i in tested else None
        out.append(_verdict(replace(r, q=q), tost_ci, level, delta))
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
