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
# # What other throttle timeouts would have done
#
# Seed 000 doubts that adjusting reclaim-throttle timeouts helps ("likely futile"). From a
# real capture: the latent wait T of throttled reclaimers (`mmlab fit`'s censored fit, and
# Kaplan–Meier), what a timeout τ does to P(timeout), the mean stall E[min(T, τ)] and its
# quantiles; the reclaim-cycle model's velocity (pages scanned per second of reclaim) and
# efficiency (reclaimed/scanned) against τ, with 95% bootstrap bands; last, the model is
# scored on another capture against the naive "same as the calibration capture".
#
# Assumptions (`analysis/models/throttle.py`): T does not depend on τ; beyond the observed
# timeout only the fit's tail speaks (Kaplan–Meier takes sleepers still waiting as never
# woken: upper bounds); throttles per scanned page and the scan rate do not depend on τ; a
# cycle's efficiency follows the share of the dirty pool written back during the sleep
# before it, an association (long sleeps come with slow writeback), not a cause.

# %% tags=["parameters"]
calibration = "data/stutterp-dirty20"
validation = "data/stutterp-dirty5"
seed_mail = "data/mail/000_901e324e43c5b0b5.txt"
bootstrap = 200
phases = (4, 16)  # worker counts of mmlab capture's phases: calibrate on one, score the other
build_dir = "build"

# %%
from pathlib import Path

import altair as alt
import numpy as np
import polars as pl

from analysis.ingest import histogram
from analysis.metrics.pairing import all_intervals
from analysis.metrics.throttle import throttle_events
from analysis.models import throttle
from analysis.models.throttle_predictions import build_report
from analysis.models.throttle_waits import fit_reasons, with_waits
from analysis.report import charts
from analysis.report.throttle_charts import curve_chart, validation_chart
from analysis.report.throttle_model import format_report

charts.offline()  # static SVG charts: they show with no network and in any viewer

figures = Path(build_dir) / "figures"
figures.mkdir(parents=True, exist_ok=True)

# %% [markdown]
# ## Seed 000: other timeouts for the mail's sleepers
# Kaplan–Meier per block of the mail's histograms (5.15-rc1 with throttling; blocks
# labelled as in notebook 02), each delay censored at its block's timeout. Only the wait
# side: the mail has no scan counts for a cycle model.

# %%
labels = {0: "vanilla", 1: "vanilla", 2: "kswapd", 3: "direct totals"}
labels |= {4: "direct", 5: "direct", 6: "direct"}
mail_events = throttle_events(histogram.read(seed_mail, labels=labels), all_intervals({}))
rows = []
for (_event, context, reason), wait in throttle.group_waits(mail_events).items():
    for tau in (10_000, 25_000, 50_000, wait.support_limit_us):
        p = throttle.predict_timeout(wait, tau, replicates=wait.resample(bootstrap, 0))
        rows.append(
            {"context": context, "reason": reason, "tau_us": tau, "p_timeout": p.p_timeout.value}
            | {"low": p.p_timeout.low, "high": p.p_timeout.high}
            | {"mean_stall_us": p.mean_stall_us.value}
        )
print(pl.DataFrame(rows))

# %% [markdown]
# ## Calibration: every run (trace) of the first capture, pooled

# %%
runs = throttle.observe(calibration)
model = throttle.calibrate(runs, bootstrap=bootstrap)
targets = throttle.observe(validation)
check = throttle.validate(model, targets)  # the report below shows it too

# %% [markdown]
# ## Fitted wait beside Kaplan–Meier, per reason against τ
# Each reason's best censored fit (contexts pooled; CIs from refits to resampled histograms)
# beside Kaplan–Meier (CIs from resampled cycles), τ from 1 ms to 4 times the observed
# timeout (dashed rule). Up to it the two should agree; beyond it only the fit can speak,
# through its family's tail: Kaplan–Meier's flat tail there is an upper bound.

# %%
fitted, choices = with_waits(model, fit_reasons(runs), "fit")
print(*(f"{c.reason}: fit {c.model} ({c.why})" for c in choices), sep="\n")
charts = []
for reason in model.reasons:
    taus = np.geomspace(1_000, 4 * reason.timeout_us, 25)
    pair = {
        k: throttle.timeout_curve(m, reason.reason, taus)
        for k, m in (("fit", fitted), ("KM", model))
    }
    for label, curve in pair.items():
        charts.append(curve_chart(curve, reason.timeout_us, f"{reason.reason}: {label}"))
        charts[-1].save(figures / f"06-{reason.reason.lower()}-{label.lower()}-curves.svg")
    side = pl.concat([c.with_columns(wait=pl.lit(k)) for k, c in pair.items()])
    cols = ("tau_us", "wait", "p_timeout", "p_timeout_low", "p_timeout_high", "mean_stall_us")
    print(
        side.filter(pl.col("tau_us").is_in(taus[::6])).select(*cols, "extrapolated").sort("tau_us")
    )
alt.hconcat(*charts[:2])

# %% [markdown]
# ## The report (fitted waits), with the validation against the second capture
# Velocity: the bootstrap bands treat cycles as independent; the run-to-run spread of the
# observed values is the honest yardstick, and the report says whether any predicted change
# exceeds it. Validation errors are means over the second capture's runs.

# %%
taus = {r.reason: [f * r.timeout_us for f in (0.1, 0.5, 1.0, 2.0)] for r in model.reasons}
report = build_report(calibration, runs, fitted, taus, targets, validation, waits=choices)
print(format_report(report))

# %%
print(check.rows)
vchart = validation_chart(check.rows, f"calibrated on {calibration}, scored on {validation}")
vchart.save(figures / "06-validation.svg")
vchart

# %% [markdown]
# ## Across worker counts of the same capture
# Calibrated on the phases with the first worker count, scored on those with the second.
# Reclaim time includes waiting for a CPU, so the scan rate per second of reclaim is not
# expected to carry over to more concurrent reclaimers: this is where the model is weakest.

# %%
low, high = (throttle.observe(calibration, workers=w) for w in phases)
across = throttle.validate(throttle.calibrate(low), high)
print(across.rows.select("source", "velocity_pps", "predicted_velocity_pps", "efficiency"))
print(
    f"velocity error {across.velocity_error:.1%} (naive {across.baseline_velocity_error:.1%}, "
    f"given the throttle rate {across.velocity_error_given_rate:.1%}); efficiency error "
    f"{across.efficiency_error:.1%} (naive {across.baseline_efficiency_error:.1%})"
)
