"""Shrinker deferral model: replay of 1,000,000 shrinker calls under one variant (issue 12).

Input: the real ``do_shrink_slab()`` calls of the six bundled captures (data/stutterp-*),
one capture after another and round again until there are ``CALLS`` calls, each copy
shifted in time and trace line so the sequence stays ordered (stated as such: the
arithmetic per call is real, the length is made up). Measured with numba's on-disk cache warm (the
first call, which starts numba and may compile, is timed apart: since the trace reader is C,
reading the captures no longer starts numba before it): :func:`analysis.models.shrinker.replay`
end to end (Polars preparation, compiled replay, result frames) for G1, G2 and G3, the
best of ``REPEATS``. Target: <= 2 s per variant. Load averages are recorded beside it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import polars as pl

from analysis.ingest.captures import traces_below
from analysis.models.shrinker import Variant, load_invocations, replay

DATA = Path(__file__).resolve().parent.parent / "data"
CALLS = 1_000_000
REPEATS = 3


def million_calls() -> pl.DataFrame:
    captures = [
        load_invocations(trace)
        for name in ("stutterp-dirty20", "stutterp-dirty5")
        for trace in traces_below(DATA / name)
    ]
    copies: list[pl.DataFrame] = []
    offset_ns = offset_line = 0
    while sum(c.height for c in copies) < CALLS:
        real = captures[len(copies) % len(captures)]
        copy = real.with_columns(
            ts_ns=pl.col("ts_ns") - real["ts_ns"].min() + offset_ns,
            begin_line=pl.col("begin_line") + offset_line,
            end_line=pl.col("end_line") + offset_line,
        )
        copies.append(copy)
        offset_ns = int((copy["ts_ns"] + copy["duration_ns"]).max()) + 1
        offset_line = int(copy["end_line"].max()) + 1
    return pl.concat(copies).head(CALLS)


def run(out_dir: Path) -> None:
    calls = million_calls()
    t0 = time.perf_counter()
    replay(calls.head(1000), Variant("G3"))
    first_s = time.perf_counter() - t0
    results = {}
    for generation in ("G1", "G2", "G3"):
        times = []
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            result = replay(calls, Variant(generation))
            times.append(time.perf_counter() - t0)
        results[generation] = {
            "best_s": round(min(times), 3),
            "all_s": [round(t, 3) for t in times],
            "scanned_objects": result.scanned_objects,
        }
    report = {
        "input": f"real shrink_slab calls of the 6 bundled captures, repeated to {calls.height}",
        "calls": calls.height,
        "first_call_s": round(first_s, 3),
        "replay": results,
        "target_s": 2.0,
        "load_avg": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }
    (out_dir / "shrinker_model.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
