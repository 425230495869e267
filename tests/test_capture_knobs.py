"""A trace against the patched kernel's knobs: throttle timeouts and the deferral divisor.

The expected numbers are worked by hand: jiffies at HZ=250 are 4 ms, ``msecs_to_jiffies``
rounds up; the shrinker rows are seed 001's worked example, 1,800,000 freeable, priority
12, 1,000,000 deferred, delta 878
(docs/shrinker-deferral.md "Worked example (seed 001, recomputed)").
"""

from __future__ import annotations

import polars as pl
import pytest

from analysis.capture.knobs import (
    check_deferral,
    check_throttle,
    expected_timeouts_us,
    usec_timeout,
)


@pytest.mark.parametrize(
    ("ms", "hz", "usec"),
    [(20, 250, 20_000), (500, 250, 500_000), (1, 250, 4_000), (3, 250, 4_000), (3, 1000, 3_000)],
)
def test_knob_milliseconds_round_up_to_jiffies(ms, hz, usec):
    assert usec_timeout(ms, hz) == usec


def test_expected_timeouts_keep_the_builtin_ones_for_absent_knobs():
    got = expected_timeouts_us({"vm.reclaim_throttle_writeback_ms": "500"}, 250)
    assert got == {
        "VMSCAN_THROTTLE_WRITEBACK": 500_000,
        "VMSCAN_THROTTLE_ISOLATED": 20_000,  # HZ/50 = 5 jiffies
        "VMSCAN_THROTTLE_NOPROGRESS": 4_000,
        "VMSCAN_THROTTLE_CONGESTED": 4_000,
    }
    assert expected_timeouts_us({}, 250)["VMSCAN_THROTTLE_WRITEBACK"] == 100_000  # HZ/10


def test_throttle_check_reports_each_reason_and_every_timeout_seen():
    events = pl.DataFrame(
        {
            "reason": ["VMSCAN_THROTTLE_WRITEBACK"] * 3 + ["VMSCAN_THROTTLE_CONGESTED"],
            "usec_timeout": [20_000, 20_000, 100_000, 4_000],
        }
    )
    expected = expected_timeouts_us({"vm.reclaim_throttle_writeback_ms": "20"}, 250)
    congested, writeback = check_throttle(events, expected)
    assert (writeback.events, writeback.seen_us, writeback.agrees) == (3, (20_000, 100_000), False)
    assert (congested.events, congested.expected_us, congested.agrees) == (1, 4_000, True)
    only = check_throttle(events.head(2), expected)
    assert [c.agrees for c in only] == [True]


def _starts(total_scan: list[int]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "nr_objects_to_shrink": [1_000_000, 0, 10_000, 5],
            "priority": [12, 12, 0, None],  # a pre-4.16 line has no priority: left out
            "delta": [878, 878, 50, 1],
            "cache_items": [1_800_000, 1_800_000, 100, 10],
            "total_scan": total_scan,
        }
    )


def test_deferral_check_recomputes_the_worked_example():
    # The kernel ran divisor "priority": 878 + 1,000,000 // 12 = 84,211; the clamp row is
    # min(10,050, 200) = 200 under any divisor, the nr = 0 row is delta alone.
    starts = _starts([84_211, 878, 200, 999])
    by_priority = check_deferral(starts, "priority")
    assert (by_priority.calls, by_priority.with_deferred, by_priority.matching) == (3, 2, 3)
    assert (by_priority.discriminating, by_priority.discriminating_matching) == (1, 1)
    assert by_priority.agrees
    default = check_deferral(starts, "2^priority")  # 244 + 878 = 1,122 expected
    assert (default.matching, default.discriminating, default.agrees) == (2, 0, False)
    one = check_deferral(starts, "1")  # 1,000,878 expected
    assert (one.matching, one.discriminating, one.discriminating_matching) == (2, 1, 0)
