"""Which runs a study takes from a data folder: every capture run but the bundled test trees
and the guest sweeps, so that the report, the paper and the notebooks read the same runs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from analysis.ingest.captures import traces_below
from analysis.ingest.mmtests import Run, find_runs, unique_runs

__all__ = ["GUEST_SWEEPS", "TEST_TREES", "capture_runs", "capture_traces", "study_runs"]

# Third-party trees bundled for the tests, not captures of this project's workload.
TEST_TREES = ("mmtests-ci", "mmtests-ci-more", "mmtests-formats")
# Sweeps captured in an emulated (TCG) guest of the patched kernel (docs/patched-kernels.md
# "Running a capture in a guest"): another platform, whose times must not be compared with
# the host's captures; they are reported when named (``mmlab report data/vm-6.12``).
GUEST_SWEEPS = ("vm-6.12",)


def _below_skipped(path: Path, data: Path) -> bool:
    """``path`` lies in a third-party test tree or a guest sweep below ``data`` (one named
    as ``data`` itself, or above it, counts as asked for)."""
    skip = set(TEST_TREES) | set(GUEST_SWEEPS)
    return path.is_relative_to(data) and bool(set(path.relative_to(data).parts) & skip)


def capture_runs(data: Path) -> tuple[Run, ...]:
    """Every run under ``data`` except the bundled third-party test trees and the guest
    sweeps below it, in path order."""
    # An iteration directory given as ``data`` has its run directory above ``data``.
    return tuple(run for run in find_runs(data) if not _below_skipped(run.path, data))


def capture_traces(data: Path) -> list[Path]:
    """Every trace under ``data`` (a trace file: itself) of the runs :func:`capture_runs`
    keeps: the notebooks' traces, from the same runs as the report's."""
    return [t for t in traces_below(data) if not _below_skipped(t, data)]


def study_runs(paths: Sequence[Path]) -> tuple[Run, ...]:
    """Every run of :func:`capture_runs` under each of ``paths``, in order, named apart."""
    # Runs of several paths may share a name (mmtests CI trees all call theirs alike).
    return unique_runs(tuple(run for path in paths for run in capture_runs(path)))
