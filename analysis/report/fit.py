"""Text (80 columns, units in every header) and JSON views of throttle-delay fits.

The text says what the data fix (the observed shares, the restricted mean up to the
timeout) apart from what rests on a model (quantiles past the timeout, the cure fraction),
and lists every identifiability warning instead of printing such a parameter as a finding.
When the best model fails its goodness-of-fit test, that is said first and the model-free
estimates lead. Observables are averaged over the models by AIC weight
(``analysis.stats.fit.averaged_observables``), the same interval the paper prints.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

import polars as pl

from analysis.report.json_output import undefined_as_null
from analysis.report.table import Column, Table
from analysis.report.text import path_lines
from analysis.report.trace_analysis import duplicates_note, unparsed_note
from analysis.report.units import decimals_at, fixed, interval, sig
from analysis.stats.durations import DurationFit
from analysis.stats.fit import (
    NOT_FITTED,
    QUANTILES,
    Estimate,
    GroupFailure,
    GroupFit,
    ModelFit,
)
from analysis.study.sources import SourceFits

__all__ = [
    "CAVEAT",
    "format_duration_fits",
    "format_fits",
    "format_group",
    "format_source_fits",
    "group_json",
    "source_fits_json",
    "summary_frame",
]

SHOWN_MODELS = 8
# The precision of P(timeout) a timeout decision needs, to say how many sleeps that takes.
TARGET_HALF_WIDTH = 0.01
CAVEAT = (
    "CIs treat sleeps as independent; sleeps of one capture are not (one writeback\n"
    "burst wakes many), so they understate run-to-run spread: compare >= 3 runs."
)


def _wrap(text: str, indent: str) -> str:
    return textwrap.fill(text, 80, initial_indent=indent, subsequent_indent=indent + "  ")


# An estimate and its 95 % CI, rounded where the CI is (units.decimals_at).
_ESTIMATE_COLUMNS = (
    Column("quantity", 36, left=True),
    Column("estimate", 11),
    Column("ci_low", 13),
    Column("ci_high", 13),
)
_MODEL_COLUMNS = (
    Column("model (AIC order)", 27, left=True),
    Column("k", 1),
    Column("AIC", 11),
    Column("dAIC", 7),
    Column("BIC", 11),
    Column("G2 p", 6),
    Column("CDF gap", 8),
)


def _ends(est: Estimate) -> list[str]:
    """Estimate, low and high at one rounding; an infinite end as ``inf``."""
    d = decimals_at(est.estimate, est.ci_low, est.ci_high)
    return [fixed(v, d) for v in (est.estimate, est.ci_low, est.ci_high)]


def _interval(est: Estimate, ends: bool = True) -> str:
    return interval(est.estimate, est.ci_low, est.ci_high, ends=ends)


def _estimates(rows: list[tuple[str, Estimate]], header: bool = True) -> list[str]:
    table = Table(_ESTIMATE_COLUMNS, tuple((label, *_ends(est)) for label, est in rows))
    lines = table.text()
    return lines if header else lines[1:]


def _models(models: list[ModelFit], best_aic: float) -> list[str]:
    rows = tuple(
        (
            m.name,
            str(m.n_params),
            fixed(m.aic, 1),
            fixed(m.aic - best_aic, 1),
            fixed(m.bic, 1),
            sig(m.g2_p, 2),
            fixed(m.max_cdf_gap, 4),
        )
        for m in models
    )
    return Table(_MODEL_COLUMNS, rows).text()


def _header(group: GroupFit | GroupFailure) -> str:
    timeout = "-" if group.usec_timeout is None else f"{group.usec_timeout} us"
    return f"{group.event} {group.reason}\n  context {group.context}, timeout {timeout}"


def _precision(group: GroupFit) -> tuple[float, int | None]:
    """Half-width of the P(timeout) CI, and the sleeps a half-width of TARGET_HALF_WIDTH
    would take (CI width shrinks as 1/sqrt(n)); None when already that precise."""
    est = group.observables["p_timeout"]
    half = (est.ci_high - est.ci_low) / 2
    if not math.isfinite(half) or half <= TARGET_HALF_WIDTH:
        return half, None
    return half, math.ceil(group.n * (half / TARGET_HALF_WIDTH) ** 2)


def format_group(group: GroupFit | GroupFailure) -> str:
    """One group's table: models ranked by AIC, the best model's parameters, observables."""
    if isinstance(group, GroupFailure):
        return f"{_header(group)}, n={group.n}\n" + _wrap(f"not fitted: {group.message}", "  ")
    data = group.data
    k_timeout = data.k_timeout
    lines = [
        _header(group),
        f"  n={group.n} sleeps, jiffy {data.jiffy_us:g} us (HZ {1e6 / data.jiffy_us:g}),"
        f" timeout = {k_timeout} jiffies",
        "",
    ]
    best = group.best
    lines += _models(group.models[:SHOWN_MODELS], best.aic)
    if len(group.models) > SHOWN_MODELS:
        lines.append(f"... {len(group.models) - SHOWN_MODELS} more models in --json")
    if group.bootstrap == 0:
        lines.append("G2 p: needs --bootstrap N (parametric bootstrap); fit not tested")
    else:
        lines.append(
            f"G2 p: parametric bootstrap, {group.bootstrap} replicates (smallest possible"
            f" {1 / (group.bootstrap + 1):.3f});\n  '-': dAIC > 4, not tested"
        )
    obs = group.observables
    emp = group.empirical
    data_rows = [
        (f"P(k=0) data {data.counts[0]}/{data.n} (Wilson)", emp["p_zero"]),
        (f"P(timeout) data {data.counts[-1]}/{data.n} (Wilson)", emp["p_timeout"]),
        ("mean recorded delay = E[min(T,to)] us", emp["restricted_mean_usec"]),
    ]
    if group.lack_of_fit:
        # The model is rejected: what the data fix on their own comes first.
        lines += ["", _wrap(f"LACK OF FIT: {group.lack_of_fit}.", ""), "", "model-free (95% CI)"]
        lines += _estimates(data_rows)
    lines += ["", f"best {best.name}: parameters (95% CI, delta method on log/logit scale)"]
    lines += _estimates([(f"  {name}", est) for name, est in best.params.items()])
    observables = [
        ("P(k=0) woken in 1st jiffy", obs["p_zero"]),
        ("P(timeout) censored", obs["p_timeout"]),
        ("mean wait to timeout E[min(T,to)] us", obs["restricted_mean_usec"]),
    ]
    for q in QUANTILES:
        est = obs[f"q{q:g}"]
        label = f"wait quantile {q:.0%} us"
        if est.estimate > data.timeout_us:
            label += " (>timeout:model)"
        observables.append((label, est))
    lines.append("observables, averaged over models by AIC weight (95% CI, delta, logit/log)")
    lines += _estimates(observables, header=False)
    if not group.lack_of_fit:
        lines += ["model-free (95% CI)", *_estimates(data_rows, header=False)]
    half, needed = _precision(group)
    if needed is not None:
        lines.append(
            f"P(timeout) is known to +-{half:.3f}; +-{TARGET_HALF_WIDTH} would take about"
            f" {needed} sleeps"
        )
    if group.identifiability:
        lines.append("not identified / caution:")
        lines += [_wrap(f"- {note}", "  ") for note in group.identifiability]
    unfitted = [s for s in group.skipped if NOT_FITTED in s]
    if few := len(group.skipped) - len(unfitted):
        lines.append(f"skipped {few} models with too few bins for their parameters")
    lines += [_wrap(f"skipped {s}", "") for s in unfitted]
    return "\n".join(lines)


def format_fits(groups: list[GroupFit | GroupFailure]) -> str:
    """All groups of one source, separated by blank lines, with the independence caveat."""
    if not groups:
        return "no throttle delays to fit"
    return "\n\n".join([*(format_group(g) for g in groups), CAVEAT])


def _estimate_json(est: Estimate) -> dict[str, object]:
    return {
        "estimate": undefined_as_null(est.estimate),
        "ci_low": undefined_as_null(est.ci_low),
        "ci_high": undefined_as_null(est.ci_high),
        "method": est.method,
    }


def _model_json(model: ModelFit) -> dict[str, object]:
    return {
        "family": model.family,
        "zero_mass": model.zero,
        "cure_fraction": model.cure,
        "model": model.name,
        "params": {name: _estimate_json(est) for name, est in model.params.items()},
        "at_boundary": list(model.boundary),
        "loglik": model.loglik,
        "aic": model.aic,
        "bic": model.bic,
        "g2": model.g2,
        "g2_p": model.g2_p,
        "max_cdf_gap": model.max_cdf_gap,
        "converged": model.converged,
    }


def group_json(group: GroupFit | GroupFailure) -> dict[str, object]:
    """The issue's JSON shape; a failed group has ``error``, no models, and ``best`` null.

    Infinite values (a quantile inside the cure fraction) are null: JSON has no infinity.
    """
    head: dict[str, object] = {
        "event": group.event,
        "context": group.context,
        "reason": group.reason,
        "usec_timeout": group.usec_timeout,
        "n": group.n,
    }
    if isinstance(group, GroupFailure):
        return {
            **head,
            "error": group.message,
            "models": [],
            "best": None,
            "observables": None,
            "identifiability": [group.message],
        }
    obs = group.observables
    return {
        **head,
        "jiffy_us": group.data.jiffy_us,
        "counts_by_jiffy": group.data.counts.tolist(),
        "models": [_model_json(m) for m in group.models],
        "skipped_models": list(group.skipped),
        "best": group.best.name,
        "observables": {
            "p_zero": _estimate_json(obs["p_zero"]),
            "p_timeout": _estimate_json(obs["p_timeout"]),
            "restricted_mean_usec": _estimate_json(obs["restricted_mean_usec"]),
            "quantiles": [{"p": q, **_estimate_json(obs[f"q{q:g}"])} for q in QUANTILES],
        },
        "empirical": {name: _estimate_json(est) for name, est in group.empirical.items()},
        "identifiability": list(group.identifiability),
        "lack_of_fit": group.lack_of_fit,
        "sleeps_for_p_timeout_pm_0.01": _precision(group)[1],
        "bootstrap": group.bootstrap,
    }


def source_fits_json(fits: Sequence[SourceFits]) -> list[dict[str, object]]:
    """``mmlab fit --json``: one object per group, naming its source and the source's
    unparsed lines."""
    return [
        {
            "source": f.analysis.source,
            "unparsed": f.analysis.unparsed,
            "unparsed_lines": f.analysis.unparsed_lines,
            **group_json(g),
        }
        for f in fits
        for g in f.groups
    ]


def format_source_fits(fits: Sequence[SourceFits]) -> str:
    """``mmlab fit``'s text: per source, its name (with its unparsed and duplicate lines)
    and :func:`format_fits`, each followed by a blank line."""
    out = []
    for f in fits:
        note = (unparsed_note(f.analysis) + duplicates_note(f.analysis)).replace(";", " --", 1)
        out.append("\n".join(path_lines(str(f.analysis.source), "== ", note)) + "\n")
        out.append(f"{format_fits(list(f.groups))}\n\n")
    return "".join(out)


def summary_frame(fits: dict[str, list[GroupFit | GroupFailure]]) -> pl.DataFrame:
    """One row per fitted group of each source (e.g. an iteration): n, best model and the
    observables with their 95 % CIs (``*_low``/``*_high``); times in µs."""
    rows = []
    for source, groups in fits.items():
        for g in groups:
            if not isinstance(g, GroupFit):
                continue
            row: dict[str, object] = {
                "source": source,
                "group": f"{g.context} {g.reason}",
                "n": g.n,
                "best": g.best.name,
            }
            for name in ("p_timeout", "restricted_mean_usec", "q0.5"):
                est = g.observables[name]
                row |= {name: est.estimate, f"{name}_low": est.ci_low, f"{name}_high": est.ci_high}
            rows.append(row)
    return pl.DataFrame(rows)


def format_duration_fits(title: str, fits: list[DurationFit]) -> str:
    """Censored latency fits, best AIC first: median and 99th percentile (µs, 95 % CI)."""
    columns = (
        Column("model", 23, left=True),
        Column("AIC", 10),
        Column("dAIC", 7),
        Column("median [95% CI]", unit="us"),
        Column("p99", 10, unit="us"),
    )
    rows = tuple(
        (
            f.model,
            fixed(f.aic, 1),
            fixed(f.aic - fits[0].aic, 1),
            _interval(f.quantiles[0.5]),
            _interval(f.quantiles[0.99], ends=False),
        )
        for f in fits
    )
    return "\n".join([title, *Table(columns, rows).text()])
