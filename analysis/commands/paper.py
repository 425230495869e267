"""``mmlab paper``: the generated inputs of papers/reclaim-throttling (``make paper``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "paper",
        help="write the paper's macros, tables and figures from BASE NEW (or DATA)",
        description="Writes OUT/macros.tex (every number the text quotes), OUT/tables/*.tex, "
        "OUT/figures/*.pdf and OUT/generated/*.tex; latexmk then builds "
        "papers/reclaim-throttling/main.tex with OUT on TEXINPUTS (make paper).",
    )
    p.add_argument("runs", nargs="*", type=Path, metavar="RUN", help="base run, then new run")
    p.add_argument("--data", type=Path, default=Path("data"), help="runs under DATA (no RUN)")
    p.add_argument(
        "--sweep",
        type=Path,
        metavar="DIR",
        help="patched-kernel sweep whose models and knob effects the paper's results "
        "report: captures aa1, aa2, wb20, wb500, div1, divprio (as the bundled data/vm-6.12)",
    )
    p.add_argument(
        "--experiment",
        type=Path,
        action="append",
        default=[],
        metavar="OUT",
        help="an executed plan (mmlab experiment run PLAN OUT) whose effects and dose-response "
        "the Results report (repeat for several); without one the section says none was given",
    )
    p.add_argument("--out", type=Path, default=Path("build/paper"), help="output folder")
    p.add_argument("--json", action="store_true", help="print the macros and files as JSON")
    p.set_defaults(func=run)


# What each left-out part of the paper is, as stderr says it.
_LEFT_OUT = {
    "sweep": "no --sweep: the sweep's tables, figure and \\Sw... macros are not written "
    "(papers/reclaim-throttling/main.tex quotes them)",
    "designed": "no --experiment: the Results say that no designed sweep was given",
}


def _say_left_out(left_out: tuple[str, ...], needs_traces: tuple[str, ...]) -> None:
    traceless = [name for name in left_out if name in needs_traces]
    if traceless:
        print(
            f"mmlab paper: no ftrace captures in these runs: left out {', '.join(traceless)}"
            " (each written as a sentence saying so)",
            file=sys.stderr,
        )
    for name in (n for n in _LEFT_OUT if n in left_out):
        print(f"mmlab paper: {_LEFT_OUT[name]}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from analysis.outputs import Stages
    from analysis.report.json_output import dumps
    from analysis.report.paper.build import NEEDS_TRACES, build_inputs
    from analysis.report.paper.fits import BOOTSTRAP
    from analysis.study.dose import designed_sweep
    from analysis.study.runs import study_runs
    from analysis.study.study import Study
    from analysis.study.sweep import knob_sweep

    stages = Stages("paper", 1 + (args.sweep is not None) + bool(args.experiment))
    sweep = knob_sweep(args.sweep) if args.sweep is not None else None
    if sweep is not None:
        stages.done(f"sweep {args.sweep}")
    designed = [designed_sweep(out) for out in args.experiment]
    if designed:
        stages.done(f"{len(designed)} designed sweep(s) {', '.join(map(str, args.experiment))}")
    runs = study_runs(args.runs or [args.data])
    study = Study(runs, fit_bootstrap=BOOTSTRAP, progress=stages)
    inputs = build_inputs(study, args.out, sweep, tuple(designed))
    stages.done(f"{len(inputs.files)} files written")
    _say_left_out(inputs.left_out, NEEDS_TRACES)
    if args.json:
        print(
            dumps(
                {
                    "macros": inputs.macros,
                    "section_macros": inputs.section_macros,
                    "files": inputs.files,
                    "left_out": inputs.left_out,
                }
            )
        )
    else:
        print("\n".join(str(f) for f in inputs.files))
    return 0
