"""What each level of an experiment's factor does to each endpoint: the designed sweep's
answer, one family per endpoint and stratum.

An executed plan (``mmlab experiment run``) has one boot per run, each in a block of the
randomised order. For the factor studied (the knob, by default the factor whose levels set
sysctls), every other factor's level combination is a stratum (the pressure type, say):
within it, every run's endpoint value (:func:`analysis.metrics.endpoints.endpoint_value`)
enters :func:`analysis.stats.blocked.blocked_effects` against the reference level (the
factor's first level in the plan). A level whose parameters equal the reference's is an
A/A control: the floor the sweep carries.

The covariate (each run's writeback rate, which sets how fast reclaim can go) is used only
where it is legitimate: when the factor does not move it (no level changes it at the
family's q < alpha) and the adjusted fit keeps :data:`MIN_ADJUSTED_DF` residual degrees
of freedom; how much it narrows the intervals is reported with it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from analysis.errors import InputError
from analysis.ingest import mmtests
from analysis.ingest.capture_meta import ExperimentSetting, read_boot, read_order
from analysis.metrics.endpoints import COVARIATES, ENDPOINT_UNITS, endpoint_values
from analysis.stats.blocked import BlockedEffects, NoVariation, blocked_effects

__all__ = [
    "MIN_ADJUSTED_DF",
    "EndpointFamily",
    "ExperimentEffects",
    "experiment_effects",
    "run_values",
    "same_as_reference",
]


# Residual degrees of freedom the covariate-adjusted fit must keep to be the answer: with
# fewer, its slope is estimated from a handful of runs and the t interval rests on them.
MIN_ADJUSTED_DF = 5


@dataclass(frozen=True)
class EndpointFamily:
    """One endpoint in one stratum: the levels against the reference, or why not."""

    endpoint: str
    unit: str
    stratum: tuple[tuple[str, str], ...]
    primary: bool
    effects: BlockedEffects | None
    note: str
    # The same family with the covariate, where legitimate; its CI width over the plain one's.
    adjusted: BlockedEffects | None
    narrowing: float | None
    covariate_note: str
    # The one value every run had, where nothing varied (blocked.NoVariation).
    constant: float | None = None

    @property
    def answer(self) -> BlockedEffects | None:
        """The family's answer: the covariate-adjusted fit where it is legitimate and keeps
        :data:`MIN_ADJUSTED_DF` residual degrees of freedom, else the plain one (None: not
        estimable). Decided before looking at the intervals: taking whichever fit came out
        narrower would pick the covariate when it fits the noise (at 2 df it "narrowed" a
        pilot interval to 4 % of its width)."""
        if self.adjusted is not None and self.adjusted.df >= MIN_ADJUSTED_DF:
            return self.adjusted
        return self.effects


@dataclass(frozen=True)
class ExperimentEffects:
    plan: str
    factor: str
    reference: str
    aa_controls: tuple[str, ...]
    runs_done: int
    runs_planned: int
    primary_endpoint: str
    families: tuple[EndpointFamily, ...]


def _studied_factor(settings: tuple[ExperimentSetting, ...], factor: str | None, out: Path) -> str:
    factors = list(settings[0].levels)
    if factor is not None:
        if factor not in factors:
            raise InputError(out, f"the plan has no factor {factor!r} ({', '.join(factors)})")
        return factor
    return next((f for f in reversed(factors) if _sets_sysctls(settings, f)), factors[-1])


def _sets_sysctls(settings: tuple[ExperimentSetting, ...], factor: str) -> bool:
    """Whether two settings that differ only in ``factor``'s level set different sysctls
    (a knob factor's reference level sets none: its other levels do)."""

    def others(s: ExperimentSetting) -> tuple:
        return tuple(sorted((k, v) for k, v in s.levels.items() if k != factor))

    def knobs(s: ExperimentSetting) -> str:
        return json.dumps(s.params.get("sysctl") or {}, sort_keys=True)

    seen: dict[tuple, set[str]] = {}
    for s in settings:
        seen.setdefault(others(s), set()).add(knobs(s))
    return any(len(k) > 1 for k in seen.values())


def same_as_reference(
    settings: tuple[ExperimentSetting, ...], factor: str, level: str, reference: str
) -> bool:
    """Whether every setting of ``level`` runs what its stratum's reference setting runs."""

    def others(s: ExperimentSetting) -> dict:
        return {k: v for k, v in s.levels.items() if k != factor}

    refs = [s for s in settings if s.levels[factor] == reference]
    return all(
        s.params == next(r.params for r in refs if others(r) == others(s))
        for s in settings
        if s.levels[factor] == level
    )


def run_values(out: Path, setting: ExperimentSetting, endpoints: tuple[str, ...]) -> pl.DataFrame:
    """One row per installed boot of ``setting``: ``block``, ``run_id``, each endpoint and
    each covariate (null where the run cannot give it)."""
    directory = out / setting.name
    schema = {"block": pl.Int64, "run_id": pl.String,
              **dict.fromkeys((*endpoints, *COVARIATES), pl.Float64)}  # fmt: skip
    rows = []
    if not directory.is_dir():
        return pl.DataFrame(schema=schema)
    (run,) = mmtests.find_runs(directory)
    pressure = str(setting.params.get("pressure", "cgroup"))
    for it in run.iterations:
        boot = read_boot(it.path)
        if boot is None or boot.block is None:
            raise InputError(it.path, "no boot.json with its block: not a run of mmlab experiment")
        row = {"block": boot.block, "run_id": boot.run_id}
        row |= endpoint_values(it, (*endpoints, *COVARIATES), pressure)
        rows.append(row)
    return pl.DataFrame(rows, schema=schema)


def _width(effects: BlockedEffects) -> float:
    """Mean CI width on the fit's own scale (log ratios or differences)."""
    to = np.log1p if effects.scale == "log" else (lambda v: v)
    return float(np.mean([to(e.ci[1]) - to(e.ci[0]) for e in effects.levels]))


def _family(frame: pl.DataFrame, endpoint: str, stratum, reference: str, primary: bool,
            covariate: str, alpha: float) -> EndpointFamily:  # fmt: skip
    data = frame.select("level", "block", pl.col(endpoint).alias("value"), covariate)
    try:
        plain = blocked_effects(data, reference, alpha=alpha)
    except NoVariation as exc:
        return EndpointFamily(endpoint, ENDPOINT_UNITS[endpoint], stratum, primary, None,
                              str(exc), None, None, "", exc.value)  # fmt: skip
    except ValueError as exc:
        return EndpointFamily(endpoint, ENDPOINT_UNITS[endpoint], stratum, primary, None,
                              str(exc), None, None, "")  # fmt: skip
    moved = data.select("level", "block", pl.col(covariate).alias("value"))
    try:
        check = blocked_effects(moved, reference, alpha=alpha)
    except ValueError as exc:
        return EndpointFamily(endpoint, ENDPOINT_UNITS[endpoint], stratum, primary, plain, "",
                              None, None, f"{covariate}: {exc}")  # fmt: skip
    movers = [e.level for e in check.levels if e.changed]
    if movers:
        note = f"not adjusted for {covariate}: {', '.join(movers)} move(s) it"
        return EndpointFamily(endpoint, ENDPOINT_UNITS[endpoint], stratum, primary, plain, "",
                              None, None, note)  # fmt: skip
    adjusted = blocked_effects(data, reference, covariate=covariate, alpha=alpha)
    narrowing = _width(adjusted) / _width(plain) if plain.levels else None
    return EndpointFamily(endpoint, ENDPOINT_UNITS[endpoint], stratum, primary, plain, "",
                          adjusted, narrowing, f"the factor does not move {covariate}")  # fmt: skip


def experiment_effects(
    out: Path,
    *,
    factor: str | None = None,
    endpoints: tuple[str, ...] = (),
    covariate: str = "writeback_rate",
    alpha: float = 0.05,
) -> ExperimentEffects:
    """:class:`ExperimentEffects` of the executed plan in ``out`` (default endpoints: the
    plan's primary, then its secondary ones)."""
    order = read_order(out)
    settings = order.settings
    factor = _studied_factor(settings, factor, out)
    endpoints = endpoints or (order.primary_endpoint, *order.secondary_endpoints)
    unknown = [e for e in endpoints if e not in ENDPOINT_UNITS]
    if unknown:
        raise InputError(out, f"endpoint(s) {', '.join(unknown)} not computed per run")
    if covariate not in COVARIATES:
        raise InputError(out, f"no covariate {covariate!r} ({', '.join(COVARIATES)})")
    levels = list(dict.fromkeys(s.levels[factor] for s in settings))
    reference = levels[0]
    frames = [
        run_values(out, s, endpoints).with_columns(
            level=pl.lit(s.levels[factor]),
            stratum=pl.lit(json.dumps({k: v for k, v in s.levels.items() if k != factor})),
        )
        for s in settings
    ]
    frame = pl.concat(frames)
    aa = tuple(x for x in levels[1:] if same_as_reference(settings, factor, x, reference))
    families = []
    for stratum in frame["stratum"].unique(maintain_order=True):
        part = frame.filter(pl.col("stratum") == stratum)
        pairs = tuple(json.loads(stratum).items())
        for endpoint in endpoints:
            primary = endpoint == order.primary_endpoint
            families.append(_family(part, endpoint, pairs, reference, primary, covariate, alpha))
    return ExperimentEffects(
        order.plan, factor, reference, aa, len(frame), order.runs_planned,
        order.primary_endpoint, tuple(families),
    )  # fmt: skip
