"""The workload's latency comparison of a study, computed once for every output.

Every later run's workload rows (``analysis.ingest.benchmarks``: the stutterp mmap probe,
``elapsed``, any mmtests benchmark) against the first run's, through ``mmlab compare``'s
statistics (:func:`analysis.stats.significance.compare_table`) once per deciding statistic
of :data:`~analysis.stats.significance.METRICS`: the mail report shows the Harrell–Davis
median's (``mmlab compare``'s default), the paper every statistic of the first two runs.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import polars as pl
from statsmodels.stats.multitest import multipletests

from analysis.ingest import benchmarks
from analysis.ingest.mmtests import Run
from analysis.stats.levels import Warmup, replication, warmups
from analysis.stats.significance import METRICS, RowComparison, compare_table

__all__ = ["LEVEL", "LatencyComparison", "latency_comparison", "row_metrics"]

LEVEL = 0.05


def row_metrics(table: pl.DataFrame, row: str) -> tuple[str, ...]:
    """Statistics of ``row``: all of :data:`METRICS`, or only the mean when every run
    holds one value (its Harrell–Davis quantiles are that value)."""
    sizes = table.filter(pl.col("row") == row).group_by("kernel", "run").len()["len"]
    return tuple(METRICS) if sizes.max() > 1 else ("mean",)


@dataclass(frozen=True)
class LatencyComparison:
    """The workload rows of every run (``table``, long format) and every other kernel
    against ``base``, decided by each statistic in turn (``by_metric``: metric → one
    :class:`RowComparison` per row and kernel, as ``mmlab compare --metric`` gives them).

    ``new`` is the second run's kernel; ``results`` the ``(metric, comparison)`` of each of
    its rows and each statistic that means something for the row (:func:`row_metrics`);
    ``table_q`` the Benjamini–Hochberg q over every tested entry of ``results`` together
    (None where a row was not tested)."""

    table: pl.DataFrame
    base: str
    kernels: tuple[str, ...]
    by_metric: Mapping[str, tuple[RowComparison, ...]]
    # Runs that share a boot and warm-up regimes (analysis.stats.levels), said above the table.
    replication_notes: tuple[str, ...] = ()
    warmups: tuple[Warmup, ...] = ()

    @property
    def new(self) -> str:
        return self.kernels[0]

    @cached_property
    def results(self) -> tuple[tuple[str, RowComparison], ...]:
        pair = self.table.filter(pl.col("kernel").is_in([self.base, self.new]))
        return tuple(
            (metric, self.row(metric, row))
            for row in dict.fromkeys(pair["row"])
            for metric in row_metrics(pair, row)
        )

    def row(self, metric: str, row: str) -> RowComparison:
        """The new run's ``row`` decided by ``metric``."""
        return next(r for r in self.by_metric[metric] if (r.row, r.kernel) == (row, self.new))

    @cached_property
    def table_q(self) -> tuple[float | None, ...]:
        tested = [i for i, (_, r) in enumerate(self.results) if r.p is not None]
        ps = [self.results[i][1].p for i in tested]
        qs = multipletests(ps, method="fdr_bh")[1] if tested else []
        return tuple(
            float(qs[tested.index(i)]) if i in tested else None for i in range(len(self.results))
        )


def latency_comparison(runs: Sequence[Run], resamples: int = 2000) -> LatencyComparison | str:
    """Every workload row of every run but the first against the first, by each statistic
    (level :data:`LEVEL`, ``resamples`` bootstrap resamples, seed 0); a sentence saying why
    when there is nothing to compare."""
    from statsmodels.tools.sm_exceptions import ConvergenceWarning

    if len(runs) < 2:
        return "One run: no latency comparison (give BASE and NEW).\n"
    loaded = benchmarks.load_runs([run.path for run in runs])
    warm = tuple(warmups(loaded.table, loaded.boots))
    units = replication(loaded.table, loaded.boots)
    table = units.table
    kernels = list(dict.fromkeys(table["kernel"]))
    if len(kernels) < 2:
        return "No workload latency logs in at least two runs.\n"
    base, others = kernels[0], kernels[1:]
    with warnings.catch_warnings():
        # statsmodels warns before returning NaN for huge effects; needed_runs handles it.
        warnings.simplefilter("ignore", ConvergenceWarning)
        by_metric = {
            metric: tuple(compare_table(table, base, others, metric, LEVEL, None, resamples))
            for metric in METRICS
        }
    return LatencyComparison(table, base, tuple(others), by_metric, units.notes, warm)
