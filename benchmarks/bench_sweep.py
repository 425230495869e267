"""Benchmark: a 100-point throttle-timeout sweep on a local Dask cluster of 2 workers.

Real input: the bundled capture data/stutterp-dirty20 (3 iterations). Each worker calibrates
the cycle model once (traces from the ingest cache, built first so its one-off cost is not
counted) and then evaluates its share of the 100 timeouts. Target: ≤ 2 min.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from analysis.models import sweep, throttle

CAPTURE = Path("data/stutterp-dirty20")
POINTS = 100
WORKERS = 2


def run(out_dir: Path) -> None:
    work = out_dir / "work" / "sweep"
    work.mkdir(parents=True, exist_ok=True)
    grid = work / "grid.yaml"
    grid.write_text(
        f"capture: {CAPTURE.resolve()}\ntau_us: {{start: 1000, stop: 400000, num: {POINTS}, "
        "log: true}\n"
    )
    throttle.observe(CAPTURE)  # warm the ingest cache
    results = {}
    for label, workers in (("in_process", None), ("dask_2_workers", WORKERS)):
        out = work / label
        for stale in sorted(out.rglob("*.parquet")):
            stale.unlink()
        t0 = time.perf_counter()
        result = sweep.sweep("throttle", grid, out, workers=workers)
        results[label] = {
            "seconds": round(time.perf_counter() - t0, 2),
            "computed": result.computed,
        }
    summary = {
        "input": f"{CAPTURE} (real), {POINTS} timeouts 1-400 ms, cycle model without bootstrap",
        "points": POINTS,
        **{f"{k}_s": v["seconds"] for k, v in results.items()},
        "target_s": 120,
        "within_target": results["dask_2_workers"]["seconds"] <= 120,
    }
    (out_dir / "sweep.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
