"""Benchmark: censored jiffy fits of throttle delays (issue 10 targets).

- One model (Weibull + zero mass, with its observed-information SEs) fitted to 1 M
  events given as a histogram: target <= 2 s.
- The whole candidate table (7 families x zero mass x cure = 28 models) for one group,
  without bootstrap: target <= 30 s.

The input is SYNTHETIC (labelled so): 1 M draws of a known latent wait through the
kernel's observation model k = floor(T/J + U) at HZ 250 with a 100 ms timeout, shaped like
seed 000's direct-reclaim WRITEBACK group (most sleeps reach the timeout). Times are wall
clock and process CPU; the machine may be shared, so CPU is the steadier figure.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np

from analysis.stats.families import FAMILIES
from analysis.stats.fit import FittedWait, JiffyData, fit_group, fit_model

EVENTS = 1_000_000
JIFFY_US = 4000.0
TIMEOUT_US = 100_000.0


def _histogram() -> JiffyData:
    truth = FittedWait("bench", FAMILIES["lognormal"], (1.0, 120_000.0), 0.07, 0.0, math.inf)
    rng = np.random.default_rng(1)
    k_timeout = round(TIMEOUT_US / JIFFY_US)
    t = truth.draws(EVENTS, seed=2)
    k = np.minimum(np.floor(t / JIFFY_US + rng.random(EVENTS)), k_timeout).astype(np.int64)
    return JiffyData(np.bincount(k, minlength=k_timeout + 1), JIFFY_US, TIMEOUT_US)


def _timed(fn) -> tuple[object, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def run(out_dir: Path) -> None:
    data = _histogram()
    model, one_wall, one_cpu = _timed(lambda: fit_model(data, "weibull", zero=True))
    group, table_wall, table_cpu = _timed(lambda: fit_group(data, cache=False))
    result = {
        "input": f"synthetic histogram of {data.n} events, HZ 250, 100 ms timeout",
        "one_model": model.name,
        "one_model_wall_s": round(one_wall, 3),
        "one_model_cpu_s": round(one_cpu, 3),
        "one_model_target_s": 2.0,
        "table_models": len(group.models),
        "table_best": group.best.name,
        "table_wall_s": round(table_wall, 2),
        "table_cpu_s": round(table_cpu, 2),
        "table_target_s": 30.0,
    }
    (out_dir / "fit.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
