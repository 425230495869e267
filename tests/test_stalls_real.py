"""Agreement with an independent count on a real bundled capture.

The independent side reads the decompressed trace text with a plain regular expression and
pairs memcg reclaim begin/end per pid in a dict, without the ftrace reader or Polars.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
import zstandard

from analysis.ingest import ftrace
from analysis.metrics.trace_analysis import analyse_trace
from tests.conftest import DATA, REPO

LINE = re.compile(r"-(\d+)\s+.*?\[\d+\]\s+\S+\s+(\d+)\.(\d+): (\w+): (.*)$")


def _capture():
    found = sorted(DATA.glob("*/*/iter-*/ftrace-*.zst"))
    assert found, f"no bundled capture under {DATA}"
    return found[0]


def _independent(path):
    text = zstandard.ZstdDecompressor().stream_reader(path.open("rb")).read().decode()
    open_at: dict[str, int] = {}
    durations = []
    throttled: Counter[tuple[str, int, int]] = Counter()
    for line in text.splitlines():
        match = LINE.search(line)
        if not match:
            continue
        pid, secs, frac, event, payload = match.groups()
        ts = int(secs) * 10**9 + int(frac.ljust(9, "0"))
        if event == "mm_vmscan_memcg_reclaim_begin":
            open_at[pid] = ts
        elif event == "mm_vmscan_memcg_reclaim_end" and pid in open_at:
            durations.append(ts - open_at.pop(pid))
        elif event == "mm_vmscan_throttled":
            fields = dict(kv.split("=", 1) for kv in payload.split())
            throttled[
                fields["reason"], int(fields["usec_timeout"]), int(fields["usect_delayed"])
            ] += 1
    return durations, throttled


def test_memcg_stalls_and_throttle_agree_with_independent_count():
    path = _capture()
    durations, throttled = _independent(path)
    # The shared ingest cache: a real capture is parsed once per checkout, not per test run.
    result = analyse_trace(ftrace.read(path, cache_dir=REPO / "build" / "ingest"))
    if not durations and not throttled:
        pytest.skip(f"{path} has no memcg reclaim or throttle events")
    memcg = result.reclaim["memcg"].report
    assert memcg.count == len(durations)
    assert memcg.total_s == pytest.approx(sum(durations) / 1e9, abs=1e-9)
    for row in result.throttle.iter_rows(named=True):
        mine = {k: v for k, v in throttled.items() if k[:2] == (row["reason"], row["usec_timeout"])}
        n = sum(mine.values())
        assert row["count"] == n
        assert row["zero_share"] == pytest.approx(sum(v for k, v in mine.items() if k[2] == 0) / n)
        assert row["timeout_share"] == pytest.approx(
            sum(v for k, v in mine.items() if k[2] >= k[1]) / n
        )
    assert sum(result.throttle["count"]) == sum(throttled.values())
