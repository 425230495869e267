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
# # Is a change real? Designed sweeps, `mmlab compare` and run-level tests
#
# The answer comes from the designed sweeps (`mmlab experiment run`: one guest boot per run,
# settings interleaved in randomised blocks, the primary endpoint named in the plan before any
# run): each knob setting against the default, block-adjusted, with its interval or the
# change its runs could have missed. Then `mmlab compare` on the earlier single-boot sweep
# (`data/vm-6.12`; its iterations share a boot, as compare says). Verdicts over runs:
# docs/statistics.md "The deciding test". Last, a SYNTHETIC-data validation.

# %% tags=["parameters"]
experiments = ["data/vm-6.12-lab/sweep-divisor", "data/vm-6.12-lab/sweep-throttle"]
aa = ["data/vm-6.12/aa1", "data/vm-6.12/aa2"]
ab = ["data/vm-6.12/aa1", "data/vm-6.12/wb20"]
row = "mmap-8"
resamples = 500
validation = "analysis/stats/validation_compare/results.json"
build_dir = "build"

# %%
import json
from pathlib import Path

import altair as alt
import polars as pl
from IPython.display import Markdown, display

from analysis.ingest.benchmarks import load_runs
from analysis.report.charts import theme
from analysis.report.charts.dose import dose_chart
from analysis.report.compare import format_markdown
from analysis.report.effects import format_effects
from analysis.report.paper.designed import answer_sentences
from analysis.stats.significance import compare_table, runs_of, shift_function
from analysis.stats.validation_compare import rates_frame
from analysis.study.dose import designed_sweep

theme.offline()  # static SVG charts: they show with no network and in any viewer
(figures := Path(build_dir) / "figures").mkdir(parents=True, exist_ok=True)
pairs = (("A/A", aa), ("A/B", ab))
tables = {name: load_runs([Path(p) for p in paths]).table for name, paths in pairs}


def kernels(table: pl.DataFrame) -> list[str]:
    return list(dict.fromkeys(table["kernel"]))


designed = [designed_sweep(Path(p)) for p in experiments]
Markdown("**Finding.** " + " ".join(f"*{d.effects.plan}* ({d.effects.runs_done} boots): "
                                    f"{answer_sentences(d)}" for d in designed))  # fmt: skip

# %% [markdown]
# ## Each designed sweep: every setting against the default, every endpoint, per pressure
# The figure: the primary endpoint and every endpoint a setting changed, with the band of
# changes the runs could have missed (±MDE, grey).

# %%
for d in designed:
    print(format_effects(d.effects))
    if d.shown:
        chart = dose_chart(d.shown, d.effects.plan)
        chart.save(figures / f"04-dose-{d.effects.plan}.svg")
        display(chart)

# %% [markdown]
# ## `mmlab compare` on the single-boot sweep: each row on the median and the 99th percentile

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
shift = pl.concat(
    shift_function(runs_of(table, row, base), runs_of(table, row, new), resamples).with_columns(
        pair=pl.lit(f"{name}: {row} {new} − {base}")
    )
    for name, table in tables.items()
    for base, new in [kernels(table)[:2]]
)
band = alt.Chart(shift).encode(x=alt.X("decile:Q", title="decile of the base"))
shift_chart = (
    band.mark_errorbar().encode(y=alt.Y("low:Q", title="shift (new − base)"), y2="high:Q")
    + band.mark_point(filled=True).encode(y="shift:Q")
    + alt.Chart(shift).mark_rule(strokeDash=[4, 4]).encode(y=alt.datum(0))
).properties(width=300, height=200).facet(column=alt.Column("pair:N", title=None)).resolve_scale(
    y="independent")  # fmt: skip
shift_chart.save(figures / "04-shift-functions.svg")
shift_chart

# %% [markdown]
# ## Validation on SYNTHETIC data (`python -m analysis.stats.validation_compare`): heavy-tailed
# latencies with a run effect; pooled rules take one run's samples as independent, mmlab runs.

# %%
results = json.loads(Path(validation).read_text())
rates = rates_frame(results).filter((pl.col("rows") == 4) & (pl.col("run_effect") == "lognormal"))
# One bar per run effect s beside the others: rates of separate cells, not parts of a sum.
fp_chart = alt.Chart(rates.filter(pl.col("effect") == 0)).mark_bar().encode(
    x=alt.X("method:N", title=None), xOffset="s:O", color="method:N",
    y=alt.Y("null_row:Q", title="A/A per-row false verdicts", stack=None),
    opacity=alt.Opacity("s:O", title="run effect s"), column=alt.Column("shape:N", title=None),
    row=alt.Row("runs:O", title="runs"),
).properties(width=160, height=90)  # fmt: skip
fp_chart.save(figures / "04-aa-false-positives.svg")
fp_chart

# %%
with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=120):
    print(rates.filter(pl.col("effect") > 0).select("shape", "s", "runs", "samples",
                                                    "method", "power", "fdr"))  # fmt: skip
print("Fit CI coverage:", *results.get("fit", []), sep="\n")
print("Real A/As, rows flagged:", *results.get("real_aa", []), sep="\n")

# %%
power = rates.filter((pl.col("effect") > 0) & (pl.col("samples") == rates["samples"].min()))
power_chart = alt.Chart(power).mark_line(point=True).encode(
    x=alt.X("runs:Q", title="runs per kernel"),
    y=alt.Y("power:Q", title="power, +20 % in one row", scale=alt.Scale(domain=[0, 1])),
    color="method:N", strokeDash=alt.StrokeDash("s:O", title="run effect s"),
).properties(width=220, height=160).facet(column=alt.Column("shape:N", title=None))  # fmt: skip
power_chart.save(figures / "04-power.svg")
power_chart
