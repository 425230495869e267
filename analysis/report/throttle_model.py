"""Text (80 columns) and JSON of the throttle-timeout model (:mod:`analysis.models.throttle`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from analysis.models.throttle import (
    CycleModel,
    CyclePrediction,
    Estimate,
    Observation,
    TimeoutPrediction,
    Validation,
)
from analysis.stats.describe import mean_sd

__all__ = ["ThrottleReport", "as_json", "format_report"]

ASSUMPTIONS = (
    "T is the same at any timeout; beyond the observed timeout every sleeper still "
    "waiting is taken as never woken (upper bounds; rows marked *)",
    "throttles per scanned page and the scanning rate do not depend on the timeout",
    "cycle efficiency depends on the share of the dirty pool written back during the "
    "sleep; long sleeps also mark slow writeback, so this is association, not cause",
    "intervals: bootstrap over throttle cycles pooled across runs, as if independent",
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
        f"  writeback {m.writeback_pps:.0f} pages/s, dirty pool {m.dirty_pool_pages:.0f} pages",
        "",
    ]
    for r in m.reasons:
        lines += [
            f"{r.reason}: timeout {r.timeout_us:.0f} us, "
            f"{r.throttles_per_page * 1000:.3f} throttles per 1000 pages scanned",
            f"  woken in the first jiffy {r.wait.zero_mass:.3f}, still asleep at the timeout "
            f"{r.wait.cure_fraction:.3f}",
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
    lines.append(f"  {'timeouts us':<24} {'velocity pages/s':<26} {'efficiency':<22}")
    for c in report.cycles:
        taus = ", ".join(f"{t:.0f}" for _, t in c.taus_us) or "observed"
        mark = "*" if c.extrapolated else " "
        lines.append(
            f"  {taus:<23}{mark} {_ci(c.velocity_pps, '.0f'):<26} {_ci(c.efficiency, '.4f'):<22}"
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
        ]
    lines += ["", "assumptions:"] + [f"  - {a}" for a in ASSUMPTIONS]
    lines.append(
        "  run-to-run sd above vs the intervals: intervals narrower than the spread across "
        "runs understate the uncertainty"
    )
    return "\n".join(_wrap(line) for line in lines)


def _verdicts(report: ThrottleReport) -> list[str]:
    """Whether the predicted change across the timeouts shown exceeds the run-to-run spread."""
    out = []
    for label, pred, observed, fmt in (
        (
            "velocity",
            [c.velocity_pps.value for c in report.cycles],
            [r.velocity_pps for r in report.runs],
            ".0f",
        ),
        (
            "efficiency",
            [c.efficiency.value for c in report.cycles],
            [r.efficiency for r in report.runs],
            ".4f",
        ),
    ):
        change = max(pred) - min(pred)
        _, sd = mean_sd(observed)
        if sd is None:
            out.append(f"  {label}: one run, so the run-to-run spread is unknown: need ≥ 2")
        elif change > 2 * sd:
            out.append(
                f"  {label}: predicted range {format(change, fmt)} exceeds 2 run-to-run sd "
                f"({format(2 * sd, fmt)})"
            )
        else:
            out.append(
                f"  {label}: ~ predicted range {format(change, fmt)} is within 2 run-to-run sd "
                f"({format(2 * sd, fmt)}): no effect of the timeout could be seen in "
                f"{len(observed)} runs"
            )
    return out


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
            {"source": r.source, "velocity_pps": r.velocity_pps, "efficiency": r.efficiency}
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
                "zero_mass": r.wait.zero_mass,
                "cure_fraction_upper": r.wait.cure_fraction,
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
            "efficiency_error": v.efficiency_error,
            "efficiency_error_sd": v.efficiency_error_sd,
            "baseline_efficiency_error": v.baseline_efficiency_error,
        },
        "assumptions": list(ASSUMPTIONS),
    }
