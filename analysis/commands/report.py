"""``mmlab report``: the mailing-list text report of runs (``make``: build/report.txt)."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "report",
        help="plain-text report for a patch cover letter: BASE NEW [...] or every run in DATA",
        description="A summary first (what differed between the runs, the latency "
        "verdicts), then in cover-letter order: latency, vmstat Ops, throttling, stalls, "
        "aggregated over iterations. 80 columns, no ANSI.",
    )
    p.add_argument("runs", nargs="*", type=Path, metavar="RUN", help="run directories, base first")
    p.add_argument(
        "--data", type=Path, default=Path("data"), help="every run under DATA (no RUN given)"
    )
    p.add_argument("--out", type=Path, help="write the report here (default: stdout)")
    p.add_argument(
        "--detail",
        action="store_true",
        help="also each run's provenance and every traced iteration's analysis (--json has them)",
    )
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from analysis.outputs import Stages, replace_text
    from analysis.report.document import build_report, report_json
    from analysis.report.json_output import dumps

    paths = args.runs or [args.data]
    stages = Stages("report")
    if args.json:
        text = dumps(report_json(paths, stages)) + "\n"
    else:
        text = build_report(paths, args.detail, stages)
    if args.out is None:
        print(text, end="")
    else:
        replace_text(args.out, text)
    return 0
