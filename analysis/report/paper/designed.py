"""The paper's designed sweeps (``mmlab paper --experiment OUT``): per executed plan, what
each knob setting did to the primary endpoint named in the plan, per pressure type, with
its interval or, where nothing was detected, the smallest change the runs could have seen;
the secondary endpoints that changed; the dose–response figure.

Writes ``generated/designed.tex`` (the Results subsection, prose generated from the
numbers, so a sentence flips when they do), ``generated/designed-answer.tex`` (the
abstract's answer, one sentence per plan and stratum), ``tables/designed-<plan>.tex`` and
``figures/designed-<plan>.pdf``. Renders :mod:`analysis.study.effects` and
:mod:`analysis.study.dose`; computes nothing of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from analysis.report.charts.dose import dose_chart
from analysis.report.charts.theme import save
from analysis.report.effects import change_text, mde_text
from analysis.report.paper.latex import escape, table_tex
from analysis.stats.blocked import BlockedEffects, LevelEffect
from analysis.study.dose import DesignedSweep
from analysis.study.effects import MIN_ADJUSTED_DF, EndpointFamily, ExperimentEffects

__all__ = ["ANSWER_LEAD", "NO_EXPERIMENT", "answer_sentences", "section"]

# What the abstract says before the answer sentences (the sweeps' common design).
ANSWER_LEAD = (
    "In designed sweeps (one emulated guest boot per run, every setting once per block in a "
    "random order, the primary endpoint named in the plan before any run), with 95\\,\\% "
    "intervals, and where nothing was found the change the runs could have missed: "
)
NO_EXPERIMENT = "No designed sweep was given (\\tp{mmlab paper --experiment OUT})."


def _where(family: EndpointFamily) -> str:
    return ", ".join(f"{k} {v}" for k, v in family.stratum) or "all runs"


def _settings(sweep: DesignedSweep, family: EndpointFamily) -> dict[str, str]:
    """Level -> the knob setting its runs read back, for this family's stratum."""
    return {
        p.level: f"{p.setting} {c.knob_unit}".rstrip()
        for c in sweep.curves
        if (c.endpoint, c.stratum) == (family.endpoint, family.stratum)
        for p in c.points
    }


def _level(sweep: DesignedSweep, family: EndpointFamily, e: LevelEffect) -> str:
    setting = _settings(sweep, family).get(e.level)
    return e.level if setting is None else f"{e.level} ({setting})"


def _effect_phrase(effects: BlockedEffects, e: LevelEffect, name: str) -> str:
    change = change_text(effects, e) + (" %" if effects.scale == "log" else "")
    if e.changed:
        return f"{name} {change} (q {e.q:.2g})"
    if e.excludes_no_change:
        # An interval clear of 0 whose q is not: said as such, never as "indistinguishable".
        return f"{name} {change} (p {e.p:.2g}, but q {e.q:.2g} over the family's settings)"
    return f"{name} {change}, within the detectable {mde_text(effects, e)}"


def _not_estimated(family: EndpointFamily) -> str:
    return f"{family.endpoint} could not be estimated ({family.note})"


def _settings_of(sweep: DesignedSweep, family: EndpointFamily) -> list[LevelEffect]:
    """The family's levels that are settings (its A/A controls left out); none when the
    family could not be estimated."""
    effects = family.answer
    controls = sweep.effects.aa_controls
    return [] if effects is None else [e for e in effects.levels if e.level not in controls]


def _primary_sentence(sweep: DesignedSweep, family: EndpointFamily) -> str:
    """What the factor did to the primary endpoint in one stratum, from the numbers."""
    result = sweep.effects
    effects, levels = family.answer, _settings_of(sweep, family)
    head = f"Under {_where(family)}, "
    if effects is None:
        return f"{head}{_not_estimated(family)}."
    changed = [e for e in levels if e.changed]
    names = {e.level: _level(sweep, family, e) for e in effects.levels}
    if changed:
        moved = "; ".join(_effect_phrase(effects, e, names[e.level]) for e in changed)
        rest = [e for e in levels if not e.changed]
        tail = (
            f"; no other setting gave a verdict against {result.reference} "
            f"({'; '.join(_effect_phrase(effects, e, names[e.level]) for e in rest)})"
            if rest
            else ""
        )
        return f"{head}{family.endpoint} changed against {result.reference}: {moved}{tail}."
    each = "; ".join(_effect_phrase(effects, e, names[e.level]) for e in levels)
    return (
        f"{head}no {result.factor} setting changed {family.endpoint} detectably against "
        f"{result.reference} ({each})."
    )


def _aa_sentence(result: ExperimentEffects, families: Sequence[EndpointFamily]) -> str:
    """The A/A controls' verdicts: the sweep's floor."""
    if not result.aa_controls:
        return ""
    false = [
        f"{f.endpoint} under {_where(f)}"
        for f in families
        if f.answer is not None
        for e in f.answer.levels
        if e.level in result.aa_controls and e.changed
    ]
    said = (
        f"gave a verdict on {', '.join(false)}: a false one, so verdicts of that size are not "
        "to be trusted here"
        if false
        else "gave no verdict on any endpoint"
    )
    controls = ", ".join(result.aa_controls)
    return f" The A/A control ({controls}, run exactly as {result.reference}) {said}."


def _range_phrase(effects: BlockedEffects, levels: Sequence[LevelEffect]) -> str:
    """The estimates of levels without a verdict as a range (each rounded where its interval
    is), and the widest change their runs could have missed (each detects at least that)."""
    unit = " %" if effects.scale == "log" else ""
    lo, hi = (min(levels, key=lambda e: e.estimate), max(levels, key=lambda e: e.estimate))
    texts = [change_text(effects, e, ends=False) for e in (lo, hi)]
    values = texts[0] if lo is hi else f"{texts[0]} to {texts[1]}"
    widest = max(levels, key=lambda e: e.mde)
    return f"changes {values}{unit}; the runs detect {mde_text(effects, widest)}"


def _compact_sentence(sweep: DesignedSweep, family: EndpointFamily) -> str:
    """The abstract's form of one stratum's answer: the settings that changed the primary
    endpoint with their interval and q, the rest as a range with what they could have
    missed, an interval clear of 0 without a verdict with its p and q; and every secondary
    endpoint that had one value in every run of the stratum (the knob had nothing to act
    on there)."""
    result = sweep.effects
    effects, levels = family.answer, _settings_of(sweep, family)
    head = f"under {_where(family)}, "
    if effects is None:
        return head + _not_estimated(family)

    def phrase(e: LevelEffect) -> str:
        return _effect_phrase(effects, e, _level(sweep, family, e))

    changed = [e for e in levels if e.changed]
    rest = [e for e in levels if not e.changed]
    parts = []
    if changed:
        parts.append(f"{family.endpoint} changed: " + "; ".join(map(phrase, changed)))
        if rest:
            who = "the other setting" if len(rest) == 1 else f"the other {len(rest)}"
            parts.append(f"{who} gave no verdict ({_range_phrase(effects, rest)})")
    elif rest:
        parts.append(f"no setting changed {family.endpoint} detectably "
                     f"({_range_phrase(effects, rest)})")  # fmt: skip
    parts += [phrase(e) for e in rest if e.excludes_no_change]
    constant = [f"{f.endpoint} was {f.constant:g} in every run" for f in result.families
                if f.stratum == family.stratum and f.constant is not None]  # fmt: skip
    return head + "; ".join(parts + constant)


def answer_sentences(sweep: DesignedSweep) -> str:
    """The abstract's answer for one plan: what its knobs did to its primary endpoint in
    every stratum, compactly (the Results subsection gives every setting)."""
    result = sweep.effects
    knobs = " and ".join(dict.fromkeys(c.knob for c in sweep.curves)) or result.factor
    strata = "; ".join(_compact_sentence(sweep, f) for f in result.families if f.primary)
    return (
        f"Setting {knobs} ({result.plan}: {result.runs_done} boots, primary endpoint "
        f"{result.primary_endpoint} against {result.reference}): {strata}."
    )


def _rows(sweep: DesignedSweep) -> list[list[str]]:
    """The primary endpoint's rows, then every secondary family with a verdict."""
    result = sweep.effects
    rows = []
    for f in sorted(result.families, key=lambda f: not f.primary):
        effects = f.answer
        if effects is None or not (f.primary or any(e.changed for e in effects.levels)):
            continue
        for e in effects.levels:
            aa = " (A/A)" if e.level in result.aa_controls else ""
            verdict = ("higher" if e.estimate > 0 else "lower") if e.changed else "--"
            rows.append([escape(_where(f)), escape(f.endpoint + (" *" if f.primary else "")),
                         escape(_level(sweep, f, e) + aa), str(e.runs),
                         escape(change_text(effects, e)), f"{e.q:.2g}",
                         escape(mde_text(effects, e)), verdict])  # fmt: skip
    return rows


def _secondary(sweep: DesignedSweep) -> str:
    """The secondary endpoints: those a setting changed (with the change), those without a
    verdict (with the largest change each could have missed), those not estimable (why)."""
    result = sweep.effects
    moved, quiet, unestimated = [], [], []
    for f in result.families:
        effects = f.answer
        if f.primary:
            continue
        if effects is None:
            unestimated.append(f"{f.endpoint} under {_where(f)} ({f.note})")
            continue
        changed = [e for e in effects.levels if e.changed and e.level not in result.aa_controls]
        if changed:
            each = "; ".join(_effect_phrase(effects, e, _level(sweep, f, e)) for e in changed)
            moved.append(f"{f.endpoint} under {_where(f)}: {each}")
        elif not any(e.changed for e in effects.levels):
            widest = max(effects.levels, key=lambda e: e.mde, default=None)
            if widest is not None:
                quiet.append(f"{f.endpoint} under {_where(f)} ({mde_text(effects, widest)})")
    text = ""
    if moved:
        text += " Secondary endpoints a setting changed: " + "; ".join(moved) + "."
    if quiet:
        head = "No other secondary endpoint" if moved else "No secondary endpoint"
        text += (
            f" {head} changed detectably; the largest change each could have missed: "
            + "; ".join(quiet)
            + "."
        )
    if unestimated:
        text += " Not estimable: " + "; ".join(unestimated) + "."
    return text


def _covariate_sentence(result: ExperimentEffects) -> str:
    """Where each run's covariate was used, and how much narrower it made the intervals."""
    used = [f for f in result.families if f.answer is not None and f.answer is f.adjusted]
    if not used:
        return (
            " No endpoint is adjusted for a per-run covariate: the factor moved it, or too "
            f"few runs would be left to estimate its slope (fewer than {MIN_ADJUSTED_DF} "
            "residual degrees of freedom)."
        )
    covariate = used[0].adjusted.covariate
    each = "; ".join(f"{f.endpoint} under {_where(f)}, {100 * f.narrowing:.0f} %" for f in used)
    return (
        f" Adjusted for each run's {covariate} where the factor does not move it, the "
        f"intervals are, as a share of their unadjusted width: {each}."
    )


def _plan_section(sweep: DesignedSweep, out: Path, written: list[Path]) -> str:
    """One plan's subsection; the table and figure it writes are appended to ``written``."""
    result = sweep.effects
    name = result.plan
    primary = [f for f in result.families if f.primary]
    shown = sweep.shown
    if shown:
        written.append(save(dose_chart(shown, ""), out / "figures" / f"designed-{name}.pdf", "pdf"))
    caption = (
        f"{escape(name)}: each {escape(result.factor)} setting against {escape(result.reference)}, "
        "block-adjusted change with its 95\\,\\% interval; MDE: the smallest change these runs "
        "detect with 80\\,\\% power (up/down). * primary endpoint, named in the plan before "
        "any run; rows of secondary endpoints only where a level changed (BH q $<$ 0.05)."
    )
    table = table_tex(
        ["stratum", "endpoint", "setting", "runs", "change [95\\% CI]", "q", "MDE", "verdict"],
        _rows(sweep), "lllrrrrl", caption, f"tab:designed-{name}",
    )  # fmt: skip
    tables = out / "tables" / f"designed-{name}.tex"
    tables.parent.mkdir(parents=True, exist_ok=True)
    tables.write_text(table)
    written.append(tables)
    text = " ".join(escape(_primary_sentence(sweep, f)) for f in primary)
    return (
        f"\\subsection{{Designed sweep: {escape(name)}}}\\label{{sec:designed-{name}}}\n"
        f"{escape(result.factor)} against {escape(result.reference)}: "
        f"{result.runs_done} of {result.runs_planned} planned runs, one guest boot each, in "
        f"randomised blocks; the primary endpoint, {escape(result.primary_endpoint)}, was named "
        f"in the plan before any run. {text}{escape(_aa_sentence(result, result.families))}"
        f"{escape(_secondary(sweep))}{escape(_covariate_sentence(result))}\n\n"
        f"\\input{{tables/designed-{name}}}\n\n" + (_figure(name, result) if shown else "")
    )


def _figure(name: str, result: ExperimentEffects) -> str:
    return (
        "\\begin{figure}[t]\\centering\n"
        f"\\includegraphics[width=\\textwidth]{{figures/designed-{name}.pdf}}\n"
        f"\\caption{{{escape(name)}: change against {escape(result.reference)} per setting "
        "(points, 95\\,\\% intervals) and the band of changes the runs could have missed "
        "(grey, $\\pm$MDE).}\\label{fig:designed-" + name + "}\n\\end{figure}\n"
    )


def section(sweeps: Sequence[DesignedSweep], out: Path) -> tuple[str, str, list[Path]]:
    """``generated/designed.tex`` and ``generated/designed-answer.tex`` for ``sweeps``, and
    the tables and figures written for them under ``out``."""
    if not sweeps:
        return NO_EXPERIMENT + "\n", "", []
    written: list[Path] = []
    body = "\n".join(_plan_section(s, out, written) for s in sweeps)
    answer = " ".join(escape(answer_sentences(s)) for s in sweeps)
    return body, ANSWER_LEAD + answer + "\n", written
