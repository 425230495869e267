"""Fitted throttle-delay observables per run and group (:mod:`analysis.study.fits`) as
the report's text and JSON.

Observables (the latent wait T is the sleep without a timeout): ``p_timeout`` = P(sleep
ran to its timeout), ``restricted_mean_usec`` = E[min(T, timeout)] and ``q0.5`` = the
median of T.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

from analysis.metrics.throttle import short_reason
from analysis.report.fit import CAVEAT, group_json
from analysis.stats.fit import GroupFailure, GroupFit
from analysis.study.fits import RunGroupFit, iteration_spread

__all__ = ["FITTED", "format_run_fits", "run_fit_json"]

# The observables the report and the paper quote, with their labels and units.
FITTED = (
    ("p_timeout", "P(timeout)", 1.0),
    ("restricted_mean_usec", "mean wait to timeout ms", 1e-3),
    ("q0.5", "median wait ms", 1e-3),
)


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


def format_run_fits(fits: Sequence[RunGroupFit]) -> str:
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
