"""Begin/end pairing of reclaim stalls: every edge case with a hand-worked answer."""

from __future__ import annotations

import polars as pl

from analysis.metrics.pairing import label_context, pair_intervals
from tests.test_stalls_support import frame

ORDER = {"order": pl.Int64}
RECLAIMED = {"nr_reclaimed": pl.Int64}


def _pair(begin, end, lost_lines=()):
    return pair_intervals(
        frame(begin, ORDER),
        frame(end, RECLAIMED),
        kind="direct",
        begin_fields=("order",),
        end_fields=("nr_reclaimed",),
        lost_lines=lost_lines,
    )


def test_edge_cases_counted_one_by_one():
    # pid 9: end without begin (capture started mid-reclaim).
    # pid 10: begin@100, second begin@300 (overwrites), end@400 -> one 100 ns stall.
    # pid 11: begin@500, end@700, with a lost-events marker on line 6 in between.
    # pid 12: begin@900, never ends (open at the end of the capture).
    result = _pair(
        begin=[
            (1, "a", 10, 100, 0),
            (3, "a", 10, 300, 0),
            (5, "b", 11, 500, 2),
            (9, "c", 12, 900, 1),
        ],
        end=[(2, "x", 9, 150, 1), (4, "a", 10, 400, 2), (7, "b", 11, 700, 3)],
        lost_lines=[6],
    )
    r = result.report
    assert (r.count, r.overwritten_begin, r.open_at_end, r.unpaired_end) == (2, 1, 1, 1)
    assert r.unpaired_begin == 2
    assert r.total_s * 1e9 == (400 - 300) + (700 - 500)
    assert (r.lost_events, r.lost_affected) == (1, 1)
    closed = result.intervals.filter(pl.col("status") == "closed").sort("pid")
    assert closed["duration_ns"].to_list() == [100, 200]
    assert closed["order"].to_list() == [0, 2]
    assert closed["end_nr_reclaimed"].to_list() == [2, 3]
    assert closed["lost_events_inside"].to_list() == [False, True]
    open_row = result.intervals.filter(pl.col("status") == "open").row(0, named=True)
    assert (open_row["pid"], open_row["end_ts_ns"], open_row["duration_ns"]) == (12, None, None)


def test_out_of_order_lines_pair_by_timestamp_and_flag_clock():
    # trace_pipe merged CPUs: the end's line comes first but its timestamp is later.
    result = _pair(begin=[(2, "a", 10, 100, 0)], end=[(1, "a", 10, 150, 5)])
    assert (result.report.count, result.report.unpaired_end) == (1, 0)
    assert result.report.clock_backwards == 1
    assert result.intervals["duration_ns"].to_list() == [50]


def test_pid_reuse_is_flagged():
    result = _pair(begin=[(1, "old", 10, 100, 0)], end=[(2, "new", 10, 180, 1)])
    assert (result.report.count, result.report.comm_changed) == (1, 1)


def test_empty_input():
    result = _pair(begin=[], end=[])
    assert (result.report.count, result.report.total_s, result.intervals.height) == (0, 0.0, 0)


def test_context_from_enclosing_interval_and_comm():
    intervals = pl.DataFrame(
        {
            "kind": ["direct", "memcg", "direct"],
            "pid": [10, 11, 12],
            "begin_ts_ns": [100, 100, 500],
            "end_ts_ns": [200, 300, None],
        },
        schema_overrides={"pid": pl.Int32},
    )
    events = frame(
        [
            (1, "a", 10, 150),  # inside pid 10's direct reclaim
            (2, "a", 10, 250),  # after it ended
            (3, "b", 11, 300),  # at memcg reclaim's end (inclusive)
            (4, "c", 12, 10_000),  # inside an interval still open at the end
            (5, "kswapd0", 99, 150),  # kswapd by comm
            (6, "d", 13, 150),  # a pid that never reclaimed
        ]
    )
    labelled = label_context(events, intervals)
    assert labelled["context"].to_list() == [
        "direct",
        "other",
        "memcg",
        "direct",
        "kswapd",
        "other",
    ]
    assert labelled["line"].to_list() == [1, 2, 3, 4, 5, 6]


def test_block_pairing_restarts_a_pid_that_goes_back_in_time():
    """Fed block by block, a pid whose next block starts before its last event (``cat
    trace trace``) has its held begin closed as open at the end of the first capture and
    pairs afresh, counted in clock_backwards."""
    from analysis.metrics.pairing import Pairing

    s = 1_000_000_000
    begin1 = frame([(1, "dd", 7, 1 * s), (3, "dd", 7, 3 * s)])
    end1 = frame([(2, "dd", 7, 2 * s)])
    begin2 = frame([(4, "dd", 7, s // 2)])
    end2 = frame([(5, "dd", 7, s // 2 + 1000)])
    paired = Pairing("direct")
    rows = [paired.add(begin1, end1), paired.add(begin2, end2), paired.finish()]
    report = paired.report
    assert (report.count, report.open_at_end, report.clock_backwards) == (2, 1, 1)
    assert sorted(pl.concat(rows)["duration_ns"].drop_nulls().to_list()) == [1000, s]
