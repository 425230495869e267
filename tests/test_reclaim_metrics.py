"""Ops rows: seed 000's published figures, old kernels, cgroup-limit reclaim, intervals."""

from __future__ import annotations

import pytest

from analysis.ingest import vmstat
from analysis.metrics.ops import Elapsed, interval_series, ops_report

# Seed 000 (5.15.0-rc1 vanilla), "Ops" deltas as published; elapsed from "Duration Elapsed".
SEED = {
    "pgscan_direct": 1056608451,
    "pgscan_kswapd": 109795048,
    "pgsteal_kswapd": 63269243,
    "pgsteal_direct": 10803973,
    "nr_vmscan_write": 2613590,
    "pswpout": 2932752,
    "nr_vmscan_immediate_reclaim": 996248528,
    "slabs_scanned": 164284,
}
SEED_ELAPSED = 2277.67


def snapshots(delta: dict[str, int], base: int = 1000) -> vmstat.Samples:
    """A before/after pair whose counters differ by ``delta`` (starting from ``base``)."""
    before = "".join(f"{k} {base}\n" for k in delta)
    after = "".join(f"{k} {base + v}\n" for k, v in delta.items())
    return vmstat.pair(
        vmstat.parse("nr_free_pages 1\n" + before), vmstat.parse("nr_free_pages 1\n" + after)
    )


def test_seed_000_published_rows():
    r = ops_report(snapshots(SEED), Elapsed(SEED_ELAPSED, "command line"))
    assert r.value("Kswapd efficiency %") == pytest.approx(57.62, abs=0.005)
    assert r.value("Direct efficiency %") == pytest.approx(1.02, abs=0.005)
    assert r.value("Percentage direct scans") == pytest.approx(90.59, abs=0.005)
    assert r.value("Kswapd velocity") == pytest.approx(48204.98, abs=0.005)
    assert r.value("Direct velocity") == pytest.approx(463898.83, abs=0.005)
    assert r.value("Page writes anon") == 2932752
    assert r.value("Page reclaim immediate") == 996248528
    assert r.elapsed == Elapsed(SEED_ELAPSED, "command line")


def test_seed_000_file_writes_cannot_be_split():
    # pswpout (2932752) > nr_vmscan_write (2613590): THP swap-out counts pages differently.
    row = next(
        x
        for x in ops_report(snapshots(SEED), Elapsed(1, "x")).rows
        if x.label == "Page writes file"
    )
    assert row.value is None and "THP" in row.note


def test_old_kernel_per_zone_names_give_the_same_rows():
    zoned = {
        "pgscan_direct_dma32": 56608451,
        "pgscan_direct_normal": 1000000000,
        "pgscan_kswapd_dma32": 9795048,
        "pgscan_kswapd_normal": 100000000,
        "pgsteal_kswapd_dma32": 3269243,
        "pgsteal_kswapd_normal": 60000000,
        "pgsteal_direct_normal": 10803973,
    }
    r = ops_report(snapshots(zoned), Elapsed(SEED_ELAPSED, "command line"))
    assert r.value("Kswapd efficiency %") == pytest.approx(57.62, abs=0.005)
    assert r.value("Percentage direct scans") == pytest.approx(90.59, abs=0.005)
    assert r.value("Kswapd velocity") == pytest.approx(48204.98, abs=0.005)


def test_pre_3_4_kernels_pgsteal_per_zone_and_kswapd_steal():
    old = {"pgscan_kswapd_normal": 200, "pgscan_direct_normal": 100}
    old |= {"pgsteal_normal": 150, "kswapd_steal": 120}
    r = ops_report(snapshots(old), Elapsed(10, "x"))
    assert r.value("Kswapd pages reclaimed") == 120
    assert r.value("Direct pages reclaimed") == 30
    assert r.value("Kswapd efficiency %") == pytest.approx(60.0)


def test_allocation_stalls_are_summed_over_zones():
    r = ops_report(snapshots({"allocstall_dma32": 5, "allocstall_normal": 11}), Elapsed(1, "x"))
    assert r.value("Allocation stalls") == 16


def test_efficiency_is_null_when_nothing_scanned():
    r = ops_report(snapshots({"pgscan_kswapd": 0, "pgsteal_kswapd": 0}), Elapsed(1, "x"))
    row = next(x for x in r.rows if x.label == "Kswapd efficiency %")
    assert row.value is None and row.note == "nothing scanned"
    assert r.value("Kswapd velocity") == 0


def test_gauges_are_never_differenced_into_rows():
    # nr_dirty rising by 10^6 must not appear anywhere as reclaim or writes.
    s = vmstat.pair(
        vmstat.parse("nr_free_pages 1\nnr_dirty 5\nnr_vmscan_write 0\n"),
        vmstat.parse("nr_free_pages 1\nnr_dirty 1000005\nnr_vmscan_write 3\n"),
    )
    assert ops_report(s, Elapsed(1, "x")).value("Page writes by reclaim") == 3


def test_cgroup_limit_reclaim_shows_in_its_own_rows():
    # A 6.x kernel: memcg-limit reclaim scanned 5000 file + 1000 anon pages, kswapd 400.
    delta = {
        "pgscan_kswapd": 400,
        "pgscan_direct": 0,
        "pgscan_khugepaged": 0,
        "pgsteal_kswapd": 300,
        "pgsteal_direct": 0,
        "pgsteal_khugepaged": 0,
        "pgscan_anon": 1000,
        "pgscan_file": 5400,
        "pgsteal_anon": 100,
        "pgsteal_file": 3200,
    }
    r = ops_report(snapshots(delta), Elapsed(20, "x"))
    assert r.value("Cgroup-limit pages scanned") == 6000
    assert r.value("Cgroup-limit pages reclaimed") == 3000
    assert r.value("Cgroup-limit efficiency %") == pytest.approx(50.0)
    assert r.value("Cgroup-limit velocity") == pytest.approx(300.0)
    assert r.value("Direct pages scanned") == 0


def test_cgroup_rows_need_the_anon_file_split():
    r = ops_report(snapshots({"pgscan_kswapd": 10, "pgsteal_kswapd": 5}), Elapsed(1, "x"))
    row = next(x for x in r.rows if x.label == "Cgroup-limit pages scanned")
    assert row.value is None and "5.8" in row.note


def test_reset_makes_the_row_null_with_a_reason():
    s = vmstat.pair(
        vmstat.parse("nr_free_pages 1\npgscan_kswapd 500\npgsteal_kswapd 100\n"),
        vmstat.parse("nr_free_pages 1\npgscan_kswapd 50\npgsteal_kswapd 120\n"),
    )
    r = ops_report(s, Elapsed(1, "x"))
    row = next(x for x in r.rows if x.label == "Kswapd efficiency %")
    assert row.value is None and "pgscan_kswapd" in row.note
    assert r.value("Kswapd pages reclaimed") == 20
    assert [x.counter for x in r.resets] == ["pgscan_kswapd"]


def test_velocity_without_elapsed_says_so():
    r = ops_report(snapshots({"pgscan_kswapd": 10, "pgsteal_kswapd": 5}))
    row = next(x for x in r.rows if x.label == "Kswapd velocity")
    assert row.value is None and "--elapsed" in row.note
    assert r.elapsed.source == "unknown"


def test_monitor_elapsed_defaults_to_sample_span_and_series_per_interval():
    dumps = [
        (100, {"pgscan_kswapd": 0, "pgsteal_kswapd": 0, "pgscan_direct": 0, "pgsteal_direct": 0}),
        (
            101,
            {"pgscan_kswapd": 100, "pgsteal_kswapd": 50, "pgscan_direct": 0, "pgsteal_direct": 0},
        ),
        (
            103,
            {"pgscan_kswapd": 100, "pgsteal_kswapd": 50, "pgscan_direct": 40, "pgsteal_direct": 4},
        ),
    ]
    text = "".join(
        f"time: {t}\nnr_free_pages 1\n" + "".join(f"{k} {v}\n" for k, v in d.items())
        for t, d in dumps
    )
    samples = vmstat.parse(text)
    r = ops_report(samples)
    assert r.elapsed == Elapsed(3.0, "vmstat sample span")
    assert r.value("Kswapd velocity") == pytest.approx(100 / 3)
    series, resets = interval_series(samples)
    assert resets == ()
    assert series["t_s"].to_list() == [1.0, 3.0]
    assert series["Kswapd pages scanned"].to_list() == [100, 0]
    assert series["Kswapd efficiency %"].to_list() == [50.0, None]
    assert series["Direct velocity"].to_list() == [0.0, 20.0]
    assert series["Direct efficiency %"].to_list() == [None, 10.0]


def test_memcg_v1_charge_events_are_not_sector_reads():
    """Issue 29 item 5: cgroup v1 memory.stat pgpgin/pgpgout count pages charged and
    uncharged (80,091 of them), not KiB read from disk (4,196 KiB in /proc/vmstat)."""
    from analysis.metrics.ops import MEMCG_CHARGES_NOTE

    def memcg(pgpgin: int) -> str:
        return f"cache 12288\nrss 0\npgpgin {pgpgin}\npgpgout 10\npgfault 5\n"

    pair = vmstat.pair(vmstat.parse(memcg(1000)), vmstat.parse(memcg(81091)))
    assert pair.kind == "memcg_v1"
    r = ops_report(pair, Elapsed(10.0, "command line"))
    for label in ("Sector Reads", "Sector Writes"):
        row = next(x for x in r.rows if x.label == label)
        assert row.value is None and row.note == MEMCG_CHARGES_NOTE
    # /proc/vmstat's pgpgin is the KiB read: the row stands.
    disk = ops_report(snapshots({"pgpgin": 4196, "pgpgout": 8}), Elapsed(10.0, "command line"))
    assert disk.value("Sector Reads") == 4196 and disk.value("Sector Writes") == 8
