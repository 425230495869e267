"""Throttle contexts and HZ, shrinker deferral, LRU vs vmstat, compaction, mmtests stall table,
and the composed analysis: hand-built traces with hand-worked answers."""

from __future__ import annotations

import polars as pl
import pytest

from analysis.metrics import compaction, lru, pairing, shrinker, throttle
from analysis.metrics.trace_analysis import analyse_trace
from analysis.stats.describe import stall_distribution
from tests.test_stalls_support import Accounting, FakeTrace, Lost, frame

I64 = pl.Int64
THROTTLED = {"nid": I64, "usec_timeout": I64, "usect_delayed": I64, "reason": pl.String}
SHRINK_START = {
    "shrinker": pl.String,
    "nid": I64,
    "nr_objects_to_shrink": I64,
    "cache_items": I64,
    "delta": I64,
    "total_scan": I64,
    "priority": I64,
}
SHRINK_END = {"shrinker": pl.String, "nid": I64, "new_scan": I64, "total_scan": I64, "retval": I64}
INACTIVE = {
    "nid": I64,
    "nr_scanned": I64,
    "nr_reclaimed": I64,
    "nr_dirty": I64,
    "flags": pl.List(pl.String),
}
SB = "super_cache_scan+0x0/0x1a0"


def _trace(lost=()) -> FakeTrace:
    """pid 100 direct-reclaims 1000 -> 5000 ns; kswapd0 (pid 32) wakes at 500, never sleeps."""
    return FakeTrace(
        {
            "mm_vmscan_direct_reclaim_begin": frame([(10, "dd", 100, 1000, 0)], {"order": I64}),
            "mm_vmscan_direct_reclaim_end": frame(
                [(30, "dd", 100, 5000, 7)], {"nr_reclaimed": I64}
            ),
            "mm_vmscan_kswapd_wake": frame([(5, "kswapd0", 32, 500, 0)], {"nid": I64}),
            "mm_vmscan_throttled": frame(
                [
                    (20, "dd", 100, 3000, 0, 100000, 100000, "VMSCAN_THROTTLE_WRITEBACK"),
                    (21, "dd", 100, 3500, 0, 100000, 0, "VMSCAN_THROTTLE_WRITEBACK"),
                    (22, "kswapd0", 32, 3600, 0, 100000, 4000, "VMSCAN_THROTTLE_WRITEBACK"),
                    (40, "dd", 100, 6000, 0, 20000, 8000, "VMSCAN_THROTTLE_ISOLATED"),
                ],
                THROTTLED,
            ),
            # seed-001-sized G3 arithmetic (docs/shrinker-deferral.md): kswapd takes 1,000,000
            # deferred objects at priority 12 and scans 8 batches of 128; the direct reclaimer
            # takes nothing and scans 6 batches.
            "mm_shrink_slab_start": frame(
                [
                    (11, "kswapd0", 32, 1100, SB, 0, 1_000_000, 1_800_000, 878, 1122, 12),
                    (12, "dd", 100, 1200, SB, 0, 0, 1_800_000, 878, 878, 12),
                ],
                SHRINK_START,
            ),
            "mm_shrink_slab_end": frame(
                [
                    (13, "kswapd0", 32, 1300, SB, 0, 999_854, 98, 900),
                    (14, "dd", 100, 1400, SB, 0, 110, 110, 500),
                ],
                SHRINK_END,
            ),
            "mm_vmscan_lru_shrink_inactive": frame(
                [
                    (
                        15,
                        "kswapd0",
                        32,
                        1500,
                        0,
                        32,
                        30,
                        2,
                        ["RECLAIM_WB_FILE", "RECLAIM_WB_ASYNC"],
                    ),
                    (16, "dd", 100, 1600, 0, 64, 10, 0, ["RECLAIM_WB_ANON", "RECLAIM_WB_ASYNC"]),
                ],
                INACTIVE,
            ),
            "sched_other": frame([(50, "kswapd0", 32, 7000), (51, "x", 1, 8000)]),
        },
        Accounting(tuple(lost)),
    )


def _intervals(trace):
    return pairing.all_intervals(pairing.reclaim_intervals(trace))


def test_throttle_context_and_censoring():
    trace = _trace()
    table = throttle.throttle_table(throttle.throttle_events(trace, _intervals(trace)))
    rows = {(r["context"], r["reason"]): r for r in table.iter_rows(named=True)}
    direct_wb = rows["direct", "VMSCAN_THROTTLE_WRITEBACK"]
    assert (direct_wb["count"], direct_wb["timeout_share"], direct_wb["zero_share"]) == (
        2,
        0.5,
        0.5,
    )
    assert direct_wb["mean_usec"] == 50000
    assert rows["kswapd", "VMSCAN_THROTTLE_WRITEBACK"]["count"] == 1
    # ts 6000 is after pid 100's reclaim ended at 5000.
    assert rows["other", "VMSCAN_THROTTLE_ISOLATED"]["count"] == 1


def test_hz_from_delays_and_kconfig():
    def events(delays):
        return pl.DataFrame({"delay_us": delays, "count": [1] * len(delays)})

    assert throttle.infer_hz(events([0, 4000, 12000, 100000]), 250).verdict == "agrees"
    # HZ=300: jiffies_to_usecs rounds 3333.3 us, so the gcd is 1 and the rounding test applies.
    estimate = throttle.infer_hz(events([3333, 6666, 10000]), 300)
    assert (estimate.hz, estimate.method, estimate.verdict) == (300.0, "rounded", "agrees")
    assert throttle.infer_hz(events([0, 0]), None).verdict == "no delays"
    assert (
        throttle.config_hz("# CONFIG_HZ_1000 is not set\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n") == 250
    )
    assert throttle.config_hz("CONFIG_HZ_PERIODIC=y\n") is None


def test_shrinker_deferred_work_lands_on_kswapd():
    trace = _trace()
    invocations, paired = shrinker.shrinker_invocations(trace, _intervals(trace))
    assert paired.report.count == 2
    table = {r["context"]: r for r in shrinker.shrinker_table(invocations).iter_rows(named=True)}
    k, d = table["kswapd"], table["direct"]
    assert (k["deferred_in_objects"], k["scanned_objects"], k["freed_objects"]) == (
        1_000_000,
        1024,
        900,
    )
    assert k["deferred_out_objects"] == 1_000_000 + 878 - 1024
    assert k["inherited_share"] == pytest.approx(1_000_000 / 1_000_878)
    assert (d["deferred_in_objects"], d["scanned_objects"], d["inherited_share"]) == (0, 768, 0.0)
    work = {
        r["context"]: r
        for r in shrinker.work_distribution([shrinker.work_sums(invocations)]).iter_rows(named=True)
    }
    assert (work["kswapd"]["deferred_taken_share"], work["direct"]["took_deferred"]) == (1.0, 0)
    backlog = shrinker.deferred_backlog(trace.events("mm_shrink_slab_end"))
    assert backlog["deferred_objects"].to_list() == [999_854, 110]


def test_lru_by_context_and_vmstat_discrepancy():
    trace = _trace()
    labelled = pairing.label_context(
        trace.events("mm_vmscan_lru_shrink_inactive"), _intervals(trace)
    )
    table = lru.lru_table(labelled)
    assert table.select("context", "lru", "scanned_pages", "reclaimed_pages").rows() == [
        ("direct", "anon", 64, 10),
        ("kswapd", "file", 32, 30),
    ]
    check = lru.lru_vs_vmstat(table, {"pgscan_kswapd": 32, "pgscan_direct": 60, "pgscan_file": 32})
    rows = {r["counter"]: r for r in check.iter_rows(named=True)}
    assert rows["pgscan_kswapd"]["diff_pages"] == 0
    assert (rows["pgscan_direct"]["diff_pages"], rows["pgscan_direct"]["diff_share"]) == (4, 4 / 60)
    assert "pgsteal_kswapd" not in rows


def test_compaction_contexts_and_orders():
    fields = {"status": pl.String}
    trace = FakeTrace(
        {
            "mm_compaction_begin": frame(
                [(1, "khugepaged", 7, 0), (2, "dd", 8, 10), (4, "kcompactd0", 9, 20)]
            ),
            "mm_compaction_end": frame(
                [(3, "khugepaged", 7, 50, "success"), (5, "dd", 8, 40, "contended")], fields
            ),
            "mm_compaction_try_to_compact_pages": frame(
                [(6, "dd", 8, 5, 9, 1), (7, "dd", 8, 6, 9, 1), (8, "dd", 8, 7, 0, 2)],
                {"order": I64, "priority": I64},
            ),
        }
    )
    paired = compaction.compaction_intervals(trace)
    assert (paired.report.count, paired.report.open_at_end) == (2, 1)
    by_context = compaction.compaction_time(paired.intervals)
    assert by_context.select("context", "count").rows() == [("direct", 1), ("khugepaged", 1)]
    assert compaction.compaction_status(paired.intervals)["status"].to_list() == [
        "contended",
        "success",
    ]
    orders = compaction.try_to_compact_by_order(trace.events("mm_compaction_try_to_compact_pages"))
    assert orders.rows() == [(0, 2, 1), (9, 1, 2)]


def test_mmtests_stall_row_nearest_rank_and_buckets():
    row = stall_distribution([float(v) for v in range(1, 11)])
    # k = max(1, floor(10 * p / 100)): p25 -> 2nd, p50 -> 5th, p90 -> 9th, p99 -> 9th.
    assert (row["pct25_ms"], row["pct50_ms"], row["pct90_ms"], row["pct99_ms"]) == (2, 5, 9, 9)
    assert (row["stalls_0_5ms"], row["stalls_5_10ms"], row["stalls_10_100ms"]) == (4, 5, 1)
    weighted = stall_distribution([0.0, 4.0, 20.0], [3, 1, 6])
    assert (weighted["samples"], weighted["pct50_ms"], weighted["amean_ms"]) == (10, 20.0, 12.4)
    assert stall_distribution([])["min_ms"] is None


def test_analyse_composes_and_flags_lost_events():
    trace = _trace(lost=[Lost(cpu=1, count=3, line=25)])
    result = analyse_trace(trace, config_hz=250, vmstat_deltas={"pgscan_kswapd": 32})
    direct = result.reclaim["direct"].report
    assert (direct.count, direct.total_s, direct.lost_affected) == (1, 4000 / 1e9, 1)
    assert result.lost_events == 3
    (k,) = result.kswapd
    # Open since 500: own events after it at 1100..3600 and 7000; capture ends at 8000.
    assert (k.awake_kind, k.awake_s * 1e9, k.awake_upper_s * 1e9) == (
        "lower_bound",
        pytest.approx(7000 - 500),
        pytest.approx(8000 - 500),
    )
    summary = dict(zip(result.summary["statistic"], result.summary["value"], strict=True))
    assert summary["Direct reclaims"] == 1
    assert summary["Kswapd pages scanned"] == 32
    assert summary["Time stalled direct reclaim"] == pytest.approx(4e-6)
    assert result.hz.verdict == "agrees"
    assert result.lru_check["counter"].to_list() == ["pgscan_kswapd"]
    assert result.throttle["lost_events"].to_list() == [3] * result.throttle.height
    assert result.lru["lost_events"].unique().to_list() == [3]


def test_backlog_step_points_keep_first_changes_and_last():
    end = pl.DataFrame(
        {
            "ts_ns": [1, 2, 3, 4, 5, 6],
            "shrinker": ["a", "a", "a", "a", "b", "b"],
            "nid": [0] * 6,
            "new_scan": [0, 0, 5, 5, 1, 1],
        }
    )
    steps = shrinker.deferred_backlog(end, changes_only=True)
    assert steps["ts_ns"].to_list() == [1, 3, 4, 5, 6]


def test_activations_of_pre_5_2_lines_are_counted():
    """Issue 29 item 3: 4.11-5.1 kernels (RHEL 8's 4.18) print one ``nr_activate=``; the
    LRU table read the 5.2+ split columns, present (null) on every ingested event, and
    summed 0. Two 4.18 lines (4 + 7) and one 6.x line (1 + 2): 14, summed by hand."""
    from analysis.ingest.ftrace.reader import parse_text

    head = "kswapd0-32 [000] .... 1.0: mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned=32 "
    common = "nr_reclaimed=30 nr_dirty=1 nr_writeback=2 nr_congested=0 nr_immediate=3 "
    tail = "nr_ref_keep=5 nr_unmap_fail=6 priority=11 flags=RECLAIM_WB_FILE"
    lines = [
        head + common + "nr_activate=4 " + tail,
        head + common + "nr_activate=7 " + tail,
        head + common + "nr_activate_anon=1 nr_activate_file=2 " + tail,
    ]
    _, frames = parse_text("\n".join(lines) + "\n")
    events = frames["mm_vmscan_lru_shrink_inactive"].with_columns(context=pl.lit("kswapd"))
    (row,) = lru.lru_table(events).iter_rows(named=True)
    assert (row["lru"], row["events"], row["activated_pages"]) == ("file", 3, 14)
