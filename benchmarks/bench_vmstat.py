"""Benchmark: reading a one-hour, 1 s proc-vmstat monitor log and computing its series.

The input is SYNTHETIC (statistical content irrelevant here): this machine's real
/proc/vmstat dump repeated 3600 times with every counter increased each second, written
in mmtests' monitor layout and gzipped, the size of an hour-long mmtests capture.
"""

from __future__ import annotations

import gzip
import json
import resource
import time
from pathlib import Path

from analysis.ingest import vmstat
from analysis.metrics.ops import interval_series, ops_report

SAMPLES = 3600


def _monitor_log(path: Path) -> int:
    names = [line.split()[0] for line in Path("/proc/vmstat").read_text().splitlines()]
    with gzip.open(path, "wt", compresslevel=1) as out:
        for t in range(SAMPLES):
            out.write(f"time: {1_700_000_000 + t}\n")
            out.writelines(f"{name} {1000 + 7 * t * (i % 5)}\n" for i, name in enumerate(names))
    return len(names)


def run(out_dir: Path) -> None:
    work = out_dir / "work"
    work.mkdir(parents=True, exist_ok=True)
    log = work / "proc-vmstat-hour.gz"
    counters = _monitor_log(log)
    t0 = time.perf_counter()
    samples = vmstat.read(log)
    t1 = time.perf_counter()
    ops_report(samples)
    series, _ = interval_series(samples)
    t2 = time.perf_counter()
    result = {
        "input": f"synthetic monitor log, {SAMPLES} samples x {counters} counters",
        "compressed_bytes": log.stat().st_size,
        "read_s": round(t1 - t0, 3),
        "ops_and_series_s": round(t2 - t1, 3),
        "intervals": series.height,
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    (out_dir / "vmstat.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
