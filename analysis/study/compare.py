"""``mmlab compare``'s study: is a change between kernels real? Run-level significance per row.

The samples are every run below the paths given (kernel = run name, run = iteration; with
the rows derived from traces and vmstat when asked) or one long table
(:mod:`analysis.ingest.long_table`). Where the tree says which boot each iteration ran in
(:mod:`analysis.ingest.boots`), the boot is the unit of replication
(:func:`~analysis.stats.levels.replication`), and warm-up iterations are found in each
boot (:func:`~analysis.stats.levels.warmups`); each row of each kernel is then compared with
the base's (:func:`~analysis.stats.significance.compare_table`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from analysis.errors import InputError
from analysis.ingest import benchmarks, long_table
from analysis.metrics.sample_rows import FAMILIES
from analysis.metrics.trace_files import warm_runs
from analysis.stats.levels import Replication, Warmup, replication, warmups
from analysis.stats.significance import DEFAULT_EFFECT, RowComparison, compare_table

__all__ = ["KernelComparison", "compare_paths"]


@dataclass(frozen=True)
class KernelComparison:
    """Each row of each kernel against ``base``'s (``results``), on the samples compared
    (``table``: ``run`` relabelled to the unit of replication, ``units``), with the warm-up
    iterations found, the inputs skipped (one line each) and, for runs read from trees, where
    each row's unit comes from and the runs captured on an emulated platform."""

    base: str
    table: pl.DataFrame
    results: tuple[RowComparison, ...]
    units: Replication
    warmups: tuple[Warmup, ...]
    skipped: tuple[str, ...]
    loaded: benchmarks.Loaded | None

    @property
    def platforms(self) -> tuple[str, ...]:
        """One sentence per run captured on an emulated platform."""
        return self.loaded.platforms if self.loaded else ()

    def unit_source(self, row: str) -> str | None:
        """Where ``row``'s unit comes from (None for a table, which states its units)."""
        return self.loaded.unit_source(row) if self.loaded else None


def _load(
    paths: Sequence[Path], traces: bool, ops: bool, mmtests_dir: Path | None
) -> tuple[pl.DataFrame, benchmarks.Loaded | None]:
    """One table file as it is, else every run below ``paths`` (with the trace and vmstat
    Ops rows when asked: every run's traces analysed first, in parallel)."""
    if len(paths) == 1 and paths[0].is_file():
        return long_table.read(paths[0]), None
    wanted = {"traces": traces, "ops": ops}
    extra = {name: rows for name, rows in FAMILIES.items() if wanted[name]}
    if traces:
        warm_runs(paths)
    loaded = benchmarks.load_runs(paths, extra, mmtests_dir=mmtests_dir)
    return loaded.table, loaded


def compare_paths(
    paths: Sequence[Path],
    *,
    base: str | None = None,
    metric: str = "p50",
    rows: str | None = None,
    level: float = 0.05,
    delta: float | None = None,
    effect: float | None = None,
    resamples: int = 2000,
    seed: int = 0,
    traces: bool = False,
    ops: bool = False,
    mmtests_dir: Path | None = None,
) -> KernelComparison:
    """Every kernel of ``paths`` (runs, or one table) against ``base`` (default the first),
    on the rows whose name contains ``rows`` (all when None); an error when there is
    nothing to compare."""
    table, loaded = _load(paths, traces, ops, mmtests_dir)
    if rows:
        table = table.filter(pl.col("row").str.contains(rows, literal=True))
    kernels = list(dict.fromkeys(table["kernel"]))
    base = base or (kernels[0] if kernels else None)
    source = paths[0] if len(paths) == 1 else "arguments"
    if base is None or table.height == 0:
        raise InputError(source, "no samples found (no known benchmark logs or table rows)")
    if base not in kernels:
        raise InputError(source, f"base kernel {base!r} not found; kernels: {', '.join(kernels)}")
    others = [k for k in kernels if k != base]
    if not others:
        raise InputError(source, f"only one kernel ({base}): nothing to compare with")
    # The boot, not the iteration, is the unit where the tree says which boot each ran in.
    boots = loaded.boots if loaded else {}
    warm = warmups(table, boots)
    units = replication(table, boots)
    results = compare_table(
        units.table, base, others, metric, level, delta, resamples, seed,
        families=loaded.families if loaded else {},
        effect=DEFAULT_EFFECT if effect is None else effect,
    )  # fmt: skip
    return KernelComparison(
        base=base,
        table=units.table,
        results=tuple(results),
        units=units,
        warmups=tuple(warm),
        skipped=loaded.skipped if loaded else (),
        loaded=loaded,
    )
