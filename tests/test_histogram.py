"""Histogram text from mails → weighted event frames; seed 000 reproduced block by block."""

from __future__ import annotations

import polars as pl
import pytest

from analysis.errors import InputError
from analysis.ingest import histogram
from analysis.metrics import pairing, throttle

SEED = "000_901e324e43c5b0b5.txt"


@pytest.fixture
def seed000(seeds_dir):
    return histogram.read(seeds_dir / SEED)


def _table(hist) -> pl.DataFrame:
    events = throttle.throttle_events(hist, pairing.all_intervals({}))
    return throttle.throttle_table(events)


def _row(table: pl.DataFrame, context: str, reason: str) -> dict:
    rows = table.filter((pl.col("context") == context) & (pl.col("reason") == reason))
    assert rows.height == 1
    return rows.row(0, named=True)


def test_seed000_blocks_are_separate_groups(seed000):
    # Totals read off the seed by hand: the two legacy blocks, the kswapd block
    # (1+4+5+6+11+11+94+112), the direct totals block and the three breakdowns.
    totals = [g.total_count for g in seed000.groups]
    assert totals == [82434, 1165, 244, 6624 + 93246 + 96934, 6624, 93246, 96934]
    assert seed000.groups[0].events == ("writeback_wait_iff_congested",)
    assert seed000.groups[1].events == ("writeback_congestion_wait",)
    assert seed000.groups[2].label.startswith("Kswapd throttle activity")
    assert seed000.accounting.unidentified_lines == ()


def test_seed000_direct_reclaim_breakdowns(seed000):
    table = _table(seed000)
    isolated = _row(table, "group 4", "VMSCAN_THROTTLE_ISOLATED")
    noprogress = _row(table, "group 5", "VMSCAN_THROTTLE_NOPROGRESS")
    writeback = _row(table, "group 6", "VMSCAN_THROTTLE_WRITEBACK")
    assert (isolated["count"], noprogress["count"], writeback["count"]) == (6624, 93246, 96934)
    assert isolated["timeout_share"] == pytest.approx(83 / 6624)
    assert noprogress["timeout_share"] == pytest.approx(51305 / 93246)
    assert writeback["timeout_share"] == pytest.approx(83962 / 96934)
    assert noprogress["zero_share"] == pytest.approx(22727 / 93246)
    assert isolated["mean_usec"] == pytest.approx((9 * 4000 + 12 * 16000 + 83 * 20000) / 6624)


def test_seed000_kswapd_and_legacy_blocks(seed000):
    table = _table(seed000)
    kswapd = _row(table, "group 2", "VMSCAN_THROTTLE_WRITEBACK")
    assert kswapd["count"] == 244
    # 11 of 244 at the 100 ms timeout = 4.5 %; the mail's "roughly 16 %" does not follow
    # from its own histogram.
    assert kswapd["timeout_share"] == pytest.approx(11 / 244)
    iff = _row(table, "group 0", "writeback_wait_iff_congested")
    assert (iff["count"], iff["zero_share"]) == (82434, pytest.approx(82394 / 82434))
    congestion = _row(table, "group 1", "writeback_congestion_wait")
    # congestion_wait always overran its 100 ms timeout (104-132 ms).
    assert (congestion["count"], congestion["timeout_share"]) == (1165, 1.0)


def test_seed000_totals_block_matches_breakdowns(seed000):
    check = histogram.totals_consistency(seed000)
    assert check["total"].to_list() == [6624, 93246, 96934]
    assert check["matching_groups"].to_list() == [[4], [5], [6]]


def test_seed000_hz_is_250(seed000):
    events = throttle.throttle_events(seed000, pairing.all_intervals({}))
    estimate = throttle.infer_hz(events, config_hz=250)
    assert (estimate.jiffy_us, estimate.hz, estimate.verdict) == (4000, 250.0, "agrees")
    assert throttle.infer_hz(events, config_hz=1000).verdict == "conflicts"


def test_labels_set_context(seeds_dir):
    hist = histogram.read(seeds_dir / SEED, labels={2: "kswapd", 5: "direct"})
    table = _table(hist)
    assert _row(table, "kswapd", "VMSCAN_THROTTLE_WRITEBACK")["count"] == 244
    assert _row(table, "direct", "VMSCAN_THROTTLE_NOPROGRESS")["count"] == 93246
    with pytest.raises(InputError, match="do not exist"):
        histogram.read(seeds_dir / SEED, labels={7: "x"})


CLEAN = """\
     11 usec_timeout=100000 usect_delayed=100000 reason=VMSCAN_THROTTLE_WRITEBACK
     94 usec_timeout=100000 usect_delayed=0 reason=VMSCAN_THROTTLE_WRITEBACK
    112 usec_timeout=100000 usect_delayed=4000 reason=VMSCAN_THROTTLE_WRITEBACK
"""

# The same block as a web archive renders a quoted mail: quote marks, non-breaking spaces,
# a wrapped line, the "fixed" usec_ spelling and quoted-printable =3D with a soft break.
MANGLED = (
    "> Kswapd throttle activity\n"
    ">\n"
    ">\u00a0\u00a0\u00a0\u00a0 11 usec_timeout=100000 usect_delayed=100000\n"
    "> reason=VMSCAN_THROTTLE_WRITEBACK\n"
    ">\u00a0\u00a0 94 usec_timeout=100000 usec_delayed=0 reason=VMSCAN_THROTTLE_WRITEBACK\n"
    ">    112 usec_timeout=3D100000 usect_delayed=3D4000 reason=3DVMSCAN_=\n"
    "THROTTLE_WRITEBACK\n"
)


def test_mail_artifacts_give_the_same_frame():
    clean = histogram.parse_histogram(CLEAN).events("mm_vmscan_throttled")
    mangled_hist = histogram.parse_histogram(MANGLED)
    mangled = mangled_hist.events("mm_vmscan_throttled")
    columns = ["count", "usec_timeout", "usect_delayed", "reason"]
    assert mangled.select(columns).equals(clean.select(columns))
    assert len(mangled_hist.groups) == 1
    assert mangled_hist.groups[0].label == "Kswapd throttle activity"
    assert mangled_hist.accounting.continuation_lines == 1
    assert mangled_hist.accounting.respelt_keys == 1
    assert mangled_hist.accounting.soft_breaks == 1


def test_event_token_with_system_prefix():
    hist = histogram.parse_histogram(
        "  3 vmscan:mm_vmscan_throttled: nid=0 usec_timeout=20000 usect_delayed=0 "
        "reason=VMSCAN_THROTTLE_ISOLATED\n"
    )
    frame = hist.events("mm_vmscan_throttled")
    assert frame.select("nid", "count").row(0) == (0, 3)


def test_unidentifiable_lines_are_counted_not_guessed():
    hist = histogram.parse_histogram("  5 foo=1 bar=2\n  2 usect_delayed=0\n")
    assert hist.accounting.unidentified_lines == (1,)
    assert hist.events("mm_vmscan_throttled")["count"].to_list() == [2]


def test_detection_by_content():
    trace_line = (
        "  kswapd0-32  [001] d..1.  461.757468: mm_vmscan_throttled: nid=0 usec_timeout=100000 "
        "usect_delayed=4000 reason=VMSCAN_THROTTLE_WRITEBACK\n"
    )
    assert histogram.looks_like_histogram(CLEAN)
    assert not histogram.looks_like_histogram(trace_line)
    assert not histogram.looks_like_histogram("just prose\n")
    with pytest.raises(InputError, match="no histogram lines"):
        histogram.parse_histogram("just prose\n", source="mail.txt")
