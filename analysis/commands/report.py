"""``mmlab report``: the text report of every run under a data directory (build/report.txt)."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "report",
        help="the text report of every run under DATA (what make writes to build/report.txt)",
    )
    p.add_argument("--data", type=Path, default=Path("data"), help="directory of runs")
    p.add_argument("--out", type=Path, help="write the report here (default: stdout)")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from analysis.report.document import build_report, report_json
    from analysis.report.json_output import dumps

    text = dumps(report_json(args.data)) + "\n" if args.json else build_report(args.data)
    if args.out is None:
        print(text, end="")
    else:
        args.out.write_text(text)
    return 0
