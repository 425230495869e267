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
# # Is a change real? `mmlab compare` and run-level tests on the patched-kernel sweep
#
# The patched 6.12 kernel in a TCG guest (`data/vm-6.12`, 5 runs each; times comparable
# only within the sweep): defaults twice (A/A: aa1, aa2), WRITEBACK timeout 20 and 500 ms.
# Verdicts over runs (Welch's t, permutation p, BH q): docs/statistics.md "The deciding test".
# The finding (per-run table below), the evidence, a SYNTHETIC-data validation.

# %% tags=["parameters"]
aa = ["data/vm-6.12/aa1", "data/vm-6.12/aa2"]
ab = ["data/vm-6.12/aa1", "data/vm-6.12/wb20"]
sweep = ["data/vm-6.12/aa1", "data/vm-6.12/aa2", "data/vm-6.12/wb20", "data/vm-6.12/wb500"]
row = "mmap-8"
resamples = 500
validation = "analysis/stats/validation_compare/results.json"
build_dir = "build"

# %%
import json
from pathlib import Path

import altair as alt
import polars as pl
from IPython.display import Markdown

from analysis.ingest.benchmarks import load_runs
from analysis.models.run_scoring import change_p
from analysis.models.throttle import observe
from analysis.models.throttle_validation import QUANTITIES, run_values
from analysis.report.charts import theme
from analysis.report.compare import format_markdown
from analysis.report.findings import ALPHA, knob_finding
from analysis.report.throttle_model import VALIDATION_LABELS
from analysis.stats.significance import compare_table, run_mde, runs_of, shift_function
from analysis.stats.validation_compare import rates_frame

theme.offline()  # static SVG charts: they show with no network and in any viewer
(figures := Path(build_dir) / "figures").mkdir(parents=True, exist_ok=True)
pairs = (("A/A", aa), ("A/B", ab))
tables = {name: load_runs([Path(p) for p in paths]).table for name, paths in pairs}


def kernels(table: pl.DataFrame) -> list[str]:
    return list(dict.fromkeys(table["kernel"]))


per_run = pl.DataFrame(
    {"capture": Path(c).name, "writeback_pps": o.writeback_pps}
    | {q: run_values(o, "VMSCAN_THROTTLE_WRITEBACK").value(q) for q in QUANTITIES}
    for c in sweep
    for o in observe(c)
)
first = Path(sweep[0]).name
columns, base = [*QUANTITIES, "writeback_pps"], per_run.filter(pl.col("capture") == first)
groups = [(f"{first} vs {n}", g) for (n,), g in per_run.group_by("capture", maintain_order=True)
          if n != first]  # fmt: skip
p_values, detectable = (
    pl.DataFrame({"pair": pair} | {q: test(base[q].to_list(), g[q].to_list()) for q in columns}
                 for pair, g in groups)
    for test in (change_p, lambda b, n: run_mde(b, n, ALPHA))
)  # fmt: skip
labels = {q: v[0] for q, v in VALIDATION_LABELS.items()} | {"writeback_pps": "writeback rate"}
finding = knob_finding(p_values, detectable, first, labels)
Markdown(f"**Finding.** {finding} (aa2 ran the defaults again.)")

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
# ## Per run (WRITEBACK; writeback rate: vmstat `nr_written`/s), p: permutation over runs

# %%
print(per_run.group_by("capture", maintain_order=True).agg(pl.col(columns).mean()))
print(p_values, "smallest change detectable (80 % power, relative):", detectable, sep="\n")

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
