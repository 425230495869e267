"""Text of ``mmlab experiment effects``: each level of the studied factor against the
reference, per endpoint and stratum, with what cannot be concluded and why."""

from __future__ import annotations

from analysis.report.table import Column, Table, wrapped
from analysis.report.units import Scale, interval, three_digits, up_down
from analysis.stats.blocked import BlockedEffects, LevelEffect
from analysis.study.effects import MIN_ADJUSTED_DF, EndpointFamily, ExperimentEffects

__all__ = ["change_text", "format_effects", "mde_text"]


def change_text(effects: BlockedEffects, e: LevelEffect, ends: bool = True) -> str:
    """The level's change and its 95 % CI: in % on the log scale, a difference otherwise;
    the change alone, rounded where its CI is, when not ``ends``."""
    if effects.scale == "log":
        return interval(100 * e.estimate, 100 * e.ci[0], 100 * e.ci[1], Scale("%"), ends)
    return interval(e.estimate, e.ci[0], e.ci[1], ends=ends)


def mde_text(effects: BlockedEffects, e: LevelEffect) -> str:
    """On the log scale the same distance up and down: +x % and the smaller -y %."""
    return up_down(e.mde) if effects.scale == "log" else f"±{three_digits(e.mde)}"


def _verdict(effects: BlockedEffects, e: LevelEffect, aa: tuple[str, ...]) -> str:
    if e.changed:
        word = "higher" if e.estimate > 0 else "lower"
        return f"{word}{' (A/A!)' if e.level in aa else ''}"
    return "no change shown"


def _table(effects: BlockedEffects, aa: tuple[str, ...]) -> Table:
    unit = "change %" if effects.scale == "log" else "difference"
    columns = (Column("level", left=True), Column("runs"), Column(f"{unit} [95% CI]"),
               Column("p"), Column("q"), Column("MDE"), Column("verdict", left=True))  # fmt: skip
    rows = [
        (e.level + (" (A/A)" if e.level in aa else ""), str(e.runs), change_text(effects, e),
         f"{e.p:.2g}", f"{e.q:.2g}", mde_text(effects, e), _verdict(effects, e, aa))
        for e in effects.levels
    ]  # fmt: skip
    return Table(columns, rows)


def _family(f: EndpointFamily, result: ExperimentEffects) -> list[str]:
    where = ", ".join(f"{k}={v}" for k, v in f.stratum) or "all runs"
    head = f"{where}: {f.endpoint} ({f.unit}){' [primary]' if f.primary else ''}"
    if f.effects is None:
        return [head, *wrapped(f"  cannot be estimated: {f.note}")]
    e = f.effects
    ref = Scale("").text(e.reference_value)
    mean = "geometric mean" if e.scale == "log" else "mean"
    lines = [head, *wrapped(
        f"  {result.reference} {mean} {ref} ({e.levels[0].reference_runs if e.levels else 0} "
        f"runs); {e.runs} runs in {e.blocks} blocks, residual sd {e.residual_sd:.2g}"
        f"{' (log)' if e.scale == 'log' else ''}, df {e.df}"
        + ("" if e.scale == "log" else "; a run with a value <= 0: differences, not ratios"),
    )]  # fmt: skip
    lines += ["  " + line for line in _table(e, result.aa_controls).text()]
    if f.adjusted is not None and f.answer is f.adjusted:
        lines += wrapped(
            f"  adjusted for {f.adjusted.covariate} ({f.covariate_note}): CIs "
            f"{100 * f.narrowing:.0f} % as wide; this is the answer for {f.endpoint}", "    ",
        )  # fmt: skip
        lines += ["  " + line for line in _table(f.adjusted, result.aa_controls).text()]
    elif f.adjusted is not None and f.narrowing is not None:
        lines += wrapped(
            f"  {f.adjusted.covariate} not used: adjusted, {f.adjusted.df} residual degrees "
            f"of freedom would be left (fewer than {MIN_ADJUSTED_DF}); its CIs would be "
            f"{100 * f.narrowing:.0f} % as wide",
            "    ",
        )  # fmt: skip
    elif f.covariate_note:
        lines += wrapped(f"  {f.covariate_note}", "    ")
    return lines


def format_effects(result: ExperimentEffects) -> str:
    """Every family of ``result``, the primary endpoint's first, and what a verdict means."""
    families = sorted(result.families, key=lambda f: not f.primary)
    lines = [
        f"{result.plan}: {result.factor} against {result.reference}, {result.runs_done} of "
        f"{result.runs_planned} planned runs, one boot each",
        *wrapped(
            f"Primary endpoint: {result.primary_endpoint} (named in the plan before any run); "
            "the others are secondary. Each level's change is a block-adjusted least-squares "
            "contrast with its 95 % t interval; q is Benjamini-Hochberg over the levels of one "
            "endpoint and stratum; a verdict needs q < 0.05. MDE: the smallest change these "
            "runs find with 80 % power, up/down (a design figure from the residual sd)."
        ),
    ]
    if result.aa_controls:
        lines += wrapped(
            f"A/A control(s): {', '.join(result.aa_controls)} run exactly what "
            f"{result.reference} runs; a verdict there is a false one, and the sweep's floor."
        )
    for f in families:
        lines += ["", *_family(f, result)]
    return "\n".join(lines) + "\n"
