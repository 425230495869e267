"""The paper's "Timeout model" section: what another ``reclaim_throttle()`` timeout would
have done to the base run's sleepers, its reclaim velocity and efficiency.

The cycle model of :mod:`analysis.models.throttle` is calibrated on every trace of the base
run, each reason's latent wait taken as ``mmlab model throttle --wait auto`` takes it
(:mod:`analysis.models.throttle_waits`: the censored fit where identified, else
Kaplan–Meier), and predicts P(timeout), the mean stall E[min(T, τ)], velocity (pages
scanned per second of reclaim) and efficiency (reclaimed/scanned) at a ladder of timeouts
τ, with bootstrap intervals and the spread of models calibrated on one iteration each. It
is then scored on the other run in each direction against the naive baseline "the other
run behaves as the calibration run did". Writes ``tables/timeout-predictions.tex``,
``tables/timeout-validation.tex`` and ``figures/timeout-curves.pdf``; returns the
section's LaTeX, which defines its own macros (``\\Tmodel...``) before quoting them.
"""

from __future__ import annotations

from pathlib import Path

import altair as alt

from analysis.metrics.throttle import short_reason
from analysis.models import throttle
from analysis.models.throttle_predictions import ThrottleReport
from analysis.report.paper.figures import save_pdf
from analysis.report.paper.fits import compact, write_tables
from analysis.report.paper.latex import escape, macro_name, macros_tex, table_tex
from analysis.report.throttle_charts import curve_chart
from analysis.stats.describe import mean_sd
from analysis.study.study import Study
from analysis.study.timeout import BOOTSTRAP, LADDER, TimeoutModel

__all__ = [
    "predictions_table",
    "section",
    "section_tex",
    "timeout_values",
    "validation_table",
]


def _ms(us: float | None) -> str:
    return "--" if us is None else f"{us / 1000:.2f}"


def _cells(est: throttle.Estimate, fmt) -> tuple[str, str]:
    if est.low is None:
        return fmt(est.value), ""
    return fmt(est.value), f"[{fmt(est.low)}, {fmt(est.high)}]"


def _p(v: float | None) -> str:
    return "--" if v is None else f"{v:.3f}"


def _v(v: float | None) -> str:
    return "--" if v is None else f"{v:,.0f}".replace(",", "{,}")


def _e(v: float | None) -> str:
    return "--" if v is None else f"{v:.4f}"


def _pct(v: float) -> str:
    return f"{100 * v:.1f}"


def predictions_table(tm: TimeoutModel) -> str:
    """Per reason and timeout τ: P(timeout), mean stall, velocity and efficiency, each above
    its 95 % bootstrap interval; ``*`` marks τ beyond the observed timeout."""
    report = tm.report
    # build_report predicts the cycle once at the observed timeouts (no τ given) and once
    # per other τ of one reason.
    cycles = {c.taus_us[0] if c.taus_us else None: c for c in report.cycles}
    rows = []
    for p in report.timeouts:
        observed = p.tau_us == report.model.reason(p.reason).timeout_us
        cycle = cycles.get(None if observed else (p.reason, p.tau_us))
        v_sd, e_sd = cycle.run_sd() if cycle else (None, None)
        cells = [
            _cells(p.p_timeout, _p),
            _cells(p.mean_stall_us, _ms),
            _cells(cycle.velocity_pps, _v) if cycle else ("--", ""),
            _cells(cycle.efficiency, _e) if cycle else ("--", ""),
        ]
        mark = "$^{*}$" if p.extrapolated else ""
        label = escape(short_reason(p.reason))
        p_cell, stall, velocity, efficiency = cells
        tau = f"{p.tau_us / 1000:g}{mark}"
        rows.append(
            [label, tau, p_cell[0], stall[0], velocity[0], _v(v_sd), efficiency[0], _e(e_sd)]
        )
        ci = [f"\\scriptsize {c[1]}" for c in cells]
        rows.append(["", "", ci[0], ci[1], ci[2], "", ci[3], ""])
    return compact(
        table_tex(
            [
                "reason",
                "$\\tau$ ms",
                "P(timeout)",
                "mean stall ms",
                "velocity pages/s",
                "run sd",
                "efficiency",
                "run sd",
            ],
            rows,
            "lrrrrrrr",
            "Timeout model of the base run: predictions at timeout $\\tau$, each above its "
            "95\\,\\% bootstrap interval (throttle cycles resampled; fitted waits refitted to "
            "resampled histograms). Run sd: sd of the same prediction by models calibrated "
            "on one iteration each, the run-level spread. $^{*}$: beyond the observed "
            "timeout (extrapolation). A $\\tau$ between two jiffies acts as the jiffy below.",
            "tab:timeout-predictions",
        )
    )


def _validation_rows(label: str, v: throttle.Validation) -> list[str]:
    return [
        label,
        str(v.rows.height),
        _pct(v.velocity_error),
        _pct(v.baseline_velocity_error),
        _pct(v.velocity_error_given_rate),
        _pct(v.efficiency_error),
        _pct(v.baseline_efficiency_error),
    ]


def validation_table(tm: TimeoutModel) -> str:
    """Mean absolute relative error of the model and of the naive baseline, both ways."""
    forward = tm.report.validation
    rows = [
        _validation_rows(f"{escape(tm.base_run)} $\\to$ {escape(tm.new_run)}", forward),
        _validation_rows(f"{escape(tm.new_run)} $\\to$ {escape(tm.base_run)}", tm.reverse),
    ]
    return table_tex(
        [
            "calibrated $\\to$ scored",
            "runs",
            "velocity",
            "naive",
            "given rate",
            "efficiency",
            "naive",
        ],
        rows,
        "lrrrrrr",
        "Validation: mean absolute relative error (\\%) over the scored run's iterations "
        "of the model's velocity and efficiency, each predicted from the scored iteration's "
        "own writeback rate, dirty pool and waits, against the naive baseline (the "
        "calibration run's observed value). Given rate: the model also given the scored "
        "iteration's throttles per scanned page.",
        "tab:timeout-validation",
    )


def _largest_change(report: ThrottleReport, index: int) -> tuple[float, float, float]:
    """(relative change, τ µs, runs per arm needed) of the prediction (0 velocity,
    1 efficiency) that moves most from the observed timeout."""
    base = next(c for c in report.cycles if not c.taus_us)
    pick = (lambda c: c.velocity_pps.value) if index == 0 else (lambda c: c.efficiency.value)
    far = max((c for c in report.cycles if c.taus_us), key=lambda c: abs(pick(c) - pick(base)))
    observed = [r.velocity_pps if index == 0 else r.efficiency for r in report.runs]
    change = pick(far) - pick(base)
    _, sd = mean_sd(observed)
    needed = throttle.runs_needed(change, sd) if sd else None
    return change / pick(base), far.taus_us[0][1], float(needed or 0)


def timeout_values(tm: TimeoutModel) -> dict[str, str]:
    """Every number the section's text quotes (macro phrase → LaTeX), keyed ``tmodel ...``."""
    report = tm.report
    m = report.model
    forward = report.validation
    values = {
        "bootstrap": str(BOOTSTRAP),
        "iterations": str(len(report.runs)),
        "writeback pps": _v(m.writeback_pps),
        "dirty pool pages": _v(m.dirty_pool_pages),
        "velocity": _v(m.observed_velocity_pps),
        "efficiency": _e(m.observed_efficiency),
    }
    for label, v in (("forward", forward), ("reverse", tm.reverse)):
        values |= {
            f"{label} velocity error": _pct(v.velocity_error),
            f"{label} velocity naive": _pct(v.baseline_velocity_error),
            f"{label} velocity given rate": _pct(v.velocity_error_given_rate),
            f"{label} efficiency error": _pct(v.efficiency_error),
            f"{label} efficiency naive": _pct(v.baseline_efficiency_error),
        }
    for name, index in (("velocity", 0), ("efficiency", 1)):
        change, tau, needed = _largest_change(report, index)
        values |= {
            f"{name} change": f"${100 * change:+.2f}$",
            f"{name} change tau ms": f"{tau / 1000:g}",
            f"{name} runs needed": f"{needed:.0f}",
        }
    for r in m.reasons:
        key = short_reason(r.reason).lower()
        choice = report.wait_choice(r.reason)
        short = [p for p in report.timeouts if p.reason == r.reason]
        first = min(short, key=lambda p: p.tau_us)
        values |= {
            f"{key} timeout ms": f"{r.timeout_us / 1000:g}",
            f"{key} per thousand pages": f"{1000 * r.throttles_per_page:.3f}",
            f"{key} wait": "the censored fit \\tp{" + escape(choice.model or "") + "}"
            if choice.source == "fit"
            else "Kaplan--Meier",
            f"{key} wait why": escape(choice.why),
            f"{key} shortest tau ms": f"{first.tau_us / 1000:g}",
            f"{key} shortest p timeout": _cells(first.p_timeout, _p)[0],
            f"{key} shortest p timeout ci": _cells(first.p_timeout, _p)[1],
            f"{key} shortest mean ms": _ms(first.mean_stall_us.value),
        }
    return {f"tmodel {k}": v for k, v in values.items()}


def _losses(tm: TimeoutModel) -> list[str]:
    """Where the model does no better than the naive baseline, in words."""
    out = []
    for label, v, (a, b) in (
        ("forward", tm.report.validation, (tm.base_run, tm.new_run)),
        ("reverse", tm.reverse, (tm.new_run, tm.base_run)),
    ):
        for what, model, naive in (
            ("velocity", v.velocity_error, v.baseline_velocity_error),
            ("efficiency", v.efficiency_error, v.baseline_efficiency_error),
        ):
            if model >= naive:
                out.append(
                    f"calibrated on {escape(a)} and scored on {escape(b)}, its {what} error "
                    f"(\\{macro_name(f'tmodel {label} {what} error')}\\,\\%) is no smaller "
                    f"than the naive one (\\{macro_name(f'tmodel {label} {what} naive')}\\,\\%)"
                )
    return out


def section_tex(tm: TimeoutModel, values: dict[str, str]) -> str:
    """The section: macros, what the model assumes, the predictions, the validation."""

    def mac(key: str) -> str:
        return f"\\{macro_name(f'tmodel {key}')}{{}}"

    reasons = []
    for r in tm.report.model.reasons:
        key = short_reason(r.reason).lower()
        reasons.append(
            f"For \\tp{{{escape(r.reason)}}} (observed timeout {mac(key + ' timeout ms')}\\,ms, "
            f"{mac(key + ' per thousand pages')} throttles per thousand pages scanned) the "
            f"latent wait is {mac(key + ' wait')} ({mac(key + ' wait why')}). At "
            f"$\\tau$ = {mac(key + ' shortest tau ms')}\\,ms, P(timeout) would be "
            f"{mac(key + ' shortest p timeout')} {mac(key + ' shortest p timeout ci')} and the "
            f"mean stall {mac(key + ' shortest mean ms')}\\,ms."
        )
    iterations = len(tm.report.runs)
    needed = [_largest_change(tm.report, i)[2] for i in (0, 1)]
    doubt = (
        "On these captures seed 000's doubt stands: no timeout on the ladder is predicted "
        "to change reclaim by more than its runs vary."
        if min(needed) > iterations
        else "A change that large would show with the iterations at hand: here a timeout "
        "is predicted to matter."
    )
    losses = _losses(tm)
    verdict = (
        "The model loses to the naive baseline where it matters: "
        + "; ".join(losses)
        + ". Its structure does not carry the run-to-run differences of the dirty pool "
        "and writeback rate into velocity and efficiency any better than assuming nothing "
        "changed."
        if losses
        else "The model beats the naive baseline in both directions on both predictions."
    )
    parts = [
        macros_tex(values),
        "Seed 000 doubts that another throttle timeout would help. A reclaim-cycle model "
        "asks what it would do: calibrated on the "
        f"{mac('iterations')} traces of \\BaseRun{{}} (velocity {mac('velocity')} pages "
        f"scanned per second of reclaim, efficiency {mac('efficiency')}, writeback "
        f"{mac('writeback pps')} pages/s against a dirty pool of {mac('dirty pool pages')} "
        "pages), it predicts P(timeout) $= S(\\tau)$ and the mean stall "
        "$E[\\min(T, \\tau)]$ from each reason's latent wait $T$, and velocity and efficiency "
        "from the throttles per scanned page and a binomial GLM of each cycle's efficiency "
        "on the share of the dirty pool written back during its sleep. It assumes $T$, the "
        "throttle frequency and the scanning rate do not depend on $\\tau$; the efficiency "
        "GLM is an association (long sleeps come with slow writeback), not a cause. "
        f"Intervals are percentiles of {mac('bootstrap')} bootstrap models "
        "(Table~\\ref{tab:timeout-predictions}, Figure~\\ref{fig:timeout-curves}).",
        *reasons,
        f"The largest predicted velocity change from the observed timeout is "
        f"{mac('velocity change')}\\,\\% (at $\\tau$ = {mac('velocity change tau ms')}\\,ms); "
        f"with the run-to-run spread of the observed velocity, seeing it would take "
        f"{mac('velocity runs needed')} iterations per timeout (two-sided t-test, 5\\,\\% "
        f"level, 80\\,\\% power). The largest efficiency change is "
        f"{mac('efficiency change')}\\,\\% "
        f"(needing {mac('efficiency runs needed')} iterations per timeout). " + doubt,
        "\\input{tables/timeout-predictions}",
        "\\begin{figure}[tbp]\n\\centering\n"
        "\\includegraphics[width=\\textwidth]{figures/timeout-curves.pdf}\n"
        "\\caption{Timeout model of \\BaseRun{}: predictions against $\\tau$ (log axis) "
        "with 95\\,\\% bootstrap bands; the dashed rule is the observed timeout, "
        "points right of it are extrapolation.}\\label{fig:timeout-curves}\n\\end{figure}",
        "Table~\\ref{tab:timeout-validation} scores the model on the other run, which "
        "differs in \\tp{vm.dirty\\_ratio}: calibrated on one run, it predicts each "
        "iteration of the other from that iteration's own writeback rate, dirty pool and "
        "waits. Calibrated on \\BaseRun{} and scored on \\NewRun{}, its velocity error "
        f"is {mac('forward velocity error')}\\,\\% against {mac('forward velocity naive')}"
        "\\,\\% for the naive baseline and its efficiency error "
        f"{mac('forward efficiency error')}\\,\\% against "
        f"{mac('forward efficiency naive')}\\,\\%; the other way round "
        f"{mac('reverse velocity error')}\\,\\% against {mac('reverse velocity naive')}\\,\\% "
        f"and {mac('reverse efficiency error')}\\,\\% against "
        f"{mac('reverse efficiency naive')}\\,\\%. Given the scored run's throttles per "
        f"page, the velocity error becomes {mac('forward velocity given rate')}\\,\\% "
        f"(forward) and {mac('reverse velocity given rate')}\\,\\% (reverse): the "
        "throttle frequency, which the model takes as fixed, carries much of the "
        "difference. " + verdict,
        "\\input{tables/timeout-validation}",
    ]
    return "\n\n".join(parts) + "\n"


def section(data: Study, out: Path) -> str:
    """Model the base run, validate on the new run, write tables and figure under ``out``."""
    tm = data.timeout
    if tm is None:
        return (
            "\\emph{The timeout model is calibrated on one run and scored on another: "
            "it needs two.}\n"
        )
    write_tables(
        out,
        {"timeout-predictions": predictions_table(tm), "timeout-validation": validation_table(tm)},
    )
    charts = [
        curve_chart(
            throttle.timeout_curve(tm.report.model, r.reason, [f * r.timeout_us for f in LADDER]),
            r.timeout_us,
            r.reason,
        )
        for r in tm.report.model.reasons
    ]
    save_pdf(alt.vconcat(*charts), out / "figures" / "timeout-curves.pdf")
    return section_tex(tm, timeout_values(tm))
