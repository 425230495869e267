"""The paper's "Shrinker deferral replay" section (:mod:`analysis.models.shrinker`).

Per trace of every run: the check that the capturing kernel's rule reproduces each call's
``total_scan`` and the model's counter chain, then the replay under G1, G2 and G3 and
under G3's rule with a sweep of deferral divisors; and seed 001's worked example through
the model's own ``do_shrink_slab()`` beside the plain arithmetic of
:func:`analysis.seeds.checks.seed001` and the figures the mail prints.

The section's macros (prefix ``Shr``) are ``generated/shrinker-replay.tex``; the prose
quoting them is checked in as ``papers/reclaim-throttling/sections/ab-shrinker.tex``.
"""

from __future__ import annotations

from pathlib import Path

import altair as alt
import polars as pl

from analysis.report.paper import figures
from analysis.report.paper.comparison import compact
from analysis.report.paper.latex import escape, macros_tex, pm, table_tex
from analysis.seeds.checks import SEED001_EXAMPLE, seed001
from analysis.seeds.shrinker import SEED_BATCH, seed_divisors, seed_example
from analysis.study.shrinker import DIVISORS, ShrinkerReplays
from analysis.study.study import Study

__all__ = [
    "divisor_figure",
    "replay_table",
    "rule_table",
    "section",
    "seed_divisor_figure",
    "seed_table",
    "shrinker_values",
]

# Replay outputs drawn against the divisor (only those known for some trace).
_TRADEOFF = {
    "efficiency": "efficiency (freed / scanned)",
    "velocity_per_s": "objects scanned / s",
    "direct_max_scanned": "max objects, one direct call",
    "backlog_max_objects": "deferred backlog, max (objects)",
}


def _per_run(frame: pl.DataFrame, by: list[str], columns: list[str]) -> pl.DataFrame:
    """Mean and sample sd over iterations (NaN, an unknown output, stays unknown)."""
    return frame.group_by(*by, maintain_order=True).agg(
        pl.len().alias("iterations"),
        *(pl.col(c).mean().alias(f"{c}_mean") for c in columns),
        *(pl.col(c).std().alias(f"{c}_sd") for c in columns),
    )


def _int(value: int) -> str:
    return f"\\ensuremath{{{value:,}}}".replace(",", "{,}")


def seed_table(rows: list[dict]) -> str:
    """Seed 001's worked example: mail, arithmetic and model side by side."""
    lines = [
        [
            r["rule"],
            r["context"],
            r["mail"].replace(",", "{,}") if r["mail"] != "-" else "--",
            _int(r["arithmetic"]),
            _int(r["target"]),
            _int(r["scanned"]),
            _int(r["counter_after"]),
        ]
        for r in rows
    ]
    e = SEED001_EXAMPLE
    return table_tex(
        ["rule", "context", "mail", "arithmetic", "model target", "scanned", "deferred after"],
        lines,
        "llrrrrr",
        f"Seed 001's call ({_int(e['freeable'])} freeable objects, priority {e['priority']}, "
        f"seeks {e['seeks']}, {_int(e['deferred'])} deferred): the target the mail prints "
        "(G1 only), the target by plain integer arithmetic (\\texttt{seeds.seed001}), and "
        "the model's \\texttt{do\\_shrink\\_slab()}: target, objects scanned in batches of "
        f"{SEED_BATCH} (a superblock shrinker) and the deferred counter after the call. "
        "G2 as the patch is written (\\texttt{next\\_deferred = nr - scanned}).",
        "tab:shrinker-seed",
    )


def replay_table(checks: pl.DataFrame) -> str:
    """Per trace: calls, blocked calls, largest cache, agreement of the capturing rule."""
    lines = [
        [
            escape(r["run"]),
            str(r["iteration"]),
            _int(r["calls"]),
            _int(r["blocked"]),
            str(r["max_freeable"]),
            r["rule"],
            f"{r['matched']}/{r['calls']}",
            f"{r['chain_matched']}/{r['chain_total']}",
            str(r["scanned"]),
        ]
        for r in checks.iter_rows(named=True)
    ]
    return compact(
        table_tex(
            [
                "run",
                "iter.",
                "calls",
                "GFP\\_NOFS",
                "max freeable",
                "rule",
                "total\\_scan",
                "chain",
                "scanned",
            ],
            lines,
            "lrrrrlrrr",
            "Replay check per trace: \\texttt{do\\_shrink\\_slab()} calls, those a filesystem "
            "shrinker could not run (no \\texttt{\\_\\_GFP\\_FS}), the largest freeable count, "
            "the capturing kernel's rule, the calls whose printed \\texttt{total\\_scan} that "
            "rule reproduces from the \\texttt{nr} the call took, the calls whose \\texttt{nr} "
            "the model's one counter per shrinker and node reproduces (chain), and the objects "
            "the kernel scanned.",
            "tab:shrinker-replay",
        )
    )


_RULE_COLUMNS = [
    "scanned_objects",
    "direct_max_scanned",
    "backlog_max_objects",
    "backlog_end_objects",
]


def rule_table(rules: pl.DataFrame) -> str:
    """Per run and rule: mean ± sd over iterations of the replay's outputs."""
    table = _per_run(rules, ["run", "rule"], _RULE_COLUMNS)
    lines = [
        [escape(r["run"]), r["rule"], str(r["iterations"])]
        + [pm(r[f"{c}_mean"], r[f"{c}_sd"]) for c in _RULE_COLUMNS]
        for r in table.iter_rows(named=True)
    ]
    return table_tex(
        ["run", "rule", "iter.", "scanned", "max one call", "backlog max", "backlog end"],
        lines,
        "llrrrrr",
        "The captures' calls replayed under each rule with its own divisor and contexts (G1: "
        "any context takes all; G2: kswapd only, divided by priority; G3: any context, "
        "divided by $2^{\\text{priority}}$): objects scanned in the capture, the most one "
        "direct call scans, and the deferred backlog (all counters) at its maximum and at the "
        "end; mean $\\pm$ sd over iterations, objects.",
        "tab:shrinker-rules",
    )


def _divisor_axis() -> alt.X:
    return alt.X(
        "divisor:Q",
        title="deferral divisor",
        scale=alt.Scale(type="log", base=2),
        axis=alt.Axis(values=[d for d in DIVISORS if d != 2], format="d", labelFlush=True),
    )


def seed_divisor_figure(seed: pl.DataFrame) -> alt.Chart:
    """:func:`seed_divisors` drawn: the call's scan against the work it leaves deferred."""
    return (
        alt.Chart(seed)
        .mark_line(point=True)
        .encode(
            x=_divisor_axis(),
            y=alt.Y("objects:Q", title="objects", scale=alt.Scale(type="log")),
            color=alt.Color("quantity:N", title=None, legend=alt.Legend(orient="right")),
        )
        .properties(width=260, height=130)
    )


def divisor_figure(sweep: pl.DataFrame) -> alt.FacetChart:
    """Replay outputs against the deferral divisor (G3's rule, any context): one point per
    iteration, a line through each run's mean; outputs unknown everywhere are left out."""
    shown = [c for c in _TRADEOFF if sweep[c].is_not_nan().any()]
    long = (
        sweep.with_columns(pl.col("divisor").cast(pl.Int64))
        .unpivot(index=["run", "iteration", "divisor"], on=shown, variable_name="output")
        .filter(pl.col("value").is_not_nan())
        .with_columns(pl.col("output").replace_strict(_TRADEOFF))
    )
    base = alt.Chart().encode(
        x=_divisor_axis(),
        color=alt.Color("run:N", title="run", legend=alt.Legend(orient="bottom")),
    )
    points = base.mark_point(opacity=0.5, size=18).encode(y=alt.Y("value:Q", title=None))
    means = base.mark_line().encode(y="mean(value):Q")
    return (
        alt.layer(points, means, data=long)
        .properties(width=150, height=120)
        .facet(facet=alt.Facet("output:N", title=None, sort=list(_TRADEOFF.values())), columns=3)
        .resolve_scale(y="independent")
    )


def shrinker_values(replays: ShrinkerReplays, seed: list[dict]) -> dict[str, str]:
    """Macros of the section (keys as for :func:`~analysis.report.paper.latex.macro_name`)."""
    c = replays.checks
    values = {
        "shr traces": str(c.height),
        "shr runs": str(c["run"].n_unique()),
        "shr calls": _int(int(c["calls"].sum())),
        "shr matched": _int(int(c["matched"].sum())),
        "shr chain total": _int(int(c["chain_total"].sum())),
        "shr chain misses": _int(int(c["chain_total"].sum() - c["chain_matched"].sum())),
        "shr chain exact traces": str(int((c["chain_matched"] == c["chain_total"]).sum())),
        "shr blocked": _int(int(c["blocked"].sum())),
        "shr kswapd calls": _int(int(c["kswapd_calls"].sum())),
        "shr contexts": escape(", ".join(sorted(set(", ".join(c["contexts"]).split(", "))))),
        "shr max freeable": str(int(c["max_freeable"].max())),
        "shr scanned": _int(int(c["scanned"].sum())),
        "shr rule": escape(", ".join(sorted(set(c["rule"])))),
        "shr rule source": escape(", ".join(sorted(set(c["rule_source"])))),
        "shr divisor low": str(min(DIVISORS)),
        "shr divisor high": _int(max(DIVISORS)),
    }
    rules = _per_run(replays.rules, ["rule"], ["scanned_objects", "backlog_max_objects"])
    for r in rules.iter_rows(named=True):
        values |= {
            f"shr {r['rule']} scanned": pm(r["scanned_objects_mean"], None),
            f"shr {r['rule']} backlog": pm(r["backlog_max_objects_mean"], None),
        }
    sweep = replays.sweep.with_columns(pl.col("divisor").cast(pl.Int64))
    idle = (
        sweep.group_by("divisor")
        .agg(pl.col("scanned_objects").max())
        .filter(pl.col("scanned_objects") == 0)
    )
    values["shr idle divisor"] = str(idle["divisor"].min()) if idle.height else "--"
    for r in seed:
        key = f"shr seed {r['rule']} {r['context']}"
        values |= {f"{key} target": _int(r["target"]), f"{key} after": _int(r["counter_after"])}
    g1 = next(r for r in seed if r["rule"] == "G1")
    values |= {
        "shr seed delta": _int(g1["delta"]),
        "shr seed mail delta": next(x.mail for x in seed001() if x.row == "delta"),
        "shr seed factor": _int(round(g1["target"] / g1["delta"])),
        "shr seed freeable": _int(SEED001_EXAMPLE["freeable"]),
        "shr seed deferred": _int(SEED001_EXAMPLE["deferred"]),
    }
    return values


def section(data: Study, out: Path) -> str:
    """The section's macros (its prose is ``papers/reclaim-throttling/sections/
    ab-shrinker.tex``); writes its tables and figures under ``out``."""
    replays = data.shrinker
    if replays is None:
        return (
            "\\emph{No trace of these runs has \\tp{mm\\_shrink\\_slab\\_start/end} "
            "calls (enable \\tp{vmscan:mm\\_shrink\\_slab\\_*}): nothing to replay.}\n"
        )
    seed = seed_example()
    (out / "tables").mkdir(parents=True, exist_ok=True)
    (out / "tables" / "shrinker-replay.tex").write_text(replay_table(replays.checks))
    (out / "tables" / "shrinker-rules.tex").write_text(rule_table(replays.rules))
    (out / "tables" / "shrinker-seed.tex").write_text(seed_table(seed))
    figures.save_pdf(divisor_figure(replays.sweep), out / "figures" / "shrinker-divisors.pdf")
    figures.save_pdf(
        seed_divisor_figure(seed_divisors(DIVISORS)), out / "figures" / "shrinker-seed-divisors.pdf"
    )
    return macros_tex(shrinker_values(replays, seed))
