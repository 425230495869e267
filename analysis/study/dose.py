"""A designed sweep read as dose and response: each knob's settings, as the runs' kernels
read them back, against each level's effect on an endpoint, the reference at no change.

:func:`analysis.study.effects.experiment_effects` gives every level against the reference
per endpoint and stratum; here the levels are grouped by the sysctl they set (a
``vm.reclaim_throttle_writeback_ms`` curve, a ``vm.reclaim_throttle_noprogress_ms`` one),
each with the reference and the A/A controls, which set nothing. A point's setting is
what ``/proc/sys/vm`` held in every run of its level before the capture
(``mmlab.json`` ``sysctls_vm_before``): the reference's is the kernel's default (HZ/10 =
100 ms for writeback at HZ=250), not a value typed into the plan. The effects are those the
effects report calls the answer: covariate-adjusted where that is legitimate and narrower.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from analysis.errors import InputError
from analysis.ingest import mmtests
from analysis.ingest.capture_meta import ExperimentSetting, read_order
from analysis.stats.blocked import LevelEffect
from analysis.study.effects import ExperimentEffects, experiment_effects

__all__ = [
    "DesignedSweep",
    "DosePoint",
    "DoseResponse",
    "designed_sweep",
    "dose_responses",
    "knob_settings",
]


@dataclass(frozen=True)
class DosePoint:
    """One level on a knob's axis: its read-back ``setting`` (``value`` when numeric) and its
    effect against the reference (None for the reference itself)."""

    level: str
    setting: str
    value: float | None
    effect: LevelEffect | None
    aa_control: bool


@dataclass(frozen=True)
class DoseResponse:
    """One knob, one endpoint, one stratum: the points in the knob's order (numeric settings
    ascending), on ``scale`` (``log``: relative changes; ``raw``: differences)."""

    knob: str
    endpoint: str
    unit: str
    stratum: tuple[tuple[str, str], ...]
    primary: bool
    scale: str
    covariate: str | None
    points: tuple[DosePoint, ...]

    @property
    def knob_unit(self) -> str:
        """The unit of the knob's settings, from the sysctl's name (``..._ms``: ms)."""
        return "ms" if self.knob.endswith("_ms") else ""


def _numeric(setting: str) -> float | None:
    try:
        value = float(setting)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def knob_settings(out: Path, setting: ExperimentSetting, knob: str) -> str:
    """The value of ``knob`` every run of ``setting`` read before its capture; an InputError
    when the runs disagree or a run did not record it (the sweep's kernel lacks the knob)."""
    directory = out / setting.name
    seen = set()
    for run in mmtests.find_runs(directory) if directory.is_dir() else ():
        for it in run.iterations:
            value = it.metadata.sysctls_before.get(knob) if it.metadata is not None else None
            if value is None:
                raise InputError(it.path, f"mmlab.json records no {knob} before the capture")
            seen.add(value)
    if len(seen) != 1:
        why = "no finished run" if not seen else f"runs read {', '.join(sorted(seen))}"
        raise InputError(directory, f"no single {knob} setting: {why}")
    return seen.pop()


def _knobs(settings: tuple[ExperimentSetting, ...], factor: str) -> dict[str, list[str]]:
    """Each sysctl the factor's levels set, with the levels that set it and nothing else."""
    knobs: dict[str, list[str]] = {}
    for s in settings:
        names = sorted(dict(s.params.get("sysctl") or {}))
        if len(names) == 1 and s.levels[factor] not in knobs.get(names[0], []):
            knobs.setdefault(names[0], []).append(s.levels[factor])
    return knobs


def _stratum_setting(settings, factor: str, level: str, stratum) -> ExperimentSetting:
    return next(
        s
        for s in settings
        if s.levels[factor] == level and all(s.levels[k] == v for k, v in stratum)
    )


def dose_responses(out: Path, result: ExperimentEffects) -> tuple[DoseResponse, ...]:
    """Every (knob, endpoint, stratum) curve of ``result`` (the effects of the plan in
    ``out``) whose family could be estimated."""
    settings = read_order(out).settings
    curves = []
    for knob, levels in _knobs(settings, result.factor).items():
        members = [result.reference, *result.aa_controls, *levels]
        read = {s.name: knob_settings(out, s, knob)
                for s in settings if s.levels[result.factor] in members}  # fmt: skip
        for family in result.families:
            effects = family.answer
            if effects is None:
                continue
            by_level = {e.level: e for e in effects.levels}
            points = []
            for level in dict.fromkeys(members):
                if level != result.reference and level not in by_level:
                    continue
                chosen = _stratum_setting(settings, result.factor, level, family.stratum)
                setting = read[chosen.name]
                aa = level in result.aa_controls
                points.append(DosePoint(level, setting, _numeric(setting), by_level.get(level), aa))
            if all(p.value is not None for p in points):
                points.sort(key=lambda p: (p.value, p.effect is not None))
            curves.append(DoseResponse(knob, family.endpoint, family.unit, family.stratum,
                                       family.primary, effects.scale, effects.covariate,
                                       tuple(points)))  # fmt: skip
    return tuple(curves)


@dataclass(frozen=True)
class DesignedSweep:
    """One executed plan's effects (its primary and secondary endpoints, the factor whose
    levels set sysctls) and its knobs' dose–response curves."""

    effects: ExperimentEffects
    curves: tuple[DoseResponse, ...]

    @property
    def shown(self) -> tuple[DoseResponse, ...]:
        """The curves worth a figure: the primary endpoint's, and any a level changed."""
        return tuple(
            c
            for c in self.curves
            if c.primary or any(p.effect is not None and p.effect.changed for p in c.points)
        )


def designed_sweep(out: Path) -> DesignedSweep:
    """:class:`DesignedSweep` of the executed plan in ``out``."""
    effects = experiment_effects(out)
    return DesignedSweep(effects, dose_responses(out, effects))
