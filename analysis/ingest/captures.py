"""Where the traces of a capture are: the one place that finds trace files.

mmtests and ``mmlab capture`` write one ``ftrace-<test>[.gz|.zst|...]`` per test in each
iteration directory, beside ``ftrace-<test>.start`` (the epoch, not a trace), the
``kconfig-*`` of the kernel and the vmstat snapshots and monitor. ``mmlab ingest`` also
takes a folder of traces named otherwise (:func:`trace_files`).
"""

from __future__ import annotations

from pathlib import Path

from analysis.errors import InputError
from analysis.ingest import mmtests

__all__ = ["iteration_of", "iteration_traces", "trace_files", "traces_below"]

PREFIX = "ftrace-"
START = ".start"
# The endings of trace text files (plain or compressed) in a folder given to mmlab ingest.
SUFFIXES = (".txt", ".trace", ".gz", ".zst", ".xz", ".bz2")


def _is_trace(path: Path) -> bool:
    # Any non-directory by its name: a FIFO or device named ftrace-* is then refused by the
    # reader's regular-file check, not skipped (a run would silently lose its trace).
    return not path.is_dir() and path.name.startswith(PREFIX) and not path.name.endswith(START)


def iteration_traces(iteration: mmtests.Iteration) -> list[tuple[str, Path]]:
    """``(test, trace)`` of every test of ``iteration``, tests in order, traces sorted."""
    return [
        (test, trace)
        for test in iteration.tests
        for trace in sorted(iteration.path.glob(f"{PREFIX}{test}.*"))
        if _is_trace(trace)
    ]


def _iteration_dir(trace: Path, root: Path) -> Path | None:
    """The innermost ``iter-N`` directory at or below ``root`` holding ``trace``, if any."""
    for d in trace.parents:
        if mmtests.is_iteration(d):
            return d
        if d == root:
            return None
    return None


def traces_below(path: Path) -> list[Path]:
    """Every trace file below directory ``path``, sorted; InputError when there is none.

    Traces inside mmtests iterations come only from the iterations
    :func:`~analysis.ingest.mmtests.find_runs` keeps: the one rule of every command for an
    empty, incomplete or damaged iteration (refused, or left out with a note), so that
    ``stalls`` and ``fit`` use exactly the iterations ``compare`` and ``report`` use.
    Traces in folders that are not iterations are taken as they are."""
    every = sorted(p for p in path.rglob(f"{PREFIX}*") if _is_trace(p))
    has_runs = mmtests.is_iteration(path) or any(
        p.is_dir() and mmtests.is_iteration(p) for p in path.rglob("iter-*")
    )
    runs = mmtests.find_runs(path) if has_runs else ()
    kept = {it.path for run in runs for it in run.iterations}
    found = [t for t in every if (d := _iteration_dir(t, path)) is None or d in kept]
    if not found:
        raise InputError(path, f"no {PREFIX}* file below this directory")
    return found


def trace_files(paths: list[Path]) -> list[Path]:
    """Files named as they are, directories expanded to the trace text files below them
    (``ftrace*``, ``*.trace``, ``*trace*.txt`` and compressed forms; not a ``.start``)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(
                p
                for p in path.rglob("*")
                if p.is_file()
                and not p.name.endswith(START)
                and "trace" in p.name
                and p.name.endswith(SUFFIXES)
            )
            if not found:
                raise InputError(path, "directory holds no trace files")
            files.extend(found)
        elif path.exists():
            files.append(path)
        else:
            raise InputError(path, "no such file or directory")
    return files


def iteration_of(trace: Path) -> tuple[mmtests.Iteration, str] | None:
    """The mmtests iteration holding ``trace`` and its test name, if it is in one; an
    iteration that is incomplete (without ``mmlab --include-incomplete``), empty or whose
    ``mmlab.json`` is damaged is an InputError, as it is for a whole run."""
    if not mmtests.is_iteration(trace.parent):
        return None
    (run,) = mmtests.find_runs(trace.parent)
    (iteration,) = run.iterations
    return iteration, trace.name.removeprefix(PREFIX).split(".")[0]
