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

from analysis.commands.stalls import add_label_argument, analyse_path, trace_sources
from analysis.errors import InputError

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


def _check_selection(source: Path, events, args: argparse.Namespace) -> None:
    """``--reason`` / ``--context`` that select nothing where there are delays: an error
    listing what there is (not "no throttle delays", which would be false)."""
    from analysis.stats.fit import select_groups

    present = select_groups(events)
    if present.is_empty() or not select_groups(events, args.reason, args.context).is_empty():
        return
    reasons = ", ".join(sorted(present["reason"].unique().to_list()))
    contexts = ", ".join(sorted(present["context"].unique().to_list()))
    asked = " ".join(
        f"{o} {v}" for o, v in (("--reason", args.reason), ("--context", args.context)) if v
    )
    raise InputError(source, f"{asked} selects no delays; reasons: {reasons}; contexts: {contexts}")


def run(args: argparse.Namespace) -> int:
    from analysis.outputs import Stages
    from analysis.report.fit import format_fits, group_json
    from analysis.report.json_output import dumps
    from analysis.report.text import path_lines
    from analysis.report.trace_analysis import duplicates_note, unparsed_note
    from analysis.stats.families import FAMILIES
    from analysis.stats.fit import fit_throttle_groups

    # Checked here rather than by argparse choices: the family table imports SciPy.
    unknown = sorted(set(args.family or ()) - set(FAMILIES))
    if unknown:
        raise InputError("--family", f"unknown {unknown}; known: {', '.join(sorted(FAMILIES))}")
    sources = [source for path in args.paths for source in trace_sources(path)]
    stages = Stages("fit", len(sources))
    out = []
    for source in sources:
        analysis = analyse_path(source, args)
        if conflict := analysis.hz.conflict():
            raise InputError(source, f"{conflict}; give the capturing kernel's --hz")
        _check_selection(source, analysis.throttle_events, args)
        hz = analysis.hz.config_hz or analysis.hz.hz or args.hz
        groups = fit_throttle_groups(
            analysis.throttle_events,
            1e6 / hz if hz else None,
            reason=args.reason,
            context=args.context,
            families=args.family,
            bootstrap=args.bootstrap,
            seed=args.seed,
        )
        out.append((analysis, groups))
        stages.done(f"{source}: {len(groups)} groups fitted")
    if args.json:
        records = [
            {
                "source": a.source,
                "unparsed": a.unparsed,
                "unparsed_lines": a.unparsed_lines,
                **group_json(g),
            }
            for a, groups in out
            for g in groups
        ]
        print(dumps(records))
        return 0
    for analysis, groups in out:
        note = (unparsed_note(analysis) + duplicates_note(analysis)).replace(";", " --", 1)
        print("\n".join(path_lines(str(analysis.source), "== ", note)))
        print(format_fits(groups))
        print()
    return 0
