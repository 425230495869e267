"""``mmlab sweep-notebook``: one notebook execution per grid point, plus an index table."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "sweep-notebook",
        help="execute NOTEBOOK once per point of GRID.yaml, in parallel, with an index",
        description="GRID.yaml is a grid as mmlab sweep's (docs/sweeps.md): a mapping "
        "parameter -> value, list or range (every combination) or a list of mappings (one "
        "point each). Outputs OUT/NOTEBOOK__key=value....ipynb "
        "and .html, OUT/index.csv and OUT/index.md. Exit status 1 when any point failed.",
    )
    p.add_argument("notebook", type=Path, help="jupytext percent .py notebook")
    p.add_argument("--grid", type=Path, required=True, help="YAML grid of parameters")
    p.add_argument("--jobs", type=int, default=2, help="executions at a time (default 2)")
    p.add_argument("--out", type=Path, default=Path("build/sweeps"), help="output folder")
    p.add_argument("--json", action="store_true", help="print the index as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from analysis.notebooks.sweep import index_table, sweep
    from analysis.outputs import replace_text
    from analysis.report.json_output import dumps
    from analysis.report.sweep import format_index

    out = args.out / args.notebook.stem
    results = sweep(args.notebook, args.grid, out, jobs=args.jobs)
    index = index_table(results, out)
    replace_text(out / "index.csv", index.write_csv())
    text = format_index(index)
    replace_text(out / "index.md", text)
    print(dumps(index, indent=1) if args.json else text, end="")
    return 0 if all(r.status == "ok" for r in results) else 1
