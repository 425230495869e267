"""mmtests' ftrace summary rows (seed 002's vmscan block, seed 003's compaction block) on a
hand-built trace whose answers are worked out by hand below."""

from __future__ import annotations

import re

import polars as pl
import pytest

from analysis.ingest import mmtests
from analysis.metrics.trace_analysis import analyse_trace
from analysis.metrics.trace_rows import (
    VmscanTotals,
    benchmark_times,
    mmtests_trace_rows,
    vmscan_ratios,
)
from tests.conftest import DATA
from tests.test_stalls_support import FakeTrace, frame

I64 = pl.Int64
NID = {"nid": I64}
WRITE = {"page": pl.String, "pfn": I64, "flags": pl.List(pl.String)}
MS = 1_000_000  # ns


def _write(line: int, comm: str, pid: int, ts: int, *flags: str) -> tuple:
    return (line, comm, pid, ts, "0x0", 1, list(flags))


def _trace() -> FakeTrace:
    """dd (pid 100) direct-reclaims 1..5 ms and writes one anon page synchronously inside;
    kswapd0 is awake 0..2 ms, compacts 0.5..1 ms and writes 2 anon, 1 file page async;
    kcompactd0 is awake 1..4 ms and compacts 1.5..3.5 ms; dd (pid 8) compacts 10..12.5 ms;
    a write by dd outside any reclaim interval is not a reclaim write."""
    return FakeTrace(
        {
            "mm_vmscan_direct_reclaim_begin": frame([(3, "dd", 100, 1 * MS, 0)], {"order": I64}),
            "mm_vmscan_direct_reclaim_end": frame([(9, "dd", 100, 5 * MS, 7)], {"nr": I64}),
            "mm_vmscan_kswapd_wake": frame([(1, "kswapd0", 32, 0, 0)], NID),
            "mm_vmscan_kswapd_sleep": frame([(6, "kswapd0", 32, 2 * MS, 0)], NID),
            "mm_compaction_kcompactd_wake": frame([(4, "kcompactd0", 9, 1 * MS, 0)], NID),
            "mm_compaction_kcompactd_sleep": frame([(12, "kcompactd0", 9, 4 * MS, 0)], NID),
            "mm_compaction_begin": frame(
                [
                    (2, "kswapd0", 32, MS // 2),
                    (5, "kcompactd0", 9, 3 * MS // 2),
                    (13, "dd", 8, 10 * MS),
                ]
            ),
            "mm_compaction_end": frame(
                [
                    (4, "kswapd0", 32, 1 * MS, "success"),
                    (11, "kcompactd0", 9, 7 * MS // 2, "complete"),
                    (14, "dd", 8, 25 * MS // 2, "contended"),
                ],
                {"status": pl.String},
            ),
            "mm_vmscan_write_folio": frame(
                [
                    _write(5, "kswapd0", 32, 3 * MS // 2, "RECLAIM_WB_ANON", "RECLAIM_WB_ASYNC"),
                    _write(6, "kswapd0", 32, 3 * MS // 2, "RECLAIM_WB_ANON", "RECLAIM_WB_ASYNC"),
                    _write(7, "kswapd0", 32, 3 * MS // 2, "RECLAIM_WB_FILE", "RECLAIM_WB_ASYNC"),
                    _write(8, "dd", 100, 3 * MS, "RECLAIM_WB_ANON", "RECLAIM_WB_SYNC"),
                    _write(15, "dd", 100, 20 * MS, "RECLAIM_WB_FILE", "RECLAIM_WB_ASYNC"),
                ],
                WRITE,
            ),
        }
    )


def test_rows_under_mmtests_names_and_units():
    rows = {(r.block, r.label): r for r in mmtests_trace_rows(analyse_trace(_trace()))}

    def value(block: str, label: str) -> tuple[float | None, str]:
        return rows[block, label].value, rows[block, label].unit

    assert value("vmscan", "Direct reclaims") == (1, "count")
    assert value("vmscan", "Kswapd wakeups") == (1, "count")
    assert value("vmscan", "Time stalled direct reclaim (seconds)") == (pytest.approx(4e-3), "s")
    assert value("vmscan", "Time kswapd awake (seconds)") == (pytest.approx(2e-3), "s")
    writes = {
        ("Direct", "file", "async"): 0,
        ("Direct", "anon", "async"): 0,
        ("Direct", "anon", "sync"): 1,
        ("Kswapd", "anon", "async"): 2,
        ("Kswapd", "file", "async"): 1,
        ("Kswapd", "file", "sync"): 0,
    }
    for (who, kind, mode), count in writes.items():
        assert value("vmscan", f"{who} reclaim write {kind} {mode} I/O") == (count, "writes")
    compaction = {
        "Time kswapd awake": 2.0,
        "Time kcompactd awake": 3.0,
        "Time direct compacting": 2.5,
        "Time kswapd compacting": 0.5,
        "Time kcompactd compacting": 2.0,
        "Time khugepaged compacting": 0.0,
    }
    for label, ms in compaction.items():
        assert value("compaction", label) == (pytest.approx(ms), "ms"), label
    # The hand-built trace has no LRU and no wakeup_kswapd events (issue 29 item 4: not
    # traced, never 0) and no tests-timestamp (the time ratios).
    lru = "not traced: no mm_vmscan_lru_shrink_inactive events in the trace"
    noted = {r.label: r.note for r in rows.values() if r.note}
    for label in (
        "Direct reclaim pages scanned",
        "Direct reclaim pages reclaimed",
        "Kswapd pages scanned",
        "Kswapd pages reclaimed",
        "Total pages scanned",
        "Total pages reclaimed",
        "%age total pages scanned/reclaimed",
        "%age total pages scanned/written",
        "%age file pages scanned/written",
    ):
        assert (rows["vmscan", label].value, noted.pop(label)) == (None, lru), label
    assert noted.pop("Wake kswapd requests").startswith("not traced: no mm_vmscan_wakeup_kswapd")
    assert set(noted) == {"Percentage Time Spent Direct Reclaim", "Percentage Time kswapd Awake"}


def test_absent_events_give_null_with_a_reason_not_zero():
    trace = _trace()
    frames = {k: v for k, v in trace.frames.items() if "compact" not in k and "kswapd" not in k}
    rows = {r.label: r for r in mmtests_trace_rows(analyse_trace(FakeTrace(frames)))}
    assert rows["Time direct compacting"].value is None
    assert rows["Time direct compacting"].note == "no mm_compaction_begin/end in the trace"
    assert rows["Time kcompactd awake"].value is None
    # kswapd0 still wrote pages: active with no wake/sleep event, so only bounds are known.
    kswapd = rows["Time kswapd awake"]
    assert kswapd.value == 0 and kswapd.note.startswith("lower bound")
    assert rows["Direct reclaims"].value == 1


def seed_002_columns(text: str, label: str) -> list[list[float]]:
    """Both published columns of row ``label`` in each of seed 002's two tables (quoted
    ``> > `` or not, figures with or without ``%``), table order."""
    pattern = rf"^[> ]*{re.escape(label)}\s+([\d.]+)%?\s+([\d.]+)%?\s*$"
    return [[float(v) for v in m] for m in re.findall(pattern, text, flags=re.M)]


def test_closing_rows_reproduce_seed_002(seeds_dir):
    """Seed 002 publishes each ratio's inputs beside it: the postmark table (quoted) and
    the streaming-IO ("micro") table. User/Sys is user + system together."""
    text = (seeds_dir / "002_a4f0b6806489fc3c.txt").read_text()

    def col(label: str) -> list[list[float]]:
        return seed_002_columns(text, label)

    def written(kind: str) -> list[list[float]]:
        """Σ of the four write rows of ``kind`` (direct/kswapd × async/sync), per table."""
        rows = [
            col(f"{who} reclaim write {kind} {mode} I/O")
            for who in ("Direct", "Kswapd")
            for mode in ("async", "sync")
        ]
        return [[sum(v) for v in zip(*table, strict=True)] for table in zip(*rows, strict=True)]

    scanned = col("Total pages scanned")
    cpu = col("User/Sys Time Running Test (seconds)")
    elapsed = col("Total Elapsed Time (seconds)")
    stalled = col("Time stalled direct reclaim (seconds)")
    awake = col("Time kswapd awake (seconds)")
    files, anon = written("file"), written("anon")
    # Only the postmark table prints the pages reclaimed (its ratio: 99.48 %, 99.49 %).
    reclaimed = [*col("Total pages reclaimed"), [0.0, 0.0]]
    published = {
        label: col(label)
        for label in (
            "%age total pages scanned/written",
            "Percentage Time Spent Direct Reclaim",
            "Percentage Time kswapd Awake",
        )
    }
    published["%age total pages scanned/reclaimed"] = col("%age total pages scanned/reclaimed")[:1]
    assert len(scanned) == len(cpu) == len(files) == 2
    for t in range(2):
        for c in range(2):
            totals = VmscanTotals(
                scanned=scanned[t][c],
                reclaimed=reclaimed[t][c],
                written=files[t][c] + anon[t][c],
                file_written=files[t][c],
                stalled_s=stalled[t][c],
                awake_s=awake[t][c],
            )
            # user_s carries user + system: the seed prints only their sum.
            times = mmtests.TestTimes(
                "seed", user_s=cpu[t][c], system_s=0.0, elapsed_s=elapsed[t][c]
            )
            rows = {r.label: r.value for r in vmscan_ratios(totals, times)}
            for label, columns in published.items():
                if t < len(columns):
                    assert round(rows[label], 2) == columns[t][c], (label, t, c)


def test_benchmark_times_are_those_of_the_trace_s_iteration():
    iteration = DATA / "stutterp-dirty20" / "dirty20" / "iter-0"
    words = (iteration / "tests-timestamp").read_text().split("time :: stutterp ")[1].split()
    times = benchmark_times(iteration / "ftrace-stutterp.zst")
    assert (times.user_s, times.system_s, times.elapsed_s) == tuple(map(float, words[0:5:2]))
    assert benchmark_times(DATA / "mail" / "000_901e324e43c5b0b5.txt") is None


LRU = {
    "nid": I64,
    "nr_scanned": I64,
    "nr_reclaimed": I64,
    "flags": pl.List(pl.String),
}


def test_memcg_reclaim_is_named_in_the_totals_and_absent_families_are_not_traced():
    """Issue 29 item 4, by hand: dd (pid 7) reclaims for its cgroup's limit 1..3 ms and
    scans 40 file pages, 30 reclaimed; a direct reclaim whose end says nr_reclaimed=209
    with no LRU events would be "not traced", never 0 pages."""
    memcg = FakeTrace(
        {
            "mm_vmscan_memcg_reclaim_begin": frame([(1, "dd", 7, 1 * MS, 0)], {"order": I64}),
            "mm_vmscan_memcg_reclaim_end": frame([(3, "dd", 7, 3 * MS, 30)], {"nr": I64}),
            "mm_vmscan_lru_shrink_inactive": frame(
                [(2, "dd", 7, 2 * MS, 0, 40, 30, ["RECLAIM_WB_FILE"])], LRU
            ),
        }
    )
    result = analyse_trace(memcg)
    summary = {r["statistic"]: r for r in result.summary.iter_rows(named=True)}
    assert summary["Memcg reclaim pages scanned"]["value"] == 40
    # Direct reclaim scanned nothing (the LRU events are traced): a real 0.
    assert (
        summary["Direct reclaim pages scanned"]["value"],
        summary["Direct reclaims"]["value"],
    ) == (0, None)
    assert summary["Direct reclaims"]["note"].startswith("not traced: no mm_vmscan_direct")
    rows = {r.label: r for r in mmtests_trace_rows(result)}
    total = rows["Total pages scanned"]
    assert (total.value, total.note) == (
        0,
        "direct reclaim and kswapd only: memcg reclaim scanned 40 pages (Memcg reclaim rows)",
    )
    assert "memcg reclaim scanned 40 pages" in rows["%age total pages scanned/reclaimed"].note

    direct = FakeTrace(
        {
            "mm_vmscan_direct_reclaim_begin": frame([(1, "dd", 7, 1 * MS, 0)], {"order": I64}),
            "mm_vmscan_direct_reclaim_end": frame([(2, "dd", 7, 2 * MS, 209)], {"nr": I64}),
        }
    )
    summary = {r["statistic"]: r for r in analyse_trace(direct).summary.iter_rows(named=True)}
    reclaimed = summary["Direct reclaim pages reclaimed"]
    assert (reclaimed["value"], summary["Direct reclaims"]["value"]) == (None, 1)
    assert reclaimed["note"] == "not traced: no mm_vmscan_lru_shrink_inactive events in the trace"
