"""Fitted throttle-delay observables per run and group, computed once per study.

Each (event, context, reason, timeout) group of a run's ``mm_vmscan_throttled`` sleeps
(mm/vmscan.c ``reclaim_throttle()``) is fitted twice with
:func:`analysis.stats.fit.fit_throttle_groups`: once with the sleeps of all iterations
pooled (best family by AIC, 95 % CIs that take sleeps as independent), and that family
(± zero mass ± cure fraction) once per iteration, whose spread over iterations is the
run-level uncertainty (iterations are the independent unit; sleeps of one capture are not
independent: one writeback burst wakes many sleepers).

Observables (the latent wait T is the sleep without a timeout; times in µs):
``p_timeout`` = P(sleep ran to its timeout), ``restricted_mean_usec`` = E[min(T, timeout)]
(what the sleepers waited on average, fixed by the data up to the timeout) and ``q0.5`` =
the median of T (past the timeout it rests on the family's tail).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from analysis.metrics.trace_analysis import TraceAnalysis
from analysis.stats.describe import mean_sd
from analysis.stats.fit import GroupFailure, GroupFit, fit_throttle_groups

__all__ = ["KEY_COLUMNS", "RunGroupFit", "iteration_spread", "run_fits"]

# What one throttle group shares: its tracepoint, reclaim context, reason and timeout.
KEY_COLUMNS = ("event", "context", "reason", "usec_timeout")


@dataclass(frozen=True)
class RunGroupFit:
    """One throttle group of one run: the fit of its pooled sleeps (``pooled``) and the fits
    of each iteration's sleeps (``iterations``, failures included: they say why)."""

    run: str
    pooled: GroupFit | GroupFailure
    iterations: tuple[GroupFit | GroupFailure, ...]

    @property
    def n_iterations(self) -> int:
        return len(self.iterations)


def _jiffy_us(hz: list[float | None]) -> float | None:
    """1e6/HZ when every iteration agrees on HZ (CONFIG_HZ, else the inferred quantum)."""
    known = set(hz) - {None}
    return 1e6 / known.pop() if len(known) == 1 else None


def _iteration_fits(
    pooled: GroupFit | GroupFailure, iterations: list[tuple[pl.DataFrame, float | None]]
) -> tuple[GroupFit | GroupFailure, ...]:
    """The pooled group's best family (± zero mass ± cure fraction) fitted to each
    iteration's sleeps of that group alone; none when the pooled fit failed."""
    if isinstance(pooled, GroupFailure):
        return ()
    same = pl.all_horizontal(pl.col(c) == getattr(pooled, c) for c in KEY_COLUMNS)
    out = []
    for events, hz in iterations:
        mine = events.filter(same)
        if mine.height:
            jiffy = 1e6 / hz if hz else None
            out += fit_throttle_groups(mine, jiffy, families=[pooled.best.family])
    return tuple(out)


def run_fits(
    runs: Sequence[tuple[str, Sequence[TraceAnalysis]]], *, bootstrap: int = 0, seed: int = 0
) -> tuple[RunGroupFit, ...]:
    """Per ``(run name, its iterations' analyses)`` and throttle group: the pooled fit
    (every family; ``bootstrap`` replicates test its fit, 0: untested) and its best family
    refitted to each iteration alone. A run without traces has no groups."""
    out: list[RunGroupFit] = []
    for name, mine in runs:
        if not mine:
            continue
        events = pl.concat([a.throttle_events for a in mine], how="vertical_relaxed")
        hz = [a.hz.config_hz or a.hz.hz for a in mine]
        pooled = fit_throttle_groups(events, _jiffy_us(hz), bootstrap=bootstrap, seed=seed)
        iterations = [(a.throttle_events, h) for a, h in zip(mine, hz, strict=True)]
        out += [RunGroupFit(name, g, _iteration_fits(g, iterations)) for g in pooled]
    return tuple(out)


def iteration_spread(fit: RunGroupFit, name: str) -> tuple[float | None, float | None]:
    """Mean and sample sd over the iterations fitted (failures left out) of observable
    ``name``; an infinite value (a quantile inside a cure fraction) counts as missing."""
    values = [
        g.observables[name].estimate
        for g in fit.iterations
        if isinstance(g, GroupFit) and math.isfinite(g.observables[name].estimate)
    ]
    return mean_sd(values)
