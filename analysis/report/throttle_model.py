"""Text (80 columns) and JSON of the throttle-timeout model: what
:mod:`analysis.study.throttle_model` computed for ``mmlab model throttle``."""

from __future__ import annotations

from collections.abc import Sequence

from analysis.report.standing import (
    error_text,
    standing_json,
    standing_lines,
    standing_sentence,
    undetected_lines,
)
from analysis.report.table import Column, Table
from analysis.report.text import fit
from analysis.report.units import PLAIN, fixed, interval, plus_minus, sig
from analysis.stats.describe import mean_sd
from analysis.study.throttle_model import (
    CHANGE_LEVEL,
    DESIGN_LEVEL,
    Design,
    Estimate,
    QuantityScore,
    ThrottleReport,
    WaitChoice,
)

__all__ = [
    "VALIDATION_LABELS",
    "WHAT_IF_LABELS",
    "as_json",
    "format_report",
    "format_validation",
    "validation_json",
    "withheld",
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


def _ci(est: Estimate) -> str:
    """The estimate and its 95 % CI, rounded where the CI is (units.interval)."""
    return interval(est.value, est.low, est.high)


def _runs_line(label: str, values: Sequence[float]) -> str:
    mean, sd = mean_sd(list(values))
    spread = " sd" if sd is not None else " (one run: no spread)"
    return f"  {label}: {plus_minus(mean, sd)}{spread}, n = {len(values)} runs"


_TIMEOUT_COLUMNS = (
    Column("tau", unit="us"),
    Column(""),
    Column("P(timeout) [95% CI]"),
    Column("mean stall [95% CI]", unit="us"),
    Column("p90", unit="us"),
)
_CYCLE_COLUMNS = (
    Column("tau", unit="us", left=True),
    Column(""),
    Column("velocity", unit="pages/s"),
    Column("run sd"),
    Column("efficiency"),
    Column("run sd"),
)


def format_report(report: ThrottleReport) -> str:
    """The report as plain text, at most 80 columns."""
    m = report.model
    lines = [
        f"throttle timeout model: {report.capture}",
        f"calibrated on {len(report.runs)} runs (traces); observed per run:",
        _runs_line("velocity pages/s of reclaim", [r.velocity_pps for r in report.runs]),
        _runs_line("efficiency reclaimed/scanned", [r.efficiency for r in report.runs]),
        _runs_line("dirty/writeback/immediate share", [r.blocked_share for r in report.runs]),
        f"  writeback {m.writeback_pps:.0f} pages/s, dirty pool {m.dirty_pool_pages:.0f} pages",
        "",
    ]
    for r in m.reasons:
        choice = report.wait_choice(r.reason)
        asleep = r.wait.timed_out(r.timeout_us)
        lines += [
            f"{r.reason}: timeout {r.timeout_us:.0f} us, "
            f"{r.throttles_per_page * 1000:.3f} throttles per 1000 pages scanned",
            f"  latent wait: {_wait_label(choice)} ({choice.why})",
            f"  woken at once {r.wait.zero_mass:.3f}, still asleep at the timeout {asleep:.3f}",
        ]
        rows = []
        for p in report.timeouts:
            if p.reason != r.reason:
                continue
            p90 = dict(p.stall_quantiles_us).get(0.9)
            rows.append(
                (
                    fixed(p.tau_us, 0),
                    "*" if p.extrapolated else "",
                    _ci(p.p_timeout),
                    _ci(p.mean_stall_us),
                    PLAIN.text(p90.value if p90 else None),
                )
            )
        lines += [*Table(_TIMEOUT_COLUMNS, rows).text(indent=2), ""]
    rows = []
    for c in report.cycles:
        v_sd, e_sd = c.run_sd()
        rows.append(
            (
                ", ".join(f"{t:.0f}" for _, t in c.taus_us) or "observed",
                "*" if c.extrapolated else "",
                _ci(c.velocity_pps),
                PLAIN.text(v_sd),
                _ci(c.efficiency),
                PLAIN.text(e_sd),
            )
        )
    lines += [*_standing_lines(report, ("p_timeout", "mean_stall_us")), ""]
    lines += Table(_CYCLE_COLUMNS, rows).text(indent=2)
    lines += [_design_line(d) for d in report.designs]
    # Without a design (no other timeout asked) the cycle table still shows these what-ifs.
    designed = {d.quantity for d in report.designs}
    lines += _standing_lines(report, [q for q in _DESIGN_FORMATS if q not in designed])
    lines += ["", "assumptions:"] + [f"  - {a}" for a in ASSUMPTIONS]
    lines.append(
        "  run sd: the same prediction by models calibrated on one run each; intervals "
        "narrower than it understate the uncertainty"
    )
    return fit("\n".join(lines))


# Each what-if quantity's name in the standing and design lines.
WHAT_IF_LABELS = {
    "p_timeout": "P(timeout)",
    "mean_stall_us": "mean stall",
    "velocity_pps": "velocity",
    "efficiency": "efficiency",
}
# Format of the observed run sd in each design line.
_DESIGN_FORMATS = {"velocity_pps": ".0f", "efficiency": ".4f"}
# Why a design line gives no runs-needed figure where the model did not beat no change.
_WITHHELD = "the model has not been shown to predict this change out of sample"


def _standing_lines(report: ThrottleReport, quantities: Sequence[str]) -> list[str]:
    """One line per quantity: its what-if's out-of-sample standing."""
    return standing_lines([report.standing(q) for q in quantities], WHAT_IF_LABELS, "timeout")


def withheld(d: Design) -> str | None:
    """Why ``d`` carries no runs-needed figure because of its standing (None when the
    model beat no change out of sample)."""
    return None if d.standing.stands else f"{d.standing.verdict}: {_WITHHELD}"


def _design_line(d: Design) -> str:
    """The largest predicted change from the observed timeout, how each run's own model
    sees it, the model's out-of-sample standing for the quantity, and, where it beat no
    change, how many runs per timeout an experiment would need to see it."""
    label, fmt = WHAT_IF_LABELS[d.quantity], _DESIGN_FORMATS[d.quantity]
    taus = ", ".join(f"{t:.0f}" for t in d.taus_us)
    line = f"  {label}: largest change {d.change:+.2%} at tau {taus} us"
    if d.per_run is not None:
        line += f" (each run's model: {d.per_run[0]:+.2%} to {d.per_run[1]:+.2%})"
    line += ". " + standing_sentence(d.standing, "timeout")
    if not d.standing.stands:
        return f"{line} No runs-needed figure: {_WITHHELD}."
    if d.log_sd is None:
        return line + " Run-to-run sd unknown with one run: need ≥ 2 runs to size a test."
    if d.change == 0:
        return line + " No change to see."
    if d.runs_needed is None:
        return line + " No feasible number of runs per timeout sees it (far below the run noise)."
    return line + (
        f" To see it, an experiment needs ≥ {d.runs_needed} runs per timeout (run sd "
        f"{format(d.run_sd, fmt)}, of the log {d.log_sd:.3f}; Welch t, "
        f"{DESIGN_LEVEL:.0%} level, 80% power; 2 runs is the floor)."
    )


def _wait_label(choice: WaitChoice) -> str:
    return f"fit {choice.model}" if choice.source == "fit" else "Kaplan-Meier"


def as_json(report: ThrottleReport) -> dict:
    """The report for ``json_output.dumps`` (units in the key names): estimates as
    their dataclass (``value``, ``low``, ``high``), the validation as
    :func:`validation_json` (null without one)."""
    m = report.model
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
                        "p_timeout": p.p_timeout,
                        "mean_stall_us": p.mean_stall_us,
                        "stall_quantiles_us": {str(q): e for q, e in p.stall_quantiles_us},
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
                "velocity_pps": c.velocity_pps,
                "efficiency": c.efficiency,
                "extrapolated": c.extrapolated,
                "runs": [{"velocity_pps": v, "efficiency": e} for v, e in c.runs],
            }
            for c in report.cycles
        ],
        "design": [
            {
                "quantity": d.quantity,
                "taus_us": d.taus_us,
                "change": d.change,
                "per_run_change": d.per_run,
                "run_sd": d.run_sd,
                "run_sd_log": d.log_sd,
                "level": DESIGN_LEVEL,
                "runs_needed": d.runs_needed,
                "runs_needed_withheld": withheld(d),
                "standing": standing_json(d.standing, "timeout"),
            }
            for d in report.designs
        ],
        "standings": [standing_json(report.standing(q), "timeout") for q in WHAT_IF_LABELS],
        "validation": validation_json(report.validation, report.capture)
        if report.validation
        else None,
        "assumptions": list(ASSUMPTIONS),
    }


# Label and per-run format (observations at their measured resolution) of each quantity.
VALIDATION_LABELS = {
    "p_timeout": ("P(timeout)", ".3f"),
    "mean_stall_us": ("stall us", ".0f"),
    "velocity_pps": ("velocity p/s", ".0f"),
    "efficiency": ("efficiency", ".3f"),
}
# The PI under the prediction and the sd under the mean keep the table in 80 columns
# with every quantity's label on one line (a 5-decimal P(timeout) PI is 26 wide).
_VALIDATION_COLUMNS = (
    Column("quantity", left=True),
    Column("predicted\n[95% PI]"),
    Column("observed\n± sd"),
    Column("in"),
    Column("model"),
    Column("none"),
    Column("lin"),
    Column("p"),
)


def _under(text: str, separator: str) -> str:
    """``text`` with the part from ``separator`` on (an interval, a ± sd) on a second
    line."""
    head, sep, tail = text.partition(separator)
    return f"{head}\n{sep.lstrip()}{tail}" if sep else head


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
        ]
        cells = []
        for s in rows:
            low, high = s.interval if s.interval is not None else (None, None)
            mean, sd = mean_sd(list(s.observed))
            errors = (s.model_error, s.no_change_error, s.linear_error)
            cells.append(
                (
                    VALIDATION_LABELS[s.quantity][0],
                    _under(interval(s.predicted, low, high), " ["),
                    _under(plus_minus(mean, sd), " ± "),
                    f"{s.inside}/{len(s.observed)}",
                    *(error_text(e, s.error_unit) for e in errors),
                    sig(s.change_p),
                )
            )
        lines += Table(_VALIDATION_COLUMNS, cells).text(indent=2)
        lines += undetected_lines(rows, VALIDATION_LABELS, CHANGE_LEVEL)
        lines += _beside_lines(rows)
        lines.append("  per run (x: outside the PI):")
        for s in rows:
            label, fmt = VALIDATION_LABELS[s.quantity]
            outside = [
                s.interval is not None and not s.interval[0] <= v <= s.interval[1]
                for v in s.observed
            ]
            values = " ".join(
                format(v, fmt) + ("x" if out else "")
                for v, out in zip(s.observed, outside, strict=True)
            )
            lines.append(f"    {label:<12} {values}")
    return fit("\n".join(lines))


def _beside_lines(rows: Sequence[QuantityScore]) -> list[str]:
    """Kaplan–Meier and the identification bounds beyond the calibration's timeout; the
    prediction from each run's writeback rate."""
    lines = []
    for s in rows:
        label, fmt = VALIDATION_LABELS[s.quantity]
        if s.kaplan_meier is not None:
            bounds = (
                ""
                if s.bounds is None
                else f"; bounds [{format(s.bounds[0], fmt)}, {format(s.bounds[1], fmt)}]"
            )
            lines.append(
                f"  {label:<12} Kaplan-Meier {format(s.kaplan_meier, fmt)} "
                f"(error {error_text(s.kaplan_meier_error, s.error_unit)}){bounds}"
            )
    for s in rows:
        label = VALIDATION_LABELS[s.quantity][0]
        if s.given_writeback is not None:
            lines.append(
                f"  {label:<12} given each run's writeback rate: error "
                f"{error_text(s.given_writeback_error, s.error_unit)}, "
                f"in {s.given_writeback_inside}/{len(s.observed)}"
            )
    return lines


def validation_json(scores: Sequence[QuantityScore], calibration: str) -> dict:
    """:func:`format_validation`'s table for :func:`~analysis.report.json_output.dumps`
    (units in the key names; the encoder writes the tuples as lists)."""
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
                "pooled": s.pooled,
                "prediction_interval": s.interval,
                "observed_runs": s.observed,
                "runs_inside_interval": s.inside,
                "error_unit": s.error_unit,
                "model_error": s.model_error,
                "model_error_sd": s.model_error_sd,
                "no_change": s.no_change,
                "no_change_error": s.no_change_error,
                "linear": s.linear,
                "linear_error": s.linear_error,
                "change_permutation_p": s.change_p,
                "change_detectable": s.change_mde,
                "extrapolated": s.extrapolated,
                "kaplan_meier": s.kaplan_meier,
                "kaplan_meier_error": s.kaplan_meier_error,
                "bounds": s.bounds,
                "given_writeback": s.given_writeback,
                "given_writeback_intervals": s.given_writeback_intervals,
                "given_writeback_inside": s.given_writeback_inside,
                "given_writeback_error": s.given_writeback_error,
            }
            for s in scores
        ],
    }
