"""Which runs a study takes: every run at or below each path it is given, none left out
by name, so that the report, the paper and the notebooks read the runs they are told to
(the repository's own ``make`` names its captures explicitly)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from analysis.ingest.mmtests import Run, find_runs, unique_runs

__all__ = ["study_runs"]


def study_runs(paths: Sequence[str | Path]) -> tuple[Run, ...]:
    """Every run of :func:`~analysis.ingest.mmtests.find_runs` under each of ``paths``, in
    order, named apart."""
    # Runs of several paths may share a name (mmtests CI trees all call theirs alike).
    return unique_runs(tuple(run for path in paths for run in find_runs(Path(path))))
