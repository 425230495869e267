"""Capture metadata: mmtests timestamp/sysstate formats (read back by the mmtests reader),
kconfig HZ, cpuinfo/meminfo, sysctl trees, monitor records, and the mount/fs helpers."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import pytest

from analysis.capture import metadata
from analysis.capture.monitor import Monitor, Stream, sample_block
from analysis.capture.run import fs_type
from analysis.capture.sysctl import SysctlChanger, parse_assignment, read_tree
from analysis.errors import InputError

VMSTAT_A = "nr_free_pages 100\npgscan_file 10\npgsteal_file 4\n"
VMSTAT_B = "nr_free_pages 90\npgscan_file 25\npgsteal_file 9\n"


def test_timestamp_lines_exact_text():
    text = metadata.timestamp_lines("stutterp", 1700000000.4, 1700000030.9, 0, 12.345, 6.7)
    assert text == (
        "test begin :: stutterp 1700000000\n"
        "test end :: stutterp 1700000031 0\n"
        "time :: stutterp 12.35 user 6.70 system 30.50 elapsed\n"
    )


def test_timestamp_and_sysstate_read_back_by_the_mmtests_reader(tmp_path):
    mmtests = pytest.importorskip("analysis.ingest.mmtests")
    it = tmp_path / "run" / "iter-0"
    it.mkdir(parents=True)
    (it / "tests-timestamp").write_text(
        metadata.timestamp_lines("stutterp", 1700000000.0, 1700000030.0, 0, 12.0, 6.5)
    )
    (it / "tests-sysstate").write_text(
        metadata.sysstate_block("start", "/proc/vmstat", VMSTAT_A)
        + metadata.sysstate_block("start", "/proc/meminfo", "MemTotal: 1 kB")
        + metadata.sysstate_block("end", "/proc/vmstat", VMSTAT_B)
    )
    (run,) = mmtests.find_runs(tmp_path)
    (iteration,) = run.iterations
    times = iteration.times["stutterp"]
    assert (times.begin_epoch, times.end_epoch, times.rc) == (1700000000.0, 1700000030.0, 0)
    assert (times.user_s, times.system_s, times.elapsed_s) == (12.0, 6.5, 30.0)
    frame = iteration.vmstat("stutterp").frame
    assert frame["pgscan_file"].to_list() == [10, 25]
    assert frame["pgsteal_file"].to_list() == [4, 9]


def test_sysstate_block_rejects_other_positions():
    with pytest.raises(ValueError):
        metadata.sysstate_block("middle", "/proc/vmstat", "")


def test_config_hz_from_kconfig_text():
    assert metadata.config_hz("# CONFIG_HZ_100 is not set\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n") == 250
    assert metadata.config_hz("CONFIG_HZ_1000=y\n") is None
    assert metadata.config_hz(None) is None


def test_kconfig_from_fake_proc(tmp_path):
    (tmp_path / "config.gz").write_bytes(gzip.compress(b"CONFIG_HZ=1000\n"))
    assert metadata.config_hz(metadata.kconfig_text(tmp_path)) == 1000
    assert metadata.kconfig_text(tmp_path / "missing") is None


def test_cpu_and_memory_info():
    cpuinfo = (
        "processor\t: 0\nmodel name\t: Intel Xeon X\n\nprocessor\t: 1\nmodel name\t: Intel Xeon X\n"
    )
    assert metadata.cpu_info(cpuinfo) == {"model": "Intel Xeon X", "logical_cpus": 2}
    meminfo = "MemTotal:       24683000 kB\nMemFree: 1 kB\nMemAvailable:   24400000 kB\n"
    meminfo += "SwapTotal:             0 kB\n"
    assert metadata.memory_info(meminfo) == {
        "mem_total_kib": 24683000,
        "mem_available_kib": 24400000,
        "swap_total_kib": 0,
    }


def test_sysctl_tree_and_restore(tmp_path):
    vm = tmp_path / "vm"
    vm.mkdir()
    (vm / "dirty_ratio").write_text("20\n")
    (vm / "min_free_kbytes").write_text("67584\n")
    (vm / "lowmem_reserve_ratio").write_text("256\t256\t32\t0\n")
    (tmp_path / "kernel").mkdir()
    (tmp_path / "kernel" / "hz").write_text("x\n")
    assert read_tree("vm", tmp_path) == {
        "vm.dirty_ratio": "20",
        "vm.lowmem_reserve_ratio": "256 256 32 0",
        "vm.min_free_kbytes": "67584",
    }
    changer = SysctlChanger(root=tmp_path)
    changer.set("vm.dirty_ratio", "5")
    changer.set("vm.dirty_ratio", "7")
    assert (vm / "dirty_ratio").read_text() == "7"
    changer.restore()
    assert (vm / "dirty_ratio").read_text() == "20"
    with pytest.raises(InputError, match=r"no such sysctl vm\.nope"):
        changer.set("vm.nope", "1")


@pytest.mark.parametrize("bad", ["vm.dirty_ratio", "=5", "vm.dirty_ratio=", "../x=1"])
def test_bad_set_assignment(bad):
    with pytest.raises(InputError, match="NAME=VALUE"):
        parse_assignment(bad)


def test_parse_assignment():
    assert parse_assignment(" vm.dirty_ratio = 5 ") == ("vm.dirty_ratio", "5")


def test_monitor_writes_time_then_dump_records(tmp_path):
    src = tmp_path / "vmstat"
    src.write_text(VMSTAT_A)
    out = tmp_path / "proc-vmstat-t.gz"
    mon = Monitor([Stream("vmstat", src, out)], interval_s=0.05).start()
    time.sleep(0.12)
    src.write_text(VMSTAT_B)
    time.sleep(0.12)
    mon.stop()
    text = gzip.decompress(out.read_bytes()).decode()
    records = text.split("time: ")[1:]
    assert len(records) == mon.samples["vmstat"] >= 4
    epochs = [float(r.splitlines()[0]) for r in records]
    assert epochs == sorted(epochs)
    assert records[0].splitlines()[1:] == VMSTAT_A.splitlines()
    # stop() samples once more, so the last record is the state at stop time.
    assert records[-1].splitlines()[1:] == VMSTAT_B.splitlines()
    vmstat = pytest.importorskip("analysis.ingest.vmstat")
    frame = vmstat.read(out).frame
    assert frame["pgscan_file"][0] == 10
    assert frame["pgscan_file"][-1] == 25


def test_sample_block():
    assert sample_block(12.5, "a 1") == "time: 12.500\na 1\n"


def test_fs_type_takes_the_longest_mount_prefix():
    mounts = "/dev/vda / ext4 rw 0 0\ntmpfs /tmp tmpfs rw 0 0\ntmpfs /tmpx tmpfs rw 0 0\n"
    assert fs_type(Path("/tmp/a/b"), mounts) == "tmpfs"
    assert fs_type(Path("/tmpfoo"), mounts) == "ext4"
    assert fs_type(Path("/"), mounts) == "ext4"
