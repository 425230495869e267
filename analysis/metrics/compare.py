"""Ops rows across runs and iterations: mmtests' comparison, without its shortcuts.

mmtests prints the *minimum* over iterations for an Ops row; here every iteration is
kept, each run is summarised by mean ± sample standard deviation (n−1) over its
iterations, and the change of the mean against the first run uses mmtests' sign
convention (positive = better; see :func:`change_pct`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import polars as pl

from analysis.errors import InputError
from analysis.ingest.mmtests import Iteration, Run
from analysis.ingest.vmstat import Misaligned, misaligned_labels
from analysis.metrics.ops import (
    HIGHER,
    OPS,
    Elapsed,
    OpsReport,
    interval_series,
    iteration_elapsed,
    ops_report,
    reclaim_rates,
)
from analysis.stats.describe import mean_sd

__all__ = [
    "Comparison",
    "RowSummary",
    "build_distrust",
    "change_pct",
    "compare_runs",
    "iteration_report",
    "monitor_series",
]


def change_pct(base: float | None, new: float | None, better: str) -> float | None:
    """mmtests' % column: ``new·100/base − 100`` when higher is better, ``100 − new·100/base``
    when lower is better, so that a positive value always means "better". None when the
    base is 0 or either value is missing.

    >>> round(change_pct(31.4003, 2661.0198, "lower"), 2)  # seed 000, Amean mmap-4
    -8374.52
    """
    if base is None or new is None or base == 0:
        return None
    ratio = new * 100 / base
    return ratio - 100 if better == HIGHER else 100 - ratio


def _test_of(iteration: Iteration, test: str | None) -> str:
    tests = iteration.tests
    if test is not None:
        if tests and test not in tests:
            raise InputError(iteration.path, f"no test {test!r}; tests here: {', '.join(tests)}")
        return test
    if len(tests) == 1:
        return tests[0]
    if not tests:
        raise InputError(iteration.path, "no tests-timestamp and no proc-vmstat monitor")
    raise InputError(iteration.path, f"several tests ({', '.join(tests)}): choose one with --test")


def iteration_report(
    iteration: Iteration,
    test: str | None = None,
    elapsed: float | None = None,
    distrust: Misaligned | None = None,
) -> OpsReport:
    """The Ops table of one iteration (velocity over its best-known elapsed time, pages
    of the kernel's PAGE_SIZE from its saved config; ``distrust`` as
    :func:`~analysis.metrics.ops.ops_report`'s)."""
    name = _test_of(iteration, test)
    base = Elapsed(elapsed, "command line") if elapsed else iteration_elapsed(iteration, name)
    report = ops_report(iteration.vmstat(name), base, distrust)
    return replace(report, page_bytes=iteration.page_size)


def build_distrust(
    iterations: Sequence[Iteration], test: str | None = None
) -> dict[str, Misaligned]:
    """Kernel build (:attr:`~analysis.ingest.mmtests.Iteration.kernel_build`) → the
    misaligned /proc/vmstat labels found in any of its iterations: a kernel prints its
    names one slot off in every boot, so the rows it spoils are blanked in every run of
    that build, not only in those whose samples happen to show the evidence."""
    out: dict[str, Misaligned] = {}
    for it in iterations:
        build = it.kernel_build
        if build is None or build in out:
            continue
        if found := misaligned_labels(it.vmstat(_test_of(it, test))):
            where = f" (seen in {it.path}; kernel build {build}: every run of it)"
            out[build] = replace(found, reason=found.reason + where)
    return out


@dataclass(frozen=True)
class RowSummary:
    """One Ops row of one run: every iteration's value and their mean ± sd."""

    run: str
    label: str
    unit: str
    better: str
    values: tuple[float | None, ...]
    mean: float | None
    sd: float | None
    change_pct: float | None

    @property
    def n(self) -> int:
        """Iterations with a value (a row can be missing in some, e.g. nothing scanned)."""
        return sum(v is not None for v in self.values)


@dataclass(frozen=True)
class Comparison:
    """Ops rows of several runs; ``rows`` is label-major, runs in the order given."""

    runs: tuple[str, ...]
    reports: tuple[tuple[OpsReport, ...], ...]
    rows: tuple[RowSummary, ...]

    def row(self, label: str, run: str) -> RowSummary:
        return next(r for r in self.rows if r.label == label and r.run == run)


def compare_runs(
    runs: tuple[Run, ...], test: str | None = None, elapsed: float | None = None
) -> Comparison:
    """Summarise every Ops row over each run's iterations and compare with the first run."""
    if not runs:
        raise ValueError("no runs to compare")
    distrust = build_distrust([it for run in runs for it in run.iterations], test)
    reports = tuple(
        tuple(
            iteration_report(it, test, elapsed, distrust.get(it.kernel_build or ""))
            for it in run.iterations
        )
        for run in runs
    )
    rows: list[RowSummary] = []
    for k, op in enumerate(OPS):
        base_mean = None
        for r, run in enumerate(runs):
            values = [rep.rows[k].value for rep in reports[r]]
            mean, sd = mean_sd(values)
            if r == 0:
                base_mean = mean
            # The base column is 0.00% by definition; the formula could print -0.00.
            change = change_pct(base_mean, mean, op.better) if r else (0.0 if mean else None)
            rows.append(
                RowSummary(run.name, op.label, op.unit, op.better, tuple(values), mean, sd, change)
            )
    return Comparison(tuple(run.name for run in runs), reports, tuple(rows))


def monitor_series(runs: tuple[Run, ...], test: str | None = None) -> pl.DataFrame:
    """Per-interval reclaim rates (:func:`reclaim_rates`) of every iteration's vmstat
    monitor, with ``run`` and ``iteration`` columns; iterations without a monitor are
    left out."""
    frames = []
    for run in runs:
        for it in run.iterations:
            monitor = it.vmstat_monitor(_test_of(it, test))
            if monitor is None or len(monitor) < 2:
                continue
            rates = reclaim_rates(interval_series(monitor)[0])
            frames.append(
                rates.with_columns(
                    pl.lit(run.name).alias("run"), pl.lit(it.index).alias("iteration")
                )
            )
    return pl.concat(frames) if frames else pl.DataFrame()
