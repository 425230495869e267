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
# # Reclaim metrics from /proc/vmstat
#
# The mmtests "Ops" table of a bundled capture, computed correctly (allocation stalls
# summed over zones, efficiency undefined when nothing was scanned, every iteration
# kept), and the reclaim scan/steal rates and efficiency interval by interval from the
# 1 s proc-vmstat monitor. On this kernel a memory cgroup limit drives the reclaim, which
# the global `pgscan_kswapd`/`pgscan_direct` counters do not see: it shows in the
# "Cgroup-limit" rows. The finding first (from the Ops rows `mmlab report` prints), then
# the evidence. Run headless by `make` (papermill); parameters below.

# %% tags=["parameters"]
# The host captures, a path or a glob (data/ also holds third-party mmtests trees bundled
# for the tests and the TCG guest sweep data/vm-6.12, which are not these).
capture = "data/stutterp-*"
build_dir = "build"

# %%
from glob import glob
from pathlib import Path

import altair as alt
from IPython.display import Markdown

from analysis.metrics.compare import monitor_series
from analysis.report.charts import theme
from analysis.report.findings import ops_finding
from analysis.report.ops import format_comparison
from analysis.study.runs import study_runs
from analysis.study.study import Study

theme.offline()  # static SVG charts: they show with no network and in any viewer

figures = Path(build_dir) / "figures"
figures.mkdir(parents=True, exist_ok=True)
# The report's runs and results (`mmlab report`): the same digits in both.
study = Study(study_runs(sorted(glob(capture)) or [capture]))
runs = study.runs
for run in runs:
    print(f"{run.name}: {len(run.iterations)} iterations under {run.path}")
SCANNED = ("Direct pages scanned", "Kswapd pages scanned", "Cgroup-limit pages scanned")
Markdown(f"**Finding.** {ops_finding(study.ops, [*SCANNED, 'Cgroup-limit efficiency %'])}")

# %% [markdown]
# ## Ops table: mean ± sd over iterations, % change against the first run

# %%
print(format_comparison(study.ops))

# %% [markdown]
# ## Scan and steal rates over time
# One line per iteration; rates are pages per second of each monitor interval.

# %%
rates = monitor_series(runs)
long = rates.unpivot(
    index=["run", "iteration", "t_s", "context"],
    on=["scanned_pages_per_s", "reclaimed_pages_per_s"],
    variable_name="counter",
    value_name="pages_per_s",
)
rate_chart = (
    alt.Chart(long)
    .mark_line(opacity=0.7)
    .encode(
        x=alt.X("t_s:Q", title="time since capture start (s)"),
        y=alt.Y("pages_per_s:Q", title="pages / s"),
        color=alt.Color("counter:N", title=None, legend=alt.Legend(orient="bottom")),
        strokeDash=alt.StrokeDash("context:N", legend=alt.Legend(orient="bottom")),
        detail="iteration:N",
    )
    .properties(width=300, height=140)
    .facet(facet=alt.Facet("run:N", title=None), columns=2)
)
rate_chart.save(figures / "01-scan-steal-rates.svg")
rate_chart

# %% [markdown]
# ## Reclaim efficiency over time (reclaimed / scanned per interval)
# Intervals that scanned nothing have no efficiency and are not drawn.

# %%
eff_chart = (
    alt.Chart(rates.drop_nulls("efficiency_pct"))
    .mark_line(point=True, opacity=0.7)
    .encode(
        x=alt.X("t_s:Q", title="time since capture start (s)"),
        y=alt.Y("efficiency_pct:Q", title="efficiency (%)", scale=alt.Scale(domain=[0, 100])),
        color=alt.Color("run:N", legend=alt.Legend(orient="bottom")),
        detail="iteration:N",
    )
    .properties(width=300, height=160)
    .facet(column=alt.Column("context:N", title=None))
)
eff_chart.save(figures / "01-efficiency.svg")
eff_chart
