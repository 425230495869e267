"""Benchmark: a 100-point deferral-divisor sweep over a 1,000,000-call replay on a local
Dask cluster of 2 workers (issue 12 target: <= 2 min).

Input: the real shrinker calls of the bundled captures repeated to 1,000,000
(:func:`benchmarks.bench_shrinker_model.million_calls`), saved once as a Parquet table of
calls, which the shrinker sweep model takes as its ``trace``. Grid: G3 with the constant
divisors 1..100 (``divisor: {start: 1, stop: 100, step: 1}``). Each worker reads the table
once; every point is a full replay. The in-process time of the same grid is recorded beside.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from benchmarks.bench_shrinker_model import million_calls
from benchmarks.bench_sweep import timed_sweeps

POINTS = 100


def run(out_dir: Path) -> None:
    work = out_dir / "work" / "shrinker-sweep"
    work.mkdir(parents=True, exist_ok=True)
    calls = million_calls()
    table = work / "calls.parquet"
    calls.write_parquet(table)
    grid = work / "grid.yaml"
    grid.write_text(
        f"trace: {table.resolve()}\ngeneration: G3\n"
        f"divisor: {{start: 1, stop: {POINTS}, step: 1}}\n"
    )
    seconds = timed_sweeps("shrinker", grid, work)
    summary = {
        "input": f"real shrink_slab calls of the bundled captures repeated to {calls.height}, "
        f"G3, constant divisors 1..{POINTS}",
        "points": POINTS,
        **{f"{k}_s": v for k, v in seconds.items()},
        "target_s": 120,
        "within_target": seconds["dask_2_workers"] <= 120,
        "load_avg": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }
    (out_dir / "shrinker_sweep.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
