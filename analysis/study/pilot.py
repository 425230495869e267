"""A pilot's boot-to-boot spread of an endpoint, and the boots a design needs from it.

Each setting of an executed plan (``mmlab experiment run``) has one value of the endpoint per
boot (:func:`analysis.metrics.endpoints.endpoint_value`). The spread that sizes the next
experiment is the sd of the log values across boots, with its 95 % interval (chi-square,
normal log values); the boots per setting a change of ``effect`` % needs at 80 % power
come from :func:`analysis.stats.significance.design_runs`, the project's one rule, at the
estimated sd and at the interval's upper end (the conservative design figure).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from analysis.ingest import mmtests
from analysis.ingest.capture_meta import read_order
from analysis.metrics.endpoints import endpoint_value
from analysis.stats.significance import design_runs

__all__ = ["SettingSpread", "pilot_spread"]


@dataclass(frozen=True)
class SettingSpread:
    """One setting's per-boot values of ``endpoint`` and what they imply for a design."""

    setting: str
    pressure: str
    endpoint: str
    values: tuple[float, ...]
    left_out: int
    geometric_mean: float | None
    sd_log: float | None
    sd_log_ci: tuple[float, float] | None
    effect_pct: float
    runs_needed: int | None
    runs_needed_at_upper_sd: int | None


def _spread(setting: str, pressure: str, endpoint: str, values: list[float], left_out: int,
            effect_pct: float, level: float) -> SettingSpread:  # fmt: skip
    positive = np.array([v for v in values if v > 0])
    n = len(positive)
    if n < 2:
        return SettingSpread(setting, pressure, endpoint, tuple(values), left_out,
                             float(np.exp(np.log(positive).mean())) if n else None,
                             None, None, effect_pct, None, None)  # fmt: skip
    logs = np.log(positive)
    sd = float(logs.std(ddof=1))
    lo = sd * math.sqrt((n - 1) / stats.chi2.ppf(0.975, n - 1))
    hi = sd * math.sqrt((n - 1) / stats.chi2.ppf(0.025, n - 1))
    return SettingSpread(
        setting, pressure, endpoint, tuple(values), left_out + len(values) - n,
        float(np.exp(logs.mean())), sd, (lo, hi), effect_pct,
        design_runs(sd, effect_pct, level), design_runs(hi, effect_pct, level),
    )  # fmt: skip


def pilot_spread(
    out: Path, endpoint: str | None = None, effect_pct: float = 20.0, level: float = 0.05
) -> list[SettingSpread]:
    """Per setting of the executed plan in ``out``: ``endpoint`` (default the plan's
    primary) per boot, its spread and the boots a ±``effect_pct`` % change needs."""
    order = read_order(out)
    endpoint = endpoint or order.primary_endpoint
    found = []
    for setting in order.settings:
        pressure = str(setting.params.get("pressure", "cgroup"))
        if not (out / setting.name).is_dir():
            found.append(_spread(setting.name, pressure, endpoint, [], 0, effect_pct, level))
            continue
        (run,) = mmtests.find_runs(out / setting.name)
        values = [endpoint_value(it, endpoint, pressure) for it in run.iterations]
        kept = [v for v in values if v is not None]
        found.append(_spread(setting.name, pressure, endpoint, kept, len(values) - len(kept),
                             effect_pct, level))  # fmt: skip
    return found
