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
# # Stall-time distributions: censored, jiffy-quantised fits
#
# How long would a throttled reclaimer wait for its wake condition without a timeout? The
# recorded `usect_delayed` hides it: sleeps at the timeout are right-censored, delays are
# whole jiffies, some sleepers wake at once, some would never wake early; `analysis.stats.fit`
# models all of that. Seed 000's throttle groups, then the patched 6.12 sweep (`data/vm-6.12`,
# TCG guest) scored against the kernels that ran 20, 100 and 500 ms (docs/model-validation.md
# "Beyond the calibrated timeout"): a cure fraction's tail is not identified; assuming every
# sleeper wakes, 20 ms predicts 100 and 500 ms, and 100 ms predicts 500 ms except from runs
# whose sleepers nearly all reached the timeout. Then reclaim stalls, and synthetic checks.

# %% tags=["parameters"]
seed = "data/mail/000_901e324e43c5b0b5.txt"
capture = "data/vm-6.12"
sweep = ["data/vm-6.12/wb20", "data/vm-6.12/aa1", "data/vm-6.12/aa2", "data/vm-6.12/wb500"]
build_dir = "build"
bootstrap = 0
band_bootstrap = 50
validation = "analysis/stats/validation/results.md"
stall_families = ["lognormal", "weibull", "log-logistic", "lognormal-mixture"]

# %%
from pathlib import Path

import altair as alt
import numpy as np
import polars as pl
from IPython.display import Markdown

from analysis.ingest.captures import traces_below
from analysis.metrics.trace_files import analyse_file
from analysis.models.throttle import calibrate, observe
from analysis.models.throttle_validation import run_values
from analysis.models.throttle_waits import fit_reasons, woken_wait
from analysis.report.charts import theme
from analysis.report.charts.fits import bins_chart, km_chart, survival_chart
from analysis.report.findings import timeout_prediction_finding
from analysis.report.fit import format_duration_fits, format_fits
from analysis.seeds.throttle import seed_groups
from analysis.stats.durations import fit_duration_models
from analysis.stats.fit import GroupFit
from analysis.stats.survival import kaplan_meier, log_rank, stall_durations, turnbull_jiffies

theme.offline()  # static SVG charts: they show with no network and in any viewer

(figures := Path(build_dir) / "figures").mkdir(parents=True, exist_ok=True)
# The finding first (the sweep's section below): P(timeout) where a capture did not run.
WB, taus = "VMSCAN_THROTTLE_WRITEBACK", [20_000.0, 100_000.0, 500_000.0]
sweep_runs = {Path(c).name: observe(c) for c in sweep}
rows = [
    {"capture": name, "wait": label}
    | {f"p_{t / 1000:.0f}ms": np.mean([w.survival(np.array([t]))[0] for w in waits]) for t in taus}
    for name, obs in sweep_runs.items()
    for label, wait in (("Kaplan-Meier", lambda o: calibrate([o]).reason(WB).wait),
                        ("woken fit", lambda o: woken_wait(o, WB)))
    for waits in [[wait(o) for o in obs]]  # each run's wait once, read at every timeout
]  # fmt: skip
values = [run_values(o, WB) for obs in sweep_runs.values() for o in obs]
seen = {t: np.mean([v.p_timeout for v in values if v.tau_us == t]) for t in taus}
rows.append({"capture": "observed", "wait": "kernel"}
            | {f"p_{t / 1000:.0f}ms": seen[t] for t in taus})  # fmt: skip
own = {name: f"p_{run_values(obs[0], WB).tau_us / 1000:.0f}ms" for name, obs in sweep_runs.items()}
predictions = pl.DataFrame(rows)
Markdown(f"**Finding.** {timeout_prediction_finding(predictions, own)}")

# %% [markdown]
# ## Seed 000 (5.15-rc1 + reclaim throttling, HZ 250 from the delay quantum)
# Groups as the mail's prose names them: 2 = kswapd, 4-6 = direct reclaim by reason.

# %%
# The paper's fit of the seed (analysis/seeds/throttle.py): the same digits in both.
seed_fits = seed_groups(Path(seed), bootstrap=bootstrap)
print(format_fits(seed_fits))

# %% [markdown]
# The mail's "Roughly 16% of stalls reached the timeout" (kswapd) is not its histogram's
# 11 of 244 (4.5 %); the fitted CI excludes 16 %: the prose may describe another machine.

# %%
charts = []
for g in seed_fits:
    if isinstance(g, GroupFit):
        name = f"{g.context} {g.reason.removeprefix('VMSCAN_THROTTLE_')}"
        curve = turnbull_jiffies(g.data, bootstrap=band_bootstrap)
        charts.append(
            survival_chart(g, curve, f"{name}: Turnbull (band) vs fits")
            | bins_chart(g, f"{name}: observed vs fitted P(k)")
        )
seed_chart = alt.vconcat(*charts)
seed_chart.save(figures / "03-seed000-fits.svg")
seed_chart

# %% [markdown]
# ## The sweep: each capture's best censored fit (runs pooled), then P(timeout) at 20, 100
# and 500 ms by its runs' Kaplan–Meier (never woken beyond the timeout: an upper bound) and
# woken fits (means over runs); last row: what the kernels that ran each timeout observed.

# %%
for name, fit in ((n, fit_reasons(obs)[WB]) for n, obs in sweep_runs.items()):
    print(name, fit if isinstance(fit, str) else (fit.best.name, fit.identifiability or "ok"))
print(predictions)

# %% [markdown]
# ## Reclaim stalls: Kaplan–Meier and censored fits per iteration, log-rank. memcg reclaim
# intervals, censored when still open at the end. The log-rank test pools each run's
# iterations (stalls taken as independent: optimistic p); the curves show the run spread.

# %%
traces = traces_below(Path(capture))
analyses = {f"{p.parent.parent.name}/{p.parent.name}": analyse_file(p) for p in traces}
curves, samples = [], {}
for name, analysis in analyses.items():
    for context, paired in analysis.reclaim.items():
        stalls = stall_durations(paired.intervals)
        if stalls.height == 0:
            continue
        km = kaplan_meier(stalls["duration_us"].to_numpy(), stalls["censored"].to_numpy())
        curves.append(km.with_columns(curve=pl.lit(f"{name} {context}")))
        samples.setdefault(name.split("/")[0], []).append(stalls)
        fits = fit_duration_models(stalls["duration_us"].to_numpy(),
                                   stalls["censored"].to_numpy(), stall_families)  # fmt: skip
        print(format_duration_fits(f"{name} {context} reclaim stalls (n={stalls.height})", fits))
reclaim_chart = km_chart(pl.concat(curves), "reclaim stalls, Kaplan-Meier")
reclaim_chart.save(figures / "03-reclaim-km.svg")
runs = {run: pl.concat(frames) for run, frames in samples.items()}
(first, a), *others = runs.items()
for other, b in others:
    args = (a["duration_us"], a["censored"], b["duration_us"], b["censored"])
    test = log_rank(*(column.to_numpy() for column in args))
    print(f"log-rank {first} vs {other}: chi2 {test.chi2:.1f}, p {test.p_value:.3g}")
reclaim_chart

# %% [markdown]
# ## Validation on synthetic data (labelled: simulated, known truth)
# %%
print(Path(validation).read_text())
