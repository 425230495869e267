"""The block-wise analysis of an ingested trace (issue 32) is the analysis of its whole
frames: real captures cut into a dozen ingest blocks give every table, report and per-row
frame that the same events held in memory as one frame each give. Pairing carries open
intervals across block boundaries, the labeller joins each block with its window of
intervals, the every-event pass and the shrinker work counts add up per block; a mistake
in any of them shows here as a difference."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import zstandard
from polars.testing import assert_frame_equal

from analysis.ingest import ftrace
from analysis.ingest.ftrace import reader
from analysis.ingest.ftrace.cache import event_parts
from analysis.metrics import daemons
from analysis.metrics.duplicates import NEARBY_LINES, RepeatScreen
from analysis.metrics.every_event import activity_points
from analysis.metrics.trace_analysis import analyse_trace
from analysis.metrics.trace_files import TABLES
from tests.conftest import REPO

CAPTURES = {
    # memcg reclaim, throttling, LRU and shrinker calls of a cgroup under its limit
    "memcg": REPO / "tests/data/vmscan-perl/slice.trace.zst",
    # global pressure: kswapd wakes and sleeps, direct reclaim, compaction, shrinkers
    "global": REPO / "data/vm-6.12-lab/pilot/global-shrinker/iter-3/ftrace-stutterp.zst",
}
BLOCKS = 12


@dataclass(frozen=True)
class WholeFrames:
    """An ingested trace read as one frame per event: without its ``directory`` and
    ``lazy``, the analysis reads it as a single block."""

    ingested: reader.Trace

    @property
    def source(self) -> Path:
        return self.ingested.source

    @property
    def accounting(self) -> reader.Accounting:
        return self.ingested.accounting

    @property
    def event_names(self) -> list[str]:
        return self.ingested.event_names

    @property
    def lost_events_total(self) -> int:
        return self.ingested.lost_events_total

    def events(self, name: str) -> pl.DataFrame:
        return self.ingested.events(name)


@pytest.fixture(scope="module", params=sorted(CAPTURES))
def both(request, tmp_path_factory):
    """(block-wise analysis, whole-frame analysis) of one capture."""
    text = zstandard.ZstdDecompressor().stream_reader(CAPTURES[request.param].read_bytes())
    path = tmp_path_factory.mktemp("blocks") / "capture.trace"
    path.write_bytes(text.read())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reader, "BLOCK_BYTES", path.stat().st_size // BLOCKS + 1)
        trace = ftrace.read(path, cache_dir=path.parent / "cache")
    assert len(event_parts(trace.directory, "mm_shrink_slab_start")) >= BLOCKS - 1
    return analyse_trace(trace), analyse_trace(WholeFrames(trace))


def test_every_table_is_the_whole_frames_one(both):
    blocked, whole = both
    for name in TABLES:
        assert_frame_equal(getattr(blocked, name), getattr(whole, name), check_exact=False)


def test_every_report_and_row_is_the_whole_frames_one(both):
    blocked, whole = both
    assert blocked.reclaim.keys() == whole.reclaim.keys()
    for context, paired in blocked.reclaim.items():
        assert paired.report == whole.reclaim[context].report
        assert_frame_equal(paired.intervals, whole.reclaim[context].intervals)
    assert blocked.compaction.report == whole.compaction.report
    assert_frame_equal(blocked.compaction.intervals, whole.compaction.intervals)
    assert_frame_equal(blocked.shrinker_invocations, whole.shrinker_invocations)
    assert (blocked.kswapd, blocked.kcompactd) == (whole.kswapd, whole.kcompactd)
    assert (blocked.capture_s, blocked.duplicates) == (whole.capture_s, whole.duplicates)
    assert blocked.shrinker_invocations.height > 100


def test_the_repeat_screen_clears_time_order_and_not_a_repeated_text():
    """A capture in time order is clear whatever its nearby repeats (two lines of one
    microsecond); the same lines again after it are not; a block boundary changes
    nothing."""
    lines = np.arange(1, 5001, dtype=np.int64)
    ts = lines * 1000
    ts[100] = ts[99]  # a task logging the same event twice within one microsecond
    screen = RepeatScreen()
    screen.add("e", lines[:2500], ts[:2500])
    screen.add("e", lines[2500:], ts[2500:])
    screen.add("other", lines, ts)  # another event's lines compare only with their own
    assert screen.clear
    twice = RepeatScreen()
    twice.add("e", lines, ts)
    twice.add("e", lines + 5000, ts)
    assert not twice.clear
    close = RepeatScreen()  # going back in time within NEARBY_LINES lines is ftrace's
    close.add("e", lines[:NEARBY_LINES], ts[NEARBY_LINES : 2 * NEARBY_LINES][::-1])
    assert close.clear


def test_activity_points_give_the_awake_time_of_all_activity():
    """kswapd's awake bounds read of its activity only the points kept: random activity
    of two threads around wakes and sleeps, the second named only by its pid (``<...>``),
    with a sleep first (awake when the capture began) and wakes to the end."""
    rng = np.random.default_rng(32)
    ts = np.sort(rng.choice(10**9, 4000, replace=False))
    pids = rng.choice([50, 51, 7], ts.size)
    comm = np.where(pids == 50, "kswapd0", np.where(pids == 51, "<...>", "dd"))
    activity = pl.DataFrame(
        {"pid": pids.astype(np.int32), "comm": comm, "ts_ns": ts.astype(np.int64)}
    )
    marks = np.sort(rng.choice(10**9, 60, replace=False))
    kinds = ["sleep", *rng.choice(["wake", "sleep"], 40, p=[0.7, 0.3]), *["wake"] * 19]

    def events(kind: str) -> pl.DataFrame:
        at = [i for i, k in enumerate(kinds) if k == kind]
        return pl.DataFrame(
            {
                "nid": [i % 2 for i in at],
                "pid": [50 if i % 2 == 0 else 51 for i in at],
                "ts_ns": marks[at].astype(np.int64),
                "line": at,
            }
        )

    wakes = events("wake")["ts_ns"].to_numpy()
    kept = pl.concat([activity_points(part, wakes) for part in activity.iter_slices(997)])
    assert kept.height < activity.height / 10

    def awake(rows: pl.DataFrame) -> list:
        reports = daemons.daemon_awake(
            events("wake"),
            events("sleep"),
            rows,
            daemon="kswapd",
            capture_start_ns=0,
            capture_end_ns=10**9,
        )
        return [asdict(r) for r in reports]

    assert awake(kept) == awake(activity)
    assert any(r["open_at_end"] for r in awake(activity))
