"""Notebook parameter sweeps: one headless execution per grid point, in parallel.

A grid file is YAML in the one grammar of :mod:`analysis.ingest.grid`, which ``mmlab
sweep`` reads too: a mapping parameter → value, list or range (every combination is a
point, like papermill's own ``-p`` repeated) or a list of mappings (each one point).
Each point's outputs are named by its parameters (``NOTEBOOK__key=value__...``), and
:func:`index_table` lists every point with its status, so a failed point is reported and
the others still run (:func:`analysis.report.sweep.format_index` renders it).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from analysis.errors import InputError
from analysis.ingest.grid import read_grid
from analysis.notebooks.execute import NotebookFailed, execute, parameter_names

__all__ = ["PointResult", "index_table", "point_name", "sweep"]

# Characters kept in output names; anything else (/, spaces, quotes) becomes '-'.
_UNSAFE = re.compile(r"[^A-Za-z0-9._=+-]+")


def point_name(stem: str, parameters: Mapping[str, object]) -> str:
    """``stem__key=value__...`` with path separators and spaces made file-name safe."""
    parts = [stem, *(f"{k}={v}" for k, v in parameters.items())]
    return _UNSAFE.sub("-", "__".join(parts)).strip("-")


@dataclass(frozen=True)
class PointResult:
    """One grid point: its parameters, output name, status (``ok``/``failed``), error text
    (empty when ok) and wall time in seconds."""

    name: str
    parameters: Mapping[str, object]
    status: str
    error: str
    seconds: float


def _run_point(
    notebook: Path, out: Path, name: str, parameters: dict[str, object], cwd: Path | None
) -> PointResult:
    start = time.monotonic()
    try:
        execute(notebook, out, parameters, name=name, cwd=cwd)
    except NotebookFailed as exc:
        return PointResult(name, parameters, "failed", str(exc), time.monotonic() - start)
    except Exception as exc:  # a dead kernel or bad value fails this point, not the sweep
        error = f"{type(exc).__name__}: {exc}"
        return PointResult(name, parameters, "failed", error, time.monotonic() - start)
    return PointResult(name, parameters, "ok", "", time.monotonic() - start)


def sweep(
    notebook: Path, grid: Path, out: Path, *, jobs: int = 2, cwd: Path | None = None
) -> list[PointResult]:
    """Execute ``notebook`` once per point of the grid file ``grid``, ``jobs`` at a time
    (separate processes: each execution starts its own kernel). A notebook with a
    ``build_dir`` parameter gets its own ``out/NAME`` for figures unless the grid sets it."""
    points = read_grid(grid)
    known = parameter_names(notebook)
    for point in points:
        unknown = sorted(set(point) - set(known))
        if unknown:
            raise InputError(notebook, f"grid sets {', '.join(unknown)}, not in its parameters")
    names = [point_name(notebook.stem, p) for p in points]
    if len(set(names)) != len(names):
        raise InputError(notebook, "two grid points give the same output name")
    out.mkdir(parents=True, exist_ok=True)
    calls = []
    for name, point in zip(names, points, strict=True):
        parameters = dict(point)
        if "build_dir" in known and "build_dir" not in parameters:
            parameters["build_dir"] = str(out / name)
        calls.append((notebook, out, name, parameters, cwd))
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(_run_point, *call) for call in calls]
        return [f.result() for f in futures]


def index_table(results: Sequence[PointResult], out: Path) -> pl.DataFrame:
    """One row per point: every parameter, ``status``, ``seconds`` (wall, s), the output
    ``ipynb``/``html`` paths (null when failed) and the ``error``."""
    keys = list(dict.fromkeys(k for r in results for k in r.parameters if k != "build_dir"))
    rows = [
        {
            "name": r.name,
            **{k: str(r.parameters.get(k, "")) for k in keys},
            "status": r.status,
            "seconds": round(r.seconds, 1),
            "ipynb": str(out / f"{r.name}.ipynb") if r.status == "ok" else None,
            "html": str(out / f"{r.name}.html") if r.status == "ok" else None,
            "error": r.error,
        }
        for r in results
    ]
    return pl.DataFrame(rows, schema_overrides={"ipynb": pl.String(), "html": pl.String()})
