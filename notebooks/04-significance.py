# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Is a latency change real? `mmlab compare` on a real A/A and a real A/B
#
# The same configuration captured twice (A/A: any difference is noise) and a knob with a
# real effect on reclaim inside the memory cgroup (A/B: vm.dirty_ratio 20 vs 5, which
# sizes the file working set), 6 iterations each (data/*/README.md). Every row is decided
# at the level of runs (permutation over runs, BH q-values; README "mmlab compare"). Then
# shift functions (decile by decile, new − base, 95 % CIs) and the validation on SYNTHETIC
# data: A/A false-verdict rate, power and FDR against the rules in common use.

# %% tags=["parameters"]
aa = ["data/stutterp-aa1", "data/stutterp-aa2"]
ab = ["data/stutterp-aa2", "data/stutterp-ab-dirty5"]
row = "mmap-8"
resamples = 500
validation = "analysis/stats/validation_compare/results.json"
build_dir = "build"

# %%
import json
from pathlib import Path

import altair as alt
import polars as pl

from analysis.ingest.benchmarks import load_runs
from analysis.report import charts
from analysis.report.compare import format_markdown
from analysis.stats.significance import compare_table, runs_of, shift_function
from analysis.stats.validation_compare import rates_frame

charts.offline()  # static SVG charts: they show with no network and in any viewer

figures = Path(build_dir) / "figures"
figures.mkdir(parents=True, exist_ok=True)
tables = {
    name: load_runs([Path(p) for p in paths]).table for name, paths in (("A/A", aa), ("A/B", ab))
}


def kernels(table: pl.DataFrame) -> list[str]:
    return list(dict.fromkeys(table["kernel"]))


# %% [markdown]
# ## Every row, deciding on the median and on the 99th percentile

# %%
for name, table in tables.items():
    base, *new = kernels(table)
    for metric in ("p50", "p99"):
        print(f"### {name}, metric {metric}")
        results = compare_table(table, base, new, metric, resamples=resamples)
        print(format_markdown(results))

# %% [markdown]
# ## Shift functions: where in the distribution does the latency move?

# %%
shifts = []
for name, table in tables.items():
    base, new = kernels(table)[:2]
    sf = shift_function(runs_of(table, row, base), runs_of(table, row, new), resamples)
    shifts.append(sf.with_columns(pair=pl.lit(f"{name}: {row} {new} − {base}")))
shift = pl.concat(shifts)
with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=100):
    print(shift)
band = alt.Chart(shift).encode(x=alt.X("decile:Q", title="decile of the base"))
shift_chart = (
    (
        band.mark_errorbar().encode(y=alt.Y("low:Q", title="shift (new − base)"), y2="high:Q")
        + band.mark_point(filled=True).encode(y="shift:Q")
        + alt.Chart(shift).mark_rule(strokeDash=[4, 4]).encode(y=alt.datum(0))
    )
    .properties(width=300, height=200)
    .facet(column=alt.Column("pair:N", title=None))
    .resolve_scale(y="independent")
)
shift_chart.save(figures / "04-shift-functions.svg")
shift_chart

# %% [markdown]
# ## Validation on SYNTHETIC data (`python -m analysis.stats.validation_compare`)
#
# Tables of heavy-tailed latencies with a run-level random effect, through the whole
# verdict pipeline. Pooled rules treat samples of one run as independent and flag each
# row on its own; mmlab tests runs, BH per family. The 2018 mmtests rule tests at 0.10.

# %%
results = json.loads(Path(validation).read_text())
rates = rates_frame(results)
fp_chart = (
    alt.Chart(rates.filter(pl.col("effect") == 0))
    .mark_bar()
    .encode(
        x=alt.X("method:N", title=None),
        y=alt.Y("null_row:Q", title="A/A per-row false-verdict rate"),
        color="method:N",
        column=alt.Column("shape:N", title=None),
        row=alt.Row("runs:O", title="runs per kernel"),
        opacity=alt.Opacity("s:O", title="run effect s"),
    )
    .properties(width=160, height=90)
)
fp_chart.save(figures / "04-aa-false-positives.svg")
fp_chart

# %%
with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=120):
    print(rates.filter(pl.col("effect") > 0).select("shape", "s", "runs", "samples",
                                                    "method", "power", "fdr"))  # fmt: skip
print("Fit CI coverage:", *results.get("fit", []), sep="\n")
print("Real A/As, rows flagged:", *results.get("real_aa", []), sep="\n")

# %%
power_chart = (
    alt.Chart(rates.filter((pl.col("effect") > 0) & (pl.col("samples") == rates["samples"].min())))
    .mark_line(point=True)
    .encode(
        x=alt.X("runs:Q", title="runs per kernel"),
        y=alt.Y("power:Q", title="power, +20 % in one row", scale=alt.Scale(domain=[0, 1])),
        color="method:N",
        strokeDash=alt.StrokeDash("s:O", title="run effect s"),
    )
    .properties(width=220, height=160)
    .facet(column=alt.Column("shape:N", title=None))
)
power_chart.save(figures / "04-power.svg")
power_chart
