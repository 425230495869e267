"""kswapd / kcompactd awake time: exact when every wake is closed, bounded otherwise."""

from __future__ import annotations

import polars as pl
import pytest

from analysis.metrics.daemons import daemon_awake
from tests.test_stalls_support import frame

NID = {"nid": pl.Int64}


def _activity(rows):
    return pl.DataFrame(
        rows, schema={"pid": pl.Int32, "comm": pl.String, "ts_ns": pl.Int64}, orient="row"
    )


def _awake(wakes, sleeps, activity, start=0, end=1000, daemon="kswapd"):
    return daemon_awake(
        frame(wakes, NID),
        frame(sleeps, NID),
        _activity(activity),
        daemon=daemon,
        capture_start_ns=start,
        capture_end_ns=end,
    )


def test_closed_intervals_are_exact_and_rewakes_counted():
    # wake@100, re-wake@150 (ignored as in mmtests), sleep@300; wake@400, sleep@450.
    (report,) = _awake(
        wakes=[(1, "kswapd0", 32, 100, 0), (2, "kswapd0", 32, 150, 0), (4, "kswapd0", 32, 400, 0)],
        sleeps=[(3, "kswapd0", 32, 300, 0), (5, "kswapd0", 32, 450, 0)],
        activity=[(32, "kswapd0", t) for t in (100, 150, 300, 400, 450)],
    )
    assert (report.wakes, report.rewakes, report.sleeps) == (3, 1, 2)
    assert report.awake_kind == "exact"
    assert report.awake_s * 1e9 == pytest.approx(200 + 50)
    assert report.awake_upper_s == report.awake_s


def test_wakes_without_sleep_give_bounds_never_zero():
    # Closed 100->300, then wake@500 and re-wake@700 with no sleep until the end (1000).
    # kswapd's own events: 520, 600 before the re-wake; 720, 800 after it.
    # Lower bound: 200 + (600-500) + (800-700) = 400; upper: 200 + (1000-500) = 700.
    (report,) = _awake(
        wakes=[(1, "kswapd0", 32, 100, 0), (4, "kswapd0", 32, 500, 0), (6, "kswapd0", 32, 700, 0)],
        sleeps=[(3, "kswapd0", 32, 300, 0)],
        activity=[(32, "kswapd0", t) for t in (100, 300, 500, 520, 600, 700, 720, 800)]
        + [(5, "dd", 1000)],
    )
    assert report.awake_kind == "lower_bound"
    assert report.open_at_end
    assert report.awake_s * 1e9 == pytest.approx(400)
    assert report.awake_upper_s * 1e9 == pytest.approx(700)


def test_capture_starting_while_awake():
    # First event is a sleep@300; kswapd's first traced event is at 250; capture starts at 0.
    (report,) = _awake(
        wakes=[],
        sleeps=[(3, "kswapd0", 32, 300, 0)],
        activity=[(32, "kswapd0", 250), (32, "kswapd0", 300)],
    )
    assert report.started_awake and report.awake_kind == "lower_bound"
    assert (report.awake_s * 1e9, report.awake_upper_s * 1e9) == pytest.approx((50, 300))


def test_node_from_comm_when_no_wake_or_sleep_events():
    # kswapd1 busy the whole capture without ever emitting wake or sleep.
    (report,) = _awake(
        wakes=[], sleeps=[], activity=[(40, "kswapd1", 200), (40, "kswapd1", 900), (5, "dd", 0)]
    )
    assert (report.nid, report.pid, report.wakes) == (1, 40, 0)
    assert (report.awake_s * 1e9, report.awake_upper_s * 1e9) == pytest.approx((700, 1000))


def test_kcompactd_uses_the_same_rules():
    (report,) = _awake(
        wakes=[(1, "kcompactd0", 50, 100, 0)],
        sleeps=[(2, "kcompactd0", 50, 160, 0)],
        activity=[(50, "kcompactd0", 100), (50, "kcompactd0", 160)],
        daemon="kcompactd",
    )
    assert (report.daemon, report.awake_kind, report.awake_s * 1e9) == (
        "kcompactd",
        "exact",
        pytest.approx(60),
    )
