"""``mmlab model throttle``: what other throttle
timeouts would have done to a capture's sleepers, reclaim velocity and efficiency.

CAPTURE is a capture, run or ``iter-N`` directory; every trace below it is one run. Without
``--timeout`` each reason is shown at 1/10, 1/4, 1/2, 1 and 2 times its observed timeout.
``--wait`` picks each reason's latent wait: ``fit`` (the best censored, jiffy-quantised
fit of its throttles, as ``mmlab fit``), ``empirical`` (Kaplan–Meier), or ``auto`` (the fit
where it is identified, else Kaplan–Meier); the output says which and why. Beyond the
observed timeout only a fit can speak. ``--validate OTHER [OTHER ...]`` predicts, from
CAPTURE alone, each OTHER at the timeout it ran (its trace's ``usec_timeout``) and scores
every run of it beside two naive baselines (no change; every sleep scaled with the timeout):
one table (docs/model-validation.md "Throttle timeout"); OTHER at CAPTURE's own timeout is
an A/A check; ``--phase``/``--validate-phase`` restrict either to the
phases an ``mmlab capture --workers 4,8,16`` ran with that many workers (OTHER may be
CAPTURE itself). Every what-if says whether the model beat "no change" on the OTHERs that
ran another timeout, and gives runs needed only where it did (docs/model-validation.md
"A what-if carries its standing").
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register"]


def _timeout(text: str) -> tuple[str, float]:
    reason, sep, usec = text.partition("=")
    try:
        value = float(usec)
    except ValueError:
        value = -1.0
    if not sep or not reason.strip() or value <= 0:
        raise argparse.ArgumentTypeError(
            f"expected REASON=USEC with USEC > 0 (e.g. VMSCAN_THROTTLE_WRITEBACK=50000), "
            f"got {text!r}"
        )
    return reason.strip(), value


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``throttle`` to ``mmlab model``'s subcommands."""
    p = subparsers.add_parser(
        "throttle",
        help="throttle timeouts: P(timeout), stalls, velocity, efficiency",
        description=__doc__,
    )
    p.add_argument("capture", type=Path, metavar="CAPTURE")
    p.add_argument(
        "--timeout",
        type=_timeout,
        action="append",
        default=[],
        metavar="REASON=USEC",
        help="timeout to predict for a reason (repeatable)",
    )
    p.add_argument("--bootstrap", type=int, default=200, help="replicates (default 200)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--wait",
        choices=("auto", "fit", "empirical"),
        default="auto",
        help="latent wait per reason: censored fit, Kaplan-Meier, or auto (fit where "
        "identified; default)",
    )
    p.add_argument(
        "--validate",
        type=Path,
        nargs="+",
        action="extend",
        metavar="OTHER",
        help="captures that ran other timeouts to validate on (one or more)",
    )
    p.add_argument(
        "--phase",
        type=int,
        metavar="WORKERS",
        help="only the mmlab capture phases with this many workers",
    )
    p.add_argument(
        "--validate-phase",
        type=int,
        metavar="WORKERS",
        help="phases of OTHER to validate on (default: --phase)",
    )
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from analysis.errors import InputError
    from analysis.outputs import Stages
    from analysis.report.json_output import dumps
    from analysis.report.levels import level_notes
    from analysis.report.throttle_model import as_json, format_report, format_validation
    from analysis.study.throttle_model import ModelRequest, model_throttle

    if args.bootstrap < 0:
        raise InputError(args.capture, f"--bootstrap must be ≥ 0, got {args.bootstrap}")
    request = ModelRequest(
        args.capture, args.phase, args.wait, args.bootstrap, args.seed, dict(args.timeout),
        tuple(args.validate or ()), args.validate_phase,
    )  # fmt: skip
    stages = Stages("model throttle", 3 + len(request.validate))
    report, notes = model_throttle(request, stages)
    if args.json:
        print(dumps(as_json(report) | {"replication_notes": list(notes)}))
    else:
        print(level_notes(notes, []), end="")
        print(format_report(report))
        if report.validation:
            print()
            print(format_validation(report.validation, report.capture))
    return 0
