"""/proc/vmstat and memory.stat reading: formats from content, gauges, resets, bad input."""

from __future__ import annotations

import gzip
import os

import pytest

from analysis.errors import InputError
from analysis.ingest import vmstat

BEFORE = "nr_free_pages 5000\nnr_dirty 100\npgscan_kswapd 10\npgsteal_kswapd 4\nnr_vmscan_write 7\n"
AFTER = (
    "nr_free_pages 4000\nnr_dirty 900\npgscan_kswapd 110\npgsteal_kswapd 64\nnr_vmscan_write 9\n"
)


def monitor(*dumps: tuple[float, str]) -> str:
    return "".join(f"time: {t:.0f}\n{d}" for t, d in dumps)


def write(tmp_path, name: str, text: str | bytes) -> str:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(path)


def test_plain_snapshot_pair_differences_counters_only(tmp_path):
    s = vmstat.pair(
        vmstat.read(write(tmp_path, "a", BEFORE)), vmstat.read(write(tmp_path, "b", AFTER))
    )
    assert (s.kind, s.layout, len(s)) == ("proc_vmstat", "snapshot pair", 2)
    deltas, resets = vmstat.counter_deltas(s)
    assert resets == ()
    row = deltas.row(0, named=True)
    assert row["pgscan_kswapd"] == 100 and row["pgsteal_kswapd"] == 60
    # nr_vmscan_write is a counter despite its prefix; nr_dirty/nr_free_pages are levels.
    assert row["nr_vmscan_write"] == 2
    assert "nr_dirty" not in deltas.columns and "nr_free_pages" not in deltas.columns


@pytest.mark.parametrize("compress", [False, True])
def test_monitor_log_plain_or_gzip_detected_from_content(tmp_path, compress):
    text = monitor((1000, BEFORE), (1001, AFTER), (1003, AFTER.replace("110", "150")))
    data = gzip.compress(text.encode()) if compress else text.encode()
    s = vmstat.read(write(tmp_path, "whatever.txt", data))  # the name says nothing
    assert (s.layout, len(s)) == ("monitor", 3)
    deltas, _ = vmstat.counter_deltas(s)
    assert deltas["dt_s"].to_list() == [1.0, 2.0]
    assert deltas["pgscan_kswapd"].to_list() == [100, 40]
    assert deltas["interval"].to_list() == [1, 2]


def test_tests_sysstate_reads_vmstat_blocks_and_counts_the_rest(tmp_path):
    text = (
        "file start :: /proc/zoneinfo\nNode 0, zone DMA\n  pages free 3\n"
        f"file start :: /proc/vmstat\n{BEFORE}"
        "file end :: /proc/meminfo\nMemTotal: 1 kB\n"
        f"file end :: /proc/vmstat\n{AFTER}"
    )
    s = vmstat.read(write(tmp_path, "tests-sysstate", text))
    assert (s.layout, len(s), s.other_lines) == ("tests-sysstate", 2, 3)
    assert vmstat.counter_deltas(s)[0]["pgsteal_kswapd"][0] == 60


def test_memcg_stat_kinds_from_content(tmp_path):
    v1 = "cache 4096\nrss 8192\npgpgin 10\npgfault 30\nhierarchical_memory_limit 1\n"
    v2 = "anon 4096\nfile 8192\npgscan 30\npgsteal 20\nworkingset_nodes 5\n"
    assert vmstat.read(write(tmp_path, "x", v1)).kind == "memcg_v1"
    assert vmstat.read(write(tmp_path, "y", v2)).kind == "memcg_v2"
    assert vmstat.is_gauge("cache", "memcg_v1") and not vmstat.is_gauge("pgfault", "memcg_v1")
    assert vmstat.is_gauge("anon", "memcg_v2") and not vmstat.is_gauge("pgscan", "memcg_v2")
    assert vmstat.is_gauge("workingset_nodes", "memcg_v2")


def test_unknown_counters_are_kept(tmp_path):
    s = vmstat.read(write(tmp_path, "a", BEFORE + "pgfuture_event 3\n"))
    assert "pgfuture_event" in s.names


def test_counter_that_goes_down_is_reported_not_negative(tmp_path):
    text = monitor((1, BEFORE), (2, AFTER), (3, BEFORE))
    deltas, resets = vmstat.counter_deltas(vmstat.read(write(tmp_path, "m", text)))
    assert deltas["pgscan_kswapd"].to_list() == [100, None]
    assert {(r.counter, r.interval, r.before, r.after) for r in resets} == {
        ("pgscan_kswapd", 2, 110, 10),
        ("pgsteal_kswapd", 2, 64, 4),
        ("nr_vmscan_write", 2, 9, 7),
    }
    assert "went down" in str(resets[0])


def test_canonical_sums_old_per_zone_counters_and_renames():
    import polars as pl

    old = pl.DataFrame(
        {
            "pgscan_kswapd_dma32": [30],
            "pgscan_kswapd_normal": [70],
            "allocstall_dma32": [3],
            "allocstall_normal": [4],
            "pgscan_direct_throttle": [9],
            "thp_split": [2],
        }
    )
    canon = vmstat.canonical(old).row(0, named=True)
    assert canon["pgscan_kswapd"] == 100
    assert canon["allocstall"] == 7  # summed: mmtests overwrites and would say 4
    assert "pgscan_direct" not in canon  # _throttle is not a zone
    assert canon["thp_split_page"] == 2 and canon["thp_split"] == 2


def test_canonical_pre_3_4_pgsteal_split_into_kswapd_and_direct():
    import polars as pl

    old = pl.DataFrame({"pgsteal_dma32": [40], "pgsteal_normal": [60], "kswapd_steal": [75]})
    canon = vmstat.canonical(old).row(0, named=True)
    assert (canon["pgsteal_kswapd"], canon["pgsteal_direct"]) == (75, 25)


BAD = [
    ("empty", b"", "empty file", None),
    ("blank", b"\n\n  \n", "empty file", None),
    ("garbage", os.urandom(64).replace(b"\n", b"") + b"\x00\xff\n", "binary content", 1),
    ("truncated", BEFORE.encode() + b"pgscan_dire", "truncated", 6),
    ("duplicate", (BEFORE + "pgscan_kswapd 12\n").encode(), "appears twice (first on line 3)", 6),
    ("meminfo", b"MemTotal:       24000000 kB\nMemFree: 1 kB\n", "not a /proc/vmstat", 1),
    ("other counters", b"foo 1\nbar 2\n", "neither /proc/vmstat", 1),
    ("bad line", (BEFORE + "pgscan_direct twelve\n").encode(), "expected 'name value'", 6),
    ("time backwards", monitor((5, BEFORE), (4, AFTER)).encode(), "time goes backwards", 7),
    ("half sysstate", f"file start :: /proc/vmstat\n{BEFORE}".encode(), "no 'file end", None),
]


@pytest.mark.parametrize(("name", "data", "reason", "line"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_one_clear_error_naming_file_and_line(tmp_path, name, data, reason, line):
    path = write(tmp_path, "input", data)
    with pytest.raises(InputError) as err:
        vmstat.read(path)
    assert reason in str(err.value)
    assert str(err.value).startswith(path)
    assert err.value.line == line


def test_truncated_gzip_names_the_file(tmp_path):
    data = gzip.compress(monitor((1, BEFORE), (2, AFTER)).encode())
    path = write(tmp_path, "proc-vmstat-x.gz", data[: len(data) // 2])
    with pytest.raises(InputError, match="truncated gzip stream"):
        vmstat.read(path)
