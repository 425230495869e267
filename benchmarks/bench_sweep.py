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


def timed_sweeps(model: str, grid: Path, work: Path) -> dict[str, float]:
    """Seconds of the whole ``grid`` of ``model`` in process and on 2 local Dask workers,
    each from scratch (points a previous run left are removed first)."""
    seconds = {}
    for label, workers in (("in_process", None), ("dask_2_workers", WORKERS)):
        out = work / label
        for stale in sorted(out.rglob("*.parquet")):
            stale.unlink()
        t0 = time.perf_counter()
        result = sweep.sweep(model, grid, out, workers=workers)
        seconds[label] = round(time.perf_counter() - t0, 2)
        if result.computed != result.points:
            raise RuntimeError(f"{model}: {result.computed} of {result.points} points computed")
    return seconds


def run(out_dir: Path) -> None:
    work = out_dir / "work" / "sweep"
    work.mkdir(parents=True, exist_ok=True)
    grid = work / "grid.yaml"
    grid.write_text(
        f"capture: {CAPTURE.resolve()}\ntau_us: {{start: 1000, stop: 400000, num: {POINTS}, "
        "log: true}\n"
    )
    throttle.observe(CAPTURE)  # warm the ingest cache
    seconds = timed_sweeps("throttle", grid, work)
    summary = {
        "input": f"{CAPTURE} (real), {POINTS} timeouts 1-400 ms, cycle model without bootstrap",
        "points": POINTS,
        **{f"{k}_s": v for k, v in seconds.items()},
        "target_s": 120,
        "within_target": seconds["dask_2_workers"] <= 120,
    }
    (out_dir / "sweep.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
