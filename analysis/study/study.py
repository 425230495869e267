"""A study: the runs compared (the first is the base) and every result computed once.

Each result is a cached property, computed on first use and shared by every output: the
mail report (:mod:`analysis.report.document`), the paper (:mod:`analysis.report.paper`)
and ``mmlab report --json``. A result an output needs that is not here is added here, not
recomputed in the output, so that two outputs cannot print two numbers for one quantity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import polars as pl

from analysis.ingest.mmtests import Run
from analysis.metrics.compare import Comparison, compare_runs
from analysis.metrics.stall_runs import iteration_stalls, run_stall_table
from analysis.metrics.throttle_runs import run_throttle_table
from analysis.metrics.trace_analysis import TraceAnalysis
from analysis.metrics.trace_files import analyse_iterations
from analysis.outputs import Stages
from analysis.study.fits import RunGroupFit, run_fits
from analysis.study.latency import LatencyComparison, latency_comparison
from analysis.study.provenance import (
    Provenance,
    iteration_provenance,
    run_differences,
    setting_differences,
)
from analysis.study.shrinker import ShrinkerReplays, shrinker_replays

__all__ = ["SLOW", "Study"]

# The results besides the trace analyses that take a while, each one progress stage.
SLOW = ("latency", "ops", "fits")


@dataclass(frozen=True)
class Study:
    """The runs of one study, first run the base. ``resamples``: bootstrap resamples of the
    latency comparison; ``fit_bootstrap``: parametric-bootstrap replicates testing each
    throttle fit (the fits' estimates and CIs do not depend on it)."""

    runs: tuple[Run, ...]
    resamples: int = 2000
    fit_bootstrap: int = 0
    # Told each slow result as it is computed (every iteration's traces, the latency
    # comparison, the Ops rows, the fits): a long report or paper says where it is.
    progress: Stages | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.progress is not None:
            self.progress.expect(1 + len(SLOW))  # the traces (analysed in parallel), then SLOW

    def _done(self, what: str) -> None:
        if self.progress is not None:
            self.progress.done(what)

    @cached_property
    def analyses(self) -> tuple[tuple[Run, int, TraceAnalysis], ...]:
        """``(run, iteration index, analysis)`` of every trace of every iteration."""
        iterations = [(run, it) for run in self.runs for it in run.iterations]
        analysed = analyse_iterations([it for _, it in iterations])
        self._done(f"{len(iterations)} iterations' traces")
        return tuple(
            (run, it.index, analysis)
            for (run, it), analyses in zip(iterations, analysed, strict=True)
            for analysis in analyses
        )

    @cached_property
    def lost_events(self) -> int:
        """Trace events the kernel dropped, over every traced iteration."""
        return sum(a.lost_events for _, _, a in self.analyses)

    @cached_property
    def provenance(self) -> tuple[Provenance, ...]:
        """Capture context of every iteration of every run."""
        return tuple(iteration_provenance(run, it) for run in self.runs for it in run.iterations)

    @cached_property
    def differences(self) -> tuple[str, ...]:
        """Provenance fields (machine, memory, CONFIG_HZ, memcg, tests) that differ between
        the runs (``run_differences``)."""
        return run_differences(self.provenance)

    @cached_property
    def settings(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Every capture setting whose values differ between the runs (``setting_differences``)."""
        return setting_differences(self.runs)

    @cached_property
    def latency(self) -> LatencyComparison | str:
        """The workload's latency rows, every later run against the first by each deciding
        statistic (:func:`~analysis.study.latency.latency_comparison`); a sentence saying
        why when there is nothing to compare."""
        found = latency_comparison(self.runs, self.resamples)
        self._done("latency comparison")
        return found

    @cached_property
    def ops(self) -> Comparison:
        """vmstat Ops rows of every run over its iterations, against the first run."""
        found = compare_runs(self.runs)
        self._done("vmstat Ops rows")
        return found

    @cached_property
    def throttle(self) -> pl.DataFrame:
        """``mm_vmscan_throttled`` per run, reason and timeout over iterations
        (``run_throttle_table``)."""
        return run_throttle_table([(run.name, i, a.throttle) for run, i, a in self.analyses])

    @cached_property
    def stalls(self) -> pl.DataFrame:
        """Reclaim stalls per run and context over its traced iterations (``run_stall_table``)."""
        return run_stall_table(
            [(run.name, i, iteration_stalls(a.reclaim)) for run, i, a in self.analyses]
        )

    @cached_property
    def fits(self) -> tuple[RunGroupFit, ...]:
        """Throttle-delay fits per run and group: pooled over iterations, and the best
        family refitted to each iteration (:func:`~analysis.study.fits.run_fits`)."""
        by_run = [(run.name, [a for r, _, a in self.analyses if r is run]) for run in self.runs]
        found = run_fits(by_run, bootstrap=self.fit_bootstrap)
        self._done("throttle delay fits")
        return found

    @cached_property
    def shrinker(self) -> ShrinkerReplays | None:
        """Every trace's shrinker calls checked against the capturing kernel's rule and
        replayed under each deferral rule and divisor (:mod:`analysis.study.shrinker`);
        None when no trace has any."""
        return shrinker_replays(self.analyses)
