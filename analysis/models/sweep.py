"""Parameter sweeps of a model: a YAML grid in, one Parquet table (a row per grid point) out.

A sweep model is a function ``(params: dict[str, object]) -> dict[str, float]`` registered
here by name as ``"module:attr"`` and imported only when used. It may carry a
``parameters`` attribute (the names it accepts) so a grid naming anything else is refused
before any work; otherwise its own error on the first point says so.

Grid file: the YAML grammar of :mod:`analysis.ingest.grid` (``mmlab sweep-notebook``
reads the same): a mapping parameter → value, list or range (every combination), or a
list of mappings (one point each).

Resumable: each finished point is written at once, whole, to
``OUT/.points/<id>.parquet``, and a rerun skips points already there. ``id`` hashes the
point's parameters, the content (SHA-256) of every file or directory a parameter names, and
the mmlab version: a capture replaced at the same path, or a new mmlab, computes the point
again instead of returning the old answer. ``OUT/<model>.parquet`` is written (atomically)
only when every point of the grid is done. A bad grid, an unknown model or an unreachable
scheduler stops the sweep before anything is written.

On ``--scheduler`` the workers import the model themselves and open the paths the grid
names, so they need this package and those files at the same paths; results come back
to this process, which alone writes them. Before anything is submitted, the grid's paths
(the model's ``path_parameters``) must be absolute, and the scheduler and every worker
must import the model and see each path; otherwise one line names what is missing where.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from threadpoolctl import threadpool_limits

from analysis import __version__
from analysis.errors import InputError
from analysis.ingest.compressed import sha256_file
from analysis.ingest.grid import read_grid
from analysis.outputs import Stages

__all__ = [
    "REGISTRY",
    "SweepResult",
    "evaluate",
    "input_digests",
    "point_id",
    "resolve",
    "spec_of",
    "sweep",
]

REGISTRY: dict[str, str] = {
    "throttle": "analysis.models.throttle_waits:SWEEP_MODEL",
    "shrinker": "analysis.models.shrinker:SWEEP_MODEL",
    # Out-of-sample validation tables, a (calibration, target) capture pair per point.
    "throttle-validation": "analysis.models.validation_sweep:throttle_point",
    "shrinker-validation": "analysis.models.validation_sweep:shrinker_point",
}
POINTS_DIR = ".points"

SweepModel = Callable[[dict[str, object]], dict[str, float]]


def spec_of(name: str, registry: Mapping[str, str] = REGISTRY) -> str:
    """The ``module:attr`` of the registered sweep model ``name``."""
    if name not in registry:
        raise InputError(name, f"unknown sweep model (known: {', '.join(sorted(registry))})")
    return registry[name]


def resolve(spec: str) -> SweepModel:
    """The sweep model at ``module:attr``, imported now."""
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


def _content_digest(path: Path) -> str:
    """SHA-256 of a file's bytes, or of a directory's files (relative names and digests)."""
    if path.is_file():
        return sha256_file(path)
    sha = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        sha.update(f"{f.relative_to(path)}\0{sha256_file(f)}\n".encode())
    return sha.hexdigest()


def input_digests(points: Sequence[Mapping[str, object]]) -> dict[str, str]:
    """Content digest of every parameter value that names an existing file or directory
    (each hashed once however many points name it)."""
    named = {v for p in points for v in p.values() if isinstance(v, str) and Path(v).exists()}
    return {v: _content_digest(Path(v)) for v in sorted(named)}


def point_id(point: Mapping[str, object], digests: Mapping[str, str]) -> str:
    """A stable name for a point: the same parameters, input contents (``digests`` from
    :func:`input_digests`) and mmlab version give the same id in any run."""
    inputs = {k: digests[v] for k, v in point.items() if isinstance(v, str) and v in digests}
    key = {"point": point, "inputs": inputs, "mmlab": __version__}
    text = json.dumps(key, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def evaluate(spec: str, point: dict[str, object]) -> dict[str, object]:
    """One row: the point's parameters and the outputs of the model at ``spec`` (this runs on
    Dask workers too, which import the model themselves)."""
    # One BLAS thread, as Dask's nanny gives its workers: a point's numbers do not depend
    # on where it ran (in-process and --workers agree to the last bit).
    with threadpool_limits(limits=1, user_api="blas"):
        outputs = resolve(spec)(dict(point))
    clash = set(outputs) & set(point)
    if clash:
        raise ValueError(f"model {spec} output names clash with parameters: {sorted(clash)}")
    return {**point, **{k: float(v) for k, v in outputs.items()}}


@dataclass(frozen=True)
class SweepResult:
    """Where the table is and how many points were computed now or found done."""

    model: str
    table: Path
    points: int
    computed: int
    resumed: int

    def rows(self) -> list[dict[str, object]]:
        """The table's rows, a NaN (a field a row does not have) as None."""
        return [
            {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}
            for row in pl.read_parquet(self.table).to_dicts()
        ]


def _write_atomic(frame: pl.DataFrame, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    frame.write_parquet(tmp)
    tmp.replace(path)


# A model's error on a point (a bad value, a missing capture) names the point.
POINT_ERRORS = (InputError, ValueError, KeyError, TypeError, OSError)


def _failed(grid_path: Path, point: Mapping[str, object], exc: Exception) -> InputError:
    where = json.dumps(point, default=str)
    return InputError(grid_path, f"model failed at point {where}: {exc}")


def _in_process(
    spec: str, todo: list[dict[str, object]], grid_path: Path
) -> Iterator[tuple[int, dict]]:
    for i, point in enumerate(todo):
        try:
            row = evaluate(spec, point)
        except POINT_ERRORS as exc:
            raise _failed(grid_path, point, exc) from exc
        yield i, row


def _grid_paths(
    grid_path: Path, model: SweepModel, points: Sequence[Mapping[str, object]], *, remote: bool
) -> list[str]:
    """The points' values of the model's ``path_parameters``; relative ones are refused for
    a remote scheduler, whose workers would resolve them against their own directory."""
    names = getattr(model, "path_parameters", ())
    paths = list(dict.fromkeys(str(p[n]) for p in points for n in names if n in p))
    for path in paths:
        if remote and not Path(path).is_absolute():
            raise InputError(
                grid_path,
                f"{path} is a relative path: workers of a --scheduler resolve it against "
                "their own directory; give it absolute",
            )
    return paths


def _remote_probe() -> Callable[[list[str], list[str]], list[str]]:
    """A function run on the scheduler and each worker: what it lacks of ``modules`` and
    ``paths``. Made inside a function so that cloudpickle sends it by value: a process
    without this package can still run it (a module-level function is sent by name)."""

    def probe(modules: list[str], paths: list[str]) -> list[str]:
        import importlib.util
        import os

        lacking = []
        for module in modules:
            try:
                found = importlib.util.find_spec(module) is not None
            except (ImportError, ValueError):  # ValueError: a module without a spec
                found = False
            if not found:
                lacking.append(f"cannot import {module} (is mmlab installed there?)")
        return lacking + [f"no file or directory {p}" for p in paths if not os.path.exists(p)]

    return probe


def _check_cluster(client, scheduler: str, spec: str, paths: list[str]) -> None:
    """InputError before any point is submitted if the scheduler or a worker cannot run
    the model (``evaluate`` and the model's module) on the grid's ``paths``."""
    modules = [__name__, spec.partition(":")[0]]
    probe = _remote_probe()
    if not client.scheduler_info().get("workers"):
        raise InputError(scheduler, "the Dask scheduler has no workers")
    found = {"scheduler": client.run_on_scheduler(probe, modules, [])}
    found |= {f"worker {w}": v for w, v in client.run(probe, modules, paths).items()}
    for where, lacking in found.items():
        if lacking:
            raise InputError(scheduler, f"{where}: {lacking[0]}")


def _on_dask(
    spec: str,
    todo: list[dict[str, object]],
    grid_path: Path,
    workers: int | None,
    scheduler: str | None,
    paths: list[str],
) -> Iterator[tuple[int, dict]]:
    from dask.distributed import Client, LocalCluster, as_completed

    if scheduler is not None:
        try:
            client = Client(scheduler, timeout="5s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError(scheduler, f"no Dask scheduler reachable: {exc}") from exc
        cluster = None
    else:
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,  # worker start/stop chatter is not the user's business
        )
        client = Client(cluster)
    try:
        if scheduler is not None:
            _check_cluster(client, scheduler, spec, paths)
        futures = client.map(evaluate, [spec] * len(todo), todo, pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        for future in as_completed(futures):
            i = index[future.key]
            try:
                row = future.result()
            except POINT_ERRORS as exc:
                raise _failed(grid_path, todo[i], exc) from exc
            yield i, row
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def sweep(
    name: str,
    grid_path: Path,
    out_dir: Path,
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    registry: Mapping[str, str] = REGISTRY,
) -> SweepResult:
    """Evaluate model ``name`` at every point of the grid in ``grid_path`` into
    ``out_dir/<name>.parquet``: in-process, or on a local Dask cluster of ``workers``
    processes, or on the Dask scheduler at ``scheduler``."""
    if workers is not None and scheduler is not None:
        raise InputError(grid_path, "--workers and --scheduler exclude each other")
    if workers is not None and workers <= 0:
        raise InputError(grid_path, f"--workers must be ≥ 1, got {workers}")
    spec = spec_of(name, registry)
    try:
        model = resolve(spec)
    except (ImportError, AttributeError) as exc:
        raise InputError(name, f"sweep model {spec} cannot be loaded: {exc}") from exc
    points = read_grid(grid_path)
    accepted = getattr(model, "parameters", None)
    if accepted is not None and (unknown := sorted({k for p in points for k in p} - set(accepted))):
        raise InputError(
            grid_path,
            f"unknown parameters for model {name}: {', '.join(unknown)} "
            f"(accepted: {', '.join(accepted)})",
        )
    paths = _grid_paths(grid_path, model, points, remote=scheduler is not None)
    digests = input_digests(points)
    ids = [point_id(p, digests) for p in points]
    parts = out_dir / POINTS_DIR
    todo = [p for p, i in zip(points, ids, strict=True) if not (parts / f"{i}.parquet").exists()]
    if todo and workers is None and scheduler is None:
        rows: Iterator[tuple[int, dict]] = _in_process(spec, todo, grid_path)
    elif todo:
        rows = _on_dask(spec, todo, grid_path, workers, scheduler, paths)
    else:
        rows = iter(())
    stages = Stages("sweep", len(todo))
    for i, row in rows:
        parts.mkdir(parents=True, exist_ok=True)
        _write_atomic(pl.DataFrame([row]), parts / f"{point_id(todo[i], digests)}.parquet")
        stages.done(f"{name} point {json.dumps(todo[i], default=str)}")
    table = pl.concat(
        [pl.read_parquet(parts / f"{i}.parquet") for i in ids], how="diagonal_relaxed"
    )
    target = out_dir / f"{name}.parquet"
    _write_atomic(table, target)
    return SweepResult(name, target, len(points), len(todo), len(points) - len(todo))
