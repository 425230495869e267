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
# The numbers the seeds argue from, derived from ingested traces instead of `sort | uniq -c`:
# reclaim stall intervals per context (pairing edge cases counted), `mm_vmscan_throttled`
# per reason and timeout (share not stalled, share that hit the timeout: right-censored),
# kswapd/kcompactd awake time (bounded when no sleep event closes it), shrinker deferred
# work and the LRU counters. First seed 000's histograms from its mail text, then the
# bundled captures. Run headless by `make` (papermill); parameters below.

# %% tags=["parameters"]
capture = "data"
seed = "../shared/seeds/000_901e324e43c5b0b5.txt"
build_dir = "build"
timeline_window_s = 2.0

# %%
from pathlib import Path

import altair as alt
import polars as pl

from analysis.ingest import ftrace, histogram
from analysis.metrics.distribution import distribution_table
from analysis.metrics.trace_stalls import analyse
from analysis.report.stalls import format_analysis, format_distributions

figures = Path(build_dir) / "figures"
figures.mkdir(parents=True, exist_ok=True)


def delay_chart(delays: pl.DataFrame, title: str) -> alt.FacetChart:
    """Throttle delay histogram per reason: count on a log axis, censored bars marked.

    Bars start at 0.5 events, not 0, which a log axis cannot show.
    """
    data = delays.with_columns(delay_ms=pl.col("delay_us") / 1000, base=pl.lit(0.5))
    return (
        alt.Chart(data)
        .mark_bar(width=4)
        .encode(
            x=alt.X("delay_ms:Q", title="usect_delayed (ms)"),
            y=alt.Y("count:Q", title="events", scale=alt.Scale(type="log")),
            y2="base:Q",
            color=alt.Color("at_timeout:N", title="at timeout (censored)"),
            tooltip=["context", "reason", "usec_timeout", "delay_us", "count"],
        )
        .properties(width=260, height=140)
        .facet(row=alt.Row("context:N", title=None), column=alt.Column("reason:N", title=None))
        .resolve_scale(x="independent")
        .properties(title=title)
    )


# %% [markdown]
# ## Seed 000: the mail's histograms, block by block
# Blocks are labelled with the context the mail's prose gives them (group 2 is "Kswapd
# throttle activity", groups 4-6 the direct-reclaim breakdowns; 0 and 1 are the legacy
# congestion waits of the vanilla kernel; 3 is the per-reason totals block).

# %%
seed_path = Path(seed)
if seed_path.is_file():
    labels = {0: "vanilla", 1: "vanilla", 2: "kswapd", 3: "direct totals"}
    labels |= {4: "direct", 5: "direct", 6: "direct"}
    seed_result = analyse(histogram.read(seed_path, labels=labels), config_hz=250)
    print(format_analysis(seed_result))
    print(histogram.totals_consistency(histogram.read(seed_path)))
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
# ## Bundled captures: one analysis per trace

# %%
traces = sorted(p for p in Path(capture).rglob("ftrace-*") if not p.name.endswith(".start"))
results = {path: analyse(ftrace.read(path)) for path in traces}
for result in results.values():
    print(format_analysis(result))

# %% [markdown]
# ## Stall distributions, every iteration and all pooled (mmtests' shape)
# mmtests prints one iteration's figures in places; here each iteration is a column and the
# pooled column uses every sample.

# %%
series = {}
pooled: dict[str, list[float]] = {}
for path, result in results.items():
    name = f"{path.parent.parent.name}/{path.parent.name}"
    for context, paired in result.reclaim.items():
        closed = paired.intervals.filter(pl.col("status") == "closed")
        ms = (closed["duration_ns"] / 1e6).to_list()
        series[f"{name} {context}"] = (ms, None)
        pooled.setdefault(context, []).extend(ms)
for context, ms in pooled.items():
    series[f"pooled {context}"] = (ms, None)
print(format_distributions(distribution_table(series)) if series else "no reclaim intervals")

# %% [markdown]
# ## Throttle delays per reason and context (log count axis)

# %%
delays = (
    pl.concat(
        [r.delay_histogram.with_columns(trace=pl.lit(str(p))) for p, r in results.items()],
        how="vertical_relaxed",
    )
    if results
    else pl.DataFrame()
)
capture_chart = None
if not delays.is_empty():
    pooled_delays = delays.group_by(
        "event", "context", "reason", "usec_timeout", "delay_us", "at_timeout"
    ).agg(pl.col("count").sum())
    capture_chart = delay_chart(pooled_delays, f"{capture}: all traces")
    capture_chart.save(figures / "02-capture-throttle-delays.svg")
capture_chart

# %% [markdown]
# ## Stall timeline of the first trace
# Each bar is one reclaim interval of one task (time since the trace's first stall), for
# the first `timeline_window_s` seconds: a whole capture has tens of thousands of stalls.

# %%
timeline = None
if results:
    first_path, first = next(iter(results.items()))
    frames = [s.intervals.filter(pl.col("status") == "closed") for s in first.reclaim.values()]
    if frames:
        intervals = pl.concat(frames, how="vertical_relaxed")
        origin = intervals["begin_ts_ns"].min()
        timeline = (
            alt.Chart(
                intervals.select(
                    "kind",
                    pl.col("pid").cast(pl.String),
                    begin_s=(pl.col("begin_ts_ns") - origin) / 1e9,
                    end_s=(pl.col("end_ts_ns") - origin) / 1e9,
                ).filter(pl.col("begin_s") < timeline_window_s)
            )
            .mark_bar(height=3)
            .encode(
                x=alt.X("begin_s:Q", title="time (s)"),
                x2="end_s:Q",
                y=alt.Y("pid:N", title="task", axis=alt.Axis(labels=False, ticks=False)),
                color=alt.Color("kind:N", title="reclaim"),
            )
            .properties(width=560, height=220, title=str(first_path))
        )
        timeline.save(figures / "02-stall-timeline.svg")
timeline

# %% [markdown]
# ## Shrinker deferred backlog over time
# `new_scan` of each `mm_shrink_slab_end`: the shared deferred counter after the call.

# %%
backlog_chart = None
if results:
    backlog = pl.concat(
        [
            r.shrinker_backlog.with_columns(trace=pl.lit(f"{p.parent.parent.name}/{p.parent.name}"))
            for p, r in results.items()
        ],
        how="vertical_relaxed",
    )
    if not backlog.is_empty():
        backlog = backlog.with_columns(
            t_s=(pl.col("ts_ns") - pl.col("ts_ns").min().over("trace")) / 1e9,
            shrinker=pl.col("shrinker").str.replace(r"\+0x.*$", ""),
        )
        backlog_chart = (
            alt.Chart(backlog)
            .mark_line(interpolate="step-after")
            .encode(
                x=alt.X("t_s:Q", title="time (s)"),
                y=alt.Y("deferred_objects:Q", title="deferred objects"),
                color=alt.Color("shrinker:N"),
                detail="nid:N",
            )
            .properties(width=260, height=140)
            .facet(facet=alt.Facet("trace:N", title=None), columns=3)
        )
        backlog_chart.save(figures / "02-shrinker-backlog.svg")
backlog_chart
