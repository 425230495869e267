"""The paper's "Comparison with significance" section: the base against the new run.

The workload rows of both runs (``analysis.ingest.benchmarks``: the stutterp mmap probe
and ``elapsed``) go through ``mmlab compare``'s statistics once per deciding statistic
(mean, Harrell–Davis p50, p90, p99; a row with one value per run only by its mean, since
its quantiles are that value). Then the committed validation of the method on SYNTHETIC
data (``analysis/stats/validation_compare/results.json``) as a table, and a figure of the
per-iteration quantiles with the shift function of the probe.

Every number the text quotes is a macro defined at the top of ``sections/comparison.tex``
(prefix ``Cmp``), so the section never collides with ``macros.tex``.
"""

from __future__ import annotations

import inspect
import json
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import altair as alt
import numpy as np
import polars as pl
from statsmodels.stats.multitest import multipletests

from analysis.errors import InputError
from analysis.ingest import benchmarks
from analysis.ingest.long_table import runs_of
from analysis.report.compare import DECIDING_ROW
from analysis.report.document import ReportData
from analysis.report.paper import figures
from analysis.report.paper.latex import escape, macro_name, macros_tex, pm, table_tex
from analysis.stats import validation_compare
from analysis.stats.bootstrap import run_statistics
from analysis.stats.rules import mmtests_2018
from analysis.stats.significance import (
    CI_LEVEL,
    DEFAULT_EFFECT,
    IMPROVED,
    METRICS,
    POWER,
    REGRESSED,
    RowComparison,
    compare_table,
    min_attainable_p,
    shift_function,
)

__all__ = [
    "LEVEL",
    "VALIDATION",
    "LatencyComparison",
    "compact",
    "comparison_values",
    "latency_comparison",
    "latency_table",
    "quantile_figure",
    "section",
    "validation_table",
    "validation_values",
]

LEVEL = 0.05
VALIDATION = Path(validation_compare.__file__).resolve().parent / "results.json"
# Quantiles drawn per iteration in the figure: the deciles and the tail the table tests.
_FIGURE_P = (*(d / 10 for d in range(1, 10)), 0.95, 0.99)
# Ticks of the symmetric-log shift axis (% of the base decile).
_SHIFT_TICKS = [-300, -100, -30, -10, -3, 0, 3, 10, 30, 100, 300, 1000]
_MMTESTS_2018_LEVEL = inspect.signature(mmtests_2018).parameters["level"].default
_VALIDATION_RUNS = 5
# Power columns of the validation table: one effect per kind of change (the middle one).
_POWER_CHANGES = ("location", "scale", "tail")


@dataclass(frozen=True)
class LatencyComparison:
    """``mmlab compare`` of the base run (first) against the new one, per statistic.

    ``results``: ``(metric, comparison)`` for each row and each statistic that means
    something for it; ``table_q``: Benjamini–Hochberg q over every tested entry of
    ``results`` together (None where a row was not tested)."""

    table: pl.DataFrame
    base: str
    new: str
    results: tuple[tuple[str, RowComparison], ...]
    table_q: tuple[float | None, ...]


def _metrics(table: pl.DataFrame, row: str) -> tuple[str, ...]:
    """Statistics of ``row``: all of :data:`METRICS`, or only the mean when every run
    holds one value (its Harrell–Davis quantiles are that value)."""
    sizes = table.filter(pl.col("row") == row).group_by("kernel", "run").len()["len"]
    return tuple(METRICS) if sizes.max() > 1 else ("mean",)


def latency_comparison(data: ReportData, resamples: int = 2000) -> LatencyComparison:
    """Every workload row of the first two runs, decided by each statistic in turn."""
    from statsmodels.tools.sm_exceptions import ConvergenceWarning

    if len(data.runs) < 2:
        raise InputError(data.runs[0].path if data.runs else "-", "a comparison needs 2 runs")
    table = benchmarks.load_runs([run.path for run in data.runs[:2]]).table
    kernels = list(dict.fromkeys(table["kernel"]))
    if len(kernels) < 2:
        raise InputError(data.runs[0].path, "no workload latency logs in both runs")
    base, new = kernels[:2]
    by_metric = {}
    with warnings.catch_warnings():
        # statsmodels warns before returning NaN for huge effects; needed_runs handles it.
        warnings.simplefilter("ignore", ConvergenceWarning)
        for metric in METRICS:
            by_metric[metric] = compare_table(table, base, [new], metric, LEVEL, None, resamples)
    rows = list(dict.fromkeys(table["row"]))
    results = tuple(
        (metric, next(r for r in by_metric[metric] if r.row == row))
        for row in rows
        for metric in _metrics(table, row)
    )
    tested = [i for i, (_, r) in enumerate(results) if r.p is not None]
    qs = multipletests([results[i][1].p for i in tested], method="fdr_bh")[1] if tested else []
    table_q = tuple(
        float(qs[tested.index(i)]) if i in tested else None for i in range(len(results))
    )
    return LatencyComparison(table, base, new, results, table_q)


def _g(value: float | None, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits (``\\ensuremath``: usable in and out of
    math mode); ``--`` when unknown."""
    if value is None or not math.isfinite(value):
        return "--"
    mantissa, _, exponent = f"{value:.{digits}g}".partition("e")
    power = f" \\times 10^{{{int(exponent)}}}" if exponent else ""
    return f"\\ensuremath{{{mantissa}{power}}}"


def _estimate(value: float | None) -> str:
    if value is None:
        return "--"
    return pm(value, None, 0 if abs(value) >= 1000 else 2 if abs(value) < 100 else 1)


def _change(r: RowComparison) -> tuple[str, str, str]:
    """(change, CI low, CI high) of new/base − 1 in %, LaTeX."""
    if r.change is None:
        return "--", "--", "--"
    low, high = r.change_ci if r.change_ci else (None, None)
    return tuple(  # type: ignore[return-value]
        "--" if v is None else f"\\ensuremath{{{v:+.{1 if abs(v) >= 10 else 2}f}}}"
        for v in (r.change, low, high)
    )


def _unit(unit: str) -> str:
    return r"$\mu$s" if unit == "us" else escape(unit)


def compact(table: str) -> str:
    """A :func:`table_tex` table set smaller, with narrower columns, so that ten columns
    fit the text width."""
    return table.replace(r"\centering\small", r"\centering\footnotesize\setlength{\tabcolsep}{2pt}")


def _key(r: RowComparison, metric: str) -> str:
    return f"cmp {r.row} {metric}"


def _row_values(metric: str, r: RowComparison, table_q: float | None) -> dict[str, str]:
    """LaTeX of one row and statistic (keys without the macro prefix)."""
    change, low, high = _change(r)
    values = {
        "row": escape(r.row),
        "unit": _unit(r.unit),
        "stat": escape(DECIDING_ROW[metric]),
        "base": _estimate(r.base_estimate.estimate if r.base_estimate else None),
        "new": _estimate(r.estimate.estimate if r.estimate else None),
        "change": change,
        "change low": low,
        "change high": high,
        "p": _g(r.p),
        "q": _g(r.q),
        "table q": _g(table_q),
        "verdict": escape(r.verdict),
        "needed runs": str(r.needed_runs) if r.needed_runs is not None else "--",
    }
    if r.hl_shift is not None and metric == "p50":
        values |= {
            "hl": _g(r.hl_shift.estimate),
            "hl low": _g(r.hl_shift.low),
            "hl high": _g(r.hl_shift.high),
        }
    return values


def comparison_values(cmp: LatencyComparison) -> dict[str, str]:
    """Macros of the section (keys as for :func:`~analysis.report.paper.latex.macro_name`)."""
    first = cmp.results[0][1]
    values = {
        "cmp level": f"{LEVEL:g}",
        "cmp ci level": f"{100 * CI_LEVEL:g}",
        "cmp power": f"{100 * POWER:g}",
        "cmp effect": f"{DEFAULT_EFFECT:g}",
        "cmp tests": str(sum(q is not None for q in cmp.table_q)),
        "cmp base runs": str(first.base_runs),
        "cmp new runs": str(first.runs),
        "cmp min p": _g(min_attainable_p(first.base_runs, first.runs)),
        "cmp splits": str(math.comb(first.base_runs + first.runs, first.base_runs)),
    }
    for (metric, r), tq in zip(cmp.results, cmp.table_q, strict=True):
        key = _key(r, metric)
        values |= {f"{key} {k}": v for k, v in _row_values(metric, r, tq).items()}
    return values


def latency_table(cmp: LatencyComparison) -> str:
    """One line per row and statistic: estimates, change with CI, p, q, verdict, runs."""
    lines = []
    for (metric, r), tq in zip(cmp.results, cmp.table_q, strict=True):
        v = _row_values(metric, r, tq)
        lines.append(
            [
                f"{v['row']} ({v['unit']})",
                v["stat"],
                v["base"],
                v["new"],
                f"{v['change']} [{v['change low']}, {v['change high']}]",
                v["p"],
                v["q"],
                v["table q"],
                v["verdict"],
                v["needed runs"],
            ]
        )
    ci = f"{100 * CI_LEVEL:g}"
    return compact(
        table_tex(
            [
                "row",
                "stat.",
                escape(cmp.base),
                escape(cmp.new),
                f"change \\% [{ci}\\% CI]",
                "$p$",
                "$q$",
                "$q_{\\text{all}}$",
                "verdict",
                "runs",
            ],
            lines,
            "llrrlrrrlr",
            f"Workload rows of {escape(cmp.new)} against {escape(cmp.base)}, one line per "
            "deciding statistic (mean over runs of each run's mean or Harrell--Davis quantile). "
            "$p$: permutation test over runs; $q$: Benjamini--Hochberg over the rows of one "
            "\\texttt{mmlab compare --metric} call, as the tool reports it; "
            "$q_{\\text{all}}$: over every line of this table. Change: new/base$-1$. "
            f"Runs: design calculation, runs per kernel that would detect a "
            f"$\\pm{DEFAULT_EFFECT:g}$\\,\\% change with {100 * POWER:g}\\,\\% power given "
            "the run-to-run spread seen here.",
            "tab:comparison",
        )
    )


def validation_values(results: dict) -> dict[str, str]:
    """Macros quoting the validation: simulations, FDR, coverage range, real A/A."""
    coverage = [c["rate"] for c in results["coverage"]]
    fdr = results["fdr"]
    # With 3 runs an exact permutation test cannot reject at 0.05: compare from 5 runs on.
    aa = pl.DataFrame(results["aa"]).filter(pl.col("runs") >= _VALIDATION_RUNS)
    mmlab = aa.filter(pl.col("method").str.starts_with("mmlab"))["rate"].max()
    pooled = aa.filter(pl.col("method").str.starts_with("pooled"))["rate"]
    return {
        "val runs": str(_VALIDATION_RUNS),
        "val mmlab aa": f"{mmlab:.3f}",
        "val pooled aa": f"{pooled.min():.3f}",
        "val pooled aa max": f"{pooled.max():.3f}",
        "val sims": str(results["sims"]),
        "val fdr": pm(fdr["fdr"], fdr["fdr_mc_se"], 3),
        "val fdr power": f"{fdr['power']:.3f}",
        "val fdr rows": str(fdr["rows"]),
        "val fdr true rows": str(fdr["true_rows"]),
        "val fdr runs": str(fdr["runs"]),
        "val fdr tables": str(fdr["sims"]),
        "val coverage low": f"{min(coverage):.3f}",
        "val coverage high": f"{max(coverage):.3f}",
        "val real aa pairs": str(len(results.get("real_aa", []))),
        **{
            f"val real {m}": f"{f[0]} of {f[1]}"
            for m in ("mmlab p50", "mmlab mean")
            if (f := _real_flags(results, m))
        },
    }


def _power_effects(power: pl.DataFrame) -> dict[str, float]:
    out = {}
    for change in _POWER_CHANGES:
        effects = sorted(set(power.filter(pl.col("change") == change)["effect"]))
        out[change] = effects[len(effects) // 2]
    return out


def _rate(rate: float, se: float) -> str:
    """A rejection rate ± its Monte-Carlo se, without the spacing of a binary ±."""
    return f"${rate:.3f}{{\\pm}}{se:.3f}$"


def _real_flags(results: dict, method: str) -> tuple[int, int] | None:
    """Rows ``method`` flagged, and rows compared, over every real A/A pair."""
    pairs = [r for r in results.get("real_aa", []) if method in r["flagged"]]
    if not pairs:
        return None
    return sum(r["flagged"][method] for r in pairs), sum(r["rows"] for r in pairs)


def _pair_label(pair: str) -> str:
    """``data/x/y vs data/x/z`` → ``y vs z`` (the last folder of each side)."""
    return " vs ".join(Path(side.strip()).name for side in pair.split(" vs "))


def validation_table(results: dict) -> str:
    """Per method: the worst A/A rejection rate over the shapes at each run count where a
    test over runs can reject (5 and 10 runs; 3 cannot), the real A/A flags, and
    the power of one effect per kind of change (mixture shape, 5 runs); ± Monte-Carlo se."""
    aa, power = pl.DataFrame(results["aa"]), pl.DataFrame(results["power"])
    effects = _power_effects(power)
    # Run counts where an exact permutation test over runs can reject at all.
    runs = [n for n in sorted(set(aa["runs"])) if min_attainable_p(n, n) <= LEVEL]
    methods = list(dict.fromkeys([*power["method"], *aa["method"]]))
    lines = []
    for method in methods:
        cells = [escape(method)]
        for n in runs:
            sel = aa.filter((pl.col("method") == method) & (pl.col("runs") == n))
            worst = sel.sort("rate", descending=True).row(0, named=True) if sel.height else None
            cells.append(_rate(worst["rate"], worst["mc_se"]) if worst else "--")
        for change, effect in effects.items():
            sel = power.filter(
                (pl.col("method") == method)
                & (pl.col("change") == change)
                & (pl.col("effect") == effect)
            )
            cells.append(_rate(sel["rate"][0], sel["mc_se"][0]) if sel.height else "--")
        flagged = _real_flags(results, method)
        cells.append(f"{flagged[0]}/{flagged[1]}" if flagged else "--")
        lines.append(cells)
    header = [
        "method",
        *(f"A/A $R{{=}}{n}$" for n in runs),
        *(f"{c} $e{{=}}{effect:g}$" for c, effect in effects.items()),
        "real A/A",
    ]
    pairs = "; ".join(escape(_pair_label(r["pair"])) for r in results.get("real_aa", []))
    power_runs = ", ".join(str(n) for n in sorted(set(power["runs"])))
    return compact(
        table_tex(
            header,
            lines,
            "l" + "r" * (len(header) - 1),
            "Validation on SYNTHETIC data with known truth "
            f"(\\texttt{{python -m analysis.stats.validation\\_compare}}, {results['sims']} "
            "simulations per A/A cell): rejection rate $\\pm$ Monte-Carlo se. A/A: nothing "
            "changed, $R$ runs per kernel (fewer cannot give $p <$ the level over runs), worst "
            "of the lognormal, Pareto and mixture shapes "
            "(nominal "
            f"{LEVEL:g}; the mmtests 2018 rule tests at {_MMTESTS_2018_LEVEL:g}). Power: mixture "
            f"shape, {power_runs} runs per kernel; location: every sample $\\times(1+e)$, "
            "scale: log-spread $\\times(1+e)$, tail: share of slow samples $\\times(1+e)$. "
            "Real A/A: REAL captures of the same kernel and configuration twice, rows flagged "
            f"of rows compared (every flag a false positive) over the pairs {pairs}.",
            "tab:validation",
        )
    )


def _decades(values: pl.Series) -> list[float]:
    """Whole decades spanning ``values``: a log axis labels 2, 20, 200 too, and they collide."""
    low, high = math.floor(math.log10(values.min())), math.ceil(math.log10(values.max()))
    return [10.0**k for k in range(low, high + 1)]


def quantile_figure(base: Sequence[np.ndarray], new: Sequence[np.ndarray], names, unit: str):
    """Left: each iteration's Harrell–Davis quantiles (log scale), coloured by run. Right:
    the shift function (new − base per decile, relative to the base decile) with its 95 %
    interval (:func:`~analysis.stats.significance.shift_function`)."""
    rows = [
        (name, f"{name} {i}", p, float(v))
        for name, runs in zip(names, (base, new), strict=True)
        for p in _FIGURE_P
        for i, v in enumerate(run_statistics(runs, p))
    ]
    quantiles = pl.DataFrame(rows, schema=["run", "iteration", "p", "value"], orient="row")
    left = (
        alt.Chart(quantiles)
        .mark_line(point=alt.OverlayMarkDef(size=12), opacity=0.7)
        .encode(
            x=alt.X("p:Q", title="quantile", scale=alt.Scale(domain=[0, 1])),
            y=alt.Y(
                "value:Q",
                title=f"latency ({'µs' if unit == 'us' else unit}), per iteration",
                scale=alt.Scale(type="log"),
                axis=alt.Axis(values=_decades(quantiles["value"]), format="~g"),
            ),
            color=alt.Color("run:N", title="run", legend=alt.Legend(orient="bottom")),
            detail="iteration:N",
        )
        .properties(width=200, height=170)
    )
    shift = shift_function(base, new).with_columns(
        (100 * pl.col(c) / pl.col("base")).alias(f"{c}_pct") for c in ("shift", "low", "high")
    )
    band = alt.Chart(shift).encode(
        x=alt.X("decile:Q", title="decile of the base", scale=alt.Scale(domain=[0, 1]))
    )
    right = (
        band.mark_errorbar().encode(
            y=alt.Y(
                "low_pct:Q",
                title="shift, % of the base decile",
                # Symmetric log: a few % near zero and the wide tail interval both visible.
                scale=alt.Scale(type="symlog", constant=1),
                axis=alt.Axis(values=_SHIFT_TICKS),
            ),
            y2="high_pct:Q",
        )
        + band.mark_point(filled=True, color="black").encode(y="shift_pct:Q")
        + alt.Chart(shift).mark_rule(strokeDash=[4, 4]).encode(y=alt.datum(0))
    ).properties(width=200, height=170)
    return alt.hconcat(left, right)


def section(data: ReportData, out: Path) -> str:
    """LaTeX of the comparison section; writes its tables and figure under ``out``."""
    try:
        cmp = latency_comparison(data)
    except InputError as exc:
        # Captures without workload logs: say so rather than fail the whole paper.
        return f"\\emph{{No latency comparison: {escape(str(exc))}.}}\n"
    results = json.loads(VALIDATION.read_text())
    values = comparison_values(cmp) | validation_values(results)
    (out / "tables").mkdir(parents=True, exist_ok=True)
    (out / "tables" / "comparison.tex").write_text(latency_table(cmp))
    (out / "tables" / "validation.tex").write_text(validation_table(results))
    probe = next((r for _, r in cmp.results if len(_metrics(cmp.table, r.row)) > 1), None)
    if probe is not None:
        figure = quantile_figure(
            runs_of(cmp.table, probe.row, cmp.base),
            runs_of(cmp.table, probe.row, cmp.new),
            (cmp.base, cmp.new),
            probe.unit,
        )
        figures.save_pdf(figure, out / "figures" / "comparison-quantiles.pdf")
    return macros_tex(values) + _text(cmp, probe, "val real mmlab mean" in values)


def _m(key: str) -> str:
    return f"\\{macro_name(key)}{{}}"


def _probe_text(probe: RowComparison) -> tuple[list[str], str]:
    """Sentences on the probe's median and its figure (LaTeX)."""
    p50 = _key(probe, "p50")
    parts = [
        f"By its median (HD-50, the default deciding statistic), the probe {_m(p50 + ' row')} "
        f"moves {_m(p50 + ' change')}\\,\\% ({_m('cmp ci level')}\\,\\% CI "
        f"{_m(p50 + ' change low')} to {_m(p50 + ' change high')}), $p = {_m(p50 + ' p')}$, "
        f"$q = {_m(p50 + ' q')}$: {_m(p50 + ' verdict')}."
    ]
    if probe.needed_runs is not None:
        parts.append(
            f"By design calculation, about {_m(p50 + ' needed runs')} runs per kernel would "
            f"detect a $\\pm{_m('cmp effect')}$\\,\\% change with {_m('cmp power')}\\,\\% "
            "power, given the run-to-run spread seen here."
        )
    if probe.hl_shift is not None:
        parts.append(
            f"The Hodges--Lehmann shift of the run medians is {_m(p50 + ' hl')} "
            f"{_m(p50 + ' unit')} ({_m(p50 + ' hl low')} to {_m(p50 + ' hl high')})."
        )
    parts.append(
        "Figure~\\ref{fig:quantiles} shows where in the distribution the runs differ: each "
        "iteration's quantiles, and the shift function (new minus base per decile, with "
        f"{_m('cmp ci level')}\\,\\% intervals from the two-stage bootstrap)."
    )
    figure = (
        "\\begin{figure}[tbp]\n\\centering\n"
        "\\includegraphics[width=\\columnwidth]{figures/comparison-quantiles.pdf}\n"
        f"\\caption{{Probe latency {_m(p50 + ' row')}. Left: Harrell--Davis quantiles of "
        "each iteration (log scale). Right: shift function, the new minus the base run's "
        "decile (mean over runs) relative to the base decile, with "
        f"{_m('cmp ci level')}\\,\\% intervals.}}\\label{{fig:quantiles}}\n\\end{{figure}}\n"
    )
    return parts, figure


def _flag_text(cmp: LatencyComparison) -> list[str]:
    """A sentence per improved/regressed line: does it survive BH over the whole table?"""
    parts = []
    for (metric, r), q in zip(cmp.results, cmp.table_q, strict=True):
        if r.verdict not in (IMPROVED, REGRESSED):
            continue
        key = _key(r, metric)
        parts.append(
            f"{_m(key + ' row')} by {_m(key + ' stat')} is {_m(key + ' verdict')}: "
            f"{_m(key + ' change')}\\,\\% ({_m(key + ' change low')} to "
            f"{_m(key + ' change high')}), $q = {_m(key + ' q')}$ within its own call. "
            f"Over all {_m('cmp tests')} tests of the table, $q = {_m(key + ' table q')}$, "
            + (
                "so the flag survives looking at every statistic."
                if q is not None and q < LEVEL
                else f"above {_m('cmp level')}: after looking at every statistic, the flag "
                "is not established; it is a lead for more runs, not a finding."
            )
        )
    return parts


_METHOD = (
    "Table~\\ref{{tab:comparison}} decides each workload row of {new run} against "
    "{base run} at the level of runs: {cmp new runs} against {cmp base runs} iterations, an "
    "exact permutation test over the {cmp splits} splits of the per-run statistics "
    "(logged), whose smallest attainable $p$ is {cmp min p}. A row is "
    "\\emph{{improved}} or \\emph{{regressed}} only when $q < {cmp level}$ and the "
    "{cmp ci level}\\,\\% CI of the change excludes zero."
)
_VALIDATION = (
    "Table~\\ref{{tab:validation}} is why the decision is made over runs. It comes from "
    "\\emph{{synthetic}} data with known truth (run-structured heavy-tailed latencies with "
    "a run-level random effect), not from the captures. With {val runs} or more runs per "
    "kernel, mmlab's A/A rejection rate is at most {val mmlab aa} (nominal {cmp level}); "
    "the rules that pool the samples of all runs reject in {val pooled aa} to {val pooled aa max} "
    "of A/A comparisons, and their apparent power is bought with that error rate. With BH "
    "over {val fdr rows} rows of which {val fdr true rows} truly changed ({val fdr runs} "
    "runs, {val fdr tables} tables) the false discovery rate is {val fdr} at power "
    "{val fdr power}; the {cmp ci level}\\,\\% CI of the change covers the true change in "
    "{val coverage low} to {val coverage high} of the simulations (conservative, never "
    "below nominal). A median-deciding comparison does not see a change confined to the "
    "tail or the spread; the p90 and mean lines do."
)
_REAL_AA = (
    " On the {val real aa pairs} real A/A pairs of the last column of "
    "Table~\\ref{{tab:validation}} (captures of the same "
    "kernel and configuration, where every flag is false), the median flags "
    "{val real mmlab p50} rows and the mean {val real mmlab mean}: iterations of one "
    "capture session share its machine state, so inference over runs covers "
    "iteration-to-iteration noise but not drift between sessions; an A/B pair is only "
    "as good as its back-to-back capture."
)


class _Macros(dict):
    """``{cmp level}`` in a template → ``\\CmpLevel{}``."""

    def __missing__(self, key: str) -> str:
        return _m(key)


def _text(cmp: LatencyComparison, probe: RowComparison | None, real_aa: bool) -> str:
    probe_parts, figure = _probe_text(probe) if probe is not None else ([], "")
    parts = [_METHOD.format_map(_Macros()), *probe_parts, *_flag_text(cmp)]
    return (
        "\n"
        + " ".join(parts)
        + "\n\n\\input{tables/comparison}\n\n"
        + figure
        + "\n"
        + _VALIDATION.format_map(_Macros())
        + (_REAL_AA.format_map(_Macros()) if real_aa else "")
        + "\n\n\\input{tables/validation}\n"
    )
