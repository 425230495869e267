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


def run(args: argparse.Namespace) -> int:
    from analysis.outputs import Stages
    from analysis.report.json_output import dumps
    from analysis.report.paper.build import NEEDS_TRACES, build_inputs
    from analysis.report.paper.fits import BOOTSTRAP
    from analysis.study.dose import designed_sweep
    from analysis.study.runs import study_runs
    from analysis.study.study import Study
    from analysis.study.sweep import knob_sweep

    stages = Stages("paper", 1 + (args.sweep is not None) + len(args.experiment))
    sweep = knob_sweep(args.sweep) if args.sweep is not None else None
    if sweep is not None:
        stages.done(f"sweep {args.sweep}")
    designed = []
    for out in args.experiment:
        designed.append(designed_sweep(out))
        stages.done(f"designed sweep {out}")
    runs = study_runs(args.runs or [args.data])
    study = Study(runs, fit_bootstrap=BOOTSTRAP, progress=stages)
    inputs = build_inputs(study, args.out, sweep, tuple(designed))
    stages.done(f"{len(inputs.files)} files written")
    traceless = [name for name in inputs.left_out if name in NEEDS_TRACES]
    if traceless:
        print(
            f"mmlab paper: no ftrace captures in these runs: left out {', '.join(traceless)}"
            " (each written as a sentence saying so)",
            file=sys.stderr,
        )
    if sweep is None:
        print(
            "mmlab paper: no --sweep: the sweep's tables, figure and \\Sw... macros are not "
            "written (papers/reclaim-throttling/main.tex quotes them)",
            file=sys.stderr,
        )
    if not designed:
        print(
            "mmlab paper: no --experiment: the Results say that no designed sweep was given",
            file=sys.stderr,
        )
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
