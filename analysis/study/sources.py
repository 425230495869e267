"""What ``mmlab stalls`` and ``mmlab fit`` analyse: trace files, mail histograms and ftrace
hist-trigger files, named or found below a capture or mmtests directory.

A file is told apart by its content (its first MiB), never by its name: histogram text
pasted from a mail, a ``hist`` file of an ftrace hist trigger, else a trace in any layout
:mod:`analysis.ingest.ftrace` reads. A directory stands for every ``ftrace-*`` below it
(:func:`~analysis.ingest.captures.traces_below`), each analysed with its iteration's
``kconfig-*`` and vmstat.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.errors import InputError
from analysis.ingest import histogram
from analysis.ingest.captures import traces_below
from analysis.ingest.compressed import iter_blocks
from analysis.metrics.trace_analysis import TraceAnalysis, analyse_trace
from analysis.metrics.trace_files import analyse_file, warm
from analysis.outputs import Stages

if TYPE_CHECKING:
    from analysis.stats.fit import GroupFailure, GroupFit


__all__ = ["SourceFits", "analyse_source", "analyse_sources", "fit_sources", "trace_sources"]

SNIFF_BYTES = 1 << 20


def _head(path: Path) -> str:
    block = next(iter_blocks(path, SNIFF_BYTES), None)
    return bytes(block.data).decode("utf-8", errors="replace") if block else ""


def trace_sources(paths: Iterable[Path]) -> list[Path]:
    """Each of ``paths``, a directory replaced by the traces below it."""
    return [
        source for path in paths for source in (traces_below(path) if path.is_dir() else [path])
    ]


def analyse_source(
    path: Path, labels: Mapping[int, str], config_hz: int | None = None
) -> TraceAnalysis:
    """The analysis of one file: a hist trigger's or a mail histogram's events (``labels``
    name the context of each block of histogram text), else a trace's (cached)."""
    head = _head(path)
    if histogram.is_hist_trigger(head):
        return analyse_trace(histogram.read_hist_trigger_events(path), config_hz=config_hz)
    if histogram.looks_like_histogram(head):
        return analyse_trace(histogram.read(path, labels=dict(labels)), config_hz=config_hz)
    if labels:
        raise InputError(path, "--label applies to histogram text, and this is a trace")
    return analyse_file(path, config_hz=config_hz)


def analyse_sources(
    paths: Sequence[Path], labels: Mapping[int, str], config_hz: int | None = None
) -> list[TraceAnalysis]:
    """:func:`analyse_source` of every source of ``paths``; the traces not analysed yet are
    analysed first, in parallel (mail histograms are read in no time)."""
    sources = trace_sources(paths)
    warm([s for s in sources if s.is_file() and not histogram.looks_like_histogram(_head(s))])
    return [analyse_source(source, labels, config_hz) for source in sources]


@dataclass(frozen=True)
class SourceFits:
    """One source's analysis and the fits of its throttle groups (failures say why)."""

    analysis: TraceAnalysis
    groups: tuple[GroupFit | GroupFailure, ...]


def _check_selection(source: Path, events, reason: str | None, context: str | None) -> None:
    """``--reason`` / ``--context`` that select nothing where there are delays: an error
    listing what there is (not "no throttle delays", which would be false)."""
    from analysis.stats.fit import select_groups

    present = select_groups(events)
    if present.is_empty() or not select_groups(events, reason, context).is_empty():
        return
    reasons = ", ".join(sorted(present["reason"].unique().to_list()))
    contexts = ", ".join(sorted(present["context"].unique().to_list()))
    asked = " ".join(f"{o} {v}" for o, v in (("--reason", reason), ("--context", context)) if v)
    raise InputError(source, f"{asked} selects no delays; reasons: {reasons}; contexts: {contexts}")


def fit_sources(
    paths: Sequence[Path],
    labels: Mapping[int, str],
    *,
    hz: int | None = None,
    reason: str | None = None,
    context: str | None = None,
    families: Sequence[str] | None = None,
    bootstrap: int = 0,
    seed: int = 0,
    stages: Stages | None = None,
) -> list[SourceFits]:
    """Every throttle group of every source of ``paths`` (of ``reason``/``context`` when
    given) fitted with ``families`` (:func:`~analysis.stats.fit.fit_throttle_groups`) on the
    jiffy of the capturing kernel's CONFIG_HZ, else of the HZ the delays show, else ``hz``;
    an error where the two disagree, or where the selection finds none of the delays."""
    # Here, not at the top: the fits' SciPy and statsmodels cost `mmlab stalls` a second.
    from analysis.stats.families import FAMILIES
    from analysis.stats.fit import fit_throttle_groups

    if unknown := sorted(set(families or ()) - set(FAMILIES)):
        raise InputError("--family", f"unknown {unknown}; known: {', '.join(sorted(FAMILIES))}")
    sources = trace_sources(paths)
    if stages is not None:
        stages.expect(len(sources))
    out = []
    for source in sources:
        analysis = analyse_source(source, labels, hz)
        if conflict := analysis.hz.conflict():
            raise InputError(source, f"{conflict}; give the capturing kernel's --hz")
        _check_selection(source, analysis.throttle_events, reason, context)
        jiffy_hz = analysis.hz.config_hz or analysis.hz.hz or hz
        groups = fit_throttle_groups(
            analysis.throttle_events,
            1e6 / jiffy_hz if jiffy_hz else None,
            reason=reason,
            context=context,
            families=families,
            bootstrap=bootstrap,
            seed=seed,
        )
        out.append(SourceFits(analysis, tuple(groups)))
        if stages is not None:
            stages.done(f"{source}: {len(groups)} groups fitted")
    return out
