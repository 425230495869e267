"""Text (80 columns) and JSON of the throttle-timeout model (:mod:`analysis.models.throttle`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from analysis.models.throttle import (
    CycleModel,
    CyclePrediction,
    Estimate,
    Observation,
    TimeoutPrediction,
    Validation,
    calibrate,
    per_run,
    predict_cycle,
    predict_timeout,
    runs_needed,
    validate,
)
from analysis.models.throttle_validation import QuantityScore
from analysis.models.throttle_waits import WaitChoice
from analysis.stats.describe import mean_sd

__all__ = [
    "ThrottleReport",
    "as_json",
    "build_report",
    "format_report",
    "format_validation",
    "validation_json",
]

ASSUMPTIONS = (
    "T is the same at any timeout; beyond the observed timeout (rows marked *) only a "
    "fitted wait can speak, through its family's tail; Kaplan-Meier takes every sleeper "
    "still waiting as never woken (upper bounds)",
    "throttles per scanned page and the scanning rate do not depend on the timeout; "
    "the scanning rate includes waiting for a CPU (it changes with concurrency)",
    "cycle efficiency depends on the share of the dirty pool written back during the "
    "sleep; long sleeps also mark slow writeback, so this is association, not cause",
    "intervals: bootstrap over throttle cycles (fitted waits: refits to resampled "
    "delay histograms) pooled across runs, as if independent",
)


@dataclass(frozen=True)
class ThrottleReport:
    """Everything ``mmlab model throttle`` prints: the runs, the calibrated model, the
    timeout predictions per reason, the cycle predictions and an optional validation."""

    capture: str
    runs: tuple[Observation, ...]
    model: CycleModel
    timeouts: tuple[TimeoutPrediction, ...]
    cycles: tuple[CyclePrediction, ...]
    validation: Validation | None = None
    validation_capture: str | None = None
    waits: tuple[WaitChoice, ...] = ()

    def wait_choice(self, reason: str) -> WaitChoice:
        """Which latent wait ``reason`` used (Kaplan–Meier when no choice was recorded)."""
        known = {c.reason: c for c in self.waits}
        return known.get(reason, WaitChoice(reason, "empirical", None, "the cycle model's own"))


def build_report(
    capture: str,
    runs: Sequence[Observation],
    model: CycleModel,
    taus_us: Mapping[str, Sequence[float]],
    targets: Sequence[Observation] | None = None,
    target_capture: str | None = None,
    *,
    waits: Sequence[WaitChoice] = (),
    seed: int = 0,
) -> ThrottleReport:
    """Predictions at every timeout in ``taus_us`` (reason → timeouts), one reason at a
    time, the cycle at the observed timeouts first; each cycle prediction also by models
    calibrated on one run each; the validation on ``targets`` when given. ``waits``
    records which latent wait each reason of ``model`` carries (:mod:`throttle_waits`)."""
    timeouts: list[TimeoutPrediction] = []
    cycles = [predict_cycle(model, seed=seed)]
    for r in model.reasons:
        reps = [m.reason(r.reason).wait for m in model.replicates]
        for tau in taus_us.get(r.reason, ()):
            timeouts.append(predict_timeout(r.wait, tau, replicates=reps))
            if tau != r.timeout_us:
                cycles.append(predict_cycle(model, {r.reason: tau}, seed=seed))
    singles = [calibrate([run]) for run in runs] if len(runs) > 1 else []
    return ThrottleReport(
        capture=capture,
        runs=tuple(runs),
        model=model,
        timeouts=tuple(timeouts),
        cycles=tuple(per_run(c, singles, seed=seed) for c in cycles),
        validation=validate(model, targets, seed=seed) if targets else None,
        validation_capture=target_capture if targets else None,
        waits=tuple(waits),
    )


def _ci(est: Estimate, fmt: str) -> str:
    if est.low is None:
        return format(est.value, fmt)
    return f"{format(est.value, fmt)} [{format(est.low, fmt)}, {format(est.high, fmt)}]"


def _runs_line(label: str, values: Sequence[float], fmt: str) -> str:
    mean, sd = mean_sd(list(values))
    spread = f" ± {format(sd, fmt)} sd" if sd is not None else " (one run: no spread)"
    return f"  {label}: {format(mean, fmt)}{spread}, n = {len(values)} runs"


def format_report(report: ThrottleReport) -> str:
    """The report as plain text, at most 80 columns."""
    m = report.model
    lines = [
        f"throttle timeout model: {report.capture}",
        f"calibrated on {len(report.runs)} runs (traces); observed per run:",
        _runs_line("velocity pages/s of reclaim", [r.velocity_pps for r in report.runs], ".0f"),
        _runs_line("efficiency reclaimed/scanned", [r.efficiency for r in report.runs], ".3f"),
        _runs_line(
            "dirty/writeback/immediate share", [r.blocked_share for r in report.runs], ".3f"
        ),
        f"  writeback {m.writeback_pps:.0f} pages/s, dirty pool {m.dirty_pool_pages:.0f} pages",
        "",
    ]
    for r in m.reasons:
        choice = report.wait_choice(r.reason)
        asleep = float(r.wait.survival([r.timeout_us])[0])
        lines += [
            f"{r.reason}: timeout {r.timeout_us:.0f} us, "
            f"{r.throttles_per_page * 1000:.3f} throttles per 1000 pages scanned",
            f"  latent wait: {_wait_label(choice)} ({choice.why})",
            f"  woken at once {r.wait.zero_mass:.3f}, still asleep at the timeout {asleep:.3f}",
            f"  {'tau us':>8} {'P(timeout) [95% CI]':<24} {'mean stall us [95% CI]':<26}"
            f" {'p90 us':>8}",
        ]
        for p in report.timeouts:
            if p.reason != r.reason:
                continue
            p90 = dict(p.stall_quantiles_us).get(0.9)
            mark = "*" if p.extrapolated else " "
            lines.append(
                f"  {p.tau_us:>8.0f}{mark} {_ci(p.p_timeout, '.3f'):<23} "
                f"{_ci(p.mean_stall_us, '.0f'):<26} {p90.value if p90 else float('nan'):>8.0f}"
            )
        lines.append("")
    lines.append(
        f"  {'tau us':<10}  {'velocity pages/s':<22} {'run sd':>6} {'efficiency':<24} {'run sd':>6}"
    )
    for c in report.cycles:
        taus = ", ".join(f"{t:.0f}" for _, t in c.taus_us) or "observed"
        mark = "*" if c.extrapolated else " "
        v_sd, e_sd = c.run_sd()
        lines.append(
            f"  {taus:<10}{mark} {_ci(c.velocity_pps, '.0f'):<22} {_opt(v_sd, '.0f'):>6} "
            f"{_ci(c.efficiency, '.4f'):<24} {_opt(e_sd, '.4f'):>6}"
        )
    lines += _verdicts(report)
    if report.validation is not None:
        v = report.validation
        lines += [
            "",
            f"validation on {report.validation_capture} ({v.rows.height} runs):",
            "  mean |relative error|  model          naive (calibration's observed)",
            f"  velocity              {_err(v.velocity_error, v.velocity_error_sd):<16}"
            f"{v.baseline_velocity_error:.1%}",
            f"  efficiency            {_err(v.efficiency_error, v.efficiency_error_sd):<16}"
            f"{v.baseline_efficiency_error:.1%}",
            f"  velocity given the other capture's throttles per page: "
            f"{v.velocity_error_given_rate:.1%}",
        ]
    lines += ["", "assumptions:"] + [f"  - {a}" for a in ASSUMPTIONS]
    lines.append(
        "  run sd: the same prediction by models calibrated on one run each; intervals "
        "narrower than it understate the uncertainty"
    )
    return "\n".join(_wrap(line) for line in lines)


def _verdicts(report: ThrottleReport) -> list[str]:
    """The largest predicted change from the observed timeout, how each run's own model
    sees it, and how many runs per timeout an experiment would need to see it."""
    base = next((c for c in report.cycles if not c.taus_us), None)
    others = [c for c in report.cycles if c.taus_us]
    if base is None or not others:
        return []
    out = []
    for label, pick, observed, fmt in (
        ("velocity", lambda c: c.velocity_pps.value, [r.velocity_pps for r in report.runs], ".0f"),
        ("efficiency", lambda c: c.efficiency.value, [r.efficiency for r in report.runs], ".4f"),
    ):
        index = 0 if label == "velocity" else 1
        far = max(others, key=lambda c: abs(pick(c) - pick(base)))
        change = pick(far) - pick(base)
        taus = ", ".join(f"{t:.0f}" for _, t in far.taus_us)
        line = f"  {label}: largest change {change / pick(base):+.2%} at tau {taus} us"
        if far.runs and base.runs:
            per_run = [
                (f[index] - b[index]) / b[index] for f, b in zip(far.runs, base.runs, strict=True)
            ]
            line += f" (each run's model: {min(per_run):+.2%} to {max(per_run):+.2%})"
        _, sd = mean_sd(observed)
        if sd is None:
            line += "; run-to-run sd unknown with one run: need ≥ 2 runs to size a test"
        else:
            n = runs_needed(change, sd)
            line += (
                "; no change to see"
                if n is None
                else f"; to see it, an experiment needs ≥ {n} runs per timeout "
                f"(run sd {format(sd, fmt)}, 5% level, 80% power)"
            )
        out.append(line)
    return out


def _wait_label(choice: WaitChoice) -> str:
    return f"fit {choice.model}" if choice.source == "fit" else "Kaplan-Meier"


def _opt(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _err(value: float, sd: float | None) -> str:
    return f"{value:.1%}" + (f" ± {sd:.1%}" if sd is not None else "")


def _wrap(line: str, width: int = 80) -> str:
    line = line.rstrip()
    if len(line) <= width:
        return line
    lead = len(line) - len(line.lstrip())
    indent = " " * (lead + 2)
    out, current = [], line[:lead] + line.split()[0]
    for word in line.split()[1:]:
        if current and len(current) + 1 + len(word) > width:
            out.append(current)
            current = indent + word
        else:
            current = f"{current} {word}" if current else word
    return "\n".join([*out, current])


def _est(e: Estimate) -> dict:
    return {"value": e.value, "low": e.low, "high": e.high}


def as_json(report: ThrottleReport) -> dict:
    """The report as JSON-ready data (units in the key names)."""
    m = report.model
    v = report.validation
    return {
        "capture": report.capture,
        "runs": [
            {
                "source": r.source,
                "velocity_pps": r.velocity_pps,
                "efficiency": r.efficiency,
                "blocked_share": r.blocked_share,
            }
            for r in report.runs
        ],
        "writeback_pps": m.writeback_pps,
        "dirty_pool_pages": m.dirty_pool_pages,
        "scan_s_per_page": m.scan_s_per_page,
        "reasons": [
            {
                "reason": r.reason,
                "timeout_us": r.timeout_us,
                "throttles_per_page": r.throttles_per_page,
                "page_share": r.page_share,
                "efficiency_logit_coef": list(r.coef),
                "wait": {
                    "source": report.wait_choice(r.reason).source,
                    "model": report.wait_choice(r.reason).model,
                    "why": report.wait_choice(r.reason).why,
                },
                "zero_mass": r.wait.zero_mass,
                "cure_fraction": r.wait.cure_fraction,
                "cure_fraction_is_upper_bound": report.wait_choice(r.reason).source == "empirical",
                "predictions": [
                    {
                        "tau_us": p.tau_us,
                        "p_timeout": _est(p.p_timeout),
                        "mean_stall_us": _est(p.mean_stall_us),
                        "stall_quantiles_us": {str(q): _est(e) for q, e in p.stall_quantiles_us},
                        "extrapolated": p.extrapolated,
                        "replicates": p.replicates,
                    }
                    for p in report.timeouts
                    if p.reason == r.reason
                ],
            }
            for r in m.reasons
        ],
        "cycle": [
            {
                "taus_us": dict(c.taus_us),
                "velocity_pps": _est(c.velocity_pps),
                "efficiency": _est(c.efficiency),
                "extrapolated": c.extrapolated,
                "runs": [{"velocity_pps": v, "efficiency": e} for v, e in c.runs],
            }
            for c in report.cycles
        ],
        "validation": None
        if v is None
        else {
            "capture": report.validation_capture,
            "runs": v.rows.to_dicts(),
            "velocity_error": v.velocity_error,
            "velocity_error_sd": v.velocity_error_sd,
            "baseline_velocity_error": v.baseline_velocity_error,
            "velocity_error_given_rate": v.velocity_error_given_rate,
            "efficiency_error": v.efficiency_error,
            "efficiency_error_sd": v.efficiency_error_sd,
            "baseline_efficiency_error": v.baseline_efficiency_error,
        },
        "assumptions": list(ASSUMPTIONS),
    }


VALIDATION_LABELS = {
    "p_timeout": ("P(timeout)", ".3f", ".2f"),
    "mean_stall_us": ("stall us", ".0f", ".0f"),
    "velocity_pps": ("velocity p/s", ".0f", ".0f"),
    "efficiency": ("efficiency", ".3f", ".2f"),
}


def _score_error(value: float, unit: str) -> str:
    return f"{value:.1f}pp" if unit == "pp" else f"{value:.0%}"


def format_validation(scores: Sequence[QuantityScore], calibration: str) -> str:
    """The out-of-sample table of :func:`analysis.models.throttle_validation.score_capture`
    over every validation capture, at most 80 columns."""
    lines = [
        f"out-of-sample validation: calibrated on {calibration}, predicted at each "
        "capture's own timeout",
        "  predicted: mean of models calibrated on one run each; PI: their run-level 95%",
        "  prediction interval for one new run;",
        "  in: validation runs inside it; errors: mean over runs, pp = percentage points",
        "  of a share, % = relative; none = no change, lin = every sleep x tau/tau0;",
        "  p: permutation over runs, calibration vs this capture (did the knob act?)",
    ]
    for capture in dict.fromkeys(s.capture for s in scores):
        rows = [s for s in scores if s.capture == capture]
        first = rows[0]
        kind = (
            "A/A, same timeout" if first.tau_us == first.calibration_tau_us else "another timeout"
        )
        mark = " (beyond the calibration's timeout: extrapolated)" if first.extrapolated else ""
        lines += [
            "",
            f"{capture}:",
            f"  tau {first.tau_us:.0f} us vs {first.calibration_tau_us:.0f} us "
            f"({kind}), {len(first.observed)} runs{mark}",
            f"  {'quantity':<12} {'predicted [95% PI]':<20} {'observed±sd':<12} {'in':<3}"
            f" {'model':>6} {'none':>6} {'lin':>6} {'p':>5}",
        ]
        for s in rows:
            label, fmt, short = VALIDATION_LABELS[s.quantity]
            pi = (
                format(s.predicted, fmt)
                if s.interval is None
                else f"{format(s.predicted, fmt)} "
                f"[{format(s.interval[0], short)}, {format(s.interval[1], short)}]"
            )
            mean, sd = mean_sd(list(s.observed))
            spread = format(mean, fmt) + ("" if sd is None else f"±{format(sd, fmt)}")
            errors = " ".join(
                f"{_score_error(e, s.error_unit):>6}"
                for e in (s.model_error, s.no_change_error, s.linear_error)
            )
            inside = f"{s.inside}/{len(s.observed)}"
            lines.append(
                f"  {label:<12} {pi:<20} {spread:<12} {inside:<3} {errors} "
                f"{_opt(s.change_p, '.3f'):>5}"
            )
        lines += _beside_lines(rows)
        lines.append("  per run (x: outside the PI):")
        for s in rows:
            label, fmt, _ = VALIDATION_LABELS[s.quantity]
            outside = [
                s.interval is not None and not s.interval[0] <= v <= s.interval[1]
                for v in s.observed
            ]
            values = " ".join(
                format(v, fmt) + ("x" if out else "")
                for v, out in zip(s.observed, outside, strict=True)
            )
            lines.append(f"    {label:<12} {values}")
    return "\n".join(_wrap(line) for line in lines)


def _beside_lines(rows: Sequence[QuantityScore]) -> list[str]:
    """Kaplan–Meier and the identification bounds beyond the calibration's timeout; the
    prediction from each run's writeback rate."""
    lines = []
    for s in rows:
        label, fmt, short = VALIDATION_LABELS[s.quantity]
        if s.kaplan_meier is not None:
            bounds = (
                ""
                if s.bounds is None
                else f"; bounds [{format(s.bounds[0], short)}, {format(s.bounds[1], short)}]"
            )
            lines.append(
                f"  {label:<12} Kaplan-Meier {format(s.kaplan_meier, fmt)} "
                f"(error {_score_error(s.kaplan_meier_error, s.error_unit)}){bounds}"
            )
    for s in rows:
        label, fmt, _ = VALIDATION_LABELS[s.quantity]
        if s.given_writeback is not None:
            lines.append(
                f"  {label:<12} given each run's writeback rate: error "
                f"{_score_error(s.given_writeback_error, s.error_unit)}, "
                f"in {s.given_writeback_inside}/{len(s.observed)}"
            )
    return lines


def validation_json(scores: Sequence[QuantityScore], calibration: str) -> dict:
    """:func:`format_validation`'s table as JSON-ready data (units in the key names)."""
    return {
        "calibration": calibration,
        "level": 0.95,
        "scores": [
            {
                "capture": s.capture,
                "quantity": s.quantity,
                "tau_us": s.tau_us,
                "calibration_tau_us": s.calibration_tau_us,
                "predicted": s.predicted,
                "pooled": _est(s.pooled),
                "prediction_interval": None if s.interval is None else list(s.interval),
                "observed_runs": list(s.observed),
                "runs_inside_interval": s.inside,
                "error_unit": s.error_unit,
                "model_error": s.model_error,
                "model_error_sd": s.model_error_sd,
                "no_change": s.no_change,
                "no_change_error": s.no_change_error,
                "linear": s.linear,
                "linear_error": s.linear_error,
                "change_permutation_p": s.change_p,
                "extrapolated": s.extrapolated,
                "kaplan_meier": s.kaplan_meier,
                "kaplan_meier_error": s.kaplan_meier_error,
                "bounds": None if s.bounds is None else list(s.bounds),
                "given_writeback": None if s.given_writeback is None else list(s.given_writeback),
                "given_writeback_intervals": None
                if s.given_writeback_intervals is None
                else [list(i) for i in s.given_writeback_intervals],
                "given_writeback_inside": s.given_writeback_inside,
                "given_writeback_error": s.given_writeback_error,
            }
            for s in scores
        ],
    }
