"""Per-sample results of the benchmarks in mmtests / ``mmlab capture`` run directories, as
one long table (``analysis.ingest.long_table``): kernel = run name, run = iteration.

Found by content in each ``iter-N``:

- ``stutterp/logs/mmap-latency-<N>.log`` (mmlab's anon-latency probe, stutterp's
  ``mmap-N``): a ``#`` header naming the unit, then ``<epoch_s> <latency>`` per mapping;
  row ``mmap-<N>``, one sample per mapping;
- ``usemem/logs/usemem-<threads>-<repetition>``: GNU ``/usr/bin/time`` output of one
  usemem invocation; rows ``user-<threads>``, ``syst-<threads>``, ``elsp-<threads>`` (s),
  the repetitions as samples (mmtests' own rows);
- ``tests-timestamp`` ``time ::`` line: row ``elapsed`` (s), one value per iteration;
- optionally (``traces``) reclaim stalls per context, compaction stalls (ms) and
  throttle delays (us) from each trace (``analysis.metrics.trace_analysis``), and
  (``ops``) every vmstat Ops row (``analysis.metrics.ops``), one value per iteration.

Lines that are not samples are counted and reported in ``Loaded.skipped``, never silently
dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from analysis.ingest import mmtests
from analysis.ingest.long_table import SCHEMA
from analysis.metrics.ops import HIGHER

__all__ = ["Loaded", "load_runs", "stutterp_log", "usemem_log"]

_UNITS = {"microseconds": "us", "milliseconds": "ms", "nanoseconds": "ns", "seconds": "s"}
_STUTTERP = re.compile(r"mmap-latency-(\d+)\.log")
_USEMEM = re.compile(r"usemem-(\d+)-(\d+)")
_TIME = re.compile(r"([\d.]+)user ([\d.]+)system (?:(\d+):)?(\d+):([\d.]+)elapsed")


@dataclass(frozen=True)
class Loaded:
    """Samples of every run found (long table) and one line per skipped input line."""

    table: pl.DataFrame
    skipped: tuple[str, ...]
    # row -> family of rows tested together (``analysis.stats.significance.FAMILIES``):
    # the workload's own rows, trace-derived rows, vmstat Ops rows.
    families: dict[str, str] = field(default_factory=dict)


def stutterp_log(path: Path) -> tuple[str, list[float], list[str]]:
    """(unit, latencies, skipped-line notes) of one probe log."""
    unit, values, skipped = "us", [], []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("#"):
            if m := re.search(r"unit: (\w+)", line):
                unit = _UNITS.get(m[1], m[1])
            continue
        fields = line.split()
        try:
            values.append(float(fields[1]))
        except (IndexError, ValueError):
            skipped.append(f"{path}:{number}: not '<epoch_s> <latency>': {line[:40]!r}")
    return unit, values, skipped


def usemem_log(path: Path) -> tuple[float, float, float] | None:
    """(user, system, elapsed) seconds of one GNU time output; None when there is none."""
    m = _TIME.search(path.read_text(errors="replace"))
    if m is None:
        return None
    elapsed = int(m[3] or 0) * 3600 + int(m[4]) * 60 + float(m[5])
    return float(m[1]), float(m[2]), elapsed


def _rows(it: mmtests.Iteration, traces: bool, ops: bool):
    """(row, value, unit, higher_is_better, family) of one iteration, and skipped-line
    notes."""
    rows, skipped = [], []
    for log in sorted(it.path.glob("stutterp/logs/mmap-latency-*.log")):
        if m := _STUTTERP.fullmatch(log.name):
            unit, values, bad = stutterp_log(log)
            rows += [(f"mmap-{m[1]}", v, unit, False) for v in values]
            skipped += bad
    for log in sorted(it.path.glob("usemem/logs/usemem-*")):
        if not (m := _USEMEM.fullmatch(log.name)):
            continue
        if (times := usemem_log(log)) is None:
            skipped.append(f"{log}: no GNU time line")
            continue
        rows += [
            (f"{k}-{m[1]}", v, "s", False)
            for k, v in zip(("user", "syst", "elsp"), times, strict=True)
        ]
    for test in it.tests:
        times = it.times.get(test)
        if times and times.elapsed_s:
            rows.append(("elapsed", times.elapsed_s, "s", False))
    rows = [(*r, "workload") for r in rows]
    if traces:
        rows += [(*r, "traces") for r in _trace_rows(it)]
    if ops:
        rows += [(*r, "ops") for r in _ops_rows(it)]
    return rows, skipped


def _trace_rows(it: mmtests.Iteration) -> list[tuple[str, float, str, bool]]:
    from analysis.metrics.trace_analysis import analyse_iteration

    rows = []
    for result in analyse_iteration(it):
        stalls = {f"{ctx} reclaim stall": p for ctx, p in result.reclaim.items()}
        stalls["compaction stall"] = result.compaction
        for name, paired in stalls.items():
            closed = paired.intervals.filter(pl.col("status") == "closed")
            rows += [(name, ns / 1e6, "ms", False) for ns in closed["duration_ns"]]
        events = result.throttle_events
        for delay, count in zip(events["delay_us"], events["count"], strict=True):
            rows += [("throttle delay", float(delay), "us", False)] * int(count)
    return rows


def _ops_rows(it: mmtests.Iteration) -> list[tuple[str, float, str, bool]]:
    from analysis.metrics.compare import iteration_report

    report = iteration_report(it)
    return [
        (r.label, r.value, r.unit, r.better == HIGHER) for r in report.rows if r.value is not None
    ]


def load_runs(paths: Iterable[Path], traces: bool = False, ops: bool = False) -> Loaded:
    """Every run below each path, as one long table (kernels in argument order)."""
    records, skipped, families = [], [], {}
    # Kernel label = run name, told apart as find_runs would (mmtests trees of one benchmark
    # share the run directory name).
    for run in mmtests.unique_runs(tuple(run for p in paths for run in mmtests.find_runs(p))):
        for it in run.iterations:
            rows, bad = _rows(it, traces, ops)
            records += [(run.name, r, str(it.index), v, u, h) for r, v, u, h, _ in rows]
            families |= {r[0]: r[-1] for r in rows}
            skipped += bad
    table = pl.DataFrame(records, schema=SCHEMA, orient="row")
    return Loaded(table, tuple(skipped), families)
