"""The analysis of trace files: :func:`analyse_file`, :func:`analyse_iteration`.

The analysis of an ingested trace is cached beside its dataset: computed once per trace
content, mmlab version and analysis code, then read back by every later command
(``mmlab stalls``, the report, ``compare --traces``, the models, the notebooks).

The key is the mmlab version and a digest of the source of the code that computes the
analysis (``analysis/metrics`` and the distribution statistics), so changed code never
reads results an older one wrote. The results are the tables (Parquet), the reports
(``meta.json``) and the per-row frames (Parquet parts, read only when used). What depends
on the iteration rather than the trace (the CONFIG_HZ check, the vmstat cross-check), the
source's name and its unparsed lines are added on every read.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

import polars as pl

import analysis
from analysis.errors import InputError
from analysis.ingest import ftrace, mmtests
from analysis.ingest.captures import iteration_of, iteration_traces
from analysis.ingest.ftrace.cache import DEFAULT_CACHE, cached, results
from analysis.metrics import daemons, pairing, trace_analysis
from analysis.metrics.duplicates import Duplicates
from analysis.metrics.rows import RowStore, stored
from analysis.metrics.trace_analysis import TraceAnalysis

__all__ = [
    "TABLES",
    "analyse_file",
    "analyse_iteration",
    "analyse_iterations",
    "analysis_key",
    "cached_analysis",
    "warm",
    "warm_runs",
]

# The tables of a TraceAnalysis kept as Parquet files.
TABLES = (
    "throttle_events",
    "throttle",
    "delay_histogram",
    "compaction_time",
    "compaction_status",
    "compact_orders",
    "shrinker",
    "shrinker_work",
    "by_process",
    "by_order",
    "by_gfp",
    "lru",
    "distributions",
    "summary",
)
# The code an analysis's numbers come from.
_CODE = ("metrics/*.py", "stats/describe.py", "ingest/events.py")


@functools.cache
def analysis_key() -> str:
    """mmlab version + digest of the analysis code (see the module docstring)."""
    return analysis.source_key(_CODE)


def _write(analysis: TraceAnalysis, directory: Path) -> None:
    """Tables and reports of ``analysis`` (its rows are in ``directory/rows`` already);
    ``meta.json`` last, which marks the results complete."""
    frames = directory / "frames"
    frames.mkdir()
    for name in TABLES:
        getattr(analysis, name).write_parquet(frames / f"{name}.parquet")
    meta = {
        "input_kind": analysis.input_kind,
        "lost_events": analysis.lost_events,
        "capture_s": analysis.capture_s,
        "duplicates": asdict(analysis.duplicates),
        "reclaim": {context: asdict(s.report) for context, s in analysis.reclaim.items()},
        "compaction": asdict(analysis.compaction.report),
        "kswapd": [asdict(r) for r in analysis.kswapd],
        "kcompactd": [asdict(r) for r in analysis.kcompactd],
    }
    (directory / "meta.json").write_text(json.dumps(meta))


def _read(directory: Path, trace) -> TraceAnalysis:
    """The analysis stored in ``directory`` for ``trace`` (checks not applied)."""
    meta = json.loads((directory / "meta.json").read_text())
    rows = directory / "rows"
    order = trace_analysis.INTERVAL_ORDER

    def intervals(name: str, report: dict) -> pairing.StallIntervals:
        return pairing.StallIntervals.deferred(
            {"intervals": stored(rows, name, order)}, report=pairing.PairingReport(**report)
        )

    loaders = {
        "shrinker_invocations": stored(
            rows, "shrinker_invocations", trace_analysis.INVOCATION_ORDER
        ),
        "shrinker_backlog": functools.partial(trace_analysis.shrinker_backlog, trace),
        # Tables too are read when first asked for: a study of many runs reads a few each.
        **{
            name: functools.partial(pl.read_parquet, directory / "frames" / f"{name}.parquet")
            for name in TABLES
        },
    }
    unparsed = trace_analysis.unparsed_of(trace)
    return TraceAnalysis.deferred(
        loaders,
        source=str(trace.source),
        input_kind=meta["input_kind"],
        lost_events=meta["lost_events"],
        unparsed=unparsed[0],
        unparsed_lines=unparsed[1],
        capture_s=meta["capture_s"],
        duplicates=Duplicates(**meta["duplicates"]),
        reclaim={c: intervals(c, r) for c, r in meta["reclaim"].items()},
        compaction=intervals("compaction", meta["compaction"]),
        kswapd=tuple(daemons.AwakeReport(**r) for r in meta["kswapd"]),
        kcompactd=tuple(daemons.AwakeReport(**r) for r in meta["kcompactd"]),
        hz=None,
        lru_check=None,
        histogram_groups=None,
    )


def cached_analysis(
    trace, *, config_hz: int | None = None, vmstat_deltas: Mapping[str, int] | None = None
) -> TraceAnalysis:
    """:func:`trace_analysis.analyse_trace` of an ingested trace (``trace.directory`` is its
    dataset), from the cache when this version of the code analysed these bytes before."""

    def build(tmp: Path) -> None:
        _write(trace_analysis.analyse_trace(trace, store=RowStore(tmp / "rows")), tmp)

    directory = results(trace.directory, analysis_key(), build)
    return trace_analysis.with_checks(_read(directory, trace), config_hz, vmstat_deltas)


def _in_iteration(
    trace: Path, iteration: mmtests.Iteration, test: str, config_hz: int | None
) -> TraceAnalysis:
    try:
        deltas = iteration.counter_deltas(test)
    except InputError:
        deltas = None  # a trace without vmstat snapshots still has its stall statistics
    hz = config_hz if config_hz is not None else iteration.config_hz
    return cached_analysis(ftrace.read(trace), config_hz=hz, vmstat_deltas=deltas)


def analyse_file(trace: Path, *, config_hz: int | None = None) -> TraceAnalysis:
    """:func:`analyse_trace` of a trace file, with the CONFIG_HZ (unless ``config_hz`` is
    given) and vmstat deltas of the mmtests iteration holding it, when it is in one."""
    if found := iteration_of(trace):
        return _in_iteration(trace, *found, config_hz)
    return cached_analysis(ftrace.read(trace), config_hz=config_hz)


def analyse_iteration(iteration: mmtests.Iteration) -> list[TraceAnalysis]:
    """:func:`analyse_trace` of every trace of ``iteration`` with its CONFIG_HZ and vmstat."""
    return [
        _in_iteration(trace, iteration, test, None) for test, trace in iteration_traces(iteration)
    ]


def analyse_iterations(iterations: Sequence[mmtests.Iteration]) -> list[list[TraceAnalysis]]:
    """:func:`analyse_iteration` of each iteration; the traces not analysed before are
    analysed first in parallel (:func:`warm`)."""
    warm([trace for it in iterations for _, trace in iteration_traces(it)])
    return [analyse_iteration(it) for it in iterations]


def _analysed(path: Path) -> bool:
    """Whether this code's analysis of ``path`` (as it is now) is in the default cache."""
    dataset = cached(DEFAULT_CACHE, path)
    return dataset is not None and (dataset / f"analysis-{analysis_key()}/meta.json").is_file()


def _analyse_for_pool(path: str, _cache: str | None) -> dict:
    """Worker entry point: ingest and analyse one trace into the caches (the reader's
    note on unparsed lines is the caller's to print); returns the cache entries it added,
    for the command's process to remove should the command fail."""
    from analysis.ingest.ftrace import cache

    cache.begin_command()
    cached_analysis(ftrace.read(path, note_unparsed=False))
    return {"new_entries": cache.new_entries()}


def warm(paths: Sequence[Path]) -> None:
    """Analyse into the cache the traces among ``paths`` not analysed yet, one process per
    core (and per ``WORKER_PEAK_BYTES`` of available memory): the analyses of different
    traces are independent. With one to do, or one core, the caller's own analysis does it."""
    todo = [str(p) for p in dict.fromkeys(paths) if p.is_file() and not _analysed(p)]
    if len(todo) < 2:
        return
    import psutil

    from analysis.ingest.ftrace import reader

    free = reader.available_memory_bytes(psutil.virtual_memory().available)
    workers = reader.pool_workers(len(todo), os.cpu_count() or 1, free)
    if workers > 1:
        from analysis.ingest.ftrace import cache

        for result in reader.map_in_processes(_analyse_for_pool, todo, None, workers):
            cache.adopt_entries(result.get("new_entries", []))


def warm_runs(paths: Sequence[Path]) -> None:
    """:func:`warm` for every trace of every run found below ``paths``."""
    runs = [run for path in paths for run in mmtests.find_runs(path)]
    warm([trace for run in runs for it in run.iterations for _, trace in iteration_traces(it)])
