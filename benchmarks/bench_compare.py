"""Benchmark: the two-stage bootstrap of ``mmlab compare`` (issue 11 target ≤ 5 s).

10 000 resamples (runs, then samples within runs) of the Harrell–Davis median, p90 and
p99 and of the mean, over 100 000 SYNTHETIC latencies (lognormal) in 10 runs with a
run-level random effect; statistical content irrelevant here.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from analysis.stats.bootstrap import MEAN, two_stage

RUNS, SAMPLES, RESAMPLES = 10, 10_000, 10_000


def run(out_dir: Path) -> None:
    rng = np.random.default_rng(11)
    runs = [500 * rng.lognormal(rng.normal(0, 0.1), 1.0, SAMPLES) for _ in range(RUNS)]
    timings, cpu = {}, {}
    for label, stats_ in (("hd_p50_p90_p99", [0.5, 0.9, 0.99]), ("mean", [MEAN])):
        t0, c0 = time.perf_counter(), time.process_time()
        draws = two_stage(runs, stats_, RESAMPLES, rng)
        timings[label] = round(time.perf_counter() - t0, 3)
        cpu[label] = round(time.process_time() - c0, 3)
        assert all(d.shape == (RESAMPLES, RUNS) for d in draws.values())
    result = {
        "input": f"synthetic lognormal, {RUNS} runs x {SAMPLES} samples",
        "resamples": RESAMPLES,
        "seconds": timings,
        # CPU seconds as well: on a shared machine the wall clock includes waiting.
        "cpu_seconds": cpu,
        "target_s": 5.0,
        "cpus": os.cpu_count(),
        "load_1min": round(os.getloadavg()[0], 2),
    }
    (out_dir / "compare.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
