"""``mmlab notebook``: execute one notebook headless into ``.ipynb`` + ``.html`` (``make``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

__all__ = ["parse_parameter", "register"]


def parse_parameter(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` with VALUE read as YAML (``3`` is an int, ``a/b`` a string)."""
    key, sep, value = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, yaml.safe_load(value)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "notebook",
        help="execute a notebook headless (papermill) into OUT/NAME.ipynb and .html",
    )
    p.add_argument("notebook", type=Path, help="jupytext percent .py notebook")
    p.add_argument("--out", type=Path, default=Path("build/notebooks"), help="output folder")
    p.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        type=parse_parameter,
        metavar="KEY=VALUE",
        help="set a variable of the parameters cell (repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print the outputs as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from analysis.report.json_output import dumps
    from analysis.report.notebooks import NotebookFailed, execute

    try:
        done = execute(args.notebook, args.out, dict(args.param))
    except (NotebookFailed, ValueError) as exc:
        print(f"mmlab notebook: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(dumps({"ipynb": done.ipynb, "html": done.html}))
    else:
        print(f"{done.source} -> {done.ipynb}, {done.html}")
    return 0
