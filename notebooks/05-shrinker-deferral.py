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
# # Shrinker deferral: what another divisor would have done, against kernels that ran it
#
# Seed 001 argues that deferred shrinker work lands on whichever reclaimer takes the
# counter first. The default 6.12 kernel's `do_shrink_slab()` calls (`data/vm-6.12`, TCG
# guest; a filer keeps the cgroup's dentry and inode slab busy) are replayed under the
# rules of `docs/shrinker-deferral.md` (G1 up to 5.12, G2 seed 001's patch, G3 mainline)
# and other divisors, then scored against the patched kernels that ran divisor 1 and
# `priority` (docs/model-validation.md "Shrinker deferral"; 5 runs each).
#
# The finding (from the scores of section 2), then the evidence. The replay keeps the
# default kernel's `cache items`, which a kernel that scans more depletes; "depleted" takes
# the replay's extra freeing off later calls. Every call here is memcg reclaim.

# %% tags=["parameters"]
capture = "data/vm-6.12/aa1"
calibration = "data/vm-6.12/aa1"
kernels = ["data/vm-6.12/aa2", "data/vm-6.12/div1", "data/vm-6.12/divprio"]
build_dir = "build"
divisors = [1, 2, 4, 16, 64, 256, 1024, 4096]

# %%
from pathlib import Path

import polars as pl
from IPython.display import Markdown

from analysis.ingest.captures import traces_below
from analysis.models import shrinker_validation as sv
from analysis.models.shrinker import (
    GENERATIONS,
    Variant,
    divisor_sweep,
    do_shrink_slab,
    load_invocations,
    model_trace,
    outputs,
)
from analysis.report.charts import theme
from analysis.report.charts.shrinker import replay_backlog_chart, tradeoff_chart
from analysis.report.charts.validation import scores_chart
from analysis.report.findings import validation_finding
from analysis.report.shrinker_model import format_shrinker_validation

theme.offline()  # static SVG charts: they show with no network and in any viewer
figures = Path(build_dir) / "figures"
figures.mkdir(parents=True, exist_ok=True)
paths = {f"{t.parent.parent.name}/{t.parent.name}": t for t in traces_below(Path(capture))}
calls = {name: load_invocations(t) for name, t in paths.items()}
unpatched = [c for c in (calibration, *kernels) if not sv.divisor_patch(Path(c))]
skipped = " ".join(f"{c}: {sv.NO_DIVISOR_PATCH}: section 2 skipped." for c in unpatched)
targets = [] if unpatched else [sv.divisor_capture(Path(k)) for k in kernels]
scores = sv.validate(sv.divisor_capture(Path(calibration)), targets) if targets else []
Markdown(f"**Finding.** {validation_finding(scores, 'replay', Path(calibration).name)}"
         if scores else skipped)  # fmt: skip

# %% [markdown]
# ## 1. Does the capturing kernel's rule reproduce the trace? Then the three rules
# `replay_agreement`: calls whose printed `total_scan` G3 reproduces from the `nr` each
# took; `chain`: calls whose `nr` the replay's own counter reproduces. Then per rule, mean
# over the iterations (the independent units; calls within one are not).

# %%
rows = []
for name, frame in calls.items():
    for generation in GENERATIONS:
        run = model_trace(frame, Variant(generation), trace=paths[name])
        rows.append({"run": name, "rule": generation, "calls": frame.height}
                    | {"replay_agreement": run.replay_agreement.share}
                    | {"chain": run.capture_chain_agreement.share}
                    | {"captured_scanned": run.observed_scanned_objects}
                    | outputs(run.result))  # fmt: skip
per_run = pl.DataFrame(rows)
print(per_run.filter(pl.col("rule") == "G3").select("run", "calls", "replay_agreement", "chain"))
measures = ["scanned_objects", "direct_max_scanned", "backlog_max_objects"]
print(
    per_run.group_by("rule")
    .agg(pl.len().alias("runs"), *(pl.col(m).mean().alias(f"{m}_mean") for m in measures))
    .sort("rule")
)
backlogs = {g: model_trace(frame, Variant(g), trace=paths[name]).result.backlog
            for g in GENERATIONS}  # fmt: skip
backlog = replay_backlog_chart(backlogs, f"Deferred backlog of {name} under each rule")
backlog.save(figures / "05-backlog-by-rule.svg")
backlog

# %% [markdown]
# ## 2. Against the kernels that ran the divisor (needs the divisor patch)
# Each default-kernel run replayed under the divisor each capture's `vm.json` knob check
# recorded; PI: run-level 95 % interval; errors: mean |error| over runs (objects); p:
# permutation over runs (did the divisor change the quantity?).

# %%
chart = None
if scores:
    print(format_shrinker_validation(scores, calibration))
    print(pl.DataFrame(
        {"capture": Path(s.capture).name, "quantity": s.quantity, "replay_error": s.model_error}
        | {"depleted_error": s.depleted_error, "no_change_error": s.no_change_error}
        for s in scores
        if s.depleted is not None
    ))  # fmt: skip
    chart = scores_chart(scores, f"{Path(calibration).name} replayed")
    chart.save(figures / "05-validation.svg")
else:
    print(skipped)
chart

# %% [markdown]
# ## 3. Divisor sweep: G3's rule with other divisors (1: G1's "take it all", 4096: G3 at
# priority 12), the largest scan on one direct reclaimer against the backlog left.

# %%
sweep = pl.concat(
    divisor_sweep(frame, divisors, generation="G3").with_columns(trace=pl.lit(name))
    for name, frame in calls.items()
)
print(
    sweep.select("trace", "divisor", "scanned_objects", "direct_max_scanned", "backlog_max_objects")
)
chart = tradeoff_chart(sweep, "Default kernel's calls: divisor trade-off (G3 rule)")
chart.save(figures / "05-divisor-tradeoff.svg")
chart

# %% [markdown]
# ## 4. Seed 001's scale (arithmetic, not data): one call at priority 12, 1,800,000 freeable
# and 1,000,000 deferred objects: what it is asked to scan and leaves deferred, per divisor.

# %%
calls_at_seed_scale = {
    str(d): do_shrink_slab(
        Variant("G3", d), deferred=1_000_000, freeable=1_800_000, priority=12, batch=1024
    )
    for d in divisors
}
print(pl.DataFrame({"divisor": d, "total_scan": c.total_scan, "left_deferred": c.next_deferred}
                   for d, c in calls_at_seed_scale.items()))  # fmt: skip
