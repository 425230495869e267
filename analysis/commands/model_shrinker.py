"""``mmlab model shrinker TRACE``: a capture's shrinker calls under another deferral rule.

First checks that the capturing kernel's rule reproduces every call's own ``total_scan``
(``replay_agreement``), then replays the calls in trace order under ``--generation``
(G1: Linux <= 5.12, G2: seed 001's kswapd-only proposal, G3: mainline since 5.13) with the
deferral ``--divisor`` (1, priority, 2^priority or an integer; default: the
generation's own). TRACE may be a trace file or a directory holding ``ftrace-*`` traces.
Arithmetic and assumptions: docs/shrinker-deferral.md, analysis/models/shrinker.py.
``--validate OTHER [OTHER ...]`` (TRACE: one ``mmlab capture --kernel`` capture) replays
TRACE's runs under the divisor each OTHER ran (its vm.json knob check) and scores OTHER's
runs: scanned and freed objects, backlog, kswapd share (docs/model-validation.md
"Shrinker deferral").
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register"]


def _divisor(text: str) -> str:
    from analysis.models.shrinker import divisor_table

    try:
        divisor_table(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "shrinker",
        help="replay shrinker calls under deferral rule G1/G2/G3 and a divisor",
        description=__doc__,
    )
    p.add_argument("paths", type=Path, nargs="+", metavar="TRACE")
    p.add_argument("--generation", choices=("G1", "G2", "G3"), default="G3")
    p.add_argument("--divisor", type=_divisor, help="1, priority, 2^priority or an integer > 0")
    p.add_argument(
        "--kswapd-only",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="deferred work only in kswapd (default: only under G2)",
    )
    p.add_argument(
        "--fixed",
        action="store_true",
        help="G2: defer nr + delta - scanned, not the patch's literal nr - scanned",
    )
    p.add_argument(
        "--validate",
        type=Path,
        nargs="+",
        action="extend",
        metavar="OTHER",
        help="captures that ran another divisor to score the replay against",
    )
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from analysis.models.shrinker import Variant
    from analysis.report.json_output import dumps
    from analysis.report.shrinker_model import format_model_run, model_run_json
    from analysis.study.shrinker_model import model_runs, standings

    if args.validate:
        return _validate(args)
    variant = Variant(args.generation, args.divisor, args.kswapd_only, not args.fixed)
    runs = model_runs(args.paths, variant)
    # No --validate: every replayed quantity is not validated.
    untested = standings(())
    if args.json:
        print(dumps([model_run_json(r, untested) for r in runs]))
    else:
        print("\n".join(format_model_run(r, untested) for r in runs), end="")
    return 0


def _validate(args: argparse.Namespace) -> int:
    from analysis.errors import InputError
    from analysis.report.json_output import dumps
    from analysis.report.levels import level_notes
    from analysis.report.shrinker_model import (
        format_shrinker_validation,
        shrinker_validation_json,
    )
    from analysis.study.shrinker_model import shrinker_validation, standings

    if len(args.paths) != 1 or not args.paths[0].is_dir():
        raise InputError(args.paths[0], "--validate needs one calibration capture directory")
    capture = args.paths[0]
    scores, notes = shrinker_validation(capture, args.validate)
    standing = standings(scores)
    if args.json:
        out = shrinker_validation_json(scores, str(capture), standing)
        print(dumps(out | {"replication_notes": list(notes)}))
    else:
        print(level_notes(notes, []), end="")
        print(format_shrinker_validation(scores, str(capture), standing), end="")
    return 0
