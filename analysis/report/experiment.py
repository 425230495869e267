"""Text of ``mmlab experiment``: a plan's order, and where an executed plan stands."""

from __future__ import annotations

from analysis.capture.design import ENDPOINTS, Plan, planned_runs
from analysis.capture.experiment import ExperimentStatus
from analysis.study.pilot import SettingSpread

__all__ = ["format_order", "format_spread", "format_status", "status_line"]


def format_order(plan: Plan) -> str:
    """The plan's settings, endpoints and its whole randomised order, a block per line."""
    runs = planned_runs(plan)
    lines = [
        f"plan {plan.name} (sha256 {plan.digest[:12]}), seed {plan.seed}, kernel {plan.kernel}",
        f"primary endpoint: {plan.primary_endpoint} ({ENDPOINTS[plan.primary_endpoint]})",
    ]
    if plan.secondary_endpoints:
        lines.append("secondary endpoints: " + ", ".join(plan.secondary_endpoints))
    if plan.sizing:
        lines.append("sizing: " + ", ".join(f"{k} {v}" for k, v in plan.sizing.items()))
    lines.append(
        f"{len(plan.settings)} settings x {plan.boots_per_setting} boots = {len(runs)} runs, "
        "one guest boot each, in blocks holding every setting once:"
    )
    for s in plan.settings:
        lines.append(
            f"  {s.name}: " + (", ".join(f"{k}={v}" for k, v in s.params.items()) or "defaults")
        )
    for block in range(plan.boots_per_setting):
        names = [r.setting for r in runs if r.block == block]
        lines.append(f"  block {block}: " + " ".join(names))
    return "\n".join(lines) + "\n"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    hours, rest = divmod(int(seconds + 0.5), 3600)
    return f"{hours} h {rest // 60:02d} min" if hours else f"{rest // 60} min {rest % 60:02d} s"


def status_line(status: ExperimentStatus) -> str:
    """One line: runs done, failed and left, and the time left at the median run's wall."""
    return (
        f"runs done {len(status.done)}/{status.total}, failed {len(status.failed)}, "
        f"left {len(status.pending)}, time left ~{_duration(status.eta_s)}"
    )


def format_status(status: ExperimentStatus) -> str:
    """:func:`status_line`, boots per setting, hosts, and each failed run with its reason."""
    lines = [status_line(status), "boots per setting:"]
    lines += [f"  {name}: {n}" for name, n in status.per_setting.items()]
    if status.hosts:
        lines.append("hosts: " + ", ".join(f"{h} ({n} runs)" for h, n in status.hosts.items()))
    if status.failed:
        lines.append("failed (left out; `mmlab experiment run --retry-failed` runs them again):")
        lines += [f"  {run}: {why}" for run, why in status.failed.items()]
    return "\n".join(lines) + "\n"


def format_spread(spreads: list[SettingSpread]) -> str:
    """Per setting: boots, geometric mean, sd of log values [95 % CI], boots needed."""
    if not spreads:
        return "no settings\n"
    first = spreads[0]
    lines = [
        f"{first.endpoint}: boot-to-boot spread per setting, and the boots per setting a "
        f"±{first.effect_pct:g} % change needs (80 % power, two-sided, design_runs)",
    ]
    for s in spreads:
        if s.sd_log is None:
            lines.append(f"  {s.setting}: {len(s.values)} boot(s): too few for a spread")
            continue
        lo, hi = s.sd_log_ci
        needed = "unreachable" if s.runs_needed is None else str(s.runs_needed)
        upper = (
            "unreachable" if s.runs_needed_at_upper_sd is None else str(s.runs_needed_at_upper_sd)
        )
        left = f", {s.left_out} left out (no value)" if s.left_out else ""
        lines.append(
            f"  {s.setting} ({s.pressure}): {len(s.values)} boots{left}, geometric mean "
            f"{s.geometric_mean:.4g}, sd of log {s.sd_log:.2f} [{lo:.2f}, {hi:.2f}]: "
            f"{needed} boots ({upper} at the upper sd)"
        )
    return "\n".join(lines) + "\n"
