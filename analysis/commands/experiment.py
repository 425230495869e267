"""``mmlab experiment``: a plan file's randomised order, executed run by run, resumably."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["register"]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "experiment",
        help="run an experiment plan (one guest boot per run, randomised blocks), resumably",
        description=(
            "PLAN.yaml names the kernel, factors and levels, boots per setting, seed and the "
            "primary endpoint (docs/experiments.md). `run` executes its randomised, "
            "interleaved order into OUT, one guest boot per run, journalled: run it again "
            "after an interruption and it resumes where it stopped."
        ),
    )
    sub = p.add_subparsers(dest="action", required=True)
    order = sub.add_parser("order", help="print the plan's settings and randomised order")
    order.add_argument("plan", type=Path)
    order.add_argument("--json", action="store_true")
    order.set_defaults(func=_order)
    run = sub.add_parser("run", help="execute (or resume) PLAN into OUT")
    run.add_argument("plan", type=Path)
    run.add_argument("out", type=Path)
    run.add_argument("--retry-failed", action="store_true", help="run failed runs again")
    run.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="a Dask scheduler whose workers (one per test machine, --nthreads 1) boot the guests",
    )
    run.add_argument("--json", action="store_true", help="print the final status as JSON")
    run.set_defaults(func=_run)
    size = sub.add_parser("size", help="a pilot's boot-to-boot spread and the boots a design needs")
    size.add_argument("out", type=Path, help="the pilot's OUT (mmlab experiment run)")
    size.add_argument("--endpoint", help="default: the plan's primary endpoint")
    size.add_argument(
        "--effect", type=float, default=20.0, help="change to detect, %% (default 20)"
    )
    size.add_argument("--level", type=float, default=0.05)
    size.add_argument("--json", action="store_true")
    size.set_defaults(func=_size)
    effects = sub.add_parser(
        "effects",
        help="what each level of a factor does to each endpoint (block-adjusted, per stratum)",
    )
    effects.add_argument("out", type=Path, help="the executed plan's OUT")
    effects.add_argument("--factor", help="default: the factor whose levels set sysctls")
    effects.add_argument(
        "--endpoint", action="append", default=[],
        help="an endpoint (repeatable; default: the plan's primary, then its secondary ones)",
    )  # fmt: skip
    effects.add_argument("--covariate", default="writeback_rate")
    effects.add_argument("--json", action="store_true")
    effects.set_defaults(func=_effects)
    status = sub.add_parser("status", help="where an executed plan stands")
    status.add_argument("out", type=Path)
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=_status)


def _order(args: argparse.Namespace) -> int:
    from analysis.capture.design import load_plan
    from analysis.capture.experiment import order_document
    from analysis.report.experiment import format_order
    from analysis.report.json_output import dumps

    plan = load_plan(args.plan)
    print(
        dumps(order_document(plan)) if args.json else format_order(plan),
        end="" if not args.json else "\n",
    )
    return 0


def _size(args: argparse.Namespace) -> int:
    from analysis.report.experiment import format_spread
    from analysis.report.json_output import dumps
    from analysis.study.pilot import pilot_spread

    spreads = pilot_spread(args.out, args.endpoint, args.effect, args.level)
    print(
        dumps(spreads) if args.json else format_spread(spreads), end="" if not args.json else "\n"
    )
    return 0


def _effects(args: argparse.Namespace) -> int:
    from analysis.report.effects import format_effects
    from analysis.report.json_output import dumps
    from analysis.study.effects import experiment_effects

    result = experiment_effects(args.out, factor=args.factor, endpoints=tuple(args.endpoint),
                                covariate=args.covariate)  # fmt: skip
    print(dumps(result) if args.json else format_effects(result), end="\n" if args.json else "")
    return 0


def _status(args: argparse.Namespace) -> int:
    from analysis.capture.experiment import experiment_status
    from analysis.report.experiment import format_status
    from analysis.report.json_output import dumps

    status = experiment_status(args.out)
    print(dumps(status) if args.json else format_status(status), end="" if not args.json else "\n")
    return 0 if not status.failed and not status.pending else 1


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from analysis.capture.design import load_plan
    from analysis.capture.experiment import execute
    from analysis.capture.run import Interrupted, raise_on_signals
    from analysis.report.experiment import format_status, status_line
    from analysis.report.json_output import dumps

    plan = load_plan(args.plan)
    console = Console(stderr=True)

    def progress(status, line: str) -> None:
        console.print(f"{line}  [{status_line(status)}]", markup=False, highlight=False)

    client = None
    if args.scheduler:
        from distributed import Client

        client = Client(args.scheduler)
    try:
        with raise_on_signals():
            status = execute(plan, args.out, retry_failed=args.retry_failed, progress=progress,
                             client=client)  # fmt: skip
    except Interrupted as exc:
        print(f"mmlab experiment: interrupted by {exc}; run it again to resume", file=sys.stderr)
        return 128 + exc.signum
    finally:
        if client is not None:
            client.close()
    print(dumps(status) if args.json else format_status(status), end="" if not args.json else "\n")
    return 0 if not status.failed else 1
