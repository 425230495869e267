"""``mmlab compare``: is a change between kernels real? Run-level significance per row."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.errors import InputError

__all__ = ["DESCRIPTION", "register", "run_compare"]

DESCRIPTION = """\
BASE NEW [NEW...] are capture or mmtests run directories (kernel = run name, run =
iteration); one TABLE is a long-format CSV/Parquet (kernel,row,run,value,unit
[,higher_is_better]) whose kernels are all compared with the first (or --base).
The deciding p-value is Welch's t over runs (log of the per-run statistic),
with the exact permutation p beside it as a check (the larger decides when
they disagree tenfold); q-values are Benjamini-Hochberg per family of rows
(the workload's rows; --traces rows; --ops rows). One run per kernel is
described, never given a verdict.
See README "mmlab compare"."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compare",
        help="significance of changes between kernels (run-level, per-family BH q-values)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("paths", type=Path, nargs="+", help="BASE NEW [NEW...] or one TABLE")
    p.add_argument("--base", help="base kernel (default: the first)")
    p.add_argument(
        "--metric",
        choices=("mean", "p50", "p90", "p99"),
        default="p50",
        help="statistic that decides a row (default p50, the Harrell-Davis median)",
    )
    p.add_argument("--rows", help="only rows whose name contains this text")
    p.add_argument("--format", choices=("mmtests", "markdown", "json"), default="mmtests")
    p.add_argument("--json", action="store_true", help="same as --format json")
    p.add_argument("--delta", type=float, help="equivalence margin in %% (TOST)")
    p.add_argument("--level", type=float, default=0.05, help="q-value level (default 0.05)")
    p.add_argument(
        "--effect",
        type=_percent,
        default=None,
        metavar="PCT",
        help="change (e.g. 10%%) the design calculation of runs needed is for (default 10%%)",
    )
    p.add_argument(
        "--resamples", type=int, default=2000, help="bootstrap resamples (Hodges-Lehmann interval)"
    )
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--traces", action="store_true", help="also stall/throttle rows from traces")
    p.add_argument("--ops", action="store_true", help="also vmstat Ops rows (one per run)")
    p.add_argument(
        "--mmtests",
        type=Path,
        metavar="DIR",
        help="mmtests checkout whose parse-results read benchmarks mmlab has no reader for "
        "(default: $MMTESTS)",
    )
    p.set_defaults(func=run_compare)


def _percent(text: str) -> float:
    """``10%`` or ``10`` -> 10.0 (a change in %)."""
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage") from None
    if not 0 < value < 1000:
        raise argparse.ArgumentTypeError(f"{text!r} is not in (0, 1000)%")
    return value


def run_compare(args: argparse.Namespace) -> int:
    from analysis.report.compare import compare_json, compare_stderr, format_compare
    from analysis.report.json_output import dumps
    from analysis.study.compare import compare_paths

    if not 0 < args.level < 0.5:
        raise InputError("--level", f"{args.level} is not in (0, 0.5)")
    cmp = compare_paths(
        args.paths, base=args.base, metric=args.metric, rows=args.rows, level=args.level,
        delta=args.delta, effect=args.effect, resamples=args.resamples, seed=args.seed,
        traces=args.traces, ops=args.ops, mmtests_dir=args.mmtests,
    )  # fmt: skip
    print(compare_stderr(cmp), end="", file=sys.stderr)
    if args.json or args.format == "json":
        print(dumps(compare_json(cmp)))
    else:
        print(format_compare(cmp, markdown=args.format == "markdown"), end="")
    return 0
