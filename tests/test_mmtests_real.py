"""Real mmtests trees (data/mmtests-ci, written by mmtests itself on a 4.18 ppc64le kernel).

Expected numbers are recomputed here from the gzip snapshots with plain ``gzip`` and
``str.split``, independently of mmlab's reader; where mmtests' own report would print
something else, the test says what and why (docs/mmtests-conventions.md).
"""

from __future__ import annotations

import gzip
import json
import lzma
import re
import shutil
from pathlib import Path

import pytest

from analysis.cli import main
from analysis.errors import InputError
from analysis.ingest import mmtests, vmstat
from analysis.ingest.kconfig import page_size
from analysis.metrics.compare import iteration_report
from analysis.metrics.ops import interval_series, iteration_elapsed, ops_report

from .conftest import DATA

TREES = DATA / "mmtests-ci" / "work"
RUN_DIRS = sorted(TREES.glob("log.*"))
CONFIG = "usemem-stress-numa-compact"
LARGE = TREES / "log.ltccip8.2020-06-03_1400"
BASELINE = TREES / "log.ltccip8.2020-06-12_1807"


def iter0(run_dir: Path) -> Path:
    return run_dir / CONFIG / "iter-0"


def snapshot_deltas(run_dir: Path) -> dict[str, int]:
    """end − start of every /proc/vmstat counter in ``tests-sysstate.gz``.

    The gz holds ``key :: value`` lines and blocks of several /proc files; only the lines
    between a ``file <which> :: /proc/vmstat`` header and the next line with ``::`` in it
    are /proc/vmstat.
    """
    snapshot: dict[str, dict[str, int]] = {"start": {}, "end": {}}
    which = None
    with gzip.open(iter0(run_dir) / "tests-sysstate.gz", "rt") as f:
        for line in f:
            words = line.split()
            if "::" in words:
                header = words[:2] == ["file", words[1]] and words[-1] == "/proc/vmstat"
                which = words[1] if header else None
            elif which is not None:
                snapshot[which][words[0]] = int(words[1])
    return {k: snapshot["end"][k] - v for k, v in snapshot["start"].items()}


def mmtests_allocation_stalls(run_dir: Path) -> int:
    """What mmtests prints: each ``allocstall_<zone>`` is renamed ``allocstall`` and
    overwrites the previous one, so the row is the delta of the last zone in file order."""
    deltas = snapshot_deltas(run_dir)
    return [v for k, v in deltas.items() if k.startswith("allocstall_")][-1]


@pytest.mark.parametrize("run_dir", RUN_DIRS, ids=lambda p: p.name)
def test_the_snapshots_are_read_from_the_gz_beside_a_status_only_file(run_dir):
    it = iter0(run_dir)
    assert (it / "tests-sysstate").read_text() == "status :: 0\n"
    assert mmtests.sysstate_file(it) == it / "tests-sysstate.gz"
    deltas = snapshot_deltas(run_dir)
    report = iteration_report(mmtests.find_runs(run_dir)[0].iterations[0])
    assert report.source.endswith("tests-sysstate.gz")
    assert report.value("Minor Faults") == deltas["pgfault"] - deltas["pgmajfault"]
    assert report.value("Sector Writes") == deltas["pgpgout"]
    # This kernel prints node-stat names one slot off (tests/test_vmstat_misaligned.py):
    # the row is blank with that reason, not the delta printed under the name.
    assert report.value("Page reclaim immediate") is None
    zones = sum(v for k, v in deltas.items() if k.startswith("allocstall_"))
    assert report.value("Allocation stalls") == zones
    # mmtests' overwrite agrees here only because every zone stalled 0 times.
    assert mmtests_allocation_stalls(run_dir) == zones == 0


def test_the_snapshot_file_is_chosen_by_content_not_by_name(tmp_path):
    """An xz copy of the real snapshots wins over a status-only plain file; a plain file
    with snapshots (what mmlab capture writes) wins over the compressed ones."""
    with gzip.open(iter0(BASELINE) / "tests-sysstate.gz", "rb") as f:
        snapshots = f.read()
    (tmp_path / "tests-sysstate").write_text("status :: 0\n")
    (tmp_path / "tests-sysstate.xz").write_bytes(lzma.compress(snapshots))
    assert mmtests.sysstate_file(tmp_path) == tmp_path / "tests-sysstate.xz"
    (tmp_path / "tests-sysstate").write_bytes(snapshots)
    assert mmtests.sysstate_file(tmp_path) == tmp_path / "tests-sysstate"


def test_a_status_only_sysstate_is_an_error_that_says_so(tmp_path):
    only = tmp_path / "tests-sysstate"
    only.write_text("status :: 0\n")
    with pytest.raises(InputError, match=r"only mmtests step lines \('status :: 0'\)") as e:
        vmstat.read(only)
    assert e.value.line == 1
    assert str(e.value).endswith("(mmtests keeps them in tests-sysstate.gz)")


def test_a_step_line_closes_the_vmstat_block_wherever_mmtests_writes_it():
    text = (
        "start :: 1591450510\n"
        "file start :: /proc/vmstat\npgfault 10\npgmajfault 1\n"
        "status :: 0\n"
        "noise that is not vmstat\n"
        "file end :: /proc/vmstat\npgfault 25\npgmajfault 3\n"
        "time :: usemem 1.0 user 2.0 system 3.0 elapsed\n"
    )
    samples = vmstat.parse(text, "t")
    assert samples.frame["pgfault"].to_list() == [10, 25]
    assert samples.other_lines == 4  # start ::, status ::, the noise, time ::
    monitor = vmstat.parse("time: 1\npgfault 1\ntime: 2\npgfault 4\nstatus :: 0\n", "m")
    assert (monitor.layout, monitor.frame["pgfault"].to_list()) == ("monitor", [1, 4])


def copy_iteration(run_dir: Path, dest: Path, index: int = 0) -> Path:
    target = dest / f"iter-{index}"
    shutil.copytree(iter0(run_dir), target, ignore=shutil.ignore_patterns("usemem"))
    return target


def test_missing_tests_timestamp_falls_back_to_the_monitor_span(tmp_path):
    it = copy_iteration(BASELINE, tmp_path / CONFIG)
    (it / "tests-timestamp").unlink()
    (run,) = mmtests.find_runs(tmp_path)
    elapsed = iteration_elapsed(run.iterations[0], "usemem")
    with gzip.open(it / "proc-vmstat-usemem.gz", "rt") as f:
        times = [float(line.split()[1]) for line in f if line.startswith("time:")]
    assert elapsed.seconds == times[-1] - times[0]
    assert elapsed.source == "vmstat sample span, no tests-timestamp"


def test_an_empty_iteration_directory_is_an_error_naming_it(tmp_path):
    copy_iteration(BASELINE, tmp_path / CONFIG)
    (tmp_path / CONFIG / "iter-1").mkdir()
    with pytest.raises(InputError, match="empty iteration directory") as e:
        mmtests.find_runs(tmp_path)
    assert Path(e.value.path).name == "iter-1"


def test_a_gap_in_the_iterations_is_an_error_naming_the_missing_one(tmp_path):
    copy_iteration(BASELINE, tmp_path / CONFIG, 0)
    copy_iteration(BASELINE, tmp_path / CONFIG, 2)
    with pytest.raises(InputError, match="iter-0, iter-2 but no iter-1"):
        mmtests.find_runs(tmp_path)


def test_runs_of_the_same_name_get_distinct_names():
    names = [run.name for run in mmtests.find_runs(TREES)]
    assert names == [f"{CONFIG}@{d.name}" for d in RUN_DIRS]
    separately = mmtests.unique_runs(tuple(mmtests.find_runs(d)[0] for d in RUN_DIRS))
    assert [run.name for run in separately] == names
    assert {it.run for run in separately for it in run.iterations} == set(names)
    with pytest.raises(InputError, match="the same run is given twice"):
        mmtests.unique_runs((*separately, mmtests.find_runs(RUN_DIRS[0])[0]))


def test_compare_vmstat_on_the_three_real_trees_fits_80_columns(capsys):
    assert main(["compare-vmstat", *map(str, RUN_DIRS)]) == 0
    text = capsys.readouterr().out
    assert max(map(len, text.splitlines())) <= 80
    assert "ltccip8.2020-06-12_1807" in text and "ltccip8.2020-06-14_0656" in text
    assert main(["compare-vmstat", "--json", *map(str, RUN_DIRS)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["runs"]) == 3 == len(set(out["runs"]))


@pytest.mark.parametrize("run_dir", RUN_DIRS, ids=lambda p: p.name)
def test_every_counter_row_mmtests_prints_is_the_snapshot_delta(run_dir):
    deltas = snapshot_deltas(run_dir)
    report = iteration_report(mmtests.find_runs(run_dir)[0].iterations[0])
    rows = {
        "DMA allocs": "pgalloc_dma",
        "DMA32 allocs": "pgalloc_dma32",
        "Normal allocs": "pgalloc_normal",
        "Movable allocs": "pgalloc_movable",
        "Direct inode steals": "pginodesteal",
        "Kswapd inode steals": "kswapd_inodesteal",
        "THP split failed": "thp_split_page_failed",
        "Kcompactd wake": "compact_daemon_wake",
        "NUMA alloc hit": "numa_hit",
        "NUMA alloc miss": "numa_miss",
        "NUMA interleave hit": "numa_interleave",
        "NUMA alloc local": "numa_local",
        "NUMA base PTE updates": "numa_pte_updates",
        "NUMA huge PMD updates": "numa_huge_pte_updates",
        "NUMA hint faults": "numa_hint_faults",
        "NUMA hint local faults": "numa_hint_faults_local",
        "NUMA pages migrated": "numa_pages_migrated",
    }
    for label, counter in rows.items():
        assert report.value(label) == deltas[counter], label
    hint = deltas["numa_hint_faults"]
    local = report.value("NUMA hint local percent")
    # mmtests prints 100 when there were no hint faults (the small runs); mmlab, nothing.
    assert local == (pytest.approx(100 * deltas["numa_hint_faults_local"] / hint) if hint else None)
    assert report.value("AutoNUMA cost") == pytest.approx(
        (7 * deltas["numa_pte_updates"] + 5000 * hint + 19 * deltas["numa_pages_migrated"]) / 1e6
    )
    # 4.18 has none of these: absent is reported as absent, never as mmtests' 0.
    for label in ("Fragmentation stalls", "Page rescued immediate", "Kswapd skipped wait"):
        row = next(r for r in report.rows if r.label == label)
        assert (row.value, row.note) == (None, "counter not in this kernel's vmstat")


def test_compaction_cost_leaves_out_numa_balancing_migrations():
    """On the large run every migration was AutoNUMA's and compaction never ran: mmtests'
    model (1038 per pgmigrate_success) charges compaction 759.57 units for them."""
    deltas = snapshot_deltas(LARGE)
    assert deltas["compact_migrate_scanned"] == deltas["compact_isolated"] == 0
    assert deltas["pgmigrate_success"] == deltas["numa_pages_migrated"] > 0
    assert 1038 * deltas["pgmigrate_success"] / 1e6 == pytest.approx(759.57, abs=0.005)
    report = iteration_report(mmtests.find_runs(LARGE)[0].iterations[0])
    assert report.value("Page migrate success") == deltas["pgmigrate_success"]
    assert report.value("Compaction cost") == 0
    row = next(r for r in report.rows if r.label == "Compaction efficiency")
    assert (row.value, row.note) == (None, "no stalls")


def seed_rows(text: str, first: str, last: str) -> dict[str, list[int]]:
    """The ``label  n  n`` rows of a seed's table from row ``first`` to row ``last``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    rows: dict[str, list[int]] = {}
    for line in lines[start:]:
        label, *numbers = line.rsplit(maxsplit=2)
        rows[label.strip()] = [int(n.rstrip("%")) for n in numbers]
        if line.startswith(last):
            return rows
    raise AssertionError(f"no row {last!r} after {first!r}")


def test_seed_003_compaction_cost_and_direct_share_as_published(seeds_dir):
    """Seed 003 (4.5-rc1, kcompactd) publishes the counters and mmtests' rows computed
    from them; mmtests prints ``%d``, so its figures are the truncated values."""
    text = (seeds_dir / "003_ee18fb956a8fffc1.txt").read_text()
    counters = {
        "Direct pages scanned": "pgscan_direct",
        "Kswapd pages scanned": "pgscan_kswapd",
        "Page migrate success": "pgmigrate_success",
        "Page migrate failure": "pgmigrate_fail",
        "Compaction pages isolated": "compact_isolated",
        "Compaction migrate scanned": "compact_migrate_scanned",
        "Compaction free scanned": "compact_free_scanned",
    }
    tables = [
        seed_rows(text[offset:], "Direct pages scanned", "Compaction cost")
        for offset in (0, text.index("-direct\n"))
    ]
    assert [t["Compaction cost"] for t in tables] == [[262, 838], [2271, 2694]]
    for table in tables:
        for column in range(2):
            before = "".join(f"{c} 0\n" for c in counters.values())
            after = "".join(f"{c} {table[label][column]}\n" for label, c in counters.items())
            samples = vmstat.pair(vmstat.parse(before, "b"), vmstat.parse(after, "a"))
            report = ops_report(samples)
            assert int(report.value("Compaction cost")) == table["Compaction cost"][column]
            share = report.value("Percentage direct scans")
            assert int(share) == table["Percentage direct scans"][column]


def usemem_logs(run_dir: Path, field: str) -> int:
    """Σ over the 21 usemem invocations of a GNU time figure (``<n>minor``,
    ``<n>maxresident`` in KiB): the benchmark's own count, beside the kernel's."""
    logs = sorted((iter0(run_dir) / "usemem" / "logs").glob("usemem-[0-9]*"))
    assert len(logs) == 21
    return sum(int(n) for log in logs for n in re.findall(rf"(\d+){field}", log.read_text()))


def test_the_large_run_s_counters_match_the_benchmark_s_own_figures():
    """usemem's own /usr/bin/time lines account for 99.9 % of the machine's minor faults;
    the pages it allocated are 64 KiB (CONFIG_PPC_64K_PAGES), so Normal allocs times 64 KiB
    is the memory usemem touched (maxresident) plus a few percent, where 4 KiB pages
    would account for 6 % of it."""
    with gzip.open(next(iter0(LARGE).glob("kconfig-*")), "rt") as f:
        assert "CONFIG_PPC_64K_PAGES=y\n" in f.read()
    report = iteration_report(mmtests.find_runs(LARGE)[0].iterations[0])
    assert report.page_bytes == 65536
    minor = report.value("Minor Faults")
    assert 0.99 * minor < usemem_logs(LARGE, "minor") <= minor
    touched_kib = usemem_logs(LARGE, "maxresident")
    assert 1.0 < report.value("Normal allocs") * 64 / touched_kib < 1.1


def test_page_size_from_each_kconfig_spelling():
    assert page_size("CONFIG_PAGE_SHIFT=14\nCONFIG_X86=y\n") == 16384
    assert page_size("CONFIG_ARM64_16K_PAGES=y\n") == 16384
    assert page_size("# CONFIG_PPC_64K_PAGES is not set\nCONFIG_PPC_4K_PAGES=y\n") == 4096
    assert page_size("CONFIG_PAGE_SIZE_64KB=y\n") == 65536
    assert page_size("CONFIG_HZ=250\n") is None


def test_the_interval_series_keeps_only_the_reclaim_rows():
    """Rows named after a context but counting something else (inode steals, skipped
    waits) stay out of the per-interval reclaim series."""
    monitor = mmtests.find_runs(BASELINE)[0].iterations[0].vmstat_monitor("usemem")
    series, _ = interval_series(monitor)
    labels = series.columns[3:]
    assert len(labels) == 12 and "Kswapd inode steals" not in labels
    assert {label.split()[1] for label in labels} == {"pages", "efficiency", "velocity"}


def test_a_file_of_an_iteration_gets_the_page_size_of_the_kconfig_beside_it(capsys):
    assert main(["vmstat", "--json", str(iter0(LARGE) / "proc-vmstat-usemem.gz")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["page_bytes"], out["elapsed_source"]) == (65536, "vmstat sample span")


def test_plain_tree_says_its_machine_and_report_tells_runs_apart(capsys):
    """Without mmlab.json the provenance comes from mmtests' own files: ``uname -a`` in
    kernel.version, lscpu.txt.gz and meminfo in tests-sysstate.gz (values read here with
    plain gzip and str.split). The two A/A trees name their run directory alike; the report
    must compare them, not one of them twice."""
    it = iter0(BASELINE)
    uname = (it / "kernel.version").read_text().split()
    lscpu = gzip.decompress((it / "lscpu.txt.gz").read_bytes()).decode().splitlines()
    cpus = next(int(ln.split()[1]) for ln in lscpu if ln.startswith("CPU(s):"))
    meminfo = gzip.decompress((it / "tests-sysstate.gz").read_bytes()).decode()
    meminfo = meminfo.split("MemTotal:")[1]
    machine = mmtests.machine_of(it)
    assert (machine.kernel_release, machine.hostname) == (uname[2], uname[1])
    assert (machine.logical_cpus, machine.mem_total_kib) == (cpus, int(meminfo.split()[0]))
    assert machine.cpu_model.startswith("POWER8")
    other = TREES / "log.ltccip8.2020-06-14_0656"
    assert main(["report", "--detail", str(BASELINE), str(other)]) == 0
    text = capsys.readouterr().out
    assert f"All runs: kernel {uname[2]};" in text  # the summary
    assert f"  kernel     {uname[2]}" in text  # --detail's Captures
    assert f"{CONFIG}@{BASELINE.name}: 1 iteration (iter-0)" in text
    assert f"{CONFIG}@{other.name}: 1 iteration (iter-0)" in text
    # Minor faults of each tree differ (357,315 vs 357,325): both columns are real.
    minor = next(ln for ln in text.splitlines() if ln.startswith("Minor Faults"))
    deltas = [
        snapshot_deltas(d)["pgfault"] - snapshot_deltas(d)["pgmajfault"] for d in (BASELINE, other)
    ]
    # One value per run has no sd: counts print whole, not scaled (report/ops.py).
    assert [f"{d:.0f}" for d in deltas] == minor.split()[2:4]
