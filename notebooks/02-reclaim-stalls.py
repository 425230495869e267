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
# # Reclaim stalls, throttling and shrinker deferral from traces
#
# What the bundled captures' traces say about reclaim stalls and `mm_vmscan_throttled`
# (the report's `Study` tables, so the same digits as `mmlab report`), then the evidence:
# a table per run, seed 000's histograms for comparison, the throttle delays, a stall
# timeline and the shrinker backlog. `mmlab report --detail` prints every trace's full
# analysis. Run headless by `make` (papermill); parameters below.

# %% tags=["parameters"]
# The host captures, a path or a glob (data/ also holds third-party mmtests trees bundled
# for the tests and the TCG guest sweep data/vm-6.12, which are not these).
capture = "data/stutterp-*"
seed = "data/mail/000_901e324e43c5b0b5.txt"
build_dir = "build"
timeline_window_s = 2.0

# %%
from glob import glob
from pathlib import Path

import polars as pl
from IPython.display import Markdown, display

from analysis.ingest import histogram
from analysis.metrics.trace_analysis import analyse_trace, pooled
from analysis.report.charts import theme
from analysis.report.charts.shrinker import capture_backlog_chart
from analysis.report.charts.stalls import timeline_chart
from analysis.report.charts.throttle import delay_chart
from analysis.report.findings import trace_finding, trace_overview
from analysis.study.runs import study_runs
from analysis.study.study import Study

theme.offline()  # static SVG charts: they show with no network and in any viewer

figures = Path(build_dir) / "figures"
figures.mkdir(parents=True, exist_ok=True)
# Each trace with its iteration's CONFIG_HZ and vmstat deltas: the report's analyses.
study = Study(study_runs(sorted(glob(capture)) or [capture]))
results = {f"{run.name}/iter-{i}": analysis for run, i, analysis in study.analyses}
overview = trace_overview(study.throttle, study.stalls)
Markdown(f"**Finding.** {trace_finding(overview)}")

# %% [markdown]
# ## Per run: reclaim stalls and throttling
# Means over each run's iterations (`mmlab report`'s stall and throttle tables).
# Throttle delays at the timeout are right-censored: the real wait was at least that.

# %%
with pl.Config(tbl_cols=-1, tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True):
    display(overview)

# %% [markdown]
# ## Throttle delays per reason and context, every trace pooled (log count axis)

# %%
delays = pooled(results, "delay_histogram")
capture_chart = None
if not delays.is_empty():
    pooled_delays = delays.group_by(
        "event", "context", "reason", "usec_timeout", "delay_us", "at_timeout"
    ).agg(pl.col("count").sum())
    capture_chart = delay_chart(pooled_delays, "bundled captures: all traces")
    capture_chart.save(figures / "02-capture-throttle-delays.svg")
capture_chart

# %% [markdown]
# ## For comparison: seed 000's histograms (5.15-rc1 + reclaim throttling)
# Blocks labelled with the context the mail's prose gives them (group 2 is "Kswapd
# throttle activity", groups 4-6 the direct-reclaim breakdowns; 0 and 1 are the legacy
# congestion waits of the vanilla kernel; 3 is the per-reason totals block, checked
# against the breakdowns).

# %%
seed_path = Path(seed)
if seed_path.is_file():
    labels = {0: "vanilla", 1: "vanilla", 2: "kswapd", 3: "direct totals"}
    labels |= {4: "direct", 5: "direct", 6: "direct"}
    seed_result = analyse_trace(histogram.read(seed_path, labels=labels), config_hz=250)
    with pl.Config(tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True):
        display(seed_result.throttle.drop_nulls("usec_timeout").select(
            "context", pl.col("reason").str.replace("VMSCAN_THROTTLE_", ""), "usec_timeout",
            "count", (pl.col("timeout_share", "zero_share") * 100).round(1).name.suffix(" %"),
            pl.col("mean_usec").round(),
        ))  # fmt: skip
        display(histogram.totals_consistency(histogram.read(seed_path)))
    seed_chart = delay_chart(
        seed_result.delay_histogram.filter(pl.col("event") == "mm_vmscan_throttled"),
        "seed 000, 5.15-rc1 + reclaim throttling",
    )
    seed_chart.save(figures / "02-seed000-throttle-delays.svg")
else:
    seed_chart = None
    print(f"seed text not found at {seed_path}: section skipped")
seed_chart

# %% [markdown]
# ## Stall timeline of the first trace
# Each bar is one reclaim interval of one task (time since the trace's first stall), for
# the first `timeline_window_s` seconds: a whole capture has tens of thousands of stalls.

# %%
timeline = None
if results:
    first = next(iter(results.values()))
    frames = [s.intervals.filter(pl.col("status") == "closed") for s in first.reclaim.values()]
    if frames:
        intervals = pl.concat(frames, how="vertical_relaxed")
        timeline = timeline_chart(intervals, timeline_window_s, first.source)
        timeline.save(figures / "02-stall-timeline.svg")
timeline

# %% [markdown]
# ## Shrinker deferred backlog over time
# `new_scan` of each `mm_shrink_slab_end`: the shared deferred counter after the call.

# %%
backlog = pooled(results, "shrinker_backlog")
backlog_figure = None
if not backlog.is_empty():
    backlog_figure = capture_backlog_chart(backlog)
    backlog_figure.save(figures / "02-shrinker-backlog.svg")
backlog_figure
