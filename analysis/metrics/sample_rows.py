"""Per-iteration samples derived from an iteration's traces and vmstat, as rows of the long
table ``analysis.ingest.benchmarks.load_runs`` builds (``mmlab compare --traces/--ops``):
each family's rows are tested together (``analysis.stats.significance``)."""

from __future__ import annotations

import functools

import polars as pl

from analysis.ingest.benchmarks import RowsOf
from analysis.ingest.mmtests import Iteration
from analysis.metrics.ops import HIGHER

__all__ = ["FAMILIES", "ops_rows", "trace_rows"]


def trace_rows(
    it: Iteration, every: tuple[Iteration, ...] = ()
) -> list[tuple[str, float, str, bool]]:
    """Reclaim stalls per context and compaction stalls (ms, one per closed interval) and
    throttle delays (us, one per sleep) of every trace of ``it``."""
    from analysis.metrics.trace_files import analyse_iteration

    rows = []
    for result in analyse_iteration(it):
        stalls = {f"{ctx} reclaim stall": p for ctx, p in result.reclaim.items()}
        stalls["compaction stall"] = result.compaction
        for name, paired in stalls.items():
            closed = paired.intervals.filter(pl.col("status") == "closed")
            rows += [(name, ns / 1e6, "ms", False) for ns in closed["duration_ns"]]
        events = result.throttle_events
        for delay, count in zip(events["delay_us"], events["count"], strict=True):
            rows += [("throttle delay", float(delay), "us", False)] * int(count)
    return rows


@functools.lru_cache(maxsize=4)
def _distrust(every: tuple[Iteration, ...]):
    """:func:`~analysis.metrics.compare.build_distrust` of the iterations compared, once."""
    from analysis.metrics.compare import build_distrust

    return build_distrust(every)


def ops_rows(
    it: Iteration, every: tuple[Iteration, ...] = ()
) -> list[tuple[str, float, str, bool]]:
    """Every vmstat Ops row of ``it`` that has a value, one value per iteration; rows a
    misaligned kernel build spoils (seen in any of ``every``) are left out, as
    ``compare-vmstat`` blanks them."""
    from analysis.metrics.compare import iteration_report

    report = iteration_report(it, distrust=_distrust(every or (it,)).get(it.kernel_build or ""))
    return [
        (r.label, r.value, r.unit, r.better == HIGHER) for r in report.rows if r.value is not None
    ]


# ``mmlab compare`` option → the family of rows it adds.
FAMILIES: dict[str, RowsOf] = {"traces": trace_rows, "ops": ops_rows}
