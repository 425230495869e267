"""``mmlab sweep``: evaluate a registered model over a parameter grid into one Parquet table.

In-process by default; ``--workers N`` starts a local Dask cluster of N processes,
``--scheduler ADDRESS`` uses a running one. Points already done in ``--out`` are skipped,
so an interrupted sweep resumes where it stopped (see :mod:`analysis.models.sweep`).

``throttle-validation`` and ``shrinker-validation`` score the models out of sample: a grid
of ``calibration`` and ``target`` captures (e.g. ``calibration: [data/vm-6.12/aa1]``,
``target: [data/vm-6.12/aa2, data/vm-6.12/wb20, data/vm-6.12/wb500]``) gives one row per
pair with every quantity's prediction, run-level 95 % interval, errors of the model and
the baselines and the permutation p (docs/model-validation.md; columns:
analysis/models/validation_sweep.py). ``--json`` prints the table's rows too.
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "sweep", help="evaluate a model over a parameter grid (Parquet)", description=__doc__
    )
    p.add_argument("model", metavar="MODEL", help="registered sweep model, e.g. throttle")
    p.add_argument(
        "--grid",
        type=Path,
        required=True,
        metavar="GRID.yaml",
        help="parameter: value, [values] or {start, stop, num|step[, log]}, or a list of "
        "points (docs/sweeps.md)",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, metavar="N", help="local Dask cluster of N")
    where.add_argument("--scheduler", metavar="ADDRESS", help="existing Dask scheduler")
    p.add_argument("--out", type=Path, help="output directory (default build/sweeps/MODEL)")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from analysis.models.sweep import sweep
    from analysis.report.json_output import dumps
    from analysis.report.sweep import format_sweep, sweep_json

    out = args.out or Path("build") / "sweeps" / args.model
    result = sweep(args.model, args.grid, out, workers=args.workers, scheduler=args.scheduler)
    print(dumps(sweep_json(result, result.rows())) if args.json else format_sweep(result))
    return 0
