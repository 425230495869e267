"""The shrinker deferral replay of a study's traces (:mod:`analysis.models.shrinker`),
computed once (the paper's "Shrinker deferral replay" section renders it).

Per trace of every run: the check that the capturing kernel's rule reproduces each call's
``total_scan`` and the model's counter chain, then the replay under G1, G2 and G3 and
under G3's rule with a sweep of deferral divisors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from analysis.ingest.mmtests import Run
from analysis.metrics.trace_analysis import TraceAnalysis
from analysis.models.shrinker import (
    GENERATIONS,
    Variant,
    blocked_calls,
    divisor_sweep,
    model_trace,
    outputs,
    replay,
)

__all__ = ["DIVISORS", "ShrinkerReplays", "shrinker_replays"]

# Constant divisors swept under G3's rule: 1 is G1's "take it all", 4096 = 2^12 is G3's
# own at the lightest priority.
DIVISORS = (1, 2, 4, 16, 64, 256, 1024, 4096)


@dataclass(frozen=True)
class ShrinkerReplays:
    """``checks``: one row per trace (run, iteration, calls, ...); ``rules``: outputs of
    every trace under each generation's own rule; ``sweep``: under G3's rule per divisor."""

    checks: pl.DataFrame
    rules: pl.DataFrame
    sweep: pl.DataFrame


def shrinker_replays(
    analyses: Sequence[tuple[Run, int, TraceAnalysis]], divisors: tuple[int, ...] = DIVISORS
) -> ShrinkerReplays | None:
    """Check and replay the shrinker calls of every trace of ``analyses`` (``(run,
    iteration, analysis)``); None when no trace has any."""
    checks, rules, sweeps = [], [], []
    for run, iteration, analysis in analyses:
        calls = analysis.shrinker_invocations
        if calls.is_empty():
            continue
        who = {"run": run.name, "iteration": iteration}
        own = model_trace(calls, Variant("G3"), trace=Path(analysis.source))
        checks.append(
            {
                **who,
                "calls": calls.height,
                "blocked": int(blocked_calls(calls).sum()),
                "kswapd_calls": int((calls["context"] == "kswapd").sum()),
                "contexts": ", ".join(sorted(set(calls["context"]))),
                "max_freeable": int(calls["freeable_objects"].max()),
                "rule": own.capturing_generation,
                "rule_source": own.generation_source,
                "matched": own.replay_agreement.matched,
                "chain_matched": own.capture_chain_agreement.matched,
                "chain_total": own.capture_chain_agreement.total,
                "scanned": own.observed_scanned_objects,
                "freed": own.observed_freed_objects,
            }
        )
        rules += [{**who, "rule": g, **outputs(replay(calls, Variant(g)))} for g in GENERATIONS]
        sweeps.append(
            divisor_sweep(calls, list(divisors)).with_columns(
                run=pl.lit(run.name), iteration=pl.lit(iteration)
            )
        )
    if not checks:
        return None
    return ShrinkerReplays(
        pl.DataFrame(checks), pl.DataFrame(rules), pl.concat(sweeps, how="vertical")
    )
