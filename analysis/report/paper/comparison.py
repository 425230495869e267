"""The paper's "Comparison with significance" section: the base against the new run.

The workload rows of both runs (``analysis.ingest.benchmarks``: the stutterp mmap probe
and ``elapsed``) go through ``mmlab compare``'s statistics once per deciding statistic
(mean, Harrell–Davis p50, p90, p99; a row with one value per run only by its mean, since
its quantiles are that value). Then the committed validation of the method on SYNTHETIC
data (``analysis/stats/validation_compare/results.json``) as a table, and a figure of the
per-iteration quantiles with the shift function of the probe.

The prose is ``papers/reclaim-throttling/sections/ab-comparison.tex``; every number it
quotes is a macro of ``generated/comparison.tex`` (prefix ``Cmp``/``Val``, so it never
collides with ``macros.tex``), named by role (:func:`section_values`: the probe's median
line, the flagged line).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from pathlib import Path

import altair as alt
import numpy as np
import polars as pl

from analysis.report.compare import DECIDING_ROW
from analysis.report.paper import figures
from analysis.report.paper.latex import escape, macros_tex, number, pm, table_tex
from analysis.report.units import decimals_at, interval_texts, mean_sd_texts, rounded, sig
from analysis.stats import validation_compare
from analysis.stats.bootstrap import Interval, run_statistics
from analysis.stats.rules import mmtests_2018
from analysis.stats.significance import (
    CI_LEVEL,
    DEFAULT_EFFECT,
    IMPROVED,
    POWER,
    REGRESSED,
    RowComparison,
    min_attainable_p,
    runs_of,
    shift_function,
)
from analysis.stats.validation_compare.simulate import MMLAB
from analysis.study.latency import LEVEL, LatencyComparison, row_metrics
from analysis.study.study import Study

__all__ = [
    "compact",
    "comparison_values",
    "grid",
    "latency_table",
    "quantile_figure",
    "section",
    "section_values",
    "validation_table",
    "validation_values",
]

# Quantiles drawn per iteration in the figure: the deciles and the tail the table tests.
_FIGURE_P = (*(d / 10 for d in range(1, 10)), 0.95, 0.99)
# Ticks of the symmetric-log shift axis (% of the base decile).
_SHIFT_TICKS = [-300, -100, -30, -10, -3, 0, 3, 10, 30, 100, 300, 1000]
_MMTESTS_2018_LEVEL = inspect.signature(mmtests_2018).parameters["level"].default


def _estimate(iv: Interval | None) -> str:
    """The estimate alone, rounded where its CI is (as the report's summary)."""
    if iv is None:
        return "--"
    return pm(iv.estimate, None, decimals_at(iv.estimate, iv.low, iv.high))


def _change(r: RowComparison) -> tuple[str, str, str]:
    """(change, CI low, CI high) of new/base − 1 in %, LaTeX."""
    if r.change is None:
        return "--", "--", "--"
    low, high = r.change_ci if r.change_ci else (None, None)
    d = decimals_at(r.change, low, high)
    return tuple(  # type: ignore[return-value]
        "--" if v is None else f"\\ensuremath{{{rounded(v, d, sign=True)}}}"
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
        # A zero-heavy row is decided on its share of zeros (points), never its HD-50.
        "stat": "zero share (pp)"
        if r.change_kind == "zero share"
        else escape(DECIDING_ROW[metric]),
        "base": _estimate(r.base_estimate),
        "new": _estimate(r.estimate),
        "change": change,
        "change low": low,
        "change high": high,
        "p": number(sig(r.p)),
        "q": number(sig(r.q)),
        "table q": number(sig(table_q)),
        "verdict": escape(r.verdict),
        "needed runs": str(r.needed_runs) if r.needed_runs is not None else "--",
    }
    if r.hl_shift is not None and metric == "p50":
        # In the row's unit, rounded where its CI is, as the report rounds it.
        hl = interval_texts(r.hl_shift.estimate, r.hl_shift.low, r.hl_shift.high)
        values |= dict(zip(("hl", "hl low", "hl high"), map(number, hl), strict=True))
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
        "cmp min p": number(sig(min_attainable_p(first.base_runs, first.runs))),
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
            "$p$: Welch's $t$ over runs (log scale; the larger of it and the exact "
            "permutation $p$ where they disagree tenfold); $q$: Benjamini--Hochberg over "
            "the rows of one "
            "\\texttt{mmlab compare --metric} call, as the tool reports it; "
            "$q_{\\text{all}}$: over every line of this table. Change: new/base$-1$. "
            f"Runs: design calculation, runs per kernel that would detect a "
            f"$\\pm{DEFAULT_EFFECT:g}$\\,\\% change with {100 * POWER:g}\\,\\% power given "
            "the run-to-run spread seen here.",
            "tab:comparison",
        )
    )


def grid(results: dict) -> list[dict]:
    """The validation's main grid, the cells the paper quotes: tables of ``rows`` rows with
    log-normal run effects (the outlying-run, two-regime, zero-heavy and 1- or 12-row
    cells are in ``results.md``; a cell without these keys is of the main grid)."""
    return [
        c for c in results["compare"]
        if c.get("rows", _cell_rows(results)) == _cell_rows(results)
        and c.get("run_effect", "lognormal") == "lognormal" and c["shape"] != "zero-heavy"
    ]  # fmt: skip


def _cells(results: dict, effect: bool) -> list[dict]:
    """Cells of the main :func:`grid`: A/A (``effect`` False) or +20 % tables."""
    return [c for c in grid(results) if (c["effect"] > 0) == effect]


def _method_rates(results: dict, method: str, key: str) -> list[dict]:
    return [c["methods"][method][key] for c in _cells(results, key in ("power", "fdr"))]


def _power_cell(results: dict, runs: int, samples: int | None = None) -> dict | None:
    """The power of mmlab's verdict for +20 % in the heaviest lognormal at s 0.1."""
    for c in _cells(results, True):
        if (c["shape"], c["run_sd"], c["runs"]) == ("lognormal-2", 0.1, runs) and (
            samples is None or c["samples"] == samples
        ):
            return c["methods"][MMLAB]["power"]
    return None


def validation_values(results: dict) -> dict[str, str]:
    """Macros quoting the validation: simulations, worst A/A rates, FDR, coverage range,
    power, real A/A."""
    mmlab = max(_method_rates(results, MMLAB, "null_row"), key=lambda r: r["rate"])
    pooled = [
        r["rate"] for m in ("pooled Welch", "pooled Mann–Whitney")
        for r in _method_rates(results, m, "null_row")
    ]  # fmt: skip
    fwer = max(_method_rates(results, MMLAB, "any_false"), key=lambda r: r["rate"])
    fdr = max(_method_rates(results, MMLAB, "fdr"), key=lambda r: r["rate"])
    coverage = [c["coverage"]["rate"] for c in grid(results)]
    cell = next(c for c in grid(results) if c["effect"] == 0)
    effect = next(c["effect"] for c in _cells(results, True))
    power = {runs: _power_cell(results, runs, cell["samples"]) for runs in (5, 10)}
    target = max((c["samples"] for c in _cells(results, True)), default=cell["samples"])
    values = {
        "val sims": str(results["sims"]),
        "val rows": str(_cell_rows(results)),
        "val samples": str(cell["samples"]),
        "val target samples": str(target),
        "val effect": f"{100 * effect:g}",
        **{f"val runs {k}": str(n) for k, n in (("few", 5), ("more", 10))},
        "val mmlab aa": pm(mmlab["rate"], mmlab["mc_se"], 3),
        "val pooled aa": f"{min(pooled):.3f}",
        "val pooled aa max": f"{max(pooled):.3f}",
        "val fwer": pm(fwer["rate"], fwer["mc_se"], 3),
        "val fdr": pm(fdr["rate"], fdr["mc_se"], 3),
        "val coverage low": f"{min(coverage):.3f}",
        "val coverage high": f"{max(coverage):.3f}",
        "val real aa pairs": str(len(results.get("real_aa", []))),
        **{
            f"val real {m}": f"{f[0]} of {f[1]}"
            for m in ("mmlab p50", "mmlab mean")
            if (f := _real_flags(results, m))
        },
    }
    for runs, p in power.items():
        if p is not None:
            values[f"val power {'few' if runs == 5 else 'more'}"] = pm(p["rate"], p["mc_se"], 2)
    if (p := _power_cell(results, 10, target)) is not None:
        values["val power target"] = pm(p["rate"], p["mc_se"], 2)
    return values


def _cell_rows(results: dict) -> int:
    """Rows per simulated table (every compare cell has as many)."""
    return results.get("rows", 4)


def _rate(rate: float, se: float) -> str:
    """A rejection rate ± its Monte-Carlo se, rounded at the se as every mean ± sd
    (:func:`~analysis.report.units.mean_sd_texts`), without the spacing of a binary ±."""
    text, spread = mean_sd_texts(rate, se)
    return f"${text}{{\\pm}}{spread}$"


def _real_flags(results: dict, method: str) -> tuple[int, int] | None:
    """Rows ``method`` flagged, and rows compared, over every real A/A pair."""
    pairs = [r for r in results.get("real_aa", []) if method in r["flagged"]]
    if not pairs:
        return None
    return sum(r["flagged"][method] for r in pairs), sum(r["rows"] for r in pairs)


def _pair_label(pair: str) -> str:
    """``data/x/y vs data/x/z`` → ``y vs z`` (the last folder of each side)."""
    return " vs ".join(Path(side.strip()).name for side in pair.split(" vs "))


def _worst(cells: list[dict], method: str, key: str, runs: int) -> str:
    sel = [c["methods"][method][key] for c in cells if c["runs"] == runs and method in c["methods"]]
    if not sel:
        return "--"
    worst = (
        max(sel, key=lambda r: r["rate"]) if key != "power" else min(sel, key=lambda r: r["rate"])
    )
    return _rate(worst["rate"], worst["mc_se"])


def validation_table(results: dict) -> str:
    """Per method: the worst per-row A/A rate over shapes and run effects at 3, 5 and 10
    runs, the lowest power for +20 % in one row at 5 and 10 runs (same cells), and the
    real A/A flags; ± Monte-Carlo se."""
    aa, effect = _cells(results, False), _cells(results, True)
    samples = aa[0]["samples"]
    effect = [c for c in effect if c["samples"] == samples]
    runs = sorted({c["runs"] for c in aa})
    lines = []
    for method in aa[0]["methods"]:
        cells = [escape(method)]
        cells += [_worst(aa, method, "null_row", n) for n in runs]
        cells += [_worst(effect, method, "power", n) for n in runs if n >= 5]
        flagged = _real_flags(results, "mmlab p50" if method == MMLAB else method)
        cells.append(f"{flagged[0]}/{flagged[1]}" if flagged else "--")
        lines.append(cells)
    header = [
        "method",
        *(f"A/A $R{{=}}{n}$" for n in runs),
        *(f"power $R{{=}}{n}$" for n in runs if n >= 5),
        "real A/A",
    ]
    pairs = "; ".join(escape(_pair_label(r["pair"])) for r in results.get("real_aa", []))
    shapes = ", ".join(escape(s) for s in dict.fromkeys(c["shape"] for c in aa))
    sds = ", ".join(f"{s:g}" for s in sorted({c["run_sd"] for c in aa}))
    return compact(
        table_tex(
            header,
            lines,
            "l" + "r" * (len(header) - 1),
            "Validation on SYNTHETIC data with known truth "
            f"(\\texttt{{python -m analysis.stats.validation\\_compare}}, {results['sims']} "
            f"tables of {_cell_rows(results)} rows per cell, {samples} samples per run): "
            "rate $\\pm$ Monte-Carlo se. A/A: nothing changed, share of rows flagged, worst "
            f"over the shapes ({shapes}) and run-level effects $s$ ({sds}); nominal {LEVEL:g} "
            f"(the mmtests 2018 rule tests at {_MMTESTS_2018_LEVEL:g}). mmlab: the verdict "
            "(per-family BH and CI condition); the others flag a row on their own. Power: one "
            "row of the table $\\times 1.2$, lowest over the same cells. Real A/A: REAL "
            "captures of the same kernel and configuration twice, rows flagged of rows "
            f"compared (every flag a false positive; mmlab by the median) over the pairs {pairs}.",
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


# The fields of the probe's median line and of a flagged line that the prose quotes.
_PROBE = ("row", "unit", "change", "change low", "change high", "p", "q", "verdict")
_PROBE_EXTRA = ("needed runs", "hl", "hl low", "hl high")
_FLAG = ("row", "stat", "verdict", "change", "change low", "change high", "q", "table q")


def section_values(cmp: LatencyComparison, probe: RowComparison | None) -> dict[str, str]:
    """The macros ``sections/ab-comparison.tex`` quotes, named by role: the method's
    counts, the probe's median line (``cmp probe ...``) and the flagged lines (``cmp flag
    ...``, the first; ``cmp flags``: how many, ``cmp flags kept``: how many survive the
    table-wide q)."""
    every = comparison_values(cmp)
    rows = tuple(f"cmp {r.row} " for _, r in cmp.results)
    values = {k: v for k, v in every.items() if not k.startswith(rows)}
    if probe is not None:
        key = _key(probe, "p50")
        fields = _PROBE + tuple(f for f in _PROBE_EXTRA if f"{key} {f}" in every)
        values |= {f"cmp probe {f}": every[f"{key} {f}"] for f in fields}
    flagged = [
        (metric, r, q)
        for (metric, r), q in zip(cmp.results, cmp.table_q, strict=True)
        if r.verdict in (IMPROVED, REGRESSED)
    ]
    values["cmp flags"] = str(len(flagged))
    values["cmp flags kept"] = str(sum(q is not None and q < LEVEL for *_, q in flagged))
    if flagged:
        metric, r, q = flagged[0]
        values |= {f"cmp flag {f}": every[f"{_key(r, metric)} {f}"] for f in _FLAG}
        if q is None or q >= LEVEL:
            # Defined (empty) only where its sentence applies: the prose tests \ifdefined.
            values["cmp flag not kept"] = ""
    return values


def section(data: Study, out: Path) -> str:
    """The comparison section's macros (its prose: ``sections/ab-comparison.tex``);
    writes its tables and figure under ``out``."""
    cmp = data.latency
    if isinstance(cmp, str):
        # Captures without workload logs: say so rather than fail the whole paper.
        return f"\\emph{{{escape(cmp.strip())}}}\n"
    results = validation_compare.results()
    values = validation_values(results)
    del values["val sims"]  # in the validation table's caption, not the prose
    (out / "tables").mkdir(parents=True, exist_ok=True)
    (out / "tables" / "comparison.tex").write_text(latency_table(cmp))
    (out / "tables" / "validation.tex").write_text(validation_table(results))
    probe = next((r for _, r in cmp.results if len(row_metrics(cmp.table, r.row)) > 1), None)
    if probe is not None:
        figure = quantile_figure(
            runs_of(cmp.table, probe.row, cmp.base),
            runs_of(cmp.table, probe.row, cmp.new),
            (cmp.base, cmp.new),
            probe.unit,
        )
        figures.save_pdf(figure, out / "figures" / "comparison-quantiles.pdf")
    return macros_tex(section_values(cmp, probe) | values)
