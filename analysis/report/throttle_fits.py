"""Fitted throttle-delay observables per run and group (:mod:`analysis.study.fits`) as
the report's text and JSON.

Observables (the latent wait T is the sleep without a timeout): ``p_timeout`` = P(sleep
ran to its timeout), ``restricted_mean_usec`` = E[min(T, timeout)] and ``q0.5`` = the
median of T.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from analysis.metrics.throttle import short_reason
from analysis.report.fit import CAVEAT, group_json
from analysis.report.units import PLAIN, Scale, interval_texts, mean_sd_texts
from analysis.stats.fit import Estimate, GroupFailure, GroupFit
from analysis.study.fits import RunGroupFit, iteration_spread

__all__ = ["FITTED", "MS", "format_run_fits", "run_fit_json"]

# The fits' times are µs; the report and the paper print them in ms.
MS = Scale("ms", 1e3)

# The observables the report and the paper quote, with their labels and the scale they
# are printed in (the fits hold µs; the report prints ms).
FITTED = (
    ("p_timeout", "P(timeout)", PLAIN),
    ("restricted_mean_usec", "mean wait to timeout ms", MS),
    ("q0.5", "median wait ms", MS),
)


def run_fit_json(fit: RunGroupFit) -> dict[str, object]:
    """One run's group for ``mmlab report --json``: the pooled fit as ``mmlab fit --json``
    prints a group, and the mean and sd over iterations of each quoted observable."""
    spread = {}
    for name, _, _ in FITTED:
        mean, sd = iteration_spread(fit, name)
        spread[name] = {"mean": mean, "sd": sd}
    return {"run": fit.run, **group_json(fit.pooled), "iterations": spread}


def _estimate(est: Estimate) -> tuple[float, float, float]:
    return est.estimate, est.ci_low, est.ci_high


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
        f"  {'':<24}{'pooled':>10}{'95% CI':>20}{'iterations':>12}{'sd':>10}",
    ]
    for name, label, scale in FITTED:
        est = g.observables[name]
        estimate, low, high = interval_texts(*_estimate(est), scale)
        mean, sd = mean_sd_texts(*iteration_spread(fit, name), scale)
        lines.append(f"  {label:<24}{estimate:>10}{f'[{low}, {high}]':>20}{mean:>12}{sd:>10}")
    _, low, high = interval_texts(*_estimate(g.empirical["p_timeout"]), PLAIN)
    lines.append(
        f"  data: {g.data.counts[-1]} of {g.n} at the timeout (Wilson 95% CI {low}-{high})"
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
