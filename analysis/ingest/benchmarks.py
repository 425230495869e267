"""Per-sample results of the benchmarks in mmtests / ``mmlab capture`` run directories, as
one long table (``analysis.ingest.long_table``): kernel = run name, run = iteration.

Every ``<iter>/<benchmark>/logs/`` directory is read (docs/mmtests-conventions.md
"Benchmark logs"):

- natively when mmlab knows the benchmark (``analysis.ingest.mmtests_logs.READERS``:
  stutterp in mmtests' and mmlab's probe format, usemem with both log namings,
  thpscale/thpcompact/thpchallenge/thpfioscale, pft, pagealloc, hpagealloc), with the
  samples, units and directions of mmtests' own extraction;
- else through ``parse-results`` of the user's mmtests checkout (``mmtests=`` /
  ``--mmtests`` / ``$MMTESTS``; ``analysis.ingest.mmtests_shellpack``);
- else not at all, with one note naming the benchmark and what to do.

Also the ``tests-timestamp`` ``time ::`` line: row ``elapsed`` (s; ``elapsed-<test>`` when
an iteration ran several tests), one value per iteration; and the rows of any further
family a caller derives from an iteration (``extra``: ``analysis.metrics.sample_rows``
gives the trace-derived stalls and throttle delays and the vmstat Ops rows).

Lines, samples and files that are not read are reported in ``Loaded.skipped``, and where
each row family's unit comes from in ``Loaded.units``: nothing is dropped silently.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from analysis.errors import InputError
from analysis.ingest import mmtests, mmtests_shellpack
from analysis.ingest.boots import boots_of_run
from analysis.ingest.long_table import SCHEMA
from analysis.ingest.mmtests_logs import READERS, LogRead, read_logs, stutterp_log, usemem_log

__all__ = [
    "Loaded",
    "RowsOf",
    "UnitSource",
    "benchmark_logs",
    "load_runs",
    "stutterp_log",
    "usemem_log",
]

# An iteration's samples of one family of rows: (row, value, unit, higher_is_better), given
# the iteration and every iteration compared (a kernel build's verdict spans its runs).
RowsOf = Callable[
    [mmtests.Iteration, tuple[mmtests.Iteration, ...]], list[tuple[str, float, str, bool]]
]


@dataclass(frozen=True)
class UnitSource:
    """Where the unit of a family of rows (``fault-base-*``: rows that differ only in their
    last number) of one benchmark comes from."""

    benchmark: str
    rows: str
    unit: str
    source: str

    def matches(self, row: str) -> bool:
        """Whether ``row`` is one of these rows."""
        return row == self.rows or (self.rows.endswith("-*") and _family(row) == self.rows)

    def __str__(self) -> str:
        return f"{self.benchmark} {self.rows} in {self.unit}: {self.source}"


@dataclass(frozen=True)
class Loaded:
    """Samples of every run found (long table), one line per skipped input line, sample
    or file, and where each row family's unit comes from."""

    table: pl.DataFrame
    skipped: tuple[str, ...]
    units: tuple[UnitSource, ...] = ()
    # row -> family of rows tested together (``analysis.stats.significance``): the
    # workload's own rows, trace-derived rows, vmstat Ops rows.
    families: dict[str, str] = field(default_factory=dict)
    # One sentence per run captured on an emulated platform (Run.emulated).
    platforms: tuple[str, ...] = ()
    # (kernel, run) -> (boot key, how it is known): the unit of replication (ingest.boots).
    boots: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)

    def unit_source(self, row: str) -> str | None:
        """Where ``row``'s unit comes from; None for rows mmlab computes itself (traces,
        vmstat Ops: their units are the analysis's)."""
        return next((u.source for u in self.units if u.matches(row)), None)


def benchmark_logs(
    it: mmtests.Iteration, checkout: Path | None = None
) -> Iterator[tuple[str, LogRead]]:
    """Yield (benchmark, what was read) for every ``<benchmark>/logs`` of ``it``."""
    for logs in sorted(p for p in it.path.glob("*/logs") if p.is_dir()):
        bench = logs.parent.name
        if bench in READERS:
            yield bench, read_logs(bench, logs)
        elif checkout is not None and mmtests_shellpack.shellpack_dir(checkout, bench):
            yield bench, mmtests_shellpack.parse_results(checkout, bench, logs)
        else:
            where = (
                f"the mmtests checkout {checkout} has no shellpack_src/src/{bench}/parse-results"
                if checkout is not None
                else "give --mmtests DIR (or MMTESTS=DIR), an mmtests checkout, to read it "
                "through mmtests' parse-results"
            )
            yield bench, LogRead(notes=(f"{logs}: {bench}: no native reader; {where}",))


def _family(row: str) -> str:
    """``fault-base-12`` -> ``fault-base-*``: rows that differ only in their last number."""
    return re.sub(r"-\d+$", "-*", row)


def _rows(
    it: mmtests.Iteration,
    extra: Mapping[str, RowsOf],
    checkout: Path | None,
    every: tuple[mmtests.Iteration, ...],
):
    """(row, value, unit, higher_is_better, family) of one iteration, skipped notes, unit
    sources; ``every``: all iterations compared."""
    rows, skipped, units = [], [], {}
    for bench, got in benchmark_logs(it, checkout):
        rows += [(r, v, d.unit, d.higher_is_better) for r, v, d in got.samples]
        skipped += got.notes
        first = {}  # row -> its declaration (one per row: rows have one unit)
        for r, _, d in got.samples:
            first.setdefault(r, d)
        for r, d in first.items():
            units.setdefault((bench, _family(r), d.unit), d.source)
    tests = it.tests
    for test in tests:
        times = it.times.get(test)
        if times and times.elapsed_s:
            row = "elapsed" if len(tests) == 1 else f"elapsed-{test}"
            rows.append((row, times.elapsed_s, "s", False))
            units.setdefault(("tests-timestamp", row, "s"), "mmtests 'time ::' line (seconds)")
    rows = [(*r, "workload") for r in rows]
    for family, rows_of in extra.items():
        rows += [(*r, family) for r in rows_of(it, every)]
    return rows, skipped, units


def _one_unit_per_row(table: pl.DataFrame) -> None:
    """An error when one row has several units (mmlab's probe in us beside mmtests'
    stutterp in ms, say): comparing them would be off by the ratio of the units."""
    mixed = (
        table.group_by("row", maintain_order=True)
        .agg(
            pl.col("unit").unique(maintain_order=True), pl.col("kernel").unique(maintain_order=True)
        )
        .filter(pl.col("unit").list.len() > 1)
    )
    if mixed.height:
        row, units, kernels = mixed.row(0)
        raise InputError(
            ", ".join(kernels),
            f"row {row!r} is in {' and '.join(units)} in different runs: not comparable",
        )


def load_runs(
    paths: Iterable[Path],
    extra: Mapping[str, RowsOf] | None = None,
    mmtests_dir: Path | None = None,
) -> Loaded:
    """Every run below each path, as one long table (kernels in argument order), with the
    rows of each ``extra`` family (family → its rows of an iteration); ``mmtests_dir``
    (else ``$MMTESTS``) reads benchmarks with no native reader."""
    checkout = mmtests_shellpack.checkout(mmtests_dir)
    records, skipped, units, families = [], [], {}, {}
    # Kernel label = run name, told apart as find_runs would (mmtests trees of one benchmark
    # share the run directory name).
    runs = mmtests.unique_runs(tuple(run for p in paths for run in mmtests.find_runs(p)))
    platforms = tuple(note for run in runs if (note := run.emulated))
    boot_of = {
        (run.name, it): (b.key, b.source) for run in runs for it, b in boots_of_run(run).items()
    }
    every = tuple(it for run in runs for it in run.iterations)
    for run in runs:
        for it in run.iterations:
            rows, bad, sources = _rows(it, extra or {}, checkout, every)
            records += [(run.name, r, str(it.index), v, u, h) for r, v, u, h, _ in rows]
            families |= {r[0]: r[-1] for r in rows}
            skipped += bad
            for key, source in sources.items():
                units.setdefault(key, source)
    table = pl.DataFrame(records, schema=SCHEMA, orient="row")
    _one_unit_per_row(table)
    lines = tuple(UnitSource(b, fam, u, src) for (b, fam, u), src in units.items())
    # The same note from every run of a benchmark (a checkout's yaml) is said once.
    return Loaded(table, tuple(dict.fromkeys(skipped)), lines, families, platforms, boot_of)
