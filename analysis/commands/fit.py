"""``mmlab fit``: censored, jiffy-quantised distribution fits of reclaim throttle delays.

PATH is a trace, histogram text pasted from a mail (detected by content) or a capture /
mmtests directory (every ``ftrace-*`` below it, with its iteration's CONFIG_HZ). Each
(event, context, reason, timeout) group gets every candidate family ± zero mass ± cure
fraction, ranked by AIC, with P(k=0), P(timeout), the mean wait up to the timeout and
quantiles (95 % CIs). A group that cannot be fitted says why.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from analysis.commands.stalls import add_label_argument

__all__ = ["register"]

DEFAULT_BOOTSTRAP = 20


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "fit",
        help="fit censored, jiffy-quantised distributions to throttle delays",
        description=__doc__,
    )
    p.add_argument("paths", type=Path, nargs="+", metavar="PATH")
    p.add_argument("--reason", help="only reasons containing this text, e.g. WRITEBACK")
    p.add_argument("--context", help="only this context (kswapd, direct, memcg, 'group 2')")
    p.add_argument(
        "--family",
        action="append",
        metavar="FAMILY",
        help="fit only this family (repeatable; default all), e.g. weibull",
    )
    p.add_argument(
        "--bootstrap",
        type=int,
        default=DEFAULT_BOOTSTRAP,
        metavar="N",
        help=f"bootstrap replicates for CIs and G2 p (default {DEFAULT_BOOTSTRAP}; 0: delta "
        "method, no G2 p)",
    )
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    add_label_argument(p)
    p.add_argument("--hz", type=int, help="CONFIG_HZ, when the delays cannot tell it")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from analysis.outputs import Stages
    from analysis.report.fit import format_source_fits, source_fits_json
    from analysis.report.json_output import dumps
    from analysis.study.sources import fit_sources

    fits = fit_sources(
        args.paths,
        dict(args.label),
        hz=args.hz,
        reason=args.reason,
        context=args.context,
        families=args.family,
        bootstrap=args.bootstrap,
        seed=args.seed,
        stages=Stages("fit"),
    )
    if args.json:
        print(dumps(source_fits_json(fits)))
    else:
        print(format_source_fits(fits), end="")
    return 0
