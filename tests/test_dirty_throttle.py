"""balance_dirty_pages and mm_page_alloc_extfrag in the registry (issue 30 item 3).

tests/data/writeback/balance_dirty_pages.trace was recorded here by
tests/data-gen/record-dirty-throttle.sh (a loop device's BDI with strict_limit, Linux
6.18, which prints wb_setpoint/wb_dirty). Expected sums are taken from the text with a
regular expression, not by the reader or the metric under test.
"""

from __future__ import annotations

import re
from collections import defaultdict

import polars as pl

from analysis.ingest import ftrace
from analysis.ingest.events import EVENTS
from analysis.metrics.dirty_throttle import dirty_throttle, pause_samples
from tests.conftest import REPO

TRACE = REPO / "tests/data/writeback/balance_dirty_pages.trace"
_LINE = re.compile(r"^\s*(.+)-(\d+)\s+\[\d+\].*: balance_dirty_pages: bdi (\S+): (.*)$")


def _by_hand() -> dict:
    out: dict = defaultdict(lambda: {"passes": 0, "sleeps": 0, "sleep_ms": 0})
    for line in TRACE.read_text().splitlines():
        if (match := _LINE.match(line)) is None:
            continue
        comm, pid, bdi, payload = match.groups()
        fields = dict(kv.split("=") for kv in payload.split())
        row = out[(comm.strip(), int(pid), bdi)]
        row["passes"] += 1
        if int(fields["pause"]) > 0:
            row["sleeps"] += 1
            row["sleep_ms"] += int(fields["pause"])
    return dict(out)


def test_real_balance_dirty_pages_trace(tmp_path) -> None:
    trace = ftrace.read(TRACE, cache_dir=tmp_path)
    assert trace.accounting.unparsed == 0
    events = trace.events("balance_dirty_pages")
    assert events["bdi"].unique().to_list() == ["7:0"]  # the loop device, not a column name
    assert (
        events["wb_dirty"].null_count() == 0 and events["bdi_dirty"].null_count() == events.height
    )
    result = dirty_throttle(events)
    expected = _by_hand()
    got = {
        (r["comm"], r["pid"], r["bdi"]): {k: r[k] for k in ("passes", "sleeps", "sleep_ms")}
        for r in result.table.iter_rows(named=True)
    }
    assert got == expected
    assert result.passes == 51 and result.sleep_ms == sum(r["sleep_ms"] for r in expected.values())
    # Pauses are whole jiffies of this HZ=250 kernel.
    assert all(p % 4 == 0 for p in pause_samples(events))


def test_untraced_is_not_zero() -> None:
    frame = pl.DataFrame(
        schema={"comm": str, "pid": int, "bdi": str, "pause": int, "task_ratelimit": int}
    )
    result = dirty_throttle(frame, traced=False)
    assert not result.traced and result.table.is_empty()


def test_extfrag_line_of_the_kernel_format() -> None:
    """SYNTHETIC line in include/trace/events/kmem.h's format (no fallback happened here)."""
    assert EVENTS["mm_page_alloc_extfrag"].noisy
    acc, frames = ftrace.parse_text(
        "  dd-2345  [001] ..... 100.030001: mm_page_alloc_extfrag: page=000000004a0e6cd8 "
        "pfn=0x12a400 alloc_order=0 fallback_order=9 pageblock_order=9 alloc_migratetype=1 "
        "fallback_migratetype=0 fragmenting=0 change_ownership=1\n"
    )
    row = frames["mm_page_alloc_extfrag"].row(0, named=True)
    assert acc.unparsed == 0 and row["pfn"] == 0x12A400 and row["fallback_order"] == 9
