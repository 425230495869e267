"""``mmlab vmstat`` and ``mmlab compare-vmstat``: the reclaim Ops rows of /proc/vmstat.

A path is a snapshot file (then a second one is the snapshot taken after it), a
proc-vmstat monitor log, a tests-sysstate file or a memory.stat (formats told by content,
:mod:`analysis.ingest.vmstat`), or an mmtests / capture run directory: one iteration's Ops
table, or a run's iterations summarised (:mod:`analysis.metrics.compare`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import polars as pl

from analysis.errors import InputError
from analysis.ingest import mmtests, vmstat
from analysis.metrics.compare import Comparison, compare_runs, iteration_report
from analysis.metrics.ops import Elapsed, OpsReport, interval_series, ops_report

__all__ = ["VmstatOps", "compare_vmstat", "vmstat_ops"]


@dataclass(frozen=True)
class VmstatOps:
    """The Ops rows of one path (``source``): one table (``report``; ``intervals``: the
    per-interval rows of a monitor log, when asked), or a run's iterations summarised
    (``comparison``)."""

    source: str
    report: OpsReport | None = None
    intervals: pl.DataFrame | None = None
    comparison: Comparison | None = None


def _of_directory(path: Path, test: str | None, elapsed: float | None) -> VmstatOps:
    runs = mmtests.find_runs(path)
    if len(runs) > 1:
        names = ", ".join(r.name for r in runs)
        raise InputError(path, f"several runs ({names}): use mmlab compare-vmstat")
    (run,) = runs
    if len(run.iterations) == 1:
        return VmstatOps(str(path), report=iteration_report(run.iterations[0], test, elapsed))
    return VmstatOps(str(path), comparison=compare_runs(runs, test, elapsed))


def vmstat_ops(
    path: Path,
    after: Path | None = None,
    *,
    test: str | None = None,
    elapsed: float | None = None,
    intervals: bool = False,
) -> VmstatOps:
    """The Ops rows of ``path``: a run directory (``test`` of its iterations), or a file
    of samples (with ``after``, the snapshot taken after it). ``elapsed`` (seconds) is the
    velocities' time base when given; ``intervals`` adds a monitor log's per-interval rows."""
    if after is not None and (path.is_dir() or after.is_dir()):
        raise InputError(
            after,
            "PATH2 is the snapshot file taken after a snapshot file PATH; "
            "to compare runs or directories use mmlab compare-vmstat",
        )
    if path.is_dir():
        return _of_directory(path, test, elapsed)
    samples = vmstat.read(path)
    if after is not None:
        samples = vmstat.pair(samples, vmstat.read(after))
        vmstat.check_order(samples, path, after)
    elif len(samples) < 2:
        raise InputError(path, "one snapshot has no delta: give the snapshot after as PATH2")
    given = Elapsed(elapsed, "command line") if elapsed else None
    # The page size from a kconfig-* saved beside the file (as in an mmtests iteration).
    beside = mmtests.Iteration(path.parent.name, 0, path.parent)
    report = replace(ops_report(samples, given), page_bytes=beside.page_size)
    series = interval_series(samples)[0] if intervals and len(samples) > 2 else None
    return VmstatOps(str(path), report=report, intervals=series)


def compare_vmstat(
    paths: Sequence[Path], *, test: str | None = None, elapsed: float | None = None
) -> Comparison:
    """The Ops rows of every run below ``paths``, side by side (named apart)."""
    runs = mmtests.unique_runs(tuple(run for path in paths for run in mmtests.find_runs(path)))
    return compare_runs(runs, test, elapsed)
