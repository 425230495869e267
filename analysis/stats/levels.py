"""Levels of replication in a long table: the boot as the unit, and warm-up within a boot.

Kalibera & Jones ("Rigorous benchmarking in reasonable time", ISMM 2013) separate the levels
at which a benchmark is repeated and ask that inference be over the level whose repetitions
are independent, after a warm-up regime (first iterations unlike the rest) has been seen
and dealt with. For a kernel the level is the boot: iterations inside one boot share its
caches. A long table (``kernel, row, run, value, unit``; ``run`` is the iteration) is turned
into one whose ``run`` is the boot wherever a kernel has several boots, and where a kernel
has one boot only, that is said, not hidden.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl
from scipy import stats as scipy_stats

__all__ = ["Replication", "Warmup", "replication", "warmups"]

# Level of the two-sample t test (first k iterations against the rest, k = 2 then 1) that
# makes a first iteration a warm-up. With iid normal per-iteration statistics (on the log
# scale when positive) the per-row false flag rate is about 1.7 % for 4-10 iterations; a
# shift of 8 sd in the first two of five is found in 55 % of boots, of 20 sd in 99 %
# (simulation, tests/test_levels.py).
WARMUP_ALPHA = 0.01
# ...and only a regime, not a detectable nuance: the first iterations' mean must differ from
# the rest's by this factor at least (1 % of elapsed time is no warm-up).
WARMUP_MIN_RATIO = 1.25


@dataclass(frozen=True)
class Replication:
    """``table`` with ``run`` relabelled to the unit of replication of each kernel
    (``unit[kernel]`` is ``boot`` or ``iteration``), and a sentence per kernel whose runs
    are not independent (``notes``)."""

    table: pl.DataFrame
    unit: dict[str, str]
    notes: tuple[str, ...]


def replication(
    table: pl.DataFrame, boots: Mapping[tuple[str, str], tuple[str, str]]
) -> Replication:
    """``boots[(kernel, run)] = (boot key, how it is known)``. A kernel whose iterations
    each ran in a boot of their own keeps them as runs; one with several iterations in each
    of two or more boots has them pooled per boot (``run`` = ``boot-<i>``); one whose
    iterations all ran in one boot keeps them as runs, with a note that they are not
    independent (nothing in the data can estimate the boot-to-boot variation then)."""
    runs = table.select("kernel", "run").unique(maintain_order=True)
    relabel: dict[tuple[str, str], str] = {}
    unit: dict[str, str] = {}
    notes = []
    for (kernel,), group in runs.group_by("kernel", maintain_order=True):
        its = group["run"].to_list()
        keys = [boots.get((kernel, r), (f"{kernel} iteration {r}", "unknown"))[0] for r in its]
        distinct = list(dict.fromkeys(keys))
        if len(distinct) == len(its):
            unit[kernel] = "boot"
            continue
        if len(distinct) >= 2:
            unit[kernel] = "boot"
            relabel |= {
                (kernel, r): f"boot-{distinct.index(k)}" for r, k in zip(its, keys, strict=True)
            }
            notes.append(
                f"{kernel}: {len(its)} iterations in {len(distinct)} boots, pooled per boot "
                "(the boot is the unit of replication)"
            )
            continue
        unit[kernel] = "iteration"
        source = boots.get((kernel, its[0]), ("", "unknown"))[1]
        notes.append(
            f"{kernel}: its {len(its)} iterations ran in one boot ({source}): they are not "
            "independent runs, and the p-values and intervals treat them as if they were, so "
            "they cover within-boot variation only (one boot per run: mmlab experiment)"
        )
    if relabel:
        mapping = pl.DataFrame(
            [(k, r, b) for (k, r), b in relabel.items()],
            schema={"kernel": pl.String, "run": pl.String, "boot": pl.String},
            orient="row",
        )
        table = (
            table.join(mapping, on=["kernel", "run"], how="left")
            .with_columns(pl.coalesce("boot", "run").alias("run"))
            .drop("boot")
        )
    return Replication(table, unit, tuple(notes))


@dataclass(frozen=True)
class Warmup:
    """The first ``iterations`` of ``boot`` of ``kernel`` unlike the boot's other
    iterations in ``rows``; ``example`` is one row's per-iteration medians (first ones,
    then the others' min and max) and its unit."""

    kernel: str
    boot: str
    iterations: tuple[int, ...]
    of: int
    rows: tuple[str, ...]
    example: tuple[str, tuple[float, ...], float, float, str]


def _scale(values: list[float]) -> list[float]:
    return [math.log(v) for v in values] if all(v > 0 for v in values) else values


def _warm(medians: list[float]) -> int:
    """How many first iterations (2 or 1; 0 for none) stand apart from the rest: all beyond
    the rest's range on one side, apart by :data:`WARMUP_MIN_RATIO` at least, and a
    Student t of their mean against the rest's (the rest's sd, as a prediction of new
    iterations) above the two-sided :data:`WARMUP_ALPHA` quantile."""
    logged = all(v > 0 for v in medians)
    t = _scale(medians)
    for k in (2, 1):
        m = len(t) - k
        if m < 2:
            continue
        first, rest = t[:k], t[k:]
        if not (all(v > max(rest) for v in first) or all(v < min(rest) for v in first)):
            continue
        centre = statistics.fmean(rest)
        gap = abs(statistics.fmean(first) - centre)
        floor = math.log(WARMUP_MIN_RATIO) if logged else (WARMUP_MIN_RATIO - 1) * abs(centre)
        if gap < floor:
            continue
        sd = max(statistics.stdev(rest), 1e-12 * max(1.0, abs(centre)))
        if gap / (sd * math.sqrt(1 / k + 1 / m)) > scipy_stats.t.ppf(1 - WARMUP_ALPHA / 2, m - 1):
            return k
    return 0


def warmups(table: pl.DataFrame, boots: Mapping[tuple[str, str], tuple[str, str]]) -> list[Warmup]:
    """Warm-up regimes: in each boot with three or more iterations, the first one or two
    whose per-iteration median lies far outside the others' (:func:`_warm`), per row;
    rows sharing the same first iterations are reported together."""
    medians = (
        table.group_by("kernel", "row", "run")
        .agg(
            pl.col("value").median(),
            pl.col("unit").first() if "unit" in table.columns else pl.lit("").alias("unit"),
        )
        .with_columns(pl.col("run").cast(pl.Int64, strict=False).alias("index"))
        .drop_nulls("index")
        .sort("kernel", "row", "index")
    )
    found: dict[tuple[str, str, int], list] = {}
    for (kernel, row), group in medians.group_by("kernel", "row", maintain_order=True):
        unit = group["unit"][0] or ""
        by_boot: dict[str, list[tuple[int, float]]] = {}
        for run, index, value in group.select("run", "index", "value").iter_rows():
            key = boots.get((kernel, run), (f"{kernel} {run}", ""))[0]
            by_boot.setdefault(key, []).append((index, value))
        for boot, its in by_boot.items():
            values = [v for _, v in its]
            if len(values) < 3 or (k := _warm(values)) == 0:
                continue
            entry = found.setdefault((kernel, boot, k), [len(values), [], None])
            entry[1].append(row)
            if entry[2] is None:
                entry[2] = (row, tuple(values[:k]), min(values[k:]), max(values[k:]), unit)
    return [
        Warmup(kernel, boot, tuple(range(k)), n, tuple(rows), example)
        for (kernel, boot, k), (n, rows, example) in found.items()
    ]
