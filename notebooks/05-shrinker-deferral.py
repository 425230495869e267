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
# # Shrinker deferral: what another rule or divisor would have done
#
# Seed 001 argues that deferred shrinker work lands on whichever reclaimer takes the
# counter first, and proposes doing it only in kswapd, divided by `priority`. This notebook
# replays the bundled captures' real `do_shrink_slab()` calls under the three rules of
# `docs/shrinker-deferral.md` (G1 up to Linux 5.12, G2 seed 001's patch, G3 mainline since
# 5.13) and a sweep of deferral divisors. Run headless by `make` (papermill).
#
# **What the bundled data can and cannot say.** The captures (Linux 6.18, G3) have very
# little slab activity: two superblock shrinkers with at most a few dozen freeable
# objects, every call in memcg reclaim (no kswapd call at all), and no object scanned.
# So the replay checks the arithmetic against a real kernel exactly, but its what-if
# numbers are tiny, efficiency (freed/scanned) is unknown, and a kswapd-only rule never
# works the backlog off here. Seed 001's own numbers show the scale of the effect below.

# %% tags=["parameters"]
capture = "data"
build_dir = "build"
divisors = [1, 2, 4, 16, 64, 256, 1024, 4096]

# %%
from pathlib import Path

import polars as pl

from analysis.models.shrinker import (
    GENERATIONS,
    Variant,
    divisor_sweep,
    do_shrink_slab,
    load_invocations,
    model_trace,
    outputs,
)
from analysis.report import charts
from analysis.report.document import capture_traces
from analysis.report.shrinker_charts import replay_backlog_chart, tradeoff_chart
from analysis.report.shrinker_model import format_model_run

charts.offline()  # static SVG charts: they show with no network and in any viewer

figures = Path(build_dir) / "figures"
figures.mkdir(parents=True, exist_ok=True)
traces = capture_traces(Path(capture))
calls = {f"{t.parent.parent.name}/{t.parent.name}": load_invocations(t) for t in traces}
paths = {f"{t.parent.parent.name}/{t.parent.name}": t for t in traces}

# %% [markdown]
# ## First: does the capturing kernel's rule reproduce the trace?
# `replay_agreement`: calls whose printed `total_scan` the G3 rule reproduces from the
# `nr` each call took. `chain`: calls whose `nr` the replay's own counter reproduces (one
# counter per shrinker instance and node; the kernel keeps one per memory cgroup too).

# %%
checks, backlogs = [], {}
for name, frame in calls.items():
    run = model_trace(frame, Variant("G3"), trace=paths[name])
    checks.append(
        {
            "trace": name,
            "rule": f"{run.capturing_generation} ({run.generation_source})",
            "calls": frame.height,
            "replay_agreement": run.replay_agreement.share,
            "chain_agreement": run.capture_chain_agreement.share,
            "captured_scanned": run.observed_scanned_objects,
            "max_freeable": frame["freeable_objects"].max(),
        }
    )
print(pl.DataFrame(checks))
print(format_model_run(run))
for generation in GENERATIONS:
    backlogs[generation] = model_trace(frame, Variant(generation), trace=paths[name]).result.backlog
backlog = replay_backlog_chart(backlogs, f"Deferred backlog of {name} under each rule")
backlog.save(figures / "05-backlog-by-rule.svg")
backlog

# %% [markdown]
# ## The three rules on every capture
# Per rule, mean and standard deviation over the three iterations of each configuration
# (the iterations are the independent units; calls within one are not).

# %%
rows = []
for name, frame in calls.items():
    for generation in GENERATIONS:
        values = outputs(model_trace(frame, Variant(generation), trace=paths[name]).result)
        rows.append({"config": name.split("/")[0], "rule": generation, **values})
per_run = pl.DataFrame(rows)
measures = ["scanned_objects", "direct_max_scanned", "backlog_max_objects", "velocity_per_s"]
print(
    per_run.group_by("config", "rule")
    .agg(pl.len().alias("runs"), *(pl.col(m).mean().alias(f"{m}_mean") for m in measures))
    .sort("config", "rule")
)
print(
    per_run.group_by("config", "rule")
    .agg(*(pl.col(m).std().alias(f"{m}_sd") for m in measures))
    .sort("config", "rule")
)

# %% [markdown]
# ## Divisor sweep and the trade-off
# G3's rule with other divisors (1 is G1's "take it all", 4096 is G3 at priority 12):
# the largest scan landed on one direct reclaimer against the deferred backlog left.

# %%
sweep = pl.concat(
    divisor_sweep(frame, divisors, generation="G3").with_columns(trace=pl.lit(name))
    for name, frame in calls.items()
)
print(
    sweep.select("trace", "divisor", "scanned_objects", "direct_max_scanned", "backlog_max_objects")
)
chart = tradeoff_chart(sweep, "Bundled captures: divisor trade-off (G3 rule)")
chart.save(figures / "05-divisor-tradeoff.svg")
chart

# %% [markdown]
# ## The same trade-off at seed 001's scale (arithmetic, not data)
# One call at priority 12 on a node with 1,800,000 freeable objects and 1,000,000
# deferred (seed 001): objects it is asked to scan and leaves deferred, per divisor.

# %%
seed = pl.DataFrame(
    [
        {"divisor": str(d), "total_scan": call.total_scan, "left_deferred": call.next_deferred}
        for d in divisors
        for call in [
            do_shrink_slab(
                Variant("G3", d), deferred=1_000_000, freeable=1_800_000, priority=12, batch=1024
            )
        ]
    ]
)
print(seed)
