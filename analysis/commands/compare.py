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
    import polars as pl

    from analysis.ingest import benchmarks, long_table
    from analysis.metrics.sample_rows import FAMILIES
    from analysis.metrics.trace_files import warm_runs
    from analysis.report.compare import format_markdown, format_mmtests, to_json
    from analysis.report.json_output import dumps
    from analysis.report.levels import level_notes
    from analysis.report.text import fit
    from analysis.stats.levels import replication, warmups
    from analysis.stats.significance import DEFAULT_EFFECT, compare_table

    if not 0 < args.level < 0.5:
        raise InputError("--level", f"{args.level} is not in (0, 0.5)")
    if len(args.paths) == 1 and args.paths[0].is_file():
        table = long_table.read(args.paths[0])
        skipped: tuple[str, ...] = ()
        loaded: benchmarks.Loaded | None = None
    else:
        extra = {name: rows for name, rows in FAMILIES.items() if getattr(args, name)}
        if args.traces:
            warm_runs(args.paths)  # every run's traces analysed in parallel first
        loaded = benchmarks.load_runs(args.paths, extra, mmtests_dir=args.mmtests)
        table, skipped = loaded.table, loaded.skipped
    families = loaded.families if loaded else {}
    if args.rows:
        table = table.filter(pl.col("row").str.contains(args.rows, literal=True))
    kernels = list(dict.fromkeys(table["kernel"]))
    base = args.base or (kernels[0] if kernels else None)
    source = args.paths[0] if len(args.paths) == 1 else "arguments"
    if base is None or table.height == 0:
        raise InputError(source, "no samples found (no known benchmark logs or table rows)")
    if base not in kernels:
        raise InputError(source, f"base kernel {base!r} not found; kernels: {', '.join(kernels)}")
    others = [k for k in kernels if k != base]
    if not others:
        raise InputError(source, f"only one kernel ({base}): nothing to compare with")
    effect = DEFAULT_EFFECT if args.effect is None else args.effect
    # The boot, not the iteration, is the unit where the tree says which boot each ran in.
    boots = loaded.boots if loaded else {}
    warm = warmups(table, boots)
    units = replication(table, boots)
    table = units.table
    results = compare_table(
        table, base, others, args.metric, args.level, args.delta, args.resamples, args.seed,
        families=families, effect=effect,
    )  # fmt: skip
    for line in loaded.units if loaded else ():
        print(f"mmlab compare: unit of {line}", file=sys.stderr)
    for line in skipped:
        print(f"mmlab compare: skipped {line}", file=sys.stderr)
    platforms = loaded.platforms if loaded else ()
    fmt = "json" if args.json else args.format
    if fmt == "json":
        rows = to_json(results)
        for row in rows:  # a table states its units itself: no source to name
            row["unit_source"] = loaded.unit_source(row["row"]) if loaded else None
            row["platform"] = [
                p for p in platforms if p.split(" ", 1)[0] in (row["base"], row["kernel"])
            ]
            row["unit_of_replication"] = {
                k: units.unit.get(k) for k in (row["base"], row["kernel"])
            }
            row["warmup"] = [w for w in warm if w.kernel in (row["base"], row["kernel"])
                             and row["row"] in w.rows]  # fmt: skip
        print(dumps(rows))
        return 0
    # Emulated captures are labelled above the table a reader pastes, not only on stderr.
    print("".join(f"{fit(f'NOTE: {p}')}\n" for p in platforms), end="")
    print(level_notes(units.notes, warm), end="")
    if fmt == "markdown":
        print(format_markdown(results), end="")
    else:
        print(fit(format_mmtests(table, results)), end="")
    return 0
