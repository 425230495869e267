"""Fitted throttle-delay observables per run and group, for the report and the paper.

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
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from analysis.metrics.throttle import short_reason
from analysis.report.fit import CAVEAT, group_json
from analysis.stats.describe import mean_sd
from analysis.stats.fit import GroupFailure, GroupFit, fit_throttle_groups

if TYPE_CHECKING:
    from analysis.report.document import ReportData

__all__ = [
    "FITTED",
    "RunGroupFit",
    "format_run_fits",
    "iteration_spread",
    "run_fit_json",
    "run_fits",
]

# The observables the report and the paper quote, with their labels and units.
FITTED = (
    ("p_timeout", "P(timeout)", 1.0),
    ("restricted_mean_usec", "mean wait to timeout ms", 1e-3),
    ("q0.5", "median wait ms", 1e-3),
)

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
    data: ReportData, *, runs: int | None = None, bootstrap: int = 0, seed: int = 0
) -> list[RunGroupFit]:
    """Per run of ``data`` (the first ``runs`` only, when given) and throttle group: the
    pooled fit (every family; ``bootstrap`` replicates test its fit, 0: untested) and
    its best family refitted to each iteration alone."""
    out = []
    for run in data.runs[:runs]:
        mine = [a for r, _, a in data.analyses if r is run]
        if not mine:
            continue
        events = pl.concat([a.throttle_events for a in mine], how="vertical_relaxed")
        hz = [a.hz.config_hz or a.hz.hz for a in mine]
        pooled = fit_throttle_groups(events, _jiffy_us(hz), bootstrap=bootstrap, seed=seed)
        iterations = [(a.throttle_events, h) for a, h in zip(mine, hz, strict=True)]
        out += [RunGroupFit(run.name, g, _iteration_fits(g, iterations)) for g in pooled]
    return out


def iteration_spread(fit: RunGroupFit, name: str) -> tuple[float | None, float | None]:
    """Mean and sample sd over the iterations fitted (failures left out) of observable
    ``name``; an infinite value (a quantile inside a cure fraction) counts as missing."""
    values = [
        g.observables[name].estimate
        for g in fit.iterations
        if isinstance(g, GroupFit) and math.isfinite(g.observables[name].estimate)
    ]
    return mean_sd(values)


def run_fit_json(fit: RunGroupFit) -> dict[str, object]:
    """One run's group for ``mmlab report --json``: the pooled fit as ``mmlab fit --json``
    prints a group, and the mean and sd over iterations of each quoted observable."""
    spread = {}
    for name, _, _ in FITTED:
        mean, sd = iteration_spread(fit, name)
        spread[name] = {"mean": mean, "sd": sd}
    return {"run": fit.run, **group_json(fit.pooled), "iterations": spread}


def _num(value: float | None, scale: float) -> str:
    if value is None:
        return "-"
    if math.isinf(value):
        return "inf"
    return f"{value * scale:.3f}" if scale == 1.0 else f"{value * scale:.2f}"


def _group_lines(fit: RunGroupFit) -> list[str]:
    g = fit.pooled
    reason = short_reason(g.reason)
    timeout = "-" if g.usec_timeout is None else f"{g.usec_timeout / 1000:g} ms"
    head = f"{fit.run}: {reason}, {g.context}, timeout {timeout}, n={g.n} sleeps"
    if isinstance(g, GroupFailure):
        return [head, f"  not fitted: {g.message}"]
    fitted = sum(isinstance(i, GroupFit) for i in fit.iterations)
    lines = [
        head,
        f"  best {g.best.name} by AIC; refitted per iteration: {fitted} of {fit.n_iterations}",
        f"  {'':<26}{'pooled':>10}{'95% CI':>18}{'iterations':>12}{'sd':>10}",
    ]
    for name, label, scale in FITTED:
        est = g.observables[name]
        ci = f"[{_num(est.ci_low, scale)}, {_num(est.ci_high, scale)}]"
        mean, sd = iteration_spread(fit, name)
        lines.append(
            f"  {label:<26}{_num(est.estimate, scale):>10}{ci:>18}"
            f"{_num(mean, scale):>12}{_num(sd, scale):>10}"
        )
    emp = g.empirical["p_timeout"]
    lines.append(
        f"  data: {g.data.counts[-1]} of {g.n} at the timeout (Wilson 95% CI "
        f"{emp.ci_low:.3f}-{emp.ci_high:.3f})"
    )
    lines += [
        textwrap.fill(note, 80, initial_indent="  caution: ", subsequent_indent=" " * 4)
        for note in g.identifiability
    ]
    return lines


def format_run_fits(fits: list[RunGroupFit]) -> str:
    """The report's fits section: per run and group, the pooled fit's observables with
    95 % CIs beside their mean and sd over per-iteration fits (80 columns once wrapped)."""
    if not fits:
        return "No throttle delays to fit.\n"
    blocks = ["\n".join(_group_lines(f)) for f in fits]
    notes = (
        "The latent wait T is how long a sleeper would wait for its wake condition\n"
        "without a timeout; a sleep at the timeout only says T >= timeout\n"
        "(right-censored), and delays are whole jiffies. P(timeout) and the mean wait\n"
        "to the timeout E[min(T, timeout)] are fixed by the data; a median past the\n"
        "timeout rests on the family's tail. pooled: all sleeps of the run (averaged\n"
        "over models by AIC weight, delta-method CIs); iterations/sd: mean and sd of\n"
        "the best family refitted to each iteration alone, the run-level spread.\n" + CAVEAT
    )
    return "\n\n".join(blocks) + "\n\n" + notes + "\n"
